"""``optimize --diff``: each rewrite as the nodes it replaced and the nodes that replaced them, with
the shapes of the tensors they read and write.

Computed from the two models alone, not from the passes' internals: both are analysed, and a node
of the original that has no identical node in the same graph of the optimized model (same name,
op, inputs, outputs and attributes; subgraph bodies aside) was removed or changed, while one of
the optimized model that has no twin in the original was added or changed. Initializers the
optimized model adds (folded constants) count as added. The changed nodes of one graph are grouped
by the tensors they produce: two of them belong to one rewrite when one writes a tensor the other
reads or both write the same tensor. Tensors they only read (the activation three Shape nodes
look at) do not join rewrites. The rule names come from optimize's log lines, matched by the node
names the lines quote.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from .._onnx import onnx
from .analysis import Analysis, analyze, dtype_name
from ..dims import dim_to_json, shape_to_json
from ..errors import display_path
from ..io import load_model_bytes
from ..limits import DEFAULT_LIMITS, Limits

# known values up to this many elements are shown (axes, shape vectors, folded constants)
MAX_VALUE_SHOWN = 8
DIGEST_CHARS = 16  # of a tensor's SHA-256: enough to tell two weights apart in a diff
KIND_NODE = "node"
KIND_INITIALIZER = "initializer"


@dataclass(frozen=True)
class TensorView:
    tensor: str
    dtype: str | None
    shape: list[int | str | None] | None
    value: list[int | str | None] | None = None
    digest: str | None = None  # an initializer's: the SHA-256 of its stored bytes (never its values)

    def to_json(self) -> dict[str, object]:
        doc: dict[str, object] = {"tensor": self.tensor, "dtype": self.dtype, "shape": self.shape}
        if self.value is not None:
            doc["value"] = self.value
        if self.digest is not None:
            doc["digest"] = self.digest
        return doc

    def text(self) -> str:
        shape = "?" if self.shape is None else "[" + ", ".join("?" if d is None else str(d) for d in self.shape) + "]"
        value = "" if self.value is None else " = [" + ", ".join("?" if v is None else str(v) for v in self.value) + "]"
        digest = "" if self.digest is None else f" sha256:{self.digest}"
        return f"{self.tensor} {shape}{value}{digest}"


@dataclass(frozen=True)
class ChangedNode:
    kind: str  # "node" | "initializer"
    name: str
    op_type: str | None
    inputs: tuple[TensorView, ...]
    outputs: tuple[TensorView, ...]
    # the node's int, float and string attributes (axes, Shape's start/end, ...); no tensors, no graphs
    attributes: dict[str, object] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "name": self.name, "op_type": self.op_type, "attributes": self.attributes,
                "inputs": [t.to_json() for t in self.inputs], "outputs": [t.to_json() for t in self.outputs]}

    def text(self) -> str:
        if self.kind == KIND_INITIALIZER:
            t = self.outputs[0]
            return f"initializer {t.dtype or '?'} {t.text()}"
        ins = ", ".join(t.text() for t in self.inputs)
        outs = ", ".join(t.text() for t in self.outputs)
        attrs = "(" + ", ".join(f"{k}={v}" for k, v in self.attributes.items()) + ")" if self.attributes else ""
        return f"{self.op_type}{attrs} '{self.name}': {ins + ' ' if ins else ''}-> {outs}"


@dataclass
class Rewrite:
    graph: str
    rules: list[str] = field(default_factory=list)
    before: list[ChangedNode] = field(default_factory=list)
    after: list[ChangedNode] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {"graph": self.graph, "rules": self.rules, "before": [n.to_json() for n in self.before],
                "after": [n.to_json() for n in self.after]}


def _stored(t: onnx.TensorProto) -> bytes:
    """A tensor's stored data: its raw bytes, or its typed fields (and, for external data, its
    reference: the bytes beside the model are never read), without its name."""
    if t.HasField("raw_data"):
        return bytes(t.raw_data)
    copy = onnx.TensorProto()
    copy.CopyFrom(t)
    copy.ClearField("name")
    copy.ClearField("doc_string")
    return bytes(copy.SerializeToString(deterministic=True))


def tensor_digest(t: onnx.TensorProto) -> str:
    """The SHA-256 of a tensor's stored data (``_stored``), its first ``DIGEST_CHARS`` hex digits."""
    return hashlib.sha256(_stored(t)).hexdigest()[:DIGEST_CHARS]


