"""SF204 shape-slice: ``Unsqueeze(Gather(Shape(x), i), 0)`` is a one-element slice of the shape."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..codes import INFO, Code
from ..opsets import SHAPE_SLICE_SINCE, SLICE_INPUTS_SINCE
from ..passes.context import RoundContext, fmt_axes
from ..passes.edit import Editor
from ..passes.match import Match, NoMatch, Result
from ..passes.pattern import Bound, NoFunctionAttributes, Op, overridable_problem
from ..passes.spec import Rewrite

_OWN_ATTRIBUTES = NoFunctionAttributes()


@dataclass(frozen=True)
class _Plan:
    x: str  # the tensor whose dim is read
    k: int  # the dim's position in x
    shape_out: str  # the Shape node's output
    rel: int  # the dim's position in that output
    form: str  # "shape" | "slice" | "slice-attr"


class ShapeSlice(Rewrite):
    """U(0)(Gather(Shape(x), i)) is Shape(x, start=k, end=k+1), k the dim's position in x.

    ## What it does
    Reports an ``Unsqueeze(Gather(Shape(x), i), [0])`` that ``shapeflow optimize`` would turn into
    the one-element slice ``shape(x)[k:k+1]``: from opset 15 a single ``Shape(x, start=k, end=k+1)``
    node, before that a ``Slice`` of the Shape output (Gather and Unsqueeze become one node). The
    Gather and the Shape go when nothing else reads them. Static dims are folded to constants by
    fold-known-value first. The finding sits on the Unsqueeze.

    ## Why is this bad?
    It is not wrong, but three nodes (and a 0-d tensor in between) compute what one node does.
    PyTorch exports ``x.size(i)`` used in a new shape this way (a 0-d int64, unsqueezed to ``[1]``
    to go back into a shape vector), once per dim, so exported models carry dozens of them around
    every ``view`` and ``reshape``.

    ## Example
    ``s = Shape(x); d = Gather(s, 1); y = Unsqueeze(d, [0])`` is ``y = Shape(x, start=1, end=2)``
    at opset 15.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` rewrites it, keeping every
    graph output bit-identical.

    ## When it does not fire
    When the Unsqueeze axes are not ``[0]``, when the Gather index is not a constant scalar or its
    axis not 0, or when the rank of ``x`` is unknown.
    """

    code = Code("SF204", "shape-slice", INFO, fixable=True)
    order = 250
    pattern = Op("Unsqueeze", Op("Gather", Op("Shape", name="shape", guards=(_OWN_ATTRIBUTES,)),
                                 name="gather", guards=(_OWN_ATTRIBUTES,)))

    def check(self, ctx: RoundContext, b: Bound) -> Result:
        nid, gather, shape_node = b.root, b["gather"], b["shape"]
        a = ctx.unsqueeze_axes(nid)
        if isinstance(a, NoMatch):
            return a
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
        problem = overridable_problem(ctx, gather, "the index")
        if problem is not None:
            return problem
        idx = ctx.tensor(sid, g_inputs[1]) if len(g_inputs) > 1 else None
        if idx is None or idx.shape != () or idx.value is None or type(idx.value[0]) is not int:
            return NoMatch(f"{ctx.display(gather)}: index is not a constant scalar")
        x = ctx.inputs(shape_node)[0]
        xi = ctx.tensor(sid, x)
        if xi is None or xi.shape is None:
            return NoMatch(f"{ctx.display(shape_node)}: rank of '{x}' unknown")
        rank = len(xi.shape)
        start, end = _slice_bounds(ctx, shape_node, rank)
        length = max(end - start, 0)
        i = int(idx.value[0])
        if not -length <= i < length:
            return NoMatch(f"{ctx.display(gather)}: index {i} out of range")
        rel = i + length if i < 0 else i
        k = start + rel
        opset = ctx.opset(sid)
        form = "shape" if opset >= SHAPE_SLICE_SINCE else "slice" if opset >= SLICE_INPUTS_SINCE else "slice-attr"
        what = f"Shape(start={k}, end={k + 1})" if form == "shape" else f"Slice [{rel}:{rel + 1}] of the shape"
        dim = xi.shape[k]

        def message() -> str:
            return (f"{ctx.display(shape_node)} -> {ctx.display(gather)} [{i}] -> {ctx.display(nid)} [0] "
                    f"is {what} (dim {'?' if dim is None else dim})")

        return Match(nid, reads=(gather, shape_node), message=message,
                     payload=_Plan(x, k, ctx.output(shape_node), rel, form))

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[Any]) -> None:
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


def _slice_bounds(ctx: RoundContext, shape_node: int, rank: int) -> tuple[int, int]:
    """The [start, end) of x's dims that the Shape node returns (its ``start``/``end`` from opset
    15, clamped as onnxruntime clamps them)."""
    start, end = 0, rank
    if (ctx.info(shape_node).since_version or 0) >= SHAPE_SLICE_SINCE and ctx.info(shape_node).has_attrs:
        for attr in ctx.peek(shape_node).attribute:
            if attr.name == "start":
                start = int(attr.i)
            elif attr.name == "end":
                end = int(attr.i)
        start = min(max(start + rank if start < 0 else start, 0), rank)
        end = min(max(end + rank if end < 0 else end, 0), rank)
    return start, end
