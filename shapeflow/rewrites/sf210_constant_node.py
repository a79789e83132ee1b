"""Constant nodes of the main graph become initializers (SPEC.md section 4).

Termination: each rewrite deletes a node and adds an initializer, never a node; nothing turns an
initializer back into a node (fold-known-value makes Constant nodes only where this rule does not
fire: graph outputs and function bodies).
"""

from __future__ import annotations

from .. import codes
from .._onnx import onnx
from .base import Match, NoMatch, Result, RewriteRule, RoundContext, not_applicable
from .edit import Editor

TensorProto = onnx.TensorProto
AttributeProto = onnx.AttributeProto

_NOT_MAIN = not_applicable("a Constant in a subgraph or function body stays a node")
_OLD_IR = not_applicable("below IR version 4 every initializer must also be a graph input")


# The value attributes a Constant may have, with the attribute type each needs (sparse_value is
# left alone: an initializer of the main graph cannot be sparse).
_VALUE_ATTRS = {
    "value": AttributeProto.TENSOR, "value_float": AttributeProto.FLOAT,
    "value_floats": AttributeProto.FLOATS, "value_int": AttributeProto.INT,
    "value_ints": AttributeProto.INTS, "value_string": AttributeProto.STRING,
    "value_strings": AttributeProto.STRINGS,
}


def convertible(node: onnx.NodeProto) -> bool:
    """The Constant holds one plain value attribute (no sparse or external value, no attribute
    reference). Reads no tensor data and imports nothing: lint asks it about every Constant."""
    if len(node.attribute) != 1:
        return False
    a = node.attribute[0]
    if a.ref_attr_name or _VALUE_ATTRS.get(a.name) != a.type:
        return False
    return a.type != AttributeProto.TENSOR or a.t.data_location != TensorProto.EXTERNAL


def constant_tensor(node: onnx.NodeProto, name: str) -> TensorProto:
    """The value of a ``convertible`` Constant node as a tensor named ``name``."""
    a = node.attribute[0]
    if a.type == AttributeProto.TENSOR:
        t = TensorProto()
        t.CopyFrom(a.t)
        t.name = name
        return t
    make = onnx.helper.make_tensor  # (onnx.helper imports numpy: only when a rewrite is applied)
    if a.type == AttributeProto.FLOAT:
        return make(name, TensorProto.FLOAT, [], [a.f])
    if a.type == AttributeProto.FLOATS:
        return make(name, TensorProto.FLOAT, [len(a.floats)], list(a.floats))
    if a.type == AttributeProto.INT:
        return make(name, TensorProto.INT64, [], [a.i])
    if a.type == AttributeProto.INTS:
        return make(name, TensorProto.INT64, [len(a.ints)], list(a.ints))
    if a.type == AttributeProto.STRING:
        return make(name, TensorProto.STRING, [], [a.s])
    return make(name, TensorProto.STRING, [len(a.strings)], list(a.strings))


class ConstantNode(RewriteRule):
    """A Constant node of the main graph is an initializer.

    Exporters emit constants as ``Constant`` nodes; an initializer holds the same value without a
    node to run, and the rules that fold constants see it at once. The node goes and an
    initializer of the same name holds its value (``value``, ``value_float(s)``,
    ``value_int(s)`` or ``value_string(s)``).

    Does not fire in subgraphs and function bodies (they keep their Constant nodes), for a
    ``sparse_value`` or an external ``value``, when the output is a graph output, or below IR
    version 4 (where initializers must be graph inputs, which callers could override).
    """

    name = "constant-node"
    code = codes.CONSTANT_NODE.code
    roots = ("Constant",)

    def match(self, ctx: RoundContext, nid: int) -> Result:
        info = ctx.graph.nodes[nid]
        sid = info.scope
        if sid != 0 or ctx.scope(sid).kind != "graph":
            return _NOT_MAIN
        if ctx.model.ir_version < 4:
            return _OLD_IR
        if len(info.outputs) != 1 or not info.outputs[0]:
            return not_applicable("malformed Constant")
        z = info.outputs[0]
        scope = ctx.scope(sid)
        if z in ctx.outputs(sid):
            return NoMatch(f"{ctx.display(nid)}: '{z}' is a graph output (its Constant node stays)")
        if z in scope.initializers or z in scope.inputs:
            return NoMatch(f"{ctx.display(nid)}: '{z}' is also an initializer or graph input")
        if not convertible(ctx.peek(nid)):
            return NoMatch(f"{ctx.display(nid)}: its value is sparse, external or malformed")
        return Match(nid, (nid,), (), lambda: f"{ctx.display(nid)} is an initializer", "", None)

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[None]) -> None:
        sid = ctx.sid(m.nid)
        z = ctx.output(m.nid)
        tensor = constant_tensor(ctx.proto(m.nid), z)
        edit.delete_node(m.nid)
        edit.add_initializer(sid, tensor)
