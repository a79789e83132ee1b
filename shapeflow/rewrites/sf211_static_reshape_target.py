"""SF211 static-reshape-target: a Reshape target computed at run time becomes the constant it is."""

from __future__ import annotations

from typing import Any, NamedTuple

from ..codes import INFO, Code
from ..dims import Dim, Domain, dim_bounds, dim_mul
from ..graph import INITIALIZER
from ..passes.context import RoundContext, fmt_axes
from ..passes.edit import Editor
from ..passes.match import Match, NoMatch, Result, not_applicable
from ..passes.pattern import (
    RESHAPE_INPUT_SINCE, Bound, KnownInput, Op, allowzero, exclusive_cone, overridable_problem, tensor_of,
)
from ..passes.spec import Rewrite

_CONSTANT_TARGET = not_applicable("target is already a constant")
_OUTSIDE_TARGET = not_applicable("target is not computed in this graph")
_FOLDS = not_applicable("target value is all integers: fold-known-value folds it")


_UNKNOWN_TARGET = not_applicable("target value not known before run time (more than one element unknown)")
_NO_TARGET = not_applicable("no target input")
_UNKNOWN_RANK = not_applicable("input rank unknown")


class MostlyKnownInput(KnownInput):
    """Input ``k`` of the node has a value inference knows, every element but at most one (an
    int or a symbol; the one left may be unknown)."""

    def check(self, ctx: RoundContext, nid: int) -> NoMatch | None:
        info = ctx.graph.nodes[nid]
        names = info.inputs
        if len(names) <= self.k or not names[self.k]:
            return _UNKNOWN_TARGET
        t = ctx.tensor(info.scope, names[self.k])
        if t is None or t.value is None:
            return _UNKNOWN_TARGET
        unknown = 0
        for v in t.value:
            if v is None:
                unknown += 1
        return _UNKNOWN_TARGET if unknown > 1 else None


def _target_value(ctx: RoundContext, nid: int) -> "tuple[tuple[Dim | None, ...], tuple[Dim, ...]] | NoMatch":
    """``target_value``, with at most one element of the target unknown (None)."""
    info = ctx.graph.nodes[nid]
    names = info.inputs
    if len(names) < 2 or not names[0] or not names[1] or (info.since_version or 0) < RESHAPE_INPUT_SINCE:
        return _NO_TARGET
    sid = info.scope
    t = tensor_of(ctx, sid, names[1])
    if t is None or t.value is None or t.shape is None or len(t.shape) != 1:
        return _UNKNOWN_TARGET
    if sum(1 for v in t.value if v is None) > 1:
        return _UNKNOWN_TARGET
    x = tensor_of(ctx, sid, names[0])
    if x is None or x.shape is None:
        return _UNKNOWN_RANK
    return t.value, x.shape


class StaticTarget(NamedTuple):
    values: tuple[int, ...]  # the constant target
    clear_allowzero: bool  # the node had allowzero=1, which its 0s must not keep


class StaticReshapeTarget(Rewrite):
    """Reshape(x, t) with t computed is Reshape(x, c): c the constant t is, dim by dim.

    ## What it does
    Reports a ``Reshape`` whose target is computed at run time but is, element by element, an
    integer or the input's own dim at the same position, where ``shapeflow optimize`` would give it
    the constant target. With ``allowzero=0`` a 0 in the target copies the input's dim at its
    position, so a target element that inference proves equal to the input's dim there becomes 0,
    an integer stays as it is. One remaining element, symbolic or even unknown, becomes -1 when
    every other element is a positive integer: wherever the model runs, its output has the input's
    element count N, so that dim is N over the others' product P whatever the element held (itself
    when positive, N / P for a -1, the copied input dim for a 0: each must make the count N), which
    is what -1 gives, empty tensors included. Where the element is not N / P the original fails
    and the -1 does not: by default the rewrite removes that failure (the log says so unless the
    element is proven N / P as below); under ``optimize --strict`` the element must be a symbol at
    least 1 for every binding with P times it equal to N. The nodes that computed the target go
    when nothing else reads them.

    With ``allowzero=1`` (torch's dynamo exporter writes it) the rewrite also drops the attribute,
    and fires only when the target has no 0, every symbolic element is the input's dim (the 0s of
    the constant then copy dims that the computed target gave as they are, 0 included), and a -1
    only beside elements provably >= 1 (beside a 0, onnxruntime computes it from the non-zero dims
    under allowzero=1 and fails under 0).

    ## Why is this bad?
    It is not wrong, but exporters compute ``view(b, s, 12, 64)`` as ``Shape -> Gather -> Unsqueeze
    -> Concat`` chains, several nodes per Reshape, for a target that ``[0, 0, 12, 64]`` states
    once.

    ## Example
    ``x: [b, s, 768]; t = Concat(Unsqueeze(Gather(Shape(x), 0)), Unsqueeze(Gather(Shape(x), 1)),
    [12], [64]); y = Reshape(x, t)`` is ``y = Reshape(x, [0, 0, 12, 64])``.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` rewrites it, keeping every
    graph output bit-identical. It fires only on a computed target and leaves an initializer (or a
    Constant node) there, so each firing removes one computed input for good.

    ## When it does not fire
    When the target is already a constant, when two elements are unknown, or symbolic and not the
    input's dims there, or one beside an element that is not a positive integer,
    or when the model has initializers that are also graph inputs (values could be overridden at
    run time).
    """

    code = Code("SF211", "static-reshape-target", INFO, fixable=True)
    order = 330
    pattern = Op("Reshape", guards=(MostlyKnownInput(1),))

    def check(self, ctx: RoundContext, b: Bound) -> Result:
        nid = b.root
        found = _target_value(ctx, nid)
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
        zero = allowzero(ctx, nid)
        problem = overridable_problem(ctx, nid)
        if problem is not None:
            return problem
        new, why = _constant_target(ctx, nid, value, shape, zero)
        if why is not None:
            return why
        shown = ["?" if v is None else str(v) for v in value]
        note = ""
        for k, v in enumerate(new):
            # Reported unless --strict's proof holds (a symbol >= 1 whose product with the others
            # is the input's element count): a symbol >= 1 that is not N / P fails just the same.
            if (v == -1 and type(value[k]) is not int
                    and _minus_one_problem(value, shape, new, k, ctx.domain, True) is not None):
                note = (f"removes a run-time failure where target element {k} ({shown[k]}) times the others "
                        "is not the input's element count")

        def message() -> str:
            return f"{ctx.display(nid)}: target [{', '.join(shown)}] is the constant {fmt_axes(new)}"

        # The target's computation dies with the rewrite: claimed, so that no other rewrite of the
        # round makes new nodes there for the sweep to miss.
        return Match(nid, sweeps=exclusive_cone(ctx, nid, (target,)), message=message, note=note,
                     payload=StaticTarget(tuple(new), bool(zero)))

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[Any]) -> None:
        sid = ctx.sid(m.nid)
        base = ctx.graph.nodes[m.nid].peek().name or ctx.output(m.nid)
        name = edit.int64_const(sid, list(m.payload.values), base, "shape", m.nid)
        edit.set_input(m.nid, 1, name)
        if m.payload.clear_allowzero:
            edit.drop_attribute(m.nid, "allowzero")


