"""The analysed model as a ``networkx.MultiDiGraph`` that users can query (``Analysis.to_networkx``).

``ModelGraph.dag`` is an index over bare node ids for the passes; this is the documented graph for
people: one node per ONNX node of every graph (main, If/Loop/Scan bodies, model-local functions),
one per graph input, initializer and graph output, and one edge per tensor handed from its
definition to a reader, with the inferred dtype, shape and (small) value on it.

Node keys are strings, stable across runs and tools: ``<graph path>/<node name>``, or
``<graph path>/#<index>`` for a node without a name (and for a second node of one name, or one whose
name starts with ``#``); ``<graph path>/input:<tensor>``, ``.../initializer:<tensor>`` and
``.../output:<tensor>`` for the graph's interface. Node attributes: ``kind`` (``node``, ``input``,
``initializer``, ``output``), ``name``, ``graph``; for ``node`` also ``op_type``, ``domain``,
``version`` (the since-version in force, absent when unknown) and ``index``; on Squeeze and
Unsqueeze ``axes`` (normalised and sorted, None when not known or invalid) and ``written_axes``
(the axes as the model writes them, invalid ones included; ``"none"`` when the node has none,
None when they are known only at run time); ``findings``
(diagnostic codes, on nodes that have any) and ``severity`` (the highest of them).

Edges go from the node (or input/initializer) that defines a tensor to each node that reads it,
keyed by the tensor's name, with ``tensor``, ``dtype`` (numpy's name or None), ``shape`` (a list of
ints, symbol texts such as ``"seq + 1"`` and None for unknown dims; None for unknown rank),
``value`` (the tensor's elements when inference knows them and there are at most
``MAX_VALUE_ON_EDGE``), ``declared_shape`` (the file's declaration of the tensor as written, only
where it states a dim that ``shape`` leaves unknown, as in the JSON output), ``slots`` (the
reader's input positions that take it) and ``outer``. A
subgraph that reads a tensor of an enclosing graph by name gets no edge of its own: the edge goes
to the node that owns the subgraph, with ``outer=True`` (and ``slots`` empty unless that node reads
the tensor directly as well).

GraphML has no lists and no None: ``graphml_safe`` makes a copy that GraphML can hold and
``from_graphml`` undoes it (see their docstrings).

Built only when asked for: infer (except ``--format dot|graphml``) and lint never call it, and
networkx itself is imported on the first call.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Callable, Iterable, Mapping

from ..dims import dim_to_json, shape_to_json
from ..facts import AXES_ABSENT
from ..graph import GRAPH_INPUT, INITIALIZER

if TYPE_CHECKING:
    import networkx as nx

    from .analysis import Analysis

# Values longer than this stay off the edges: shape vectors and axes fit, weights never do.
MAX_VALUE_ON_EDGE = 64

KIND_NODE = "node"
KIND_INPUT = "input"
KIND_INITIALIZER = "initializer"
KIND_OUTPUT = "output"

_MISSING: object = object()
_SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}

# Graph attribute naming the attributes that graphml_safe stored as JSON text, per element kind.
JSON_ATTRS_KEY = "shapeflow_json_attrs"


def interface_key(path: str, kind: str, tensor: str) -> str:
    """The key of a graph's input, initializer or output node."""
    return f"{path}/{kind}:{tensor}"


def node_keys(analysis: "Analysis") -> list[str]:
    """The key of every ONNX node, by node id (see the module docstring for the rule)."""
    graph = analysis.graph
    keys: list[str] = [""] * len(graph.nodes)
    for scope in graph.scopes:
        path = scope.path
        taken: set[str] = set()
        for nid in scope.nodes:
            info = graph.nodes[nid]
            name = info.peek().name
            key = f"{path}/{name}"
            if not name or name.startswith("#") or key in taken:
                key = f"{path}/#{info.index}"
            taken.add(key)
            keys[nid] = key
    return keys


