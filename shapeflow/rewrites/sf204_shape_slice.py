"""``Unsqueeze(Gather(Shape(x), i), 0)`` is a one-element slice of the shape (SPEC.md section 4)."""

from __future__ import annotations

from dataclasses import dataclass

from .. import codes
from ..opsets import SHAPE_SLICE_SINCE, SLICE_INPUTS_SINCE
from .base import Match, NoMatch, Result, RewriteRule, RoundContext, fmt_axes, not_applicable
from .edit import Editor

# Shared answers for roots the rule does not apply to (immutable).
_NOT_AFTER_GATHER = not_applicable("input is not produced by a Gather")
_NOT_A_SHAPE = not_applicable("the Gather does not read a Shape")


@dataclass(frozen=True)
class _Plan:
    x: str  # the tensor whose dim is read
    k: int  # the dim's position in x
    shape_out: str  # the Shape node's output
    rel: int  # the dim's position in that output
    form: str  # "shape" | "slice" | "slice-attr"


class ShapeSlice(RewriteRule):
    """U(0)(Gather(Shape(x), i)) is Shape(x, start=k, end=k+1), k the dim's position in x.

    ``x.size(i)`` exports as ``Shape -> Gather(i)`` (a 0-d int64), and going back into a shape
    vector it is unsqueezed to ``[1]``: three nodes for the one-element slice ``shape(x)[k:k+1]``.
    From opset 15, Shape takes ``start``/``end`` and the three become one node; before, the result is
    a ``Slice`` of the Shape output (Gather and Unsqueeze become one node). The Gather and the Shape
    go when nothing else reads them. Static dims are folded to constants by fold-known-value first.

    Does not fire when the Unsqueeze axes are not ``[0]``, when the Gather index is not a constant
    scalar or its axis not 0, or when the rank of ``x`` is unknown.
    """

    name = "shape-slice"
    code = codes.SHAPE_SLICE.code
    roots = ("Unsqueeze",)
    after = frozenset({"Gather"})

    def match(self, ctx: RoundContext, nid: int) -> Result:
        gather = ctx.input_producer(nid, 0, "Gather")
        if gather is None:
            return _NOT_AFTER_GATHER
        shape_node = ctx.input_producer(gather, 0, "Shape")
        if shape_node is None:
            return _NOT_A_SHAPE
        a = ctx.unsqueeze_axes(nid)
        if isinstance(a, NoMatch):
            return a
        if ctx.refers_to_function_attributes(gather) or ctx.refers_to_function_attributes(shape_node):
            return NoMatch(f"{ctx.display(gather)}: attributes refer to the function's attributes")
        if a != (0,):
            return NoMatch(f"{ctx.display(nid)}: axes {fmt_axes(a)}, not [0]")
        sid = ctx.sid(nid)
        axis = 0
        if ctx.info(gather).has_attrs:
            for attr in ctx.peek(gather).attribute:
                if attr.name == "axis":
                    axis = int(attr.i)
        if axis not in (0, -1):
            return NoMatch(f"{ctx.display(gather)}: axis {axis}, not 0")
        g_inputs = ctx.inputs(gather)
        if ctx.overridable:
            return NoMatch(f"{ctx.display(gather)}: the model has initializers that are also graph "
                           "inputs, so the index may change at run time")
        idx = ctx.tensor(sid, g_inputs[1]) if len(g_inputs) > 1 else None
        if idx is None or idx.shape != () or idx.value is None or type(idx.value[0]) is not int:
            return NoMatch(f"{ctx.display(gather)}: index is not a constant scalar")
        x = ctx.inputs(shape_node)[0]
        xi = ctx.tensor(sid, x)
        if xi is None or xi.shape is None:
            return NoMatch(f"{ctx.display(shape_node)}: rank of '{x}' unknown")
        rank = len(xi.shape)
        start, end = 0, rank
        if (ctx.info(shape_node).since_version or 0) >= SHAPE_SLICE_SINCE and ctx.info(shape_node).has_attrs:
            for attr in ctx.peek(shape_node).attribute:
                if attr.name == "start":
                    start = int(attr.i)
                elif attr.name == "end":
                    end = int(attr.i)
            start = min(max(start + rank if start < 0 else start, 0), rank)
            end = min(max(end + rank if end < 0 else end, 0), rank)
        length = max(end - start, 0)
        i = int(idx.value[0])
        if not -length <= i < length:
            return NoMatch(f"{ctx.display(gather)}: index {i} out of range")
        rel = i + length if i < 0 else i
        k = start + rel
        opset = ctx.opset(sid)
        if opset >= SHAPE_SLICE_SINCE:
            form = "shape"
        elif opset >= SLICE_INPUTS_SINCE:
            form = "slice"
        else:
            form = "slice-attr"
        what = f"Shape(start={k}, end={k + 1})" if form == "shape" else f"Slice [{rel}:{rel + 1}] of the shape"
        dim = xi.shape[k]

        def message() -> str:
            return (f"{ctx.display(shape_node)} -> {ctx.display(gather)} [{i}] -> {ctx.display(nid)} [0] "
                    f"is {what} (dim {'?' if dim is None else dim})")

        return Match(nid, (nid,), (gather, shape_node), message, "",
                     _Plan(x, k, ctx.output(shape_node), rel, form))

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[_Plan]) -> None:
        plan = m.payload
        if plan.form == "shape":
            edit.replace_node(m.nid, "Shape", [plan.x], "shape", start=plan.k, end=plan.k + 1)
            return
        if plan.form == "slice-attr":
            edit.replace_node(m.nid, "Slice", [plan.shape_out], "slice", starts=[plan.rel], ends=[plan.rel + 1])
            return
        sid = ctx.sid(m.nid)
        base = ctx.graph.nodes[m.nid].peek().name or ctx.output(m.nid)
        starts = edit.int64_const(sid, [plan.rel], base, "starts", m.nid)
        ends = edit.int64_const(sid, [plan.rel + 1], base, "ends", m.nid)
        edit.replace_node(m.nid, "Slice", [plan.shape_out, starts, ends], "slice")
