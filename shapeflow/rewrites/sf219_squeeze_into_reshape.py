"""SF219 squeeze-into-reshape: a Reshape reads the input of the Squeeze or Unsqueeze before it."""

from __future__ import annotations

from typing import Any, NamedTuple

from ..codes import INFO, Code
from ..dims import Dim, dim_bounds
from ..passes.context import RoundContext, fmt_axes
from ..passes.edit import Editor
from ..passes.match import Match, NoMatch, Result, not_applicable
from ..passes.pattern import (
    RESHAPE_INPUT_SINCE, Bound, DataInput, Op, allowzero, exclusive_cone, overridable_problem, tensor_of,
)
from ..passes.spec import Rewrite

_OLD_RESHAPE = not_applicable("a Reshape of opset < 5 (its target is an attribute)")
_UNKNOWN_TARGET = not_applicable("target value not known before run time")


class Absorb(NamedTuple):
    su: int  # the Squeeze or Unsqueeze: unread afterwards, the sweep removes it
    x: str  # its data input, which the Reshape reads instead
    target: tuple[int, ...] | None  # a new constant target (0s that would move, spelled out), or None


class SqueezeIntoReshape(Rewrite):
    """Reshape(Squeeze(x, a), t) is Reshape(x, t), and so is Reshape(Unsqueeze(x, a), t), when t means the same.

    ## What it does
    Reports a ``Reshape`` whose data input is produced by a ``Squeeze`` or an ``Unsqueeze`` that
    nothing else reads: ``shapeflow optimize`` lets the Reshape read the Squeeze's (Unsqueeze's)
    input, and the Squeeze goes. A Reshape reads only its input's elements in row-major order and
    their count, which a Squeeze or an Unsqueeze does not change; the target means the same for
    both inputs unless it copies one of the input's dims. That happens where the target holds a 0
    and ``allowzero`` is 0 (the default, and the only meaning before opset 14): the 0 copies the
    input's dim at its position, and removing or inserting axes moves dims. So with ``allowzero=0``
    every target element must be a known integer other than 0, a symbol never 0, or (a 0 or a
    symbol that may be 0) sit at a position before the first squeezed or inserted axis, or where
    inference proves both inputs' dims equal. A 0 at another position whose copied dim is a static
    positive integer is written as that integer in a new constant target. A -1 is worked out from
    the element count and the other elements: the same for both inputs. With ``allowzero=1`` the
    target is read as it is, whatever it holds.

    ## Why is this bad?
    It is not wrong, but the Squeeze or Unsqueeze is a node that changes nothing the Reshape
    reads. Keras models through tf2onnx end squeeze-and-excite blocks with ``GlobalAveragePool ->
    Squeeze [2, 3] -> Reshape [-1, C, 1, 1]``: once the Reshape reads the pooled tensor directly,
    it returns its input's shape, and no-op-reshape (SF212) removes it too.

    ## Example
    ``p = GlobalAveragePool(x)`` of shape ``[n, C, 1, 1]``; ``s = Squeeze(p, [2, 3])``;
    ``y = Reshape(s, [-1, C, 1, 1])``: ``y = Reshape(p, [-1, C, 1, 1])``, which is ``p``.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` rewrites it: one node
    fewer, bit-identical outputs (the Reshape's output has the same shape and elements). If a
    squeezed dim is not statically 1 the Squeeze fails at run time and the rewrite removes that
    failure: by default it fires anyway (the log says so), under ``optimize --strict`` it does not.

    ## When it does not fire
    When the Squeeze's (Unsqueeze's) output has another reader or is a graph output; when its axes
    are not constants; when ``allowzero`` is 0 and a target element is unknown, or is (or may be)
    a 0 at a position the axes move whose copied dim is not a static positive integer, or such a 0
    would have to be spelled out beside a symbolic element; for a Reshape of opset < 5; when the model has initializers that are also graph inputs and the
    decision reads the target's value.
    """

    code = Code("SF219", "squeeze-into-reshape", INFO, fixable=True)
    order = 325
    pattern = Op("Reshape", Op(("Squeeze", "Unsqueeze"), name="su", exclusive=True), guards=(DataInput(),))

    def check(self, ctx: RoundContext, b: Bound) -> Result:
        nid, su = b.root, b["su"]
        info = ctx.graph.nodes[nid]
        if (info.since_version or 0) < RESHAPE_INPUT_SINCE or len(info.inputs) < 2 or not info.inputs[1]:
            return _OLD_RESHAPE
        squeeze = ctx.graph.nodes[su].op_type == "Squeeze"
        axes = ctx.squeeze_axes(su) if squeeze else ctx.unsqueeze_axes(su)
        if isinstance(axes, NoMatch):
            return axes
        if not axes:
            return NoMatch(f"{ctx.display(nid)}: {ctx.display(su)} has no axes")
        note = ""
        if squeeze:
            unproven = ctx.unproven_ones(su, axes)
            if unproven and ctx.strict:
                return NoMatch(f"{ctx.display(nid)}: --strict and squeezed {', '.join(unproven)} of "
                               f"{ctx.display(su)} not statically 1")
            if unproven:
                note = f"removes a run-time failure when squeezed {', '.join(unproven)} is not 1"
        x = ctx.graph.nodes[su].inputs[0]
        target: tuple[int, ...] | None = None
        if not allowzero(ctx, nid):
            found = _target_for(ctx, nid, su, x, min(axes))
            if isinstance(found, NoMatch):
                return found
            target = found
            problem = overridable_problem(ctx, nid, "the target")
            if problem is not None:
                return problem
        su_inputs = ctx.graph.nodes[su].inputs
        sweeps = (su, *exclusive_cone(ctx, su, su_inputs[1:]))
        if target is not None:
            sweeps += tuple(n for n in exclusive_cone(ctx, nid, (info.inputs[1],)) if n not in sweeps)
        shown = fmt_axes(axes)
        kind = ctx.graph.nodes[su].op_type

        def message() -> str:
            new = f" with target {fmt_axes(target)}" if target is not None else ""
            return f"{ctx.display(nid)} reads '{x}', the input of {kind} {shown} {ctx.display(su)}{new}"

        return Match(nid, sweeps=sweeps, message=message, note=note, payload=Absorb(su, x, target))

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[Any]) -> None:
        plan: Absorb = m.payload
        nid = m.nid
        edit.set_input(nid, 0, plan.x)
        if plan.target is not None:
            sid = ctx.sid(nid)
            base = ctx.graph.nodes[nid].peek().name or ctx.output(nid)
            edit.set_input(nid, 1, edit.int64_const(sid, list(plan.target), base, "shape", nid))


