"""Casts that change no value go (SPEC.md section 4).

Termination: a Cast to its input's own type is deleted; in ``Cast(Cast(x, T1), T2)`` the inner
Cast fires only when the outer one is its only reader (it is then deleted) or when the outer one
goes (T2 is x's type). Every rewrite deletes a node and adds none.
"""

from __future__ import annotations

from typing import NamedTuple

from .. import codes
from .._onnx import onnx
from .base import INT_RANGES, Match, NoMatch, Result, RewriteRule, RoundContext, not_applicable
from .edit import Editor

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

_NO_INPUT = not_applicable("no input")
_UNKNOWN = not_applicable("input element type not known")


class CastPlan(NamedTuple):
    x: str  # the tensor the rewrite reads instead
    inner: int | None  # the inner Cast of a double cast, or None
    bypass: bool  # the root goes and its readers read x; else the root reads x (inner goes)


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


class NoOpCast(RewriteRule):
    """Cast(x) to x's own type is x; Cast(Cast(x, T1), T2) is Cast(x, T2) when T1 holds x exactly.

    Exporters cast shape values back and forth: ``Cast(Cast(i: int32, to=int64), to=int32)`` is
    ``i``, and ``Cast(n: int64, to=int64)`` is ``n``. A Cast to its input's element type goes (its
    readers read the input). In a double cast whose inner type represents every value of ``x``'s
    integer or bool type exactly (int32 -> int64, bool -> any int, uint8 -> int16, int8 ->
    float16...), the outer Cast reads ``x`` and the inner one goes; when the outer type is ``x``'s
    own, both go.

    Element types come from inference and must be known. Does not fire for float sources (a float
    out of an integer target's range converts differently on each path), float8/4-bit/string
    types, or when the Cast's output must keep its name and nothing else would go.
    """

    name = "no-op-cast"
    code = codes.NO_OP_CAST.code
    roots = ("Cast",)

    def match(self, ctx: RoundContext, nid: int) -> Result:
        info = ctx.graph.nodes[nid]
        names, sid = info.inputs, info.scope
        if not names or not names[0] or not info.outputs or not info.outputs[0]:
            return _NO_INPUT
        target = _target(ctx, nid)
        if target is None:
            return not_applicable("target type not an integer attribute")
        y = names[0]
        z = info.outputs[0]
        ytype = _dtype(ctx, sid, y)
        if ytype == 0:
            return _UNKNOWN
        keep = z in ctx.outputs(sid) or not ctx.direct_readers_only(sid, z)
        readers = tuple(ctx.readers(sid, z))
        if ytype == target:
            if keep:
                return NoMatch(f"{ctx.display(nid)} casts to its input's own type, but '{z}' must keep "
                               "its name (graph output or read by a subgraph)")
            return Match(nid, (nid,), (), lambda: f"{ctx.display(nid)} casts '{y}' to its own type",
                         "", CastPlan(y, None, True), readers)
        inner = ctx.input_producer(nid, 0, "Cast")
        if inner is None:
            return not_applicable("a cast to another type")
        x = ctx.inputs(inner)[0]
        xtype = _dtype(ctx, sid, x)
        if xtype == 0 or not same_through(xtype, ytype, target):
            return not_applicable("the inner cast may change values")
        if target == xtype and not keep:
            return Match(nid, (nid,), (inner,),
                         lambda: f"{ctx.display(inner)} and {ctx.display(nid)} cast '{x}' back to its own type",
                         "", CastPlan(x, inner, True), readers)
        if not ctx.only_reader(sid, y, nid):
            return NoMatch(f"{ctx.display(nid)} could read '{x}' directly, but {ctx.display(inner)} has "
                           "other readers: the graph would not shrink")
        return Match(nid, (nid, inner), (),
                     lambda: f"{ctx.display(nid)} can cast '{x}' directly ({ctx.display(inner)} goes)",
                     "", CastPlan(x, inner, False))

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[CastPlan]) -> None:
        plan = m.payload
        sid = ctx.sid(m.nid)
        if plan.bypass:
            edit.replace_uses(sid, ctx.output(m.nid), plan.x)
            edit.delete_node(m.nid)
        else:
            edit.set_input(m.nid, 0, plan.x)
            if plan.inner is not None:
                edit.delete_node(plan.inner)
