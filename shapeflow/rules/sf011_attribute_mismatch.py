from __future__ import annotations

from typing import Any, Iterator

from .._onnx import onnx
from .base import Finding, LintContext, Rule
from .loadtime import AXIS_OPS, live_scopes, node_signatures

_A = onnx.AttributeProto
# the value field of each attribute type, and the type each field belongs to
_FIELD_TYPE = {
    "f": _A.FLOAT, "i": _A.INT, "s": _A.STRING, "t": _A.TENSOR, "g": _A.GRAPH, "sparse_tensor": _A.SPARSE_TENSOR,
    "tp": _A.TYPE_PROTO, "floats": _A.FLOATS, "ints": _A.INTS, "strings": _A.STRINGS, "tensors": _A.TENSORS,
    "graphs": _A.GRAPHS, "sparse_tensors": _A.SPARSE_TENSORS, "type_protos": _A.TYPE_PROTOS,
}


def type_label(kind: int) -> str:
    try:
        return str(_A.AttributeType.Name(kind))
    except ValueError:
        return f"type {kind}"


# Whether SF011 keeps its memos of the attributes and of the nodes found fine
# (tests/test_fast_paths.py compares the findings with and without them), and the largest
# attribute it keeps: a tensor attribute's bytes are asked for only when the tensor is at most
# this large, the others are numbers and short lists.
MEMO = True
MEMO_MAX_BYTES = 256
_BULKY = frozenset({_A.GRAPH, _A.GRAPHS, _A.TENSORS, _A.SPARSE_TENSOR, _A.SPARSE_TENSORS, _A.TYPE_PROTO,
                    _A.TYPE_PROTOS})


def _memo_key(sig: object, attr: onnx.AttributeProto) -> tuple[int, bytes] | None:
    """The memo key of ``attr`` under the signature ``sig``: None for one that may be large."""
    kind = attr.type
    if kind in _BULKY or (kind == _A.TENSOR and attr.t.ByteSize() > MEMO_MAX_BYTES):
        return None
    data = attr.SerializeToString()
    return (id(sig), data) if len(data) <= MEMO_MAX_BYTES else None


