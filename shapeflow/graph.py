"""The model as a networkx DAG: an index into the parsed ModelProto, never a copy of it.

One DAG node per ONNX node, in the main graph, in every If/Loop/Scan body and in every model-local
function; an edge for every tensor a node reads from another node of its own scope, and for every
outer-scope tensor that a subgraph reads (the edge goes to the node that owns the subgraph, which is
where the value has to exist).

The index itself (per-scope producer and consumer tables and a topological order) is built eagerly
and is what inference walks; the networkx view, ``ModelGraph.dag``, is built from it on first use.
On a 500k-node model networkx costs more time and memory than inference, and ``infer``/``lint``
never need it; rewrite passes and API users get it on demand. Building the index also validates the structure (SF002): one producer
per tensor, every read defined, no cycle, every graph output produced, no recursive functions.

Everything here walks with explicit stacks and loops: a 200,000-node chain must not recurse.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Iterator, Union

import networkx as nx
import onnx

from .errors import GraphInvalid, LimitExceeded
from .io import LoadedModel
from .limits import DEFAULT_LIMITS, Limits
from .opsets import canonical_domain, opset_map, since_version

# Producer markers for tensors that no node produces.
GRAPH_INPUT = -1
INITIALIZER = -2

Body = Union[onnx.GraphProto, onnx.FunctionProto]


@dataclass
class Scope:
    """One graph body: the main graph, a subgraph, or a model-local function."""

    id: int
    path: str
    kind: str  # "graph" | "function"
    proto: Body
    parent: int | None  # enclosing scope whose tensors this one may read (None: main, functions)
    owner: int | None  # DAG node that owns this subgraph
    opsets: dict[str, int]
    nodes: list[int] = field(default_factory=list)  # DAG node ids in file order
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    initializers: dict[str, onnx.TensorProto] = field(default_factory=dict)
    producer: dict[str, int] = field(default_factory=dict)  # tensor -> node id | GRAPH_INPUT | INITIALIZER
    consumers: dict[str, list[int]] = field(default_factory=dict)  # tensor -> nodes of this scope reading it
    free: set[str] = field(default_factory=set)  # names read from enclosing scopes
    order: list[int] = field(default_factory=list)  # a topological order (file order when it is one)
    sorted_in_file: bool = True
    attr: str | None = None  # attribute of the owner node holding this body (subgraphs only)


@dataclass(slots=True)
class NodeInfo:
    proto: onnx.NodeProto
    scope: int
    index: int
    domain: str
    since_version: int | None
    # read from the proto once: protobuf attribute access is the main cost on large graphs
    op_type: str = ""
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    subscopes: list[int] = field(default_factory=list)


class ModelGraph:
    """The index. ``dag`` is the networkx DiGraph over node ids; ``nodes[i]`` describes node ``i``."""

    def __init__(self, loaded: LoadedModel) -> None:
        self.loaded = loaded
        self.model = loaded.proto
        self._dag: nx.DiGraph | None = None
        self.scopes: list[Scope] = []
        self.nodes: list[NodeInfo] = []
        self.functions: dict[tuple[str, str], int] = {}  # (domain, name) -> scope id

    @property
    def dag(self) -> nx.DiGraph:
        """The networkx DiGraph over node ids (built on first access, then kept)."""
        if self._dag is None:
            dag = nx.DiGraph()
            dag.add_nodes_from(range(len(self.nodes)))
            for scope in self.scopes:
                dag.add_edges_from(scope_edges(scope))
            self._dag = dag
        return self._dag

    # -- lookups ---------------------------------------------------------------------------------
    @property
    def path(self) -> str:
        return self.loaded.path

    def display(self, nid: int) -> str:
        """A node's name, or ``#index`` in its graph when it has none (never written into the model)."""
        info = self.nodes[nid]
        return info.proto.name or f"#{info.index}"

    def readers(self, scope_id: int, tensor: str) -> list[int]:
        """Nodes of ``scope_id`` that read ``tensor``, including owners of subgraphs that read it."""
        return self.scopes[scope_id].consumers.get(tensor, [])

    def definition(self, scope_id: int, tensor: str) -> tuple[int, int] | None:
        """(scope id, producer) of ``tensor`` as seen from ``scope_id``; the producer is a node id,
        GRAPH_INPUT or INITIALIZER. None when it is not defined."""
        sid: int | None = scope_id
        while sid is not None:
            scope = self.scopes[sid]
            p = scope.producer.get(tensor)
            if p is not None:
                return sid, p
            sid = scope.parent
        return None

    def is_graph_output(self, scope_id: int, tensor: str) -> bool:
        return tensor in self.scopes[scope_id].outputs

    def iter_scope_order(self) -> Iterator[Scope]:
        return iter(self.scopes)

    def node_count(self) -> int:
        return len(self.nodes)


