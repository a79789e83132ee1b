"""SF238 fold-reduction: ReduceProd/Sum/Min/Max of a value known before run time is a constant."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from .._onnx import onnx
from ..codes import INFO, Code
from ..passes.context import INT_RANGES, RoundContext, fmt_axes
from ..passes.edit import Editor
from ..passes.match import Match, NoMatch, Result, not_applicable
from ..passes.pattern import DATA_INPUT, Bound, KnownInput, NoFunctionAttributes, Op, exclusive_cone, tensor_of
from ..passes.spec import Rewrite
from .sf218_fold_known_value import MAX_FOLD_ELEMS, write_constant

TensorProto = onnx.TensorProto
I8, U8, I32, I64 = TensorProto.INT8, TensorProto.UINT8, TensorProto.INT32, TensorProto.INT64

# The integer element types onnxruntime's CPU kernels take (brute-forced in onnxruntime 1.32 at
# opsets 13 and 18; other types have no kernel and the model does not load).
KERNEL_TYPES: dict[str, frozenset[int]] = {
    "ReduceProd": frozenset({I32, I64}),
    "ReduceSum": frozenset({I32, I64}),
    "ReduceMin": frozenset({I8, U8, I32, I64}),
    "ReduceMax": frozenset({I8, U8, I32, I64}),
}
# The opset from which the axes are an input (before: an attribute); ``noop_with_empty_axes``
# comes with it.
AXES_INPUT_SINCE = {"ReduceSum": 13, "ReduceProd": 18, "ReduceMin": 18, "ReduceMax": 18}
# onnxruntime computes integer ReduceSum/ReduceProd through double and converts back saturating
# (int64 [2**53 + 1] sums to 2**53; int32 46341 * 46341 gives 2**31 - 1): a fold is exact only
# where no partial result, in any order, leaves the integers a double holds exactly and the type
# holds.
EXACT_IN_DOUBLE = 2**53

_UNKNOWN = not_applicable("input value not known before run time")
_SYMBOLIC = not_applicable("input value is symbolic")
_KNOWN = not_applicable("output value known to inference (fold-known-value's case)")


class _Plan(NamedTuple):
    dtype: int
    shape: tuple[int, ...]
    values: tuple[int, ...]


def _axes(ctx: RoundContext, nid: int, rank: int) -> tuple[int, ...] | None | NoMatch:
    """The normalised axes Reduce ``nid`` reduces over; None for "all of them"; ``()`` for none
    (``noop_with_empty_axes``: the output is the input)."""
    info = ctx.info(nid)
    since = info.since_version or 0
    if since >= AXES_INPUT_SINCE[info.op_type]:
        names = info.inputs
        noop = ctx.int_attribute(nid, "noop_with_empty_axes") or 0
        if len(names) < 2 or not names[1]:
            raw: tuple[int, ...] = ()
        else:
            t = tensor_of(ctx, info.scope, names[1])
            if t is None or t.value is None or any(type(v) is not int for v in t.value):
                return NoMatch(f"{ctx.display(nid)}: axes not known before run time")
            raw = tuple(t.value)  # type: ignore[arg-type]  # ints: checked above
        if not raw:
            return () if noop else None
    else:
        found = None
        if info.has_attrs:
            for a in ctx.peek(nid).attribute:
                if a.name == "axes":
                    found = tuple(int(v) for v in a.ints)
        if found is None:
            return None
        if not found:
            return NoMatch(f"{ctx.display(nid)}: an empty axes attribute")
        raw = found
    axes = tuple(a + rank if a < 0 else a for a in raw)
    if any(not 0 <= a < rank for a in axes) or len(set(axes)) != len(axes):
        return NoMatch(f"{ctx.display(nid)}: axes {fmt_axes(list(raw))} out of range or repeated")
    return axes


def reduce_values(op: str, dtype: int, shape: tuple[int, ...], values: tuple[int, ...],
                  axes: tuple[int, ...] | None, keepdims: bool) -> tuple[tuple[int, ...], tuple[int, ...]] | str:
    """The shape and values onnxruntime computes for ``op`` over ``axes`` (None: all), or why the
    result is not folded (a partial result it might not compute exactly)."""
    rank = len(shape)
    reduced = tuple(range(rank)) if axes is None else tuple(sorted(axes))
    if not reduced:  # noop_with_empty_axes: the input itself
        return shape, values
    lo, hi = INT_RANGES[dtype]
    if op in ("ReduceSum", "ReduceProd"):
        limit = min(hi, -lo, EXACT_IN_DOUBLE)
        if op == "ReduceSum":
            worst = sum(abs(v) for v in values)
        else:
            worst = math.prod(abs(v) for v in values if v != 0)
        if worst > limit:
            return f"a partial {op[6:].lower()} may leave the exact range ({worst} > {limit})"
    # the output, row-major: index each element by its coordinates without the reduced axes
    out_shape = tuple(1 if k in reduced else d for k, d in enumerate(shape))
    kept_strides = []
    size = 1
    for k in range(rank - 1, -1, -1):
        kept_strides.append(size)
        size *= out_shape[k]
    kept_strides.reverse()
    groups: list[list[int]] = [[] for _ in range(size)]
    coords = [0] * rank
    for v in values:
        pos = 0
        for k in range(rank):
            if k not in reduced:
                pos += coords[k] * kept_strides[k]
        groups[pos].append(v)
        for k in range(rank - 1, -1, -1):  # the next coordinates, row-major
            coords[k] += 1
            if coords[k] < shape[k]:
                break
            coords[k] = 0
    out: list[int] = []
    for g in groups:
        if op == "ReduceSum":
            out.append(sum(g))
        elif op == "ReduceProd":
            out.append(math.prod(g))
        elif op == "ReduceMin":
            out.append(min(g) if g else hi)  # an empty reduction: the type's largest value
        else:
            out.append(max(g) if g else lo)  # ... and the smallest
    if not keepdims:
        out_shape = tuple(d for k, d in enumerate(shape) if k not in reduced)
    return out_shape, tuple(out)


class FoldReduction(Rewrite):
    """ReduceProd/ReduceSum/ReduceMin/ReduceMax of a tensor whose value is known is a constant.

    ## What it does
    Reports an integer ``ReduceProd``, ``ReduceSum``, ``ReduceMin`` or ``ReduceMax`` whose input
    value inference knows for every binding (a constant, a static shape read through ``Shape`` and
    ``Gather``/``Slice``) and whose axes are known: ``shapeflow optimize`` makes the result an
    initializer (a Constant node in a function body or where the output is a graph output), and
    the nodes that only fed it are removed by the dead-node sweep. What reads it then has a known
    value too, so the ``Cast``/``Unsqueeze``/``Concat`` after it fold as well (fold-known-value).
    The result is onnxruntime's: ``keepdims``, axes as an attribute or (``ReduceSum`` from opset
    13, the others from 18) an input with ``noop_with_empty_axes``, an empty reduction giving 1,
    0, the type's largest or smallest value.

    ## Why is this bad?
    It is not wrong, but the nodes run on every inference for a result that never changes, and
    they hide the shape they compute from tools that read the graph. tf2onnx's Einsum lowering
    writes ``Reshape(x, Concat([-1], ReduceProd(Gather(Shape(w), [3, 4]))))`` for a static ``w``.

    ## Example
    ``n = ReduceProd(Gather(Shape(w: float[1, 1, 32, 4, 8]), [3, 4]), keepdims=1)`` is the
    constant ``[32]``.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` folds it.

    ## When it does not fire
    When inference already knows the output's value (fold-known-value folds the run it ends),
    when an element of the input is symbolic (``batch``), for float types, for an integer
    ``ReduceSum``/``ReduceProd`` where a partial result could leave the integers onnxruntime
    computes exactly (it computes them in double and converts back saturating: the fold needs the
    sum of the absolute values, or the product of the non-zero ones, to stay within the type and
    within 2**53), for results over 64 elements, or when the model has initializers that are also
    graph inputs.
    """

    code = Code("SF238", "fold-reduction", INFO, fixable=True)
    order = 130
    # (KnownInput is stable: a reduction of a computed tensor is settled, and a round that only
    # modified one, as unsqueeze-into-reduce does, needs no confirming round for it)
    pattern = Op(tuple(KERNEL_TYPES), guards=(DATA_INPUT, KnownInput(0), NoFunctionAttributes()))
    # inference does not evaluate reductions: the folded value is new to it, and what reads it
    # (the Cast/Unsqueeze/Concat of a Reshape target) folds in a round that infers it again
    reveals = True

    def check(self, ctx: RoundContext, b: Bound) -> Result:
        nid = b.root
        info = ctx.info(nid)
        sid = info.scope
        y = tensor_of(ctx, sid, info.outputs[0]) if info.outputs else None
        if y is not None and y.value is not None:
            return _KNOWN  # inference evaluated the reduction: fold-known-value folds its run
        x = tensor_of(ctx, sid, info.inputs[0])
        if x is None or x.value is None or x.shape is None:
            return _UNKNOWN
        for v in x.value:
            if type(v) is not int:
                return _SYMBOLIC
        for d in x.shape:
            if type(d) is not int:
                return _SYMBOLIC
        shape: tuple[int, ...] = tuple(x.shape)  # type: ignore[arg-type]  # ints: checked above
        values: tuple[int, ...] = tuple(x.value)  # type: ignore[arg-type]
        if math.prod(shape) != len(values):
            return NoMatch(f"{ctx.display(nid)}: value and shape disagree")
        if x.dtype not in KERNEL_TYPES[info.op_type]:
            return NoMatch(f"{ctx.display(nid)}: element type {x.dtype} is not folded")
        lo, hi = INT_RANGES[x.dtype]
        if any(not lo <= v <= hi for v in values):
            return NoMatch(f"{ctx.display(nid)}: value out of range of its element type")
        if len(info.outputs) != 1:
            return NoMatch(f"{ctx.display(nid)}: several outputs")
        if ctx.overridable:
            return NoMatch(f"{ctx.display(nid)}: the model has initializers that are also graph "
                           "inputs, so computed values may change at run time")
        axes = _axes(ctx, nid, len(shape))
        if isinstance(axes, NoMatch):
            return axes
        keepdims = ctx.int_attribute(nid, "keepdims")
        result = reduce_values(info.op_type, x.dtype, shape, values, axes, keepdims != 0)
        if isinstance(result, str):
            return NoMatch(f"{ctx.display(nid)}: {result}")
        out_shape, out = result
        if len(out) > MAX_FOLD_ELEMS:
            return NoMatch(f"{ctx.display(nid)}: value of {len(out)} elements is too large to fold")
        readers = tuple(ctx.readers(sid, info.outputs[0]))
        shown = list(out) if len(out) <= 8 else f"{len(out)} values"

        def message() -> str:
            return f"{ctx.display(nid)} is the constant {shown}"

        return Match(nid, reads=readers, sweeps=exclusive_cone(ctx, nid), message=message,
                     payload=_Plan(x.dtype, out_shape, out))

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[Any]) -> None:
        plan = m.payload
        write_constant(ctx, edit, m.nid, plan.dtype, plan.shape, plan.values)


__all__ = ["FoldReduction", "reduce_values"]