def _constant_target(ctx: RoundContext, nid: int, value: "tuple[Dim | None, ...]", shape: tuple[Dim, ...],
                     zero: int) -> tuple[list[int], NoMatch | None]:
    """The constant target, or why there is none."""
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
    if zero:
        # The constant's 0s copy the input's dims only with allowzero=0, which the rewrite sets.
        # Elements equal to the input's dims give those dims either way (0 where they are 0);
        # a 0 or -1 in the target would change meaning (a -1 beside a 0 dim is the non-zero
        # dims' ratio under allowzero=1, an error under 0).
        if rest or _has_int(value, (0,)):
            return new, NoMatch(f"{ctx.display(nid)}: allowzero=1 and a target element is 0 or "
                                "symbolic: a 0 in the target would mean an empty dim")
        if _has_int(value, (-1,)) and not _others_positive(value, ctx.domain):
            return new, NoMatch(f"{ctx.display(nid)}: allowzero=1 and a -1 beside elements that may be "
                                "0 (the non-zero dims' ratio there under allowzero=1, an error under 0)")
    if len(rest) > 1:
        return new, NoMatch(f"{ctx.display(nid)}: target elements {fmt_axes(rest)} are symbolic and "
                            "not the input's dims there")
    if rest:
        k = rest[0]
        why = _minus_one_problem(value, shape, new, k, ctx.domain, ctx.strict)
        if why is not None:
            shown = "?" if value[k] is None else value[k]
            return new, NoMatch(f"{ctx.display(nid)}: target element {k} ({shown}) {why}")
    return new, None


def _may_be_zero(v: "Dim | None", dom: Domain) -> bool:
    if v is None:
        return True
    lo, _ = dim_bounds(v, dom)
    return lo is None or lo < 1


def _others_positive(value: tuple[Dim, ...], dom: Domain) -> bool:
    """Every element but the -1 is >= 1 for every binding."""
    for v in value:
        if type(v) is int and v == -1:
            continue
        lo, _ = dim_bounds(v, dom)
        if lo is None or lo < 1:
            return False
    return True


def _has_int(value: tuple[Dim, ...], ints: tuple[int, ...]) -> bool:
    for v in value:
        if type(v) is int and v in ints:
            return True
    return False


def _minus_one_problem(value: tuple["Dim | None", ...], shape: tuple[Dim, ...], new: list[int], k: int,
                       dom: Domain, strict: bool) -> str | None:
    """Why element ``k`` of the target cannot become -1 (None when it can).

    Every other element is a positive integer; P is their product and N the input's element
    count. Wherever the original runs, its output has N elements, so its dim k is N / P whatever
    element k held: itself when it is positive, N / P for a -1, the input's dim k for a 0 (with
    allowzero=0; under allowzero=1 the 0 itself, then N = 0). The -1 gives N / P: the same shape.
    Where the original fails (element k not N / P, or < -1), the -1 may run instead: a failure
    removed, which ``--strict`` does not allow. Under it, element k must be a symbol at least 1 for
    every binding whose product with P is N (then it is N / P and no failure is removed)."""
    product: Dim = 1
    for j, v in enumerate(new):
        if j == k:
            continue
        if v < 1:
            return "is not the one element left: -1 needs every other one a positive integer"
        product = dim_mul(product, v)
    if not strict:
        return None
    elem = value[k]
    if elem is None:
        return "is unknown (--strict keeps the failure a wrong value would cause)"
    if _may_be_zero(elem, dom):
        return "may be 0 (it copies the input's dim there; --strict keeps the failure that can cause)"
    numel: Dim = 1
    for d in shape:
        if d is None:
            return "cannot be checked against the input's element count (--strict)"
        numel = dim_mul(numel, d)
    if dim_mul(elem, product) != numel:
        return "times the others is not the input's element count (--strict)"
    return None
