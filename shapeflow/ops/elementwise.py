"""Elementwise ops (unary and broadcasting), Cast, Identity, MatMul, Gemm, reductions.

Broadcasting ops also carry small integer values through (Add/Sub/Mul/Div on shape values, Equal
and Where in the ``-1`` handling that exporters write before Reshape and Expand).
"""

from __future__ import annotations

from typing import Callable

from .._onnx import onnx

from ..axes import AxisError, normalize_axes
from ..dims import (
    Dim, Shape, dim_add, dim_floordiv, dim_max, dim_min, dim_mod, dim_mul, dim_neg,
    dim_nonnegative, dim_sub, dims_equal,
)
from ..tensorinfo import MAX_VALUE_ELEMS, TensorInfo
from .base import OpCall, numel, register, same_as_input
from .constants import FLOAT_TYPES
from .shape_ops import broadcast_shapes

TensorProto = onnx.TensorProto

BOOL = TensorProto.BOOL

UNARY = (
    "Relu", "Sigmoid", "Tanh", "Erf", "Sqrt", "Exp", "Log", "Abs", "Reciprocal", "Sin", "Cos", "Tan",
    "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Softplus", "Softsign", "Gelu",
    "LeakyRelu", "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish", "Mish", "ThresholdedRelu",
    "Softmax", "LogSoftmax", "Hardmax", "Clip", "Sign", "Shrink", "LpNormalization",
    "InstanceNormalization", "MeanVarianceNormalization", "BatchNormalization", "LayerNormalization",
    "GroupNormalization", "RMSNormalization", "SkipLayerNormalization", "BitwiseNot", "Trilu",
    "CumSum", "ReverseSequence",
)
register(*UNARY)(same_as_input)


@register("Dropout")
def dropout(call: OpCall) -> list[TensorInfo | None]:
    t = call.input(0)
    out = None if t is None else TensorInfo(t.dtype, t.shape)
    mask = None if t is None else TensorInfo(BOOL, t.shape)
    return [out, mask]


@register("Identity")
def identity(call: OpCall) -> list[TensorInfo | None]:
    return [call.input(0)]


@register("Floor", "Ceil", "Round")
def rounding(call: OpCall) -> list[TensorInfo | None]:
    t = call.input(0)
    return [t]  # tracked values are integral, so rounding keeps them


@register("Neg")
def neg(call: OpCall) -> list[TensorInfo | None]:
    t = call.input(0)
    if t is None:
        return [None]
    value = tuple(dim_neg(v) for v in t.value) if t.value is not None else None
    return [TensorInfo(t.dtype, t.shape, value)]


@register("IsNaN", "IsInf")
def predicate(call: OpCall) -> list[TensorInfo | None]:
    t = call.input(0)
    return [TensorInfo(BOOL, t.shape if t else None)]


@register("Not")
def not_(call: OpCall) -> list[TensorInfo | None]:
    t = call.input(0)
    if t is None:
        return [TensorInfo(BOOL, None)]
    value = None
    if t.value is not None and all(type(v) is int for v in t.value):
        value = tuple(0 if v else 1 for v in t.value)
    return [TensorInfo(BOOL, t.shape, value)]


@register("Cast", "CastLike")
def cast(call: OpCall) -> list[TensorInfo | None]:
    t = call.input(0)
    if call.op_type == "Cast":
        to = call.attr_int("to", 0) or 0
    else:
        to = call.dtype(1)
    if t is None:
        return [TensorInfo(to, None)]
    value = t.value
    if value is not None and to == BOOL:
        value = tuple(None if type(v) is not int else int(v != 0) for v in value)
    elif value is not None and to not in FLOAT_TYPES and not _is_int_type(to):
        value = None
    return [TensorInfo(to, t.shape, value)]


def _is_int_type(dtype: int) -> bool:
    return dtype in (TensorProto.INT64, TensorProto.INT32, TensorProto.INT16, TensorProto.INT8,
                     TensorProto.UINT64, TensorProto.UINT32, TensorProto.UINT16, TensorProto.UINT8)


# -- broadcasting binary / variadic ops ---------------------------------------------------------