def to_networkx(analysis: "Analysis") -> "nx.MultiDiGraph":
    """The model of ``analysis`` as a MultiDiGraph (see the module docstring)."""
    import networkx as nx

    from .analysis import dtype_name, gc_paused
    from ..opsets import opset_map

    inference = analysis.inference
    g = nx.MultiDiGraph(model=analysis.path, opset=opset_map(analysis.loaded.proto.opset_import))
    keys = node_keys(analysis)

    # Each distinct shape (inference shares one tuple per shape) and value converted once: the
    # text of a symbolic dim is most of the cost on a large model. The analysis keeps the tuples
    # alive meanwhile, so identity is a good key. Edges of one tensor get copies of the lists.
    shapes: dict[int, list[object] | None] = {}
    values: dict[int, list[object]] = {}
    dtypes: dict[int, str | None] = {}
    declared = analysis.declared

    def tensor_attrs(sid: int, name: str) -> dict[str, object]:
        t = inference.lookup(sid, name)
        written = declared.get((sid, name)) if declared else None
        if t is None:
            attrs0: dict[str, object] = {"tensor": name, "dtype": None, "shape": None}
            if written is not None:
                attrs0["declared_shape"] = list(written)
            return attrs0
        shape = shapes.get(id(t.shape), _MISSING)
        if shape is _MISSING:
            shape = shapes[id(t.shape)] = shape_to_json(t.shape)
        dtype = dtypes.get(t.dtype, _MISSING)
        if dtype is _MISSING:
            dtype = dtypes[t.dtype] = dtype_name(t.dtype)
        attrs: dict[str, object] = {"tensor": name, "dtype": dtype, "shape": list(shape) if isinstance(shape, list) else None}
        if written is not None:
            attrs["declared_shape"] = list(written)
        value = t.value
        if value is not None and len(value) <= MAX_VALUE_ON_EDGE:
            known = values.get(id(value))
            if known is None:
                known = values[id(value)] = [dim_to_json(v) for v in value]
            attrs["value"] = list(known)
        return attrs

    with gc_paused():  # a few objects per node and edge, none in a cycle: no collection needed
        _fill(g, analysis, keys, tensor_attrs)
    return g


def _fill(g: "nx.MultiDiGraph", analysis: "Analysis", keys: list[str],
          tensor_attrs: "Callable[[int, str], dict[str, object]]") -> None:
    graph, inference = analysis.graph, analysis.inference

    for scope in graph.scopes:
        path, sid = scope.path, scope.id
        # Interface nodes first: a tensor both input and initializer (IR < 4, the initializer is
        # the input's default) is one input node marked ``initializer``.
        sources: dict[str, str] = {}
        for name in scope.inputs:
            key = interface_key(path, KIND_INPUT, name)
            g.add_node(key, kind=KIND_INPUT, name=name, graph=path,
                       **({"initializer": True} if scope.producer.get(name) == INITIALIZER else {}))
            sources[name] = key
        for name, p in scope.producer.items():
            if p == INITIALIZER and name not in sources:
                key = interface_key(path, KIND_INITIALIZER, name)
                g.add_node(key, kind=KIND_INITIALIZER, name=name, graph=path)
                sources[name] = key
        for nid in scope.nodes:
            info = graph.nodes[nid]
            attrs: dict[str, object] = {"kind": KIND_NODE, "name": info.peek().name, "graph": path,
                                        "op_type": info.op_type, "domain": info.domain, "index": info.index}
            if info.since_version is not None:
                attrs["version"] = info.since_version
            g.add_node(keys[nid], **attrs)

        for nid in scope.nodes:
            info = graph.nodes[nid]
            reader = keys[nid]
            for slot, name in enumerate(info.inputs):
                if not name:
                    continue
                src = _source(scope.producer, sources, keys, name)
                if src is None:  # read from an enclosing graph: the owner's outer edge stands for it
                    continue
                if g.has_edge(src, reader, name):
                    g.edges[src, reader, name]["slots"].append(slot)
                else:
                    g.add_edge(src, reader, key=name, **tensor_attrs(sid, name), slots=[slot], outer=False)
        for name in scope.outputs:
            if not name:
                continue
            key = interface_key(path, KIND_OUTPUT, name)
            g.add_node(key, kind=KIND_OUTPUT, name=name, graph=path)
            src = _source(scope.producer, sources, keys, name)
            if src is not None:
                g.add_edge(src, key, key=name, **tensor_attrs(sid, name), slots=[], outer=False)
        # A subgraph's reads of this scope's tensors: edges to the node that owns it.
        if scope.owner is not None and scope.parent is not None:
            parent = graph.scopes[scope.parent]
            owner = keys[scope.owner]
            for name in sorted(scope.free):
                found = parent.producer.get(name)
                if found is None:
                    continue  # defined further out: the parent's own owner carries the edge
                src = keys[found] if found >= 0 else interface_key(
                    parent.path, KIND_INPUT if name in parent.inputs else KIND_INITIALIZER, name)
                if g.has_edge(src, owner, name):
                    g.edges[src, owner, name]["outer"] = True
                else:
                    g.add_edge(src, owner, key=name, **tensor_attrs(parent.id, name), slots=[], outer=True)

    for fact in inference.axis_nodes:  # Squeeze/Unsqueeze: the axes as inference normalised them
        key = keys[fact.nid]
        if key in g:
            g.nodes[key]["axes"] = list(fact.normalized) if fact.normalized is not None else None
            # and as written: a picture must show the axes of the node whose axes are wrong
            written = fact.axes.values
            g.nodes[key]["written_axes"] = (list(written) if written is not None
                                            else "none" if fact.axes.source == AXES_ABSENT else None)
    _add_findings(g, analysis, keys)


