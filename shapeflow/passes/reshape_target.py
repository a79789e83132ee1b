"""Reshape and Expand targets that are symbolically the input's own dims (SPEC.md section 4).

Two rules. ``static-reshape-target`` gives a Reshape whose target is computed a constant target:
termination, it fires only on a computed target and leaves an initializer (or a Constant node)
there, so each firing removes one computed input for good. ``no-op-reshape`` removes a Reshape or
an Expand that returns its input unchanged: one node fewer each time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, cast

from .. import codes
from ..dims import Dim, dim_bounds, dim_mul
from ..graph import INITIALIZER
from .base import Match, NoMatch, Result, RewriteRule, RoundContext, fmt_axes, not_applicable
from .edit import Editor
from .fold_known_value import exclusive_cone

if TYPE_CHECKING:
    from ..tensorinfo import TensorInfo

# Reshape takes its target as an input from opset 5 (before, an attribute: already constant).
RESHAPE_INPUT_SINCE = 5
# allowzero exists from opset 14 (before, a 0 always copies the input's dim).
ALLOWZERO_SINCE = 14

_NO_TARGET = not_applicable("no target input")
_CONSTANT_TARGET = not_applicable("target is already a constant")
_UNKNOWN_TARGET = not_applicable("target value not known before run time")
_OUTSIDE_TARGET = not_applicable("target is not computed in this graph")
_FOLDS = not_applicable("target value is all integers: fold-known-value folds it")
_UNKNOWN_INPUT = not_applicable("input rank unknown")
_NOT_IDENTITY = not_applicable("output shape differs from the input's")
_ABSENT = object()


def _info(ctx: RoundContext, sid: int, name: str) -> "TensorInfo | None":
    found = ctx.inference.tensors[sid].get(name, _ABSENT)
    return ctx.tensor(sid, name) if found is _ABSENT else cast("TensorInfo | None", found)


def _target(ctx: RoundContext, nid: int) -> tuple[tuple[Dim, ...], tuple[Dim, ...]] | NoMatch:
    """The target's value (every element known: an int or a Sym) and the data input's shape, of
    Reshape/Expand ``nid``."""
    info = ctx.graph.nodes[nid]
    names = info.inputs
    if len(names) < 2 or not names[0] or not names[1]:
        return _NO_TARGET
    if info.op_type == "Reshape" and (info.since_version or 0) < RESHAPE_INPUT_SINCE:
        return _NO_TARGET
    sid = info.scope
    t = _info(ctx, sid, names[1])
    if t is None or t.value is None or t.shape is None or len(t.shape) != 1:
        return _UNKNOWN_TARGET
    for v in t.value:
        if v is None:
            return _UNKNOWN_TARGET
    x = _info(ctx, sid, names[0])
    if x is None or x.shape is None:
        return _UNKNOWN_INPUT
    return t.value, x.shape


def _allowzero(ctx: RoundContext, nid: int) -> int:
    info = ctx.graph.nodes[nid]
    if (info.since_version or 0) < ALLOWZERO_SINCE or not info.has_attrs:
        return 0
    for a in ctx.peek(nid).attribute:
        if a.name == "allowzero":
            # a function's attribute: either value at a call, so the stricter reading (a 0 in
            # the target is a 0, never a copy) is the one every call agrees with
            return 1 if a.ref_attr_name else int(a.i)
    return 0


def _static_positive(d: Dim) -> bool:
    return type(d) is int and d >= 1


def _target_is_known(ctx: RoundContext, nid: int) -> bool:
    info = ctx.graph.nodes[nid]
    names = info.inputs
    if len(names) < 2 or not names[1]:
        return False
    t = ctx.tensor(info.scope, names[1])
    return t is not None and t.value is not None and all(v is not None for v in t.value)


class StaticReshapeTarget(RewriteRule):
    """Reshape(x, t) with t computed is Reshape(x, c): c the constant t is, dim by dim.

    Exporters compute a Reshape's target at run time from the input's own dims: ``view(b, s, 12,
    64)`` of a ``[b, s, 768]`` tensor exports as ``Concat(Shape->Gather(0), Shape->Gather(1), 12,
    64)``. With ``allowzero=0`` a 0 in the target copies the input's dim at its position, so a
    target element that inference proves equal to the input's dim there becomes 0, an integer
    stays as it is, and the target is the constant ``[0, 0, 12, 64]``. The nodes that computed it
    go when nothing else reads them. One remaining symbolic element becomes -1 only when every
    other element is a positive integer, it is at least 1 for every binding, and the target's
    product equals the input's element count: then the -1 is that element wherever the model runs,
    empty tensors included.

    With ``allowzero=1`` (torch's dynamo exporter writes it) the rewrite also drops the attribute,
    and fires only when the target has no 0, every symbolic element is the input's dim (the 0s of
    the constant then copy dims that the computed target gave as they are, 0 included), and a -1
    only beside elements provably >= 1 (beside a 0, onnxruntime computes it from the non-zero dims
    under allowzero=1 and fails under 0). Does not fire when the target is already a constant, when an element is unknown or
    symbolic in another way, or when the model has initializers that are also graph inputs
    (values could be overridden at run time).
    """

    name = "static-reshape-target"
    code = codes.STATIC_RESHAPE_TARGET.code
    roots = ("Reshape",)
    reserves = True

    def may_fire_later(self, ctx: RoundContext, nid: int) -> bool:
        return _target_is_known(ctx, nid)

    def match(self, ctx: RoundContext, nid: int) -> Result:
        found = _target(ctx, nid)
        if isinstance(found, NoMatch):
            return found
        value, shape = found
        info = ctx.graph.nodes[nid]
        sid, target = info.scope, info.inputs[1]
        p = ctx.graph.scopes[sid].producer.get(target)
        if p is None or p < 0:
            return _CONSTANT_TARGET if p == INITIALIZER else _OUTSIDE_TARGET
        if ctx.graph.nodes[p].op_type == "Constant":
            return _CONSTANT_TARGET
        for v in value:
            if type(v) is not int:
                break
        else:
            return _FOLDS  # fold-known-value makes the target a constant where it is computed
        allowzero = _allowzero(ctx, nid)
        if ctx.overridable:
            return NoMatch(f"{ctx.display(nid)}: the model has initializers that are also graph "
                           "inputs, so computed values may change at run time")
        rank = len(shape)
        new: list[int] = []
        rest: list[int] = []
        for i, v in enumerate(value):
            if type(v) is int:
                new.append(v)  # (a computed 0 or -1 meant what the constant one means)
            elif i < rank and shape[i] is not None and v == shape[i]:
                new.append(0)
            else:
                rest.append(i)
                new.append(-1)
        if allowzero:
            # The constant's 0s copy the input's dims only with allowzero=0, which the rewrite sets.
            # Elements equal to the input's dims give those dims either way (0 where they are 0);
            # a 0 or -1 in the target would change meaning (a -1 beside a 0 dim is the non-zero
            # dims' ratio under allowzero=1, an error under 0).
            if rest or _has_int(value, (0,)):
                return NoMatch(f"{ctx.display(nid)}: allowzero=1 and a target element is 0 or "
                               "symbolic: a 0 in the target would mean an empty dim")
            if _has_int(value, (-1,)) and not _others_positive(value):
                return NoMatch(f"{ctx.display(nid)}: allowzero=1 and a -1 beside elements that may be "
                               "0 (the non-zero dims' ratio there under allowzero=1, an error under 0)")
        if len(rest) > 1:
            return NoMatch(f"{ctx.display(nid)}: target elements {fmt_axes(rest)} are symbolic and "
                           "not the input's dims there")
        if rest:
            k = rest[0]
            why = _minus_one_problem(value, shape, new, k)
            if why is not None:
                return NoMatch(f"{ctx.display(nid)}: target element {k} ({value[k]}) {why}")
        shown = [str(v) for v in value]

        def message() -> str:
            return f"{ctx.display(nid)}: target [{', '.join(shown)}] is the constant {fmt_axes(new)}"

        # The target's computation dies with the rewrite: claimed, so that no other rewrite of the
        # round makes new nodes there for the sweep to miss.
        return Match(nid, (nid, *exclusive_cone(ctx, nid, (target,))), (), message, "",
                     _Target(tuple(new), bool(allowzero)))

    def apply(self, ctx: RoundContext, edit: Editor, m: Match["_Target"]) -> None:
        sid = ctx.sid(m.nid)
        base = ctx.graph.nodes[m.nid].peek().name or ctx.output(m.nid)
        name = edit.int64_const(sid, list(m.payload.values), base, "shape", m.nid)
        edit.set_input(m.nid, 1, name)
        if m.payload.clear_allowzero:
            edit.drop_attribute(m.nid, "allowzero")


class _Target(NamedTuple):
    values: tuple[int, ...]  # the constant target
    clear_allowzero: bool  # the node had allowzero=1, which its 0s must not keep


def _others_positive(value: tuple[Dim, ...]) -> bool:
    """Every element but the -1 is >= 1 for every binding."""
    for v in value:
        if type(v) is int and v == -1:
            continue
        lo, _ = dim_bounds(v)
        if lo is None or lo < 1:
            return False
    return True


def _has_int(value: tuple[Dim, ...], ints: tuple[int, ...]) -> bool:
    for v in value:
        if type(v) is int and v in ints:
            return True
    return False


def _minus_one_problem(value: tuple[Dim, ...], shape: tuple[Dim, ...], new: list[int], k: int) -> str | None:
    """Why element ``k`` of the target cannot become -1 (None when it can)."""
    product: Dim = 1
    for j, v in enumerate(new):
        if j == k:
            continue
        if v < 1:
            return "is not the one element left: -1 needs every other one a positive integer"
        product = dim_mul(product, v)
    lo, _ = dim_bounds(value[k])
    if lo is None or lo < 1:
        return "may be 0 (it would then copy the input's dim)"
    numel: Dim = 1
    for d in shape:
        if d is None:
            return "cannot be checked against the input's element count"
        numel = dim_mul(numel, d)
    if dim_mul(value[k], product) != numel:
        return "times the others is not the input's element count"
    return None


class _Plan(NamedTuple):
    x: str  # the input, which the readers read instead
    z: str  # the output


class NoOpReshape(RewriteRule):
    """Reshape(x, t) or Expand(x, t) whose output is x's shape dim by dim is x.

    Exporters reshape and expand tensors to shapes computed from the tensors themselves: ``Expand(x,
    Shape(x))``, a ``Reshape`` to ``[0, 0, 12, 64]`` of a ``[b, s, 12, 64]`` tensor. When inference
    proves the result's shape equal to the input's for every binding, the node copies its input:
    its readers read the input and the node goes (the target's computation with it, when nothing
    else reads it). Expand: every target element is 1 or the input's dim at its position (counted
    from the end; the target may be shorter), so broadcasting returns the input's dim even where it
    is 0 or 1. Reshape: as many elements as the input has dims, each the input's dim there, or 0
    with ``allowzero=0``, or one -1 among static positive dims.

    Does not fire when the output is a graph output or is read by name in a subgraph (keeping the
    name would need an Identity, which removes nothing), or when a target element is unknown.
    """

    name = "no-op-reshape"
    code = codes.NO_OP_RESHAPE.code
    reserves = True
    roots = ("Reshape", "Expand")

    def may_fire_later(self, ctx: RoundContext, nid: int) -> bool:
        return _target_is_known(ctx, nid)

    def match(self, ctx: RoundContext, nid: int) -> Result:
        found = _target(ctx, nid)
        if isinstance(found, NoMatch):
            return found
        value, shape = found
        info = ctx.graph.nodes[nid]
        if info.op_type == "Expand":
            if len(value) > len(shape):
                return _NOT_IDENTITY
            off = len(shape) - len(value)
            for j, t in enumerate(value):
                d = shape[off + j]
                if not (t == 1 or (d is not None and t == d)):
                    return _NOT_IDENTITY
        else:
            if len(value) != len(shape):
                return _NOT_IDENTITY
            allowzero = _allowzero(ctx, nid)
            minus = -1
            for i, t in enumerate(value):
                d = shape[i]
                if d is not None and t == d:
                    continue
                if type(t) is int and t == 0 and not allowzero and d is not None:
                    continue
                if type(t) is int and t == -1 and minus < 0:
                    minus = i
                    continue
                return _NOT_IDENTITY
            if minus >= 0:
                for i, d in enumerate(shape):
                    if i != minus and not _static_positive(d):
                        return NoMatch(f"{ctx.display(nid)}: a -1 beside dims not statically positive")
        sid = info.scope
        z = info.outputs[0]
        if ctx.is_output(sid, z) or not ctx.direct_readers_only(sid, z):
            return NoMatch(f"{ctx.display(nid)}: '{z}' must keep its name (graph output or read by a "
                           "subgraph): an Identity would not shrink the graph")
        x = info.inputs[0]
        readers = tuple(r for r in ctx.readers(sid, z) if r != nid)

        def message() -> str:
            return f"{ctx.display(nid)} returns its input '{x}' unchanged"

        return Match(nid, (nid, *exclusive_cone(ctx, nid, (info.inputs[1],))), (), message, "", _Plan(x, z),
                     readers)

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[_Plan]) -> None:
        sid = ctx.sid(m.nid)
        edit.replace_uses(sid, m.payload.z, m.payload.x)
        edit.delete_node(m.nid)


__all__ = ["NoOpReshape", "StaticReshapeTarget"]