def _div(a: Dim, b: Dim, is_float: bool) -> Dim:
    if type(a) is int and type(b) is int:
        if b == 0:
            return None
        if is_float:
            return a // b if a % b == 0 else None
        q = abs(a) // abs(b)  # integer Div truncates toward zero
        return q if (a >= 0) == (b >= 0) else -q
    return dim_floordiv(a, b)  # symbolic shape values are non-negative: floor == truncation


def _pow(a: Dim, b: Dim) -> Dim:
    if type(a) is int and type(b) is int and 0 <= b <= 64:
        return a**b
    return None


def _cmp(fn: Callable[[int, int], bool]) -> Callable[[Dim, Dim], Dim]:
    def op(a: Dim, b: Dim) -> Dim:
        if type(a) is int and type(b) is int:
            return int(fn(a, b))
        return None

    return op


def _equal(a: Dim, b: Dim) -> Dim:
    eq = dims_equal(a, b)
    if eq is None and (type(a) is int and a < 0 and dim_nonnegative(b)
                       or type(b) is int and b < 0 and dim_nonnegative(a)):
        return 0  # a symbolic dim is never negative: Equal(batch, -1) is false
    return None if eq is None else int(eq)


def _logic(fn: Callable[[bool, bool], bool]) -> Callable[[Dim, Dim], Dim]:
    def op(a: Dim, b: Dim) -> Dim:
        if type(a) is int and type(b) is int:
            return int(fn(bool(a), bool(b)))
        return None

    return op


_VALUE_OPS: dict[str, Callable[[Dim, Dim], Dim]] = {
    "Add": dim_add, "Sub": dim_sub, "Mul": dim_mul, "Mod": dim_mod, "Pow": _pow,
    "Max": dim_max, "Min": dim_min, "Sum": dim_add,
    "Equal": _equal, "Less": _cmp(lambda a, b: a < b), "Greater": _cmp(lambda a, b: a > b),
    "LessOrEqual": _cmp(lambda a, b: a <= b), "GreaterOrEqual": _cmp(lambda a, b: a >= b),
    "And": _logic(lambda a, b: a and b), "Or": _logic(lambda a, b: a or b),
    "Xor": _logic(lambda a, b: a != b),
}
_COMPARISONS = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor"}


def _broadcast_values(infos: list[TensorInfo], out: Shape) -> list[list[Dim]] | None:
    """Each input's values repeated to the output's elements, or None when not all are known."""
    n = numel(out)
    if n is None or n > MAX_VALUE_ELEMS:
        return None
    result = []
    for t in infos:
        if t.value is None or numel(t.shape) is None:
            return None
        if len(t.value) == n and t.shape == out:
            result.append(list(t.value))
        elif len(t.value) == 1:
            result.append([t.value[0]] * n)
        else:
            import numpy as np  # only for a real broadcast, which shape arithmetic rarely needs

            arr = np.empty(len(t.value), dtype=object)
            arr[:] = list(t.value)
            result.append(np.broadcast_to(arr.reshape(t.shape), out).reshape(-1).tolist())  # type: ignore[arg-type]
    return result


@register(*_VALUE_OPS, "Div", "PRelu", "BitShift", "Mean", "BitwiseAnd", "BitwiseOr", "BitwiseXor")
def broadcast_op(call: OpCall) -> list[TensorInfo | None]:
    op = call.op_type
    ins = call.inputs
    dtype = BOOL if op in _COMPARISONS else next((t.dtype for t in ins if t is not None and t.dtype), 0)
    if any(t is None for t in ins) or not ins:
        return [TensorInfo(dtype, None)]
    out = broadcast_shapes([t.shape for t in ins])  # type: ignore[union-attr]
    value = None
    fn = _VALUE_OPS.get(op)
    if op == "Div":
        is_float = ins[0].dtype in FLOAT_TYPES  # type: ignore[union-attr]
        fn = lambda a, b: _div(a, b, is_float)  # noqa: E731
    if fn is not None and out is not None:
        cols = _broadcast_values(ins, out)  # type: ignore[arg-type]
        if cols is not None:
            vals = cols[0]
            for col in cols[1:]:
                vals = [fn(a, b) for a, b in zip(vals, col)]
            value = tuple(vals)
    return [TensorInfo(dtype, out, value)]


