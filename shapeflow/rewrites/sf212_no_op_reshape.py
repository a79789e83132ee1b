"""SF212 no-op-reshape: a Reshape or Expand that returns its input unchanged goes."""

from __future__ import annotations

from typing import Any

from ..codes import INFO, Code
from ..dims import Dim
from ..passes.context import RoundContext
from ..passes.edit import Editor
from ..passes.match import Match, NoMatch, Result, not_applicable
from ..passes.pattern import Bound, Bypass, KnownInput, Op, allowzero, exclusive_cone, target_value
from ..passes.spec import Rewrite

_NOT_IDENTITY = not_applicable("output shape differs from the input's")


class NoOpReshape(Rewrite):
    """Reshape(x, t) or Expand(x, t) whose output is x's shape dim by dim is x.

    ## What it does
    Reports a ``Reshape`` or ``Expand`` whose output shape inference proves equal to its input's,
    dim by dim and for every binding of the symbols: the node copies its input, so ``shapeflow
    optimize`` lets its readers read the input and removes it (the target's computation with it,
    when nothing else reads it). Expand: every target element is 1 or the input's dim at its
    position (counted from the end; the target may be shorter), so broadcasting returns the
    input's dim even where it is 0 or 1. Reshape: as many elements as the input has dims, each the
    input's dim there, or 0 with ``allowzero=0``, or one -1 among static positive dims.

    ## Why is this bad?
    It is not wrong, but the node copies (or views) a tensor for nothing, and the target's
    computation (often ``Shape(x)`` itself) runs with it. Exporters reshape and expand tensors to
    shapes computed from the tensors themselves.

    ## Example
    ``y = Expand(x, Shape(x))`` is ``x``; so is ``Reshape(x, [0, 0, 12, 64])`` of a ``[b, s, 12,
    64]`` tensor.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` removes it: one node
    fewer each time.

    ## When it does not fire
    When the output is a graph output or is read by name in a subgraph (keeping the name would need
    an Identity, which removes nothing), or when a target element is unknown.
    """

    code = Code("SF212", "no-op-reshape", INFO, fixable=True)
    order = 320
    pattern = Op(("Reshape", "Expand"), guards=(KnownInput(1),))
    replacement = Bypass("{root} returns its input '{x}' unchanged")

    def check(self, ctx: RoundContext, b: Bound) -> Result:
        nid = b.root
        found = target_value(ctx, nid)
        if isinstance(found, NoMatch):
            return found
        value, shape = found
        info = ctx.graph.nodes[nid]
        if info.op_type == "Expand":
            why = _expand_problem(value, shape)
        else:
            why = _reshape_problem(ctx, nid, value, shape)
        if why is not None:
            return why
        return self.replacement.plan(ctx, nid, info.inputs[0], sweeps=exclusive_cone(ctx, nid, (info.inputs[1],)))

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[Any]) -> None:
        self.replacement.apply(ctx, edit, m)


def _expand_problem(value: tuple[Dim, ...], shape: tuple[Dim, ...]) -> NoMatch | None:
    if len(value) > len(shape):
        return _NOT_IDENTITY
    off = len(shape) - len(value)
    for j, t in enumerate(value):
        d = shape[off + j]
        if not (t == 1 or (d is not None and t == d)):
            return _NOT_IDENTITY
    return None


def _reshape_problem(ctx: RoundContext, nid: int, value: tuple[Dim, ...], shape: tuple[Dim, ...]) -> NoMatch | None:
    if len(value) != len(shape):
        return _NOT_IDENTITY
    zero = allowzero(ctx, nid)
    minus = -1
    for i, t in enumerate(value):
        d = shape[i]
        if d is not None and t == d:
            continue
        if type(t) is int and t == 0 and not zero and d is not None:
            continue
        if type(t) is int and t == -1 and minus < 0:
            minus = i
            continue
        return _NOT_IDENTITY
    if minus >= 0:
        for i, d in enumerate(shape):
            if i != minus and not (type(d) is int and d >= 1):
                return NoMatch(f"{ctx.display(nid)}: a -1 beside dims not statically positive")
    return None
