"""SF210 constant-node: a Constant node of the main graph becomes an initializer."""

from __future__ import annotations

from typing import Any

from .._onnx import onnx
from ..codes import INFO, Code
from ..passes.context import RoundContext
from ..passes.edit import Editor
from ..passes.match import Match, NoMatch, Result, not_applicable
from ..passes.pattern import Bound, Guard, Op
from ..passes.spec import Rewrite

TensorProto = onnx.TensorProto
AttributeProto = onnx.AttributeProto

_NOT_MAIN = not_applicable("a Constant in a subgraph or function body stays a node")
_OLD_IR = not_applicable("below IR version 4 every initializer must also be a graph input")
_MALFORMED = not_applicable("malformed Constant")


class _MainGraphInitializers(Guard):
    """The node is in the main graph of a model whose initializers need not be graph inputs (IR
    version 4 on), with one named output."""

    def check(self, ctx: RoundContext, nid: int) -> NoMatch | None:
        info = ctx.graph.nodes[nid]
        if info.scope != 0 or ctx.scope(0).kind != "graph":
            return _NOT_MAIN
        if ctx.model.ir_version < 4:
            return _OLD_IR
        if len(info.outputs) != 1 or not info.outputs[0]:
            return _MALFORMED
        return None


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
    return bool(a.type != AttributeProto.TENSOR or a.t.data_location != TensorProto.EXTERNAL)


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


class ConstantNode(Rewrite):
    """A Constant node of the main graph is an initializer.

    ## What it does
    Reports a ``Constant`` node of the main graph (``value``, ``value_float(s)``,
    ``value_int(s)`` or ``value_string(s)``) whose output is not a graph output, where
    ``shapeflow optimize`` would store its value as an initializer of the same name. Exporters emit
    constants as ``Constant`` nodes; an initializer holds the same value without a node to run.

    ## Why is this bad?
    It is not wrong, but a node runs where a stored value would do, and the constant is hidden
    from the rewrites that fold constants.

    ## Example
    ``c = Constant(value=[0])`` read by ``Unsqueeze(x, c)``.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` turns it into an
    initializer. Each rewrite deletes a node and adds an initializer, never a node; nothing turns
    an initializer back into a node (fold-known-value makes Constant nodes only where this rewrite
    does not fire: graph outputs and function bodies).

    ## When it does not fire
    In subgraphs and function bodies (they keep their Constant nodes), for a ``sparse_value`` or
    an external ``value``, when the output is a graph output, or below IR version 4 (where
    initializers must be graph inputs, which callers could override).
    """

    code = Code("SF210", "constant-node", INFO, fixable=True)
    order = 510
    pattern = Op("Constant", guards=(_MainGraphInitializers(),))

    def check(self, ctx: RoundContext, b: Bound) -> Result:
        nid = b.root
        z = ctx.output(nid)
        scope = ctx.scope(0)
        if z in ctx.outputs(0):
            return NoMatch(f"{ctx.display(nid)}: '{z}' is a graph output (its Constant node stays)")
        if z in scope.initializers or z in scope.inputs:
            return NoMatch(f"{ctx.display(nid)}: '{z}' is also an initializer or graph input")
        if not convertible(ctx.peek(nid)):
            return NoMatch(f"{ctx.display(nid)}: its value is sparse, external or malformed")
        return Match(nid, message=lambda: f"{ctx.display(nid)} is an initializer")

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[Any]) -> None:
        z = ctx.output(m.nid)
        tensor = constant_tensor(ctx.proto(m.nid), z)
        edit.delete_node(m.nid)
        edit.add_initializer(0, tensor)