@register("Where")
def where(call: OpCall) -> list[TensorInfo | None]:
    ins = call.inputs
    dtype = call.dtype(1) or call.dtype(2)
    if len(ins) < 3 or any(t is None for t in ins):
        return [TensorInfo(dtype, None)]
    out = broadcast_shapes([t.shape for t in ins])  # type: ignore[union-attr]
    value = None
    if out is not None:
        cols = _broadcast_values(ins, out)  # type: ignore[arg-type]
        if cols is not None:
            picked: list[Dim] = []
            for c, x, y in zip(*cols):
                if type(c) is int:
                    picked.append(x if c else y)
                else:
                    picked.append(x if dims_equal(x, y) is True else None)
            value = tuple(picked)
    return [TensorInfo(dtype, out, value)]


# -- matrix products and reductions -------------------------------------------------------------

@register("MatMul", "MatMulInteger")
def matmul(call: OpCall) -> list[TensorInfo | None]:
    a, b = call.input(0), call.input(1)
    dtype = TensorProto.INT32 if call.op_type == "MatMulInteger" else (a.dtype if a else 0)
    if a is None or b is None or a.shape is None or b.shape is None or not a.shape or not b.shape:
        return [TensorInfo(dtype, None)]
    sa, sb = list(a.shape), list(b.shape)
    squeeze_a, squeeze_b = len(sa) == 1, len(sb) == 1
    if squeeze_a:
        sa = [1] + sa
    if squeeze_b:
        sb = sb + [1]
    batch = broadcast_shapes([tuple(sa[:-2]), tuple(sb[:-2])])
    if batch is None:
        return [TensorInfo(dtype, None)]
    out = list(batch) + ([] if squeeze_a else [sa[-2]]) + ([] if squeeze_b else [sb[-1]])
    return [TensorInfo(dtype, tuple(out))]


@register("Gemm")
def gemm(call: OpCall) -> list[TensorInfo | None]:
    a, b = call.input(0), call.input(1)
    dtype = a.dtype if a else 0
    if a is None or b is None or a.rank != 2 or b.rank != 2:
        return [TensorInfo(dtype, (None, None))]
    m = a.shape[1] if call.attr_int("transA", 0) else a.shape[0]  # type: ignore[index]
    n = b.shape[0] if call.attr_int("transB", 0) else b.shape[1]  # type: ignore[index]
    return [TensorInfo(dtype, (m, n))]


_REDUCE = ("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
           "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare")
# Version from which each reduction takes axes as an input rather than an attribute.
_AXES_INPUT_SINCE = {"ReduceSum": 13}


@register(*_REDUCE)
def reduce(call: OpCall) -> list[TensorInfo | None]:
    t = call.input(0)
    if t is None or t.shape is None:
        return [TensorInfo(t.dtype if t else 0, None)]
    keep = call.attr_int("keepdims", 1)
    rank = len(t.shape)
    if call.since >= _AXES_INPUT_SINCE.get(call.op_type, 18):
        if call.has_input(1):
            axes = call.int_values(1)
            if axes is None:
                return [TensorInfo(t.dtype, (None,) * rank if keep else None)]
        else:
            axes = []
        if not axes and call.attr_int("noop_with_empty_axes", 0):
            return [TensorInfo(t.dtype, t.shape)]
    else:
        axes = call.attr_ints("axes") or []
    try:
        norm = normalize_axes(axes, rank) if axes else tuple(range(rank))
    except AxisError:
        return [None]
    if keep:
        out = tuple(1 if k in norm else d for k, d in enumerate(t.shape))
    else:
        out = tuple(d for k, d in enumerate(t.shape) if k not in norm)
    return [TensorInfo(t.dtype, out)]


@register("ArgMax", "ArgMin")
def arg_reduce(call: OpCall) -> list[TensorInfo | None]:
    t = call.input(0)
    if t is None or t.shape is None:
        return [TensorInfo(TensorProto.INT64, None)]
    rank = len(t.shape)
    try:
        (axis,) = normalize_axes([call.attr_int("axis", 0) or 0], rank)
    except (AxisError, ValueError):
        return [None]
    if call.attr_int("keepdims", 1):
        out = tuple(1 if k == axis else d for k, d in enumerate(t.shape))
    else:
        out = tuple(d for k, d in enumerate(t.shape) if k != axis)
    return [TensorInfo(TensorProto.INT64, out)]