def _target_for(ctx: RoundContext, nid: int, su: int, x: str, first: int) -> tuple[int, ...] | None | NoMatch:
    """With ``allowzero=0``: None when the target means the same for x as for the Squeeze's
    (Unsqueeze's) output, a constant target that does when a 0 copies a dim the axes move and that
    dim is a static positive integer, or why neither. ``first`` is the first position the axes
    remove or insert: the dims before it are the same in both inputs."""
    info = ctx.graph.nodes[nid]
    sid = info.scope
    t = tensor_of(ctx, sid, info.inputs[1])
    if t is None or t.value is None or t.shape is None or len(t.shape) != 1:
        return _UNKNOWN_TARGET
    value: tuple[Dim, ...] = t.value
    if any(v is None for v in value):
        return _UNKNOWN_TARGET
    su_out = tensor_of(ctx, sid, ctx.graph.nodes[su].outputs[0])
    xt = tensor_of(ctx, sid, x)
    before = su_out.shape if su_out is not None else None
    now = xt.shape if xt is not None else None
    spelled: list[int] = []  # the constant target, where every element is an integer
    symbolic = False
    changed = False
    for i, v in enumerate(value):
        if type(v) is int and v != 0:
            spelled.append(v)
            continue
        if type(v) is not int:
            symbolic = True
            lo, _ = dim_bounds(v, ctx.domain)
            if lo is not None and lo >= 1:
                continue  # never 0: read as it is
        # a 0, or a symbol that may be 0: it copies the input's dim at i (when it is 0)
        if i < first or _same_dim(before, now, i):
            if type(v) is int:
                spelled.append(0)
            continue
        d = before[i] if before is not None and i < len(before) else None
        if type(v) is int and type(d) is int and d >= 1:
            spelled.append(d)
            changed = True
            continue
        what = "0" if type(v) is int else f"'{v}' (may be 0)"
        return NoMatch(f"{ctx.display(nid)}: target element {i} is {what} with allowzero=0: it copies "
                       f"the input's dim {i}, which {ctx.display(su)} moves")
    if not changed:
        return None
    if symbolic:
        return NoMatch(f"{ctx.display(nid)}: a 0 of the target would move and another element is "
                       "symbolic (no constant target says both)")
    return tuple(spelled)


def _same_dim(before: "tuple[Dim, ...] | None", now: "tuple[Dim, ...] | None", i: int) -> bool:
    """Inference proves dim ``i`` of both inputs equal for every binding."""
    if before is None or now is None or i >= len(before) or i >= len(now):
        return False
    a, b = before[i], now[i]
    return a is not None and b is not None and a == b


__all__ = ["SqueezeIntoReshape"]