def build_graph(loaded: LoadedModel, limits: Limits = DEFAULT_LIMITS) -> ModelGraph:
    """Index ``loaded`` and validate its structure; raises ``GraphInvalid`` (SF002) on the first
    structural problem, naming the node and the tensor."""
    g = ModelGraph(loaded)
    model = loaded.proto
    model_opsets = opset_map(model.opset_import)

    # Discover scopes breadth-first: main graph, model-local functions, then every nested body.
    pending: deque[tuple[Body, str, str, int | None, int | None, dict[str, int]]] = deque(
        [(model.graph, "main", "graph", None, None, model_opsets)]
    )
    for fn in model.functions:
        fn_opsets = opset_map(fn.opset_import) or model_opsets
        pending.append((fn, f"{fn.domain}::{fn.name}", "function", None, None, fn_opsets))
    while pending:
        body, path, kind, parent, owner, opsets = pending.popleft()
        scope = Scope(len(g.scopes), path, kind, body, parent, owner, opsets)
        if owner is not None:
            scope.attr = path.rsplit(".", 1)[1]
        g.scopes.append(scope)
        if kind == "function":
            g.functions[(body.domain, body.name)] = scope.id  # type: ignore[union-attr]
        if owner is not None:
            g.nodes[owner].subscopes.append(scope.id)
        _index_scope(g, scope, limits, pending)

    _check_definitions(g)
    _compute_free_names(g)
    for scope in g.scopes:
        _order_scope(g, scope)
    _check_function_cycles(g)
    return g


def _index_scope(g: ModelGraph, scope: Scope, limits: Limits, pending: deque) -> None:
    body = scope.proto
    producer = scope.producer
    consumers = scope.consumers
    file = g.path
    if isinstance(body, onnx.GraphProto):
        scope.inputs = [vi.name for vi in body.input]
        scope.outputs = [vi.name for vi in body.output]
        for name in scope.inputs:
            producer[name] = GRAPH_INPUT
        for t in body.initializer:
            if t.name in scope.initializers:
                raise GraphInvalid(f"initializer '{t.name}' defined twice in graph {scope.path}",
                                   file=file, tensor=t.name)
            scope.initializers[t.name] = t
            producer[t.name] = INITIALIZER  # an input with the same name is its default (IR < 4)
        for st in body.sparse_initializer:
            producer[st.values.name] = INITIALIZER
    else:
        scope.inputs = list(body.input)
        scope.outputs = list(body.output)
        for name in scope.inputs:
            producer[name] = GRAPH_INPUT

    opsets = scope.opsets
    nodes = g.nodes
    versions: dict[tuple[str, str], int | None] = {}  # one schema lookup per op type, not per node
    graph_attrs = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
    for index, node in enumerate(body.node):
        nid = len(nodes)
        if nid >= limits.max_nodes:
            raise LimitExceeded("max-nodes", f"> {limits.max_nodes}", "--max-nodes", file=file)
        op_type = node.op_type
        domain = node.domain
        key = (domain, op_type)
        sv = versions.get(key, -1)
        if sv == -1:
            domain = canonical_domain(domain)
            version = opsets.get(domain)
            sv = since_version(domain, op_type, version) if version is not None else None
            versions[key] = sv
        else:
            domain = canonical_domain(domain)
        inputs = tuple(node.input)
        outputs = tuple(node.output)
        nodes.append(NodeInfo(node, scope.id, index, domain, sv, op_type, inputs, outputs))
        scope.nodes.append(nid)
        for name in inputs:
            if name:
                lst = consumers.get(name)
                if lst is None:
                    consumers[name] = [nid]
                elif lst[-1] != nid:  # a node reading one tensor twice is one reader
                    lst.append(nid)
        for name in outputs:
            if not name:
                continue
            if name in producer:
                raise GraphInvalid(_dup_message(g, scope, name, producer[name], nid), file=file,
                                   node=g.display(nid), tensor=name)
            producer[name] = nid
        if node.attribute:
            for attr in node.attribute:
                if attr.type in graph_attrs:
                    if attr.type == onnx.AttributeProto.GRAPH:
                        pending.append((attr.g, f"{scope.path}/{g.display(nid)}.{attr.name}", "graph",
                                        scope.id, nid, opsets))
                    else:
                        for k, sub in enumerate(attr.graphs):
                            pending.append((sub, f"{scope.path}/{g.display(nid)}.{attr.name}[{k}]",
                                            "graph", scope.id, nid, opsets))


def _dup_message(g: ModelGraph, scope: Scope, name: str, prev: int, nid: int) -> str:
    def who(p: int) -> str:
        if p == GRAPH_INPUT:
            return "graph input"
        if p == INITIALIZER:
            return "initializer"
        return f"{g.nodes[p].proto.op_type} '{g.display(p)}'"

    hint = " (file may be concatenated models)" if prev >= 0 and g.nodes[prev].proto.op_type == g.nodes[nid].proto.op_type else ""
    return f"'{name}' defined twice ({who(prev)}, {who(nid)}) in graph {scope.path}{hint}"