def _elements(t: onnx.TensorProto) -> int:
    n = 1
    for d in t.dims:
        n *= max(int(d), 0)
    return n


def _summarized(t: onnx.TensorProto) -> None:
    """Replace ``t``'s data (in place) by its digest and size, written as an external-data
    reference, which ``onnx.printer`` prints as ``["sha256": ..., "bytes": ...]``. Tensors of at
    most ``MAX_VALUE_SHOWN`` elements (axes, shape vectors) and external ones are left as they are."""
    if t.data_location == onnx.TensorProto.EXTERNAL or _elements(t) <= MAX_VALUE_SHOWN:
        return
    data = _stored(t)
    digest, size = hashlib.sha256(data).hexdigest()[:DIGEST_CHARS], len(data)
    for name in ("raw_data", "float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data"):
        t.ClearField(name)
    t.data_location = onnx.TensorProto.EXTERNAL
    for key, value in (("sha256", digest), ("bytes", str(size))):
        entry = t.external_data.add()
        entry.key, entry.value = key, value


def summarized_text(model: onnx.ModelProto) -> str:
    """``onnx.printer``'s text of ``model`` with every initializer and tensor attribute of more
    than ``MAX_VALUE_SHOWN`` elements summarised (dtype, dims, digest, size), never dumped: the
    text ``lint --fix --diff`` compares. ``model`` itself is not changed."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    A = onnx.AttributeProto
    graphs: list[onnx.GraphProto] = [copy.graph]
    nodes: list[onnx.NodeProto] = [n for f in copy.functions for n in f.node]
    while graphs or nodes:  # a worklist over graphs and nodes: no recursion over nesting depth
        if graphs:
            g = graphs.pop()
            for t in g.initializer:
                _summarized(t)
            for sp in g.sparse_initializer:
                _summarized(sp.values)
                _summarized(sp.indices)
            nodes.extend(g.node)
            continue
        node = nodes.pop()
        for attr in node.attribute:
            if attr.type == A.TENSOR:
                _summarized(attr.t)
            elif attr.type == A.TENSORS:
                for t in attr.tensors:
                    _summarized(t)
            elif attr.type == A.SPARSE_TENSOR:
                _summarized(attr.sparse_tensor.values)
                _summarized(attr.sparse_tensor.indices)
            elif attr.type == A.GRAPH:
                graphs.append(attr.g)
            elif attr.type == A.GRAPHS:
                graphs.extend(attr.graphs)
    return "\n".join(_one_per_line(line) for line in onnx.printer.to_text(copy).split("\n"))


def _one_per_line(line: str) -> str:
    """A graph's initializer list, which the printer writes on one line (``<float[2] a = ...,
    int64[1] b = ...>``), one initializer a line, so that a diff names the ones that changed."""
    body = line.strip()
    if len(body) < 3 or body[0] != "<" or body[-1] != ">":
        return line
    indent = line[:len(line) - len(line.lstrip())]
    parts: list[str] = []
    depth, quoted, start, k = 0, False, 1, 1
    inner = body[:-1]
    while k < len(inner):
        c = inner[k]
        if quoted:
            if c == "\\":
                k += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
        elif c in "[{(<":
            depth += 1
        elif c in "]})>":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(inner[start:k].strip())
            start = k + 1
        k += 1
    parts.append(inner[start:].strip())
    if len(parts) < 2:
        return line
    return f"{indent}<\n" + ",\n".join(f"{indent}   {p}" for p in parts) + f"\n{indent}>"


def _comparable(node: onnx.NodeProto) -> bytes:
    """The node's bytes without its subgraph bodies (a body's own nodes are compared in its graph)."""
    graph_kinds = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
    if any(a.type in graph_kinds for a in node.attribute):
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        kept = [a for a in copy.attribute if a.type not in graph_kinds]
        del copy.attribute[:]
        copy.attribute.extend(kept)
        node = copy
    return bytes(node.SerializeToString(deterministic=True))


@dataclass
class _Item:
    side: int  # 0 before, 1 after
    order: int  # position in its graph's topological order (initializers first)
    node: ChangedNode
    reads: tuple[str, ...]
    writes: tuple[str, ...]


def _attributes(node: onnx.NodeProto) -> dict[str, object]:
    out: dict[str, object] = {}
    A = onnx.AttributeProto
    for attr in node.attribute:
        if attr.type == A.INT:
            out[attr.name] = attr.i
        elif attr.type == A.INTS:
            out[attr.name] = list(attr.ints)
        elif attr.type == A.FLOAT:
            out[attr.name] = attr.f
        elif attr.type == A.STRING:
            out[attr.name] = attr.s.decode("utf-8", "backslashreplace")
    return out


def _view(a: Analysis, sid: int, name: str) -> TensorView:
    t = a.inference.lookup(sid, name)
    if t is None:
        return TensorView(name, None, None)
    value = None
    if t.value is not None and len(t.value) <= MAX_VALUE_SHOWN:
        value = [dim_to_json(v) for v in t.value]
    return TensorView(name, dtype_name(t.dtype), shape_to_json(t.shape), value)


def _items(a: Analysis, b: Analysis, side: int, path: str) -> list[_Item]:
    """The nodes of graph ``path`` of ``a`` without an identical twin in ``b`` (and, for the
    optimized side, the initializers ``b`` lacks)."""
    scope = next(s for s in a.graph.scopes if s.path == path)
    other = next((s for s in b.graph.scopes if s.path == path), None)
    twins: dict[bytes, int] = {}
    if other is not None:
        for nid in other.nodes:
            key = _comparable(b.graph.nodes[nid].peek())
            twins[key] = twins.get(key, 0) + 1
    out: list[_Item] = []
    if side == 1:
        known = set(other.initializers) if other is not None else set()
        for k, name in enumerate(n for n in scope.initializers if n not in known):
            view = _view(a, scope.id, name)
            view = TensorView(view.tensor, view.dtype, view.shape, view.value, tensor_digest(scope.initializers[name]))
            out.append(_Item(side, -1 - k, ChangedNode(KIND_INITIALIZER, name, None, (), (view,)), (), (name,)))
    position = {nid: k for k, nid in enumerate(scope.order)}
    for nid in scope.nodes:
        node = a.graph.nodes[nid].peek()
        key = _comparable(node)
        if twins.get(key, 0):
            twins[key] -= 1
            continue
        ins = tuple(n for n in node.input if n)
        outs = tuple(n for n in node.output if n)
        changed = ChangedNode(KIND_NODE, node.name or f"#{a.graph.nodes[nid].index}", node.op_type,
                              tuple(_view(a, scope.id, n) for n in ins), tuple(_view(a, scope.id, n) for n in outs),
                              _attributes(node) if node.op_type != "Constant" else {})
        out.append(_Item(side, position[nid], changed, ins, outs))
    return out


def _group(items: list[_Item]) -> list[list[_Item]]:
    """Union-find over nodes that hand a tensor to one another or write the same one. A new
    initializer joins the node that wrote its tensor before (a folded constant) or else its first
    reader: optimize shares one initializer among rewrites, which must not merge them."""
    parent = list(range(len(items)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(i: int, j: int) -> None:
        ri, rj = find(i), find(j)
        if ri != rj:
            parent[ri] = rj

    writers: dict[str, list[int]] = {}
    readers: dict[str, list[int]] = {}
    for i, item in enumerate(items):
        if item.node.kind == KIND_NODE:
            for name in item.writes:
                writers.setdefault(name, []).append(i)
            for name in item.reads:
                readers.setdefault(name, []).append(i)
    for i, item in enumerate(items):
        if item.node.kind == KIND_NODE:
            for name in (*item.reads, *item.writes):
                for j in writers.get(name, ()):
                    union(i, j)
    for i, item in enumerate(items):
        if item.node.kind == KIND_INITIALIZER:
            name = item.writes[0]
            near = writers.get(name) or readers.get(name)
            if near:
                union(i, min(near, key=lambda j: (items[j].side, items[j].order)))
    groups: dict[int, list[int]] = {}
    for i in range(len(items)):
        groups.setdefault(find(i), []).append(i)
    return [[items[i] for i in members] for members in groups.values()]


_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'")


def _rule_names(log: Sequence[str]) -> dict[str, list[str]]:
    """node name -> the rules whose log lines quote it (in log order)."""
    out: dict[str, list[str]] = {}
    for line in log:
        rule = line.split(":", 1)[0]
        for name in _QUOTED.findall(line):
            rules = out.setdefault(name, [])
            if rule not in rules:
                rules.append(rule)
    return out


def rewrites_between(original: Analysis, optimized: Analysis, log: Sequence[str] = ()) -> list[Rewrite]:
    """The rewrites that turned ``original`` into ``optimized``, graph by graph, each graph's in the
    order of their first node in the original."""
    by_name = _rule_names(log)
    out: list[Rewrite] = []
    paths = [s.path for s in original.graph.scopes]
    for path in paths:
        items = _items(original, optimized, 0, path)
        if any(s.path == path for s in optimized.graph.scopes):
            items += _items(optimized, original, 1, path)
        groups = _group(items)
        groups.sort(key=lambda g: min((it.side, it.order) for it in g))
        for group in groups:
            before = sorted((it for it in group if it.side == 0), key=lambda it: it.order)
            after = sorted((it for it in group if it.side == 1), key=lambda it: it.order)
            rules: list[str] = []
            for it in before:
                for rule in by_name.get(it.node.name, ()):
                    if rule not in rules:
                        rules.append(rule)
            # dead-nodes sweeps what the others leave: named only when it is all that happened
            if len(rules) > 1 and "dead-nodes" in rules:
                rules.remove("dead-nodes")
            out.append(Rewrite(path, rules, [it.node for it in before], [it.node for it in after]))
    return out


def optimize_diff(original_bytes: bytes, optimized: onnx.ModelProto, path: str, log: Sequence[str] = (),
                  limits: Limits = DEFAULT_LIMITS) -> list[Rewrite]:
    """``rewrites_between`` for a model file's bytes and what ``optimize_model`` made of it."""
    a = analyze(load_model_bytes(original_bytes, path, limits), limits=limits, rules=[])
    b = analyze(load_model_bytes(optimized.SerializeToString(), path, limits), limits=limits, rules=[])
    return rewrites_between(a, b, log)


def diff_text(rewrites: Iterable[Rewrite]) -> str:
    """``optimize --diff`` in text: per rewrite, the nodes before and after."""
    lines: list[str] = []
    for k, r in enumerate(rewrites, 1):
        where = "" if r.graph == "main" else f" in {r.graph}"
        lines.append(f"rewrite {k}{where}: {', '.join(r.rules) or 'rewritten'}")
        lines.append("  before:")
        lines.extend(f"    {n.text()}" for n in r.before)
        lines.append("  after:")
        lines.extend(f"    {n.text()}" for n in r.after or [])
        if not r.after:
            lines.append("    (no node)")
    return "\n".join(line if line.isprintable() else display_path(line) for line in lines)
