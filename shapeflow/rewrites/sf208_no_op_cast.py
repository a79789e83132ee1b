"""SF208 no-op-cast: Casts that change no value go."""

from __future__ import annotations

from typing import Any, NamedTuple

from .._onnx import onnx
from ..codes import INFO, Code
from ..passes.context import INT_RANGES, RoundContext
from ..passes.edit import Editor
from ..passes.match import Match, NoMatch, Result, not_applicable
from ..passes.pattern import DATA_INPUT, Bound, Bypass, BypassPlan, Op
from ..passes.spec import Rewrite

TensorProto = onnx.TensorProto

# Float types: the largest M such that every integer in [-M, M] is exact (2 ** significand bits).
_EXACT_INTS: dict[int, int] = {
    TensorProto.FLOAT16: 2**11,
    TensorProto.BFLOAT16: 2**8,
    TensorProto.FLOAT: 2**24,
    TensorProto.DOUBLE: 2**53,
}
# Targets whose conversions are plain value conversions (no float8 saturation, no 4-bit packing,
# no strings, no complex).
_PLAIN = frozenset(INT_RANGES) | frozenset(_EXACT_INTS)
_CAST_TO_SINCE = 6  # Cast-1 names its target type with a string

_UNKNOWN = not_applicable("input element type not known")
_NO_TARGET = not_applicable("target type not an integer attribute")


class DirectCast(NamedTuple):
    """``Cast(Cast(x, T1), T2)`` is ``Cast(x, T2)``: the root reads x, the inner Cast goes."""

    x: str
    inner: int


def _target(ctx: RoundContext, nid: int) -> int | None:
    info = ctx.graph.nodes[nid]
    if info.since_version is None or info.since_version < _CAST_TO_SINCE:
        return None
    for a in ctx.peek(nid).attribute:
        if a.name == "to" and a.type == onnx.AttributeProto.INT and not a.ref_attr_name:
            return int(a.i)
    return None


def _dtype(ctx: RoundContext, sid: int, name: str) -> int:
    t = ctx.tensor(sid, name)
    return t.dtype if t is not None else 0


def holds_exactly(source: int, middle: int) -> bool:
    """Every value of the integer (or bool) type ``source`` is exact in ``middle``."""
    lo, hi = INT_RANGES[source]
    bounds = INT_RANGES.get(middle)
    if bounds is not None:
        return bounds[0] <= lo and hi <= bounds[1] and (middle != TensorProto.BOOL or source == middle)
    m = _EXACT_INTS.get(middle)
    return m is not None and -m <= lo and hi <= m


def same_through(source: int, middle: int, target: int) -> bool:
    """``Cast(Cast(x, middle), target)`` equals ``Cast(x, target)`` for every x of ``source``.

    When ``middle`` holds every value of ``source`` exactly, both convert the same values to
    ``target``; conversions to an integer type differ only where a float holds a value out of the
    target's range (undefined, and runtimes differ), so a float ``middle`` needs the source range
    inside the target's."""
    if source not in INT_RANGES or middle not in _PLAIN or target not in _PLAIN:
        return False
    if not holds_exactly(source, middle):
        return False
    if middle in _EXACT_INTS and target in INT_RANGES and target != TensorProto.BOOL:
        lo, hi = INT_RANGES[source]
        tlo, thi = INT_RANGES[target]
        return tlo <= lo and hi <= thi
    return True


class NoOpCast(Rewrite):
    """Cast(x) to x's own type is x; Cast(Cast(x, T1), T2) is Cast(x, T2) when T1 holds x exactly.

    ## What it does
    Reports ``Cast(x, to=T)`` where ``x`` already has element type ``T`` (the Cast goes, its
    readers read ``x``), and ``Cast(Cast(x, T1), T2)`` where ``T1`` holds every value of ``x``'s
    integer or bool type exactly (int32 -> int64, bool -> any int, uint8 -> int16, int8 ->
    float16...), which is ``Cast(x, T2)``: the outer Cast reads ``x`` and the inner one goes; when
    ``T2`` is ``x``'s own type, both go. Element types come from inference and must be known.

    ## Why is this bad?
    It is not wrong, but each Cast copies the tensor for nothing, and the round trip hides that
    the value is the original one. Exporters cast shape values back and forth.

    ## Example
    ``Cast(Cast(i: int32, to=INT64), to=INT32)`` is ``i``; ``Cast(n: int64, to=INT64)`` is ``n``.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` removes them. A Cast to
    its input's own type is deleted; in a double cast the inner Cast goes only when the outer one
    is its only reader or when the outer one goes too: every rewrite deletes a node and adds none.

    ## When it does not fire
    For float sources (a float out of an integer target's range converts differently on each
    path), float8/4-bit/string types, or when the Cast's output must keep its name and nothing
    else would go.
    """

    code = Code("SF208", "no-op-cast", INFO, fixable=True)
    order = 520
    pattern = Op("Cast", guards=(DATA_INPUT,))
    bypass = Bypass("{root} casts '{x}' to its own type")

    def check(self, ctx: RoundContext, b: Bound) -> Result:
        nid = b.root
        info = ctx.graph.nodes[nid]
        sid, y = info.scope, info.inputs[0]
        target = _target(ctx, nid)
        if target is None:
            return _NO_TARGET
        ytype = _dtype(ctx, sid, y)
        if ytype == 0:
            return _UNKNOWN
        if ytype == target:
            return self.bypass.plan(ctx, nid, y)
        inner = ctx.input_producer(nid, 0, "Cast")
        if inner is None:
            return not_applicable("a cast to another type")
        x = ctx.inputs(inner)[0]
        xtype = _dtype(ctx, sid, x)
        if xtype == 0 or not same_through(xtype, ytype, target):
            return not_applicable("the inner cast may change values")
        z = info.outputs[0]
        keep = z in ctx.outputs(sid) or not ctx.direct_readers_only(sid, z)
        if target == xtype and not keep:
            return self.bypass.plan(ctx, nid, x, reads=(inner,), message=lambda: (
                f"{ctx.display(inner)} and {ctx.display(nid)} cast '{x}' back to its own type"))
        if not ctx.only_reader(sid, y, nid):
            return NoMatch(f"{ctx.display(nid)} could read '{x}' directly, but {ctx.display(inner)} has "
                           "other readers: the graph would not shrink")
        return Match(nid, writes=(nid, inner), payload=DirectCast(x, inner), message=lambda: (
            f"{ctx.display(nid)} can cast '{x}' directly ({ctx.display(inner)} goes)"))

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[Any]) -> None:
        plan = m.payload
        if isinstance(plan, BypassPlan):
            self.bypass.apply(ctx, edit, m)
        else:
            edit.set_input(m.nid, 0, plan.x)
            edit.delete_node(plan.inner)