def _source(producer: Mapping[str, int], sources: Mapping[str, str], keys: list[str], name: str) -> str | None:
    """The key of what defines ``name`` in a scope (None: an enclosing scope does)."""
    p = producer.get(name)
    if p is None:
        return None
    if p >= 0:
        return keys[p]
    return sources.get(name) if p in (GRAPH_INPUT, INITIALIZER) else None


def _add_findings(g: "nx.MultiDiGraph", analysis: "Analysis", keys: list[str]) -> None:
    graph = analysis.graph
    where: dict[tuple[str, str], str] = {}
    for nid, key in enumerate(keys):
        where.setdefault((graph.scopes[graph.nodes[nid].scope].path, graph.display(nid)), key)
    paths = {scope.path: scope for scope in graph.scopes}
    for d in analysis.diagnostics:
        loc = d.location
        found: str | None = None
        if loc.node is not None:
            found = where.get((loc.graph, loc.node))
        elif loc.tensor is not None and loc.graph in paths:
            # a tensor's finding (a declared shape that contradicts inference) is on its producer
            scope = paths[loc.graph]
            p = scope.producer.get(loc.tensor)
            if p is not None and p >= 0:
                found = keys[p]
            elif p == GRAPH_INPUT:
                found = interface_key(loc.graph, KIND_INPUT, loc.tensor)
        if found is None or found not in g:
            continue
        attrs = g.nodes[found]
        codes = attrs.setdefault("findings", [])
        if d.code not in codes:
            codes.append(d.code)
        sev = d.severity.value
        if _SEVERITY_RANK[sev] > _SEVERITY_RANK.get(attrs.get("severity", ""), -1):
            attrs["severity"] = sev


# -- GraphML ----------------------------------------------------------------------------------------

_SCALARS = (bool, int, float, str)
# Characters XML 1.0 cannot hold at all, not even as character references (a model's names may
# have them: names are input, and networkx would write a document no parser reads), and those an
# XML parser does not give back as written (a carriage return becomes a line feed, and in an
# attribute, where GraphML keeps ids, tab and line feed become spaces).
_XML_UNSAFE = re.compile("[\x00-\x1f\ud800-\udfff\ufffe\uffff]")
# A string that had to be escaped starts with this private-use character, then holds its JSON
# text (ASCII, no quotes around it); a string that starts with it is escaped too, so the mark
# never appears by accident and ``_from_xml_text`` undoes ``_xml_text`` exactly.
_ESCAPED = "\ue000"


def _xml_text(value: object) -> object:
    """A string XML can carry and give back unchanged: as it is when it can, else escaped."""
    if isinstance(value, str) and (_XML_UNSAFE.search(value) or value.startswith(_ESCAPED)):
        return _ESCAPED + json.dumps(value, ensure_ascii=True)[1:-1]
    return value


