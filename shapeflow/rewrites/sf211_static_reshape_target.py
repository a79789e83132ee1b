"""SF211 static-reshape-target: a Reshape target computed at run time becomes the constant it is."""

from __future__ import annotations

from typing import Any, NamedTuple

from ..codes import INFO, Code
from ..dims import Dim, Domain, dim_bounds, dim_mul
from ..graph import INITIALIZER
from ..passes.context import RoundContext, fmt_axes
from ..passes.edit import Editor
from ..passes.match import Match, NoMatch, Result, not_applicable
from ..passes.pattern import Bound, KnownInput, Op, allowzero, exclusive_cone, overridable_problem, target_value
from ..passes.spec import Rewrite

_CONSTANT_TARGET = not_applicable("target is already a constant")
_OUTSIDE_TARGET = not_applicable("target is not computed in this graph")
_FOLDS = not_applicable("target value is all integers: fold-known-value folds it")


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
    an integer stays as it is. One remaining symbolic element becomes -1 only when every other
    element is a positive integer, it is at least 1 for every binding, and the target's product
    equals the input's element count: then the -1 is that element wherever the model runs, empty
    tensors included. The nodes that computed the target go when nothing else reads them.

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
    When the target is already a constant, when an element is unknown or symbolic in another way,
    or when the model has initializers that are also graph inputs (values could be overridden at
    run time).
    """

    code = Code("SF211", "static-reshape-target", INFO, fixable=True)
    order = 330
    pattern = Op("Reshape", guards=(KnownInput(1),))

    def check(self, ctx: RoundContext, b: Bound) -> Result:
        nid = b.root
        found = target_value(ctx, nid)
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
        shown = [str(v) for v in value]

        def message() -> str:
            return f"{ctx.display(nid)}: target [{', '.join(shown)}] is the constant {fmt_axes(new)}"

        # The target's computation dies with the rewrite: claimed, so that no other rewrite of the
        # round makes new nodes there for the sweep to miss.
        return Match(nid, sweeps=exclusive_cone(ctx, nid, (target,)), message=message,
                     payload=StaticTarget(tuple(new), bool(zero)))

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[Any]) -> None:
        sid = ctx.sid(m.nid)
        base = ctx.graph.nodes[m.nid].peek().name or ctx.output(m.nid)
        name = edit.int64_const(sid, list(m.payload.values), base, "shape", m.nid)
        edit.set_input(m.nid, 1, name)
        if m.payload.clear_allowzero:
            edit.drop_attribute(m.nid, "allowzero")


def _constant_target(ctx: RoundContext, nid: int, value: tuple[Dim, ...], shape: tuple[Dim, ...],
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
        why = _minus_one_problem(value, shape, new, k, ctx.domain)
        if why is not None:
            return new, NoMatch(f"{ctx.display(nid)}: target element {k} ({value[k]}) {why}")
    return new, None


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


def _minus_one_problem(value: tuple[Dim, ...], shape: tuple[Dim, ...], new: list[int], k: int,
                       dom: Domain) -> str | None:
    """Why element ``k`` of the target cannot become -1 (None when it can)."""
    product: Dim = 1
    for j, v in enumerate(new):
        if j == k:
            continue
        if v < 1:
            return "is not the one element left: -1 needs every other one a positive integer"
        product = dim_mul(product, v)
    lo, _ = dim_bounds(value[k], dom)
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