def _visible(g: ModelGraph, scope: Scope) -> Iterator[Scope]:
    s: Scope | None = scope
    while s is not None:
        yield s
        s = g.scopes[s.parent] if s.parent is not None else None


def _check_definitions(g: ModelGraph) -> None:
    """Every read is defined here or in an enclosing scope; no subgraph redefines an outer name;
    every graph output is produced."""
    file = g.path
    for scope in g.scopes:
        outer = [s for s in _visible(g, scope)][1:]
        if outer:
            for name in scope.producer:
                for s in outer:
                    if name in s.producer:
                        raise GraphInvalid(
                            f"'{name}' in {scope.path} shadows a tensor of {s.path}", file=file, tensor=name
                        )
        for name, readers in scope.consumers.items():
            if name in scope.producer:
                continue
            if any(name in s.producer for s in outer):
                continue
            nid = readers[0]
            info = g.nodes[nid]
            raise GraphInvalid(
                f"node '{g.display(nid)}' ({info.proto.op_type}) in {scope.path} reads undefined tensor '{name}'",
                file=file, node=g.display(nid), tensor=name,
            )
        for name in scope.outputs:
            if not name:
                continue
            if name not in scope.producer and not any(name in s.producer for s in outer):
                what = "function" if scope.kind == "function" else "graph"
                raise GraphInvalid(f"{what} output '{name}' of {scope.path} is never produced",
                                   file=file, tensor=name)


def _compute_free_names(g: ModelGraph) -> None:
    """Names each scope reads from outside itself; owner nodes depend on them (implicit inputs).

    Children are discovered after their parents, so walking scopes in reverse sees every child
    before its parent: no recursion."""
    for scope in reversed(g.scopes):
        free: set[str] = set()
        for name in scope.consumers:
            if name not in scope.producer:
                free.add(name)
        for name in scope.outputs:
            if name and name not in scope.producer:
                free.add(name)
        for nid in scope.nodes:
            for sid in g.nodes[nid].subscopes:
                for name in g.scopes[sid].free:
                    if name not in scope.producer:
                        free.add(name)
        scope.free = free
        if scope.owner is not None:
            parent = g.scopes[scope.parent]  # type: ignore[index]
            owner = scope.owner
            for name in free:
                if name in parent.producer:
                    lst = parent.consumers.setdefault(name, [])
                    if owner not in lst:
                        lst.append(owner)


def scope_edges(scope: Scope) -> Iterator[tuple[int, int]]:
    """(producer, reader) for every tensor one node of ``scope`` hands to another."""
    producer = scope.producer
    for name, readers in scope.consumers.items():
        p = producer.get(name)
        if p is not None and p >= 0:
            for r in readers:
                yield p, r


def _order_scope(g: ModelGraph, scope: Scope) -> None:
    """Find a topological order, keeping file order when it is one (the common case, checked in
    one pass without building anything)."""
    position = {nid: k for k, nid in enumerate(scope.nodes)}
    if all(position[r] > position[p] for p, r in scope_edges(scope)):
        scope.order = list(scope.nodes)
        return
    scope.sorted_in_file = False
    sub = nx.DiGraph()
    sub.add_nodes_from(scope.nodes)
    sub.add_edges_from(scope_edges(scope))
    try:
        scope.order = list(nx.lexicographical_topological_sort(sub, key=lambda n: position[n]))
    except nx.NetworkXUnfeasible:
        cycle = nx.find_cycle(sub)
        names = [g.display(u) for u, _ in cycle] + [g.display(cycle[0][0])]
        raise GraphInvalid(
            f"graph {scope.path} has a cycle: " + " → ".join(names), file=g.path, node=names[0]
        ) from None


def _check_function_cycles(g: ModelGraph) -> None:
    """A model-local function that calls itself, directly or through others, cannot be expanded."""
    if not g.functions:
        return
    calls = nx.DiGraph()
    for key, sid in g.functions.items():
        calls.add_node(key)
        stack = [sid]
        while stack:
            scope = g.scopes[stack.pop()]
            for nid in scope.nodes:
                info = g.nodes[nid]
                callee = (info.proto.domain, info.proto.op_type)
                if callee in g.functions:
                    calls.add_edge(key, callee)
                stack.extend(info.subscopes)
    try:
        cycle = nx.find_cycle(calls)
    except nx.NetworkXNoCycle:
        return
    names = [f"{d}::{n}" for (d, n), _ in cycle] + [f"{cycle[0][0][0]}::{cycle[0][0][1]}"]
    raise GraphInvalid("function cycle: " + " → ".join(names), file=g.path)