def _from_xml_text(value: object) -> object:
    if isinstance(value, str) and value.startswith(_ESCAPED):
        try:
            return json.loads('"' + value[1:] + '"')
        except ValueError:
            return value
    return value


def _json_names(items: Iterable[Mapping[str, object]]) -> list[str]:
    """Attribute names whose values are not all of one GraphML scalar type."""
    types: dict[str, set[type]] = {}
    for attrs in items:
        for k, v in attrs.items():
            types.setdefault(k, set()).add(type(v))
    return sorted(k for k, ts in types.items() if len(ts) != 1 or next(iter(ts)) not in _SCALARS)


def graphml_safe(g: "nx.MultiDiGraph") -> "nx.MultiDiGraph":
    """A copy of ``g`` that ``networkx.write_graphml`` can write and read back without loss.

    GraphML attributes are typed scalars (string, int, double, boolean), one type per attribute
    name. An attribute is left as it is when every value it takes (on nodes, on edges, or on the
    graph) is a scalar of one type; otherwise every one of its values is written as JSON text
    (``[1, "batch"]``, ``null``), and the graph attribute ``shapeflow_json_attrs`` lists those
    names as JSON, e.g. ``{"node": ["findings"], "edge": ["dtype", "shape", "slots", "value"],
    "graph": ["opset"]}``. ``from_graphml`` decodes them.

    Nothing is lost: a key or string attribute holding a character XML cannot carry (a control
    character in a node or tensor name of a hostile model) is written as ``\\ue000`` and its JSON
    text, which ``from_graphml`` decodes; JSON-valued attributes escape them themselves."""
    import networkx as nx

    node_json = _json_names(a for _, a in g.nodes(data=True))
    edge_json = _json_names(a for _, _, a in g.edges(data=True))
    graph_json = _json_names([g.graph])
    out = nx.MultiDiGraph()

    def enc(attrs: Mapping[str, object], names: list[str]) -> dict[str, object]:
        return {k: (json.dumps(v) if k in names else _xml_text(v)) for k, v in attrs.items()}

    out.graph.update(enc(g.graph, graph_json))
    out.graph[JSON_ATTRS_KEY] = json.dumps({"node": node_json, "edge": edge_json, "graph": graph_json})
    for n, a in g.nodes(data=True):
        out.add_node(_xml_text(n), **enc(a, node_json))
    for u, v, k, a in g.edges(keys=True, data=True):
        out.add_edge(_xml_text(u), _xml_text(v), key=_xml_text(k), **enc(a, edge_json))
    return out


def from_graphml(g: "nx.MultiDiGraph") -> "nx.MultiDiGraph":
    """Undo ``graphml_safe`` on a graph read back with ``networkx.read_graphml`` (edge keys as
    written: ``read_graphml(path, force_multigraph=True)``); a graph without the marker is
    returned as it is."""
    import networkx as nx

    marker = g.graph.get(JSON_ATTRS_KEY)
    if not isinstance(marker, str):
        return g
    names = json.loads(marker)
    out = nx.MultiDiGraph()

    def dec(attrs: Mapping[str, object], which: str) -> dict[str, object]:
        return {k: (json.loads(v) if k in names[which] and isinstance(v, str) else _from_xml_text(v))
                for k, v in attrs.items()}

    # (read_graphml adds the GraphML defaults as ``node_default`` / ``edge_default`` dicts)
    kept = {k: v for k, v in g.graph.items()
            if k != JSON_ATTRS_KEY and not (k in ("node_default", "edge_default") and isinstance(v, dict))}
    out.graph.update(dec(kept, "graph"))
    for n, a in g.nodes(data=True):
        out.add_node(_from_xml_text(n), **dec(a, "node"))
    for u, v, k, a in g.edges(keys=True, data=True):
        out.add_edge(_from_xml_text(u), _from_xml_text(v), key=_from_xml_text(k), **dec(a, "edge"))
    return out


def graphml_text(g: "nx.MultiDiGraph") -> str:
    """``g`` as a GraphML document (through ``graphml_safe``)."""
    import networkx as nx

    return "\n".join(nx.generate_graphml(graphml_safe(g))) + "\n"
