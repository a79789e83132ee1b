"""The model as a networkx DAG: an index into the parsed ModelProto, never a copy of it.

One DAG node per ONNX node, in the main graph, in every If/Loop/Scan body and in every model-local
function; an edge for every tensor a node reads from another node of its own scope, and for every
outer-scope tensor that a subgraph reads (the edge goes to the node that owns the subgraph, which is
where the value has to exist).

The index itself (per-scope producer tables, a NodeInfo per node and a topological order) is built
eagerly, in one pass over the nodes, and is what inference walks. What ``infer`` does not need is
built on first use: the consumer tables (``Scope.consumers``) and the networkx view
(``ModelGraph.dag``). On a 500k-node model those cost more time and memory than inference; rewrite
passes, lint rules and API users get them on demand. Building
the index also validates the structure (SF002): one producer per tensor, every read defined, no
cycle, every graph output produced, no recursive functions.

Everything here walks with explicit stacks and loops: a 200,000-node chain must not recurse.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Iterator, Union

from ._onnx import onnx

from .errors import GraphInvalidError, LimitExceededError
from .io import LoadedModel
from .limits import DEFAULT_LIMITS, Limits, deadline
from .opsets import canonical_domain, opset_map, since_version

if TYPE_CHECKING:
    import networkx as nx

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
    free: set[str] = field(default_factory=set)  # names read from enclosing scopes
    order: list[int] = field(default_factory=list)  # a topological order (file order when it is one)
    sorted_in_file: bool = True
    attr: str | None = None  # attribute of the owner node holding this body (subgraphs only)
    # (name, first reader) for names read before any definition in this scope, in file order:
    # produced later (the file is not sorted), read from an enclosing scope, or undefined
    late: list[tuple[str, int]] = field(default_factory=list, repr=False)
    # For ``consumers``, built on first use: the graph's node list, and the (name, owner node)
    # reads that subgraphs make through their owner, in the order the index found them.
    _all_nodes: "list[NodeInfo] | None" = field(default=None, repr=False)
    _owner_reads: list[tuple[str, int]] = field(default_factory=list, repr=False)
    _consumers: dict[str, list[int]] | None = field(default=None, repr=False)

    @property
    def consumers(self) -> dict[str, list[int]]:
        """tensor -> nodes of this scope reading it (file order), owners of subgraphs that read it
        by name included.

        Built on first use: ``infer`` never needs it, and on a large model it is a list per tensor
        (a second per million nodes, and tens of MB)."""
        found = self._consumers
        if found is None:
            found = self._consumers = self._build_consumers()
        return found

    @consumers.setter
    def consumers(self, value: dict[str, list[int]]) -> None:
        self._consumers = value

    def _build_consumers(self) -> dict[str, list[int]]:
        consumers: dict[str, list[int]] = {}
        all_nodes = self._all_nodes or []
        for nid in self.nodes:
            for name in all_nodes[nid].inputs:
                if name:
                    lst = consumers.get(name)
                    if lst is None:
                        consumers[name] = [nid]
                    elif lst[-1] != nid:  # a node reading one tensor twice is one reader
                        lst.append(nid)
        for name, owner in self._owner_reads:
            lst = consumers.setdefault(name, [])
            if owner not in lst:
                lst.append(owner)
        return consumers


class NodeInfo:
    """One ONNX node as the index sees it: where it is, which op version it runs, what it reads and
    writes.

    ``op_type``, ``inputs`` and ``outputs`` are read from the proto once, when the index is built:
    protobuf field access is the main cost on large graphs. ``proto`` is fetched from its graph's
    node list (``src``) on first use and then kept, so it is the same object every time it is
    asked for (rewrites key their bookkeeping on it). Code that looks at every node once should
    use ``peek()``, which does not keep it.

    Why not keep every wrapper from the start: a kept wrapper keeps whatever protobuf caches on it,
    and it caches an empty container for each empty repeated field anyone asks about. The index asks
    every node for its ``attribute`` list (and so does io's scan of tensors): on a 500k-node model,
    kept wrappers cost 90 MB and those empty containers 130 MB more, which transient wrappers free
    at once.
    """

    __slots__ = ("_proto", "_src", "scope", "index", "domain", "since_version", "op_type", "inputs",
                 "outputs", "subscopes", "has_attrs")

    def __init__(self, proto: onnx.NodeProto | None, scope: int, index: int, domain: str,
                 since_version: int | None, op_type: str = "", inputs: tuple[str, ...] = (),
                 outputs: tuple[str, ...] = (), subscopes: list[int] | tuple[()] = (),
                 has_attrs: bool = True, src: object = None) -> None:
        self._proto = proto
        self._src = src  # the body's repeated ``node`` field, for fetching ``proto`` by index
        self.scope = scope
        self.index = index
        self.domain = domain
        self.since_version = since_version
        self.op_type = op_type
        self.inputs = inputs
        self.outputs = outputs
        # A shared empty tuple until the node owns a body: most nodes never do.
        self.subscopes = subscopes
        # False only when the index saw that the node has no attributes (shape rules skip the proto).
        self.has_attrs = has_attrs

    @property
    def proto(self) -> onnx.NodeProto:
        p = self._proto
        if p is None:
            p = self._proto = self._src[self.index]  # type: ignore[index]
        return p

    def peek(self) -> onnx.NodeProto:
        """The proto for a passing look (a name, an attribute), without keeping it if it is not
        kept already."""
        p = self._proto
        return p if p is not None else self._src[self.index]  # type: ignore[index]

    def __repr__(self) -> str:
        return (f"NodeInfo(scope={self.scope}, index={self.index}, op_type={self.op_type!r}, "
                f"domain={self.domain!r}, since_version={self.since_version}, inputs={self.inputs}, "
                f"outputs={self.outputs}, subscopes={self.subscopes})")


class ModelGraph:
    """The index. ``dag`` is the networkx DiGraph over node ids; ``nodes[i]`` describes node ``i``."""

    def __init__(self, loaded: LoadedModel) -> None:
        self.loaded = loaded
        self.model = loaded.proto
        self._dag: "nx.DiGraph | None" = None
        self.scopes: list[Scope] = []
        self.nodes: list[NodeInfo] = []
        self.functions: dict[tuple[str, str], int] = {}  # (domain, name) -> scope id
        # (node id, its attribute names) for nodes that give an attribute twice (SF009): found while
        # indexing, which reads every attribute list anyway
        self.duplicate_attributes: list[tuple[int, list[str]]] = []
        # nodes with an output named "" (an optional output left out, or SF010)
        self.empty_outputs: list[int] = []

    @property
    def dag(self) -> "nx.DiGraph":
        """The networkx DiGraph over node ids (built on first access, then kept)."""
        if self._dag is None:
            import networkx as nx  # imported on first use: infer and lint never need it

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
        return info.peek().name or f"#{info.index}"

    def in_function(self, scope_id: int) -> bool:
        """Whether scope ``scope_id`` is a model-local function's body or nested in one."""
        scope = self.scopes[scope_id]
        while scope.parent is not None:
            scope = self.scopes[scope.parent]
        return scope.kind == "function"

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


# A body waiting to be indexed: (body, path, kind, parent scope, owner node, opsets in force).
_Pending = tuple["Body", str, str, "int | None", "int | None", dict[str, int]]
_GRAPH_KINDS = frozenset({onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS})
# What the index reads of each node, in one call
_NODE_FIELDS = attrgetter("input", "output", "attribute", "op_type", "domain")


def build_graph(loaded: LoadedModel, limits: Limits = DEFAULT_LIMITS) -> ModelGraph:
    """Index ``loaded`` and validate its structure; raises ``GraphInvalidError`` (SF002) on the first
    structural problem, naming the node and the tensor."""
    g = ModelGraph(loaded)
    model = loaded.proto
    model_opsets = opset_map(model.opset_import)

    # Discover scopes breadth-first: main graph, model-local functions, then every nested body.
    pending: deque[_Pending] = deque(
        [(model.graph, "main", "graph", None, None, model_opsets)]
    )
    if len(model.functions) > limits.max_nodes:  # each body is a unit of --max-nodes (_index_scope)
        raise LimitExceededError("max-nodes", count_nodes(model), "--max-nodes", file=g.path)
    for fn in model.functions:
        fn_opsets = opset_map(fn.opset_import) or model_opsets
        pending.append((fn, f"{fn.domain}::{fn.name}", "function", None, None, fn_opsets))
    at = deadline(limits)
    while pending:
        if not len(g.scopes) & 0xFF and time.monotonic() > at:  # (a body costs ~50 nodes' time to index)
            raise LimitExceededError("timeout", f"{limits.timeout:g} s", "--timeout", file=g.path)
        body, path, kind, parent, owner, opsets = pending.popleft()
        scope = Scope(len(g.scopes), path, kind, body, parent, owner, opsets)
        if owner is not None:
            scope.attr = path.rsplit(".", 1)[1]
        g.scopes.append(scope)
        if kind == "function":
            g.functions[(body.domain, body.name)] = scope.id
        if owner is not None:
            info = g.nodes[owner]
            if info.subscopes:
                info.subscopes.append(scope.id)
            else:
                info.subscopes = [scope.id]
        _index_scope(g, scope, limits, pending)

    _check_definitions(g)
    _compute_free_names(g)
    for scope in g.scopes:
        _order_scope(g, scope)
    _check_function_cycles(g)
    return g


def _define_scope(g: ModelGraph, scope: Scope) -> None:
    """The names a scope defines before its nodes: its inputs and, in a graph, its initializers."""
    body = scope.proto
    producer = scope.producer
    file = g.path
    if isinstance(body, onnx.GraphProto):
        scope.inputs = [vi.name for vi in body.input]
        scope.outputs = [vi.name for vi in body.output]
        _define_inputs(scope, file)
        for t in body.initializer:
            if t.name in scope.initializers:
                # the same definition twice is what a file of two models back to back parses as
                raise GraphInvalidError(f"initializer '{t.name}' defined twice in graph {scope.path}{_CONCAT_HINT}",
                                   file=file, tensor=t.name)
            scope.initializers[t.name] = t
            producer[t.name] = INITIALIZER  # an input with the same name is its default (IR < 4)
        for st in body.sparse_initializer:
            producer[st.values.name] = INITIALIZER
    else:
        scope.inputs = list(body.input)
        scope.outputs = list(body.output)
        _define_inputs(scope, file)


def _index_attributes(g: ModelGraph, scope: Scope, nid: int, attrs: Any, pending: deque[_Pending]) -> int:
    """A node's attributes: repeated names are noted (SF009), subgraphs queued for indexing.
    Returns how many bodies were queued."""
    attrs = attrs[:]  # (a list: protobuf slices a repeated field in one call, cheaper than iterating it twice)
    if len(attrs) > 1:
        names = [attr.name for attr in attrs]
        if len(set(names)) < len(names):
            g.duplicate_attributes.append((nid, names))
    graph_attr, graphs_attr = onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS
    queued = 0
    for attr in attrs:
        kind = attr.type
        if kind == graph_attr:
            queued += 1
            pending.append((attr.g, f"{scope.path}/{g.display(nid)}.{attr.name}", "graph", scope.id, nid, scope.opsets))
        elif kind == graphs_attr:
            queued += len(attr.graphs)
            for k, sub in enumerate(attr.graphs):
                pending.append((sub, f"{scope.path}/{g.display(nid)}.{attr.name}[{k}]", "graph", scope.id, nid,
                                scope.opsets))
    return queued


def _first_late_reads(scope: Scope) -> None:
    """Keep the first of each late read, and tell whether a name is read before its producer (the
    file is not sorted)."""
    late = scope.late
    producer = scope.producer
    if late:
        firsts: dict[str, int] = {}
        for name, nid in late:
            firsts.setdefault(name, nid)
        scope.late = late = list(firsts.items())  # first reads only
    for name, _ in late:
        p = producer.get(name)
        if p is not None and p >= 0:  # read before the node that produces it
            scope.sorted_in_file = False
            break


def _index_scope(g: ModelGraph, scope: Scope, limits: Limits, pending: deque[_Pending]) -> None:
    body = scope.proto
    producer = scope.producer
    scope._all_nodes = g.nodes
    file = g.path
    _define_scope(g, scope)

    # This loop runs once per node of the model; it reads each protobuf field once (field access
    # costs far more than the dict work) and allocates nothing per node but the NodeInfo and the
    # input/output tuples.
    opsets = scope.opsets
    nodes = g.nodes
    add_node = nodes.append
    sid = scope.id
    base = len(nodes)  # node ids of one scope are consecutive: nid == base + index
    # --max-nodes counts the bodies of subgraphs and functions too (those indexed and those
    # waiting): an empty body costs more to index than a node (wire.SCOPE_COST), and is 2 bytes
    # on the wire. A node's index must stay below ``room``; each body found lowers it.
    room = limits.max_nodes - base - (len(g.scopes) - 1) - len(pending)
    node_list = body.node
    # One schema lookup per op type, not per node: domain -> op_type -> (domain, since, op_type).
    # Keeping the first op_type string also shares one str among all nodes of that type.
    versions: dict[str, dict[str, tuple[str, int | None, str]]] = {}
    # Reads that come before any definition in this scope: of a name produced later (the file is
    # not sorted), read from an enclosing scope, or undefined. Usually empty, and it replaces a
    # pass over every edge to check the order and the definitions.
    late = scope.late
    late_add = late.append
    empty_outputs = g.empty_outputs
    plain = versions[""] = {}  # (most nodes are of the default domain: one lookup fewer)
    new_info = object.__new__
    # (one C call per node for the five fields: attribute lookups by name cost more one by one)
    for index, (inp, outp, attrs, op_type, domain) in enumerate(map(_NODE_FIELDS, node_list)):
        if index >= room:
            raise LimitExceededError("max-nodes", count_nodes(g.model), "--max-nodes", file=file)
        nid = base + index
        if domain:
            by_op = versions.get(domain)
            if by_op is None:
                by_op = versions[domain] = {}
        else:
            by_op = plain
        v = by_op.get(op_type)
        if v is None:
            cdomain = canonical_domain(domain)
            version = opsets.get(cdomain)
            sv = since_version(cdomain, op_type, version) if version is not None else None
            v = by_op[op_type] = (cdomain, sv, op_type)
        # (a slice first: protobuf copies a repeated field into a list in one call, faster than
        # the item-by-item iteration of tuple() over the field)
        inputs = tuple(inp[:])
        outputs = tuple(outp[:])
        # (NodeInfo's fields set here rather than by its __init__: a call frame fewer per node,
        # 6% of the index; tests/test_fast_paths.py compares the two)
        info = new_info(NodeInfo)
        info._proto, info._src, info.scope, info.index = None, node_list, sid, index
        info.domain, info.since_version, info.op_type = v
        info.inputs, info.outputs, info.subscopes, info.has_attrs = inputs, outputs, (), len(attrs) > 0
        add_node(info)
        for name in inputs:
            if name not in producer and name:
                late_add((name, nid))
        for name in outputs:
            if name:
                if name in producer:
                    raise GraphInvalidError(_dup_message(g, scope, name, producer[name], nid), file=file,
                                       node=g.display(nid), tensor=name)
                producer[name] = nid
            elif not empty_outputs or empty_outputs[-1] != nid:
                empty_outputs.append(nid)
        if attrs and (len(attrs) > 1 or attrs[0].type in _GRAPH_KINDS):
            room -= _index_attributes(g, scope, nid, attrs, pending)
            if index >= room:  # each body queued is a unit of --max-nodes too
                raise LimitExceededError("max-nodes", count_nodes(g.model), "--max-nodes", file=file)
    scope.nodes = list(range(base, len(nodes)))
    _first_late_reads(scope)


def count_nodes(model: onnx.ModelProto) -> int:
    """Nodes in every graph, subgraph and model-local function, plus the bodies of those subgraphs
    and functions (the --max-nodes count), with an explicit stack: only called once the limit is
    hit, to report the value."""
    total = len(model.functions)
    stack: list[Any] = [model.graph, *model.functions]
    graph_attr, graphs_attr = onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS
    while stack:
        body = stack.pop()
        total += len(body.node)
        for node in body.node:
            for attr in node.attribute:
                if attr.type == graph_attr:
                    stack.append(attr.g)
                    total += 1
                elif attr.type == graphs_attr:
                    stack.extend(attr.graphs)
                    total += len(attr.graphs)
    return total


_CONCAT_HINT = " (file may be concatenated models)"


def _define_inputs(scope: Scope, file: str) -> None:
    """Graph (or function) inputs are definitions too: one name, one definition (SSA)."""
    producer = scope.producer
    for name in scope.inputs:
        if name in producer:
            raise GraphInvalidError(f"'{name}' defined twice (graph input, graph input) in graph {scope.path}{_CONCAT_HINT}",
                               file=file, tensor=name)
        producer[name] = GRAPH_INPUT


def _dup_message(g: ModelGraph, scope: Scope, name: str, prev: int, nid: int) -> str:
    def who(p: int) -> str:
        if p == GRAPH_INPUT:
            return "graph input"
        if p == INITIALIZER:
            return "initializer"
        return f"{g.nodes[p].op_type} '{g.display(p)}'"

    hint = _CONCAT_HINT if prev >= 0 and g.nodes[prev].op_type == g.nodes[nid].op_type else ""
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
                        raise GraphInvalidError(
                            f"'{name}' in {scope.path} shadows a tensor of {s.path}", file=file, tensor=name
                        )
        # Only names read before any definition here can be undefined (see _index_scope); they are
        # in first-read order, with their first reader.
        for name, nid in scope.late:
            if name in scope.producer:
                continue
            if any(name in s.producer for s in outer):
                continue
            info = g.nodes[nid]
            raise GraphInvalidError(
                f"node '{g.display(nid)}' ({info.op_type}) in {scope.path} reads undefined tensor '{name}'",
                file=file, node=g.display(nid), tensor=name,
            )
        for name in scope.outputs:
            if not name:
                continue
            if name not in scope.producer and not any(name in s.producer for s in outer):
                what = "function" if scope.kind == "function" else "graph"
                raise GraphInvalidError(f"{what} output '{name}' of {scope.path} is never produced",
                                   file=file, tensor=name)


def _compute_free_names(g: ModelGraph) -> None:
    """Names each scope reads from outside itself; owner nodes depend on them (implicit inputs).

    Children are discovered after their parents, so walking scopes in reverse sees every child
    before its parent: no recursion."""
    children_free: dict[int, set[str]] = {}  # scope id -> free names of its subgraphs
    for scope in reversed(g.scopes):
        producer = scope.producer
        free: set[str] = set()
        for name, _ in scope.late:  # every name read here but not defined here is among these
            if name not in producer:
                free.add(name)
        for name in scope.outputs:
            if name and name not in producer:
                free.add(name)
        for name in children_free.pop(scope.id, ()):
            if name not in producer:
                free.add(name)
        scope.free = free
        if scope.owner is not None:
            parent = g.scopes[scope.parent]  # type: ignore[index]
            children_free.setdefault(parent.id, set()).update(free)
            owner = scope.owner
            for name in free:
                p = parent.producer.get(name)
                if p is not None:
                    parent._owner_reads.append((name, owner))  # the owner reads it (consumers)
                    if p >= owner:  # ... before it is produced
                        parent.sorted_in_file = False


def scope_edges(scope: Scope) -> Iterator[tuple[int, int]]:
    """(producer, reader) for every tensor one node of ``scope`` hands to another."""
    producer = scope.producer
    for name, readers in scope.consumers.items():
        p = producer.get(name)
        if p is not None and p >= 0:
            for r in readers:
                yield p, r


def _order_scope(g: ModelGraph, scope: Scope) -> None:
    """Find a topological order, keeping file order when it is one (the common case, known from
    indexing without building anything)."""
    if scope.sorted_in_file:
        scope.order = list(scope.nodes)
        return
    import networkx as nx  # only for graphs that are not sorted already

    position = {nid: k for k, nid in enumerate(scope.nodes)}
    sub = nx.DiGraph()
    sub.add_nodes_from(scope.nodes)
    sub.add_edges_from(scope_edges(scope))
    try:
        scope.order = list(nx.lexicographical_topological_sort(sub, key=lambda n: position[n]))
    except nx.NetworkXUnfeasible:
        cycle = nx.find_cycle(sub)
        names = [g.display(u) for u, _ in cycle] + [g.display(cycle[0][0])]
        raise GraphInvalidError(
            f"graph {scope.path} has a cycle: " + " → ".join(names), file=g.path, node=names[0]
        ) from None


def _check_function_cycles(g: ModelGraph) -> None:
    """A model-local function that calls itself, directly or through others, cannot be expanded."""
    if not g.functions:
        return
    import networkx as nx  # only for models with local functions

    calls = nx.DiGraph()
    for key, sid in g.functions.items():
        calls.add_node(key)
        stack = [sid]
        while stack:
            scope = g.scopes[stack.pop()]
            for nid in scope.nodes:
                info = g.nodes[nid]
                callee = (info.proto.domain, info.op_type)
                if callee in g.functions:
                    calls.add_edge(key, callee)
                stack.extend(info.subscopes)
    try:
        cycle = nx.find_cycle(calls)
    except nx.NetworkXNoCycle:
        return
    names = [f"{d}::{n}" for (d, n), _ in cycle] + [f"{cycle[0][0][0]}::{cycle[0][0][1]}"]
    raise GraphInvalidError("function cycle: " + " → ".join(names), file=g.path)