class AttributeMismatch(Rule):
    """Flags a node whose attributes do not match its operator's schema.

    ## What it does
    Checks every node of a standard domain (ai.onnx, ai.onnx.ml, training) against the schema of
    the operator version it runs, as onnxruntime does when it creates a session: an attribute the
    operator does not have, an attribute of another type than the schema's (an ``axis`` written as
    a float, an attribute whose type field is missing or UNDEFINED, or whose value sits in the
    field of another type), and a required attribute that is missing. Nodes of function bodies are
    checked where the function is called. Squeeze and Unsqueeze attributes are SF108's and SF117's.

    ## Why is this bad?
    onnxruntime refuses to load the model ("Unrecognized attribute", "Mismatched attribute type",
    "Required attribute 'axis' is missing"). Other readers guess: a missing Concat ``axis`` reads
    as 0 in one tool and fails in another, and an attribute of a newer opset (a ReduceMean ``axes``
    attribute at opset 18, a Shape ``start`` at opset 13) is silently ignored by some.

    ## Example
    ``y = Concat(a, b)`` with no ``axis``; ``y = Relu(x) alpha=0.1``; ``ReduceMean(x) axes=[1]`` at
    opset 18, where the axes are an input.

    ## Fix
    Write the attribute the operator version defines, with its type (``axis=1``, not ``axis=1.0``);
    move attributes that became inputs in a newer opset into inputs, or convert the model with
    ``onnx.version_converter``.
    """

    code = "SF011"

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        g = ctx.graph
        live = live_scopes(ctx)
        sigs = node_signatures(ctx)
        check_type = g.model.ir_version >= 2
        field_type = _FIELD_TYPE
        # (signature id, the attribute's bytes) -> its name, for the attributes found fine in the
        # common case below: a model repeats a few (``axis=0``, ``to=7``) thousands of times, and
        # their bytes cost less to read than their fields. Small ones only (MEMO_MAX_BYTES).
        fine: dict[tuple[int, bytes], str] = {}
        # A node's findings follow from its signature and its attributes' bytes alone. Inference
        # read the bytes of most attributed nodes already: its memo key ends with them, and the
        # nodes answered from one memo entry share one key object (``Inference.memo_keys``). A
        # node whose signature and key object are those of a node found fine is fine, unread.
        keys = ctx.inference.memo_keys if MEMO else {}
        fine_nodes: set[tuple[int, int] | None] = set()
        for nid, info in enumerate(g.nodes):
            sig = sigs[nid]
            if sig is None or (not info.has_attrs and not sig.required):
                continue  # (most nodes: no attribute to read, none required)
            if not live[info.scope] or sig.deprecated or (info.domain == "" and info.op_type in AXIS_OPS):
                continue
            key_object = keys.get(nid) if info.has_attrs else None
            node_key = None if key_object is None else (id(sig), id(key_object))
            if node_key is not None:
                if node_key in fine_nodes:
                    continue
                fine_nodes.add(node_key)  # (taken back below if the node has a finding)
            seen: set[str] = set()
            if info.has_attrs:
                spec = sig.attributes
                for attr in info.peek().attribute[:]:  # (a slice is cheaper than iterating the field)
                    key = _memo_key(sig, attr) if MEMO else None
                    if key is not None:
                        known = fine.get(key)
                        if known is not None:
                            seen.add(known)  # (a second copy is SF009's, and fine here too)
                            continue
                    name = attr.name
                    if name in seen:
                        continue  # a second copy: SF009's
                    seen.add(name)
                    expected = spec.get(name)
                    fields = attr.ListFields()
                    # the common case, read once: [name, its one value, type], of the schema's type
                    if (expected is not None and len(fields) == 3 and attr.type == expected[0]
                            and field_type.get(fields[1][0].name) == expected[0]):
                        if key is not None:
                            fine[key] = name
                        continue
                    problem = self._problem(attr, fields, expected, check_type,
                                            sig.unchecked_attributes or name.startswith("__"), sig.label)
                    if problem is not None:
                        fine_nodes.discard(node_key)
                        yield Finding(ctx.location_of(nid), *problem)
            for name, kind in sig.required:
                if name not in seen:
                    fine_nodes.discard(node_key)
                    yield Finding(ctx.location_of(nid), f"{sig.label} requires attribute '{name}' "
                                  f"({type_label(kind)}), which the node does not have",
                                  f"add the '{name}' attribute")

    @staticmethod
    def _problem(attr: onnx.AttributeProto, fields: list[Any], expected: tuple[int, bool] | None, check_type: bool,
                 unchecked: bool, label: str) -> tuple[str, str] | None:
        name = attr.name
        if not name:
            return "an attribute has an empty name", "name the attribute or remove it"
        if check_type and not attr.HasField("type"):
            return f"attribute '{name}' has no type", f"set the attribute's type ({label})"
        used = [f.name for f, _ in fields if f.name in _FIELD_TYPE]
        for field in used:
            if attr.type != _FIELD_TYPE[field]:
                return (f"attribute '{name}' is of type {type_label(attr.type)} but holds a value of type "
                        f"{type_label(_FIELD_TYPE[field])}", "make the type and the value agree")
        if len(used) > 1:
            return f"attribute '{name}' holds more than one value", "keep one value field"
        if expected is None:
            if unchecked:
                return None
            return (f"{label} has no attribute '{name}'",
                    "remove it, or convert the node to the opset that defines it")
        if attr.type != expected[0]:
            return (f"attribute '{name}' is {type_label(attr.type)}; {label} takes {type_label(expected[0])}",
                    f"write '{name}' as {type_label(expected[0])}")
        return None
