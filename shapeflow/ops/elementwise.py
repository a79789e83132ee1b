"""Elementwise ops (unary and broadcasting), Cast, Identity, MatMul, Gemm, reductions.

Broadcasting ops also carry small integer values through (Add/Sub/Mul/Div on shape values, Equal
and Where in the ``-1`` handling that exporters write before Reshape and Expand).
"""

from __future__ import annotations

import math
from functools import partial
from typing import Callable

from .._onnx import onnx

from ..axes import AxisError, normalize_axes
from ..dims import (
    Dim, Domain, Shape, Sym, dim_add, dim_bounds, dim_compare, dim_exact_div, dim_fmod, dim_is_one, dim_max, dim_min,
    dim_mod, dim_mul, dim_neg, dim_sub, dim_truncdiv, dims_equal,
)
from ..tensorinfo import MAX_VALUE_ELEMS, TensorInfo
from .base import INT_TYPES, OpCall, numel, register, same_as_input
from .constants import FLOAT_TYPES
from .numeric import DOUBLE, INT_RANGES, canonical_element, cast_element, float_holds
from .shape_ops import broadcast_conflict, broadcast_join, broadcast_shapes, broadcast_shortcut

TensorProto = onnx.TensorProto

BOOL = TensorProto.BOOL

UNARY = (
    "Relu", "Sigmoid", "Tanh", "Erf", "Sqrt", "Exp", "Log", "Reciprocal", "Sin", "Cos", "Tan",
    "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Softplus", "Softsign", "Gelu",
    "LeakyRelu", "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish", "Mish", "ThresholdedRelu",
    "Softmax", "LogSoftmax", "Hardmax", "Clip", "Sign", "Shrink", "LpNormalization",
    "MeanVarianceNormalization", "LayerNormalization",
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


def _abs(v: Dim, dom: Domain) -> Dim:
    if type(v) is int:
        return -v if v < 0 else v
    lo, hi = dim_bounds(v, dom)
    if lo is not None and lo >= 0:
        return v
    if hi is not None and hi <= 0:
        return dim_neg(v)
    return None


@register("Abs")
def abs_(call: OpCall) -> list[TensorInfo | None]:
    t = call.input(0)
    if t is None:
        return [None]
    value = tuple(_abs(v, call.domain) for v in t.value) if t.value is not None else None
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
    """Values go through onnxruntime's conversion (numeric.cast_element): ints wrap, floats keep
    only what they hold exactly, symbolic values only where their bounds fit the target."""
    t = call.input(0)
    if call.op_type == "Cast":
        to = call.attr_int("to", 0) or 0
    else:
        to = call.dtype(1)
    if t is None:
        return [TensorInfo(to, None)]
    value = t.value
    if value is not None:
        src = t.dtype
        value = tuple(cast_element(src, to, v, call.domain) for v in value) if src else None
    return [TensorInfo(to, t.shape, value)]


# -- broadcasting binary / variadic ops ---------------------------------------------------------

def _pow_in(dtype: int) -> Callable[[Dim, Dim], Dim]:
    """Pow as onnxruntime computes it in ``dtype``: through ``double`` (``std::pow``), or by
    multiplying when the exponent is a scalar 2 or 3. Both give the exact power where it is a
    number the type holds and, for an integer type, ``double`` holds too; anything else (an
    overflow: ``3**39`` in int64, ``3**20`` in int32) depends on the path: unknown. A float
    power that the type cannot hold is dropped by canonical_value afterwards."""
    bounds = INT_RANGES.get(dtype)

    def power(a: Dim, b: Dim) -> Dim:
        if type(a) is not int or type(b) is not int or not 0 <= b <= 64:
            return None
        r: int = a**b
        if bounds is not None and not (bounds[0] <= r <= bounds[1] and float_holds(DOUBLE, r)):
            return None
        return r

    return power


def _int_div(dtype: int, dom: Domain) -> Callable[[Dim, Dim], Dim]:
    """int Div toward zero; ``INT_MIN / -1`` in int32 and int64 traps onnxruntime's scalar path
    (SIGFPE) and wraps in its vectorized one: unknown."""
    lowest = INT_RANGES[dtype][0] if dtype in (TensorProto.INT32, TensorProto.INT64) else None

    def div(a: Dim, b: Dim) -> Dim:
        if lowest is not None and a == lowest and b == -1:
            return None
        return dim_truncdiv(a, b, dom)

    return div


# Comparisons decided from the bounds of a - b: (true when, false when) on (lo, hi).
_SIGN_TESTS: dict[str, Callable[[float, float], bool | None]] = {
    "Less": lambda lo, hi: True if hi < 0 else (False if lo >= 0 else None),
    "Greater": lambda lo, hi: True if lo > 0 else (False if hi <= 0 else None),
    "LessOrEqual": lambda lo, hi: True if hi <= 0 else (False if lo > 0 else None),
    "GreaterOrEqual": lambda lo, hi: True if lo >= 0 else (False if hi < 0 else None),
}


def _cmp(op: str) -> Callable[[Dim, Dim, Domain], Dim]:
    test = _SIGN_TESTS[op]

    def compare(a: Dim, b: Dim, dom: Domain) -> Dim:
        r = dim_compare(a, b, dom)
        if r is None:
            return None
        answer = test(*r)
        return None if answer is None else int(answer)

    return compare


def _equal(a: Dim, b: Dim, dom: Domain) -> Dim:
    eq = dims_equal(a, b, dom)  # decided from the bounds too: a dim is never -1
    return None if eq is None else int(eq)


def _logic(fn: Callable[[bool, bool], bool]) -> Callable[[Dim, Dim], Dim]:
    def op(a: Dim, b: Dim) -> Dim:
        if type(a) is int and type(b) is int:
            return int(fn(bool(a), bool(b)))
        return None

    return op


# The element functions: those of the ring and of logic, and those the domain decides (given it).
_RING_OPS: dict[str, Callable[[Dim, Dim], Dim]] = {
    "Add": dim_add, "Sub": dim_sub, "Mul": dim_mul, "Sum": dim_add,
    "And": _logic(lambda a, b: a and b), "Or": _logic(lambda a, b: a or b),
    "Xor": _logic(lambda a, b: a != b),
}
_DOMAIN_OPS: dict[str, Callable[[Dim, Dim, Domain], Dim]] = {
    "Max": dim_max, "Min": dim_min,
    "Equal": _equal, "Less": _cmp("Less"), "Greater": _cmp("Greater"),
    "LessOrEqual": _cmp("LessOrEqual"), "GreaterOrEqual": _cmp("GreaterOrEqual"),
}
_VALUE_OPS = (*_RING_OPS, *_DOMAIN_OPS)
_COMPARISONS = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor"}


def _broadcast_values(infos: list[TensorInfo], out: Shape) -> list[list[Dim]] | None:
    """Each input's values repeated to the output's elements, or None when not all are known."""
    n = numel(out)
    if n is None or n > MAX_VALUE_ELEMS:
        return None
    result = []
    for t in infos:
        if t.value is None or numel(t.shape) != len(t.value):
            return None  # (unknown, or a value that does not fill its shape: not a broadcast)
        if len(t.value) == n and t.shape == out:
            result.append(list(t.value))
        elif len(t.value) == 1:
            result.append([t.value[0]] * n)
        else:
            import numpy as np  # only for a real broadcast, which shape arithmetic rarely needs

            arr = np.empty(len(t.value), dtype=object)
            arr[:] = list(t.value)
            try:
                result.append(np.broadcast_to(arr.reshape(t.shape), out).reshape(-1).tolist())  # type: ignore[arg-type]
            except ValueError:  # shapes that do not broadcast (the rule doubted the node): no value
                return None
    return result


def _value_fn(call: OpCall, ins: list[TensorInfo]) -> Callable[[Dim, Dim], Dim] | None:
    """The element function of a broadcasting op, by its element type and attributes, deciding in
    the domain in force now (after the broadcast's proofs)."""
    op = call.op_type
    dtype = ins[0].dtype
    is_float = dtype in FLOAT_TYPES
    ring = _RING_OPS.get(op)
    if ring is not None:
        return ring
    dom = call.domain
    if op == "Div":
        # float Div keeps only quotients that are integers for every binding; int Div truncates
        return partial(dim_exact_div, dom=dom) if is_float else _int_div(dtype, dom)
    if op == "Mod":
        # fmod=1 takes the dividend's sign, fmod=0 the divisor's; onnxruntime refuses a float
        # Mod with fmod=0
        if call.attr_int("fmod", 0):
            return partial(dim_fmod, dom=dom)
        return None if is_float else partial(dim_mod, dom=dom)
    if op == "Pow":
        return _pow_in(dtype)
    fn = _DOMAIN_OPS.get(op)
    if fn is None:
        return None
    decide = fn  # (bound for the closure)
    return lambda a, b: decide(a, b, dom)


@register(*_VALUE_OPS, "Div", "Mod", "Pow", "PRelu", "BitShift", "Mean", "BitwiseAnd", "BitwiseOr", "BitwiseXor")
def broadcast_op(call: OpCall) -> list[TensorInfo | None]:
    op = call.op_type
    ins = call.inputs
    dtype: int
    if op in _COMPARISONS:
        dtype = BOOL
    else:
        dtype = next((t.dtype for t in ins if t is not None and t.dtype), 0)
    if call.since < 7 and op in _LEGACY_BROADCAST:
        return [_legacy_broadcast(call, dtype)]
    if any(t is None for t in ins) or not ins:
        return [TensorInfo(dtype, None)]
    shapes = [t.shape for t in ins]  # type: ignore[union-attr]
    out = broadcast_shortcut(shapes)
    if out is None:
        if broadcast_conflict(shapes):
            call.doubt()
        # (before opset 7 Add and friends broadcast the legacy way: nothing is proved from them)
        out = broadcast_shapes(shapes, call.domain, broadcast_join(call),
                               call.learn if call.scope == 0 and call.since >= 7 else None)
    value = None
    fn = _value_fn(call, ins) if all(t.value is not None for t in ins) else None  # type: ignore[union-attr, arg-type]
    if fn is not None and out is not None:
        cols = _broadcast_values(ins, out)  # type: ignore[arg-type]
        if cols is not None:
            vals = cols[0]
            if len(cols) > 2 and dtype in FLOAT_TYPES:
                # Sum of 3 or more: onnxruntime adds one input at a time, rounding each sum to
                # the type (float32 Sum(2**24, 1, 1) is 2**24): a partial sum the type does not
                # hold exactly leaves the element unknown
                for col in cols[1:]:
                    vals = [canonical_element(dtype, fn(a, b), call.domain) for a, b in zip(vals, col)]
            else:
                for col in cols[1:]:
                    vals = [fn(a, b) for a, b in zip(vals, col)]
            value = tuple(vals)
    return [TensorInfo(dtype, out, value)]


# Before opset 7 these ops broadcast the old way (``broadcast``/``axis`` attributes, B onto A), and
# PRelu applied its slope per channel: the output always has A's (X's) shape.
_LEGACY_BROADCAST = frozenset({"Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Less",
                               "Greater", "PRelu"})


def _legacy_broadcast(call: OpCall, dtype: int) -> TensorInfo:
    """Add-1/6 and its kin (and PRelu-1/6), per the spec of those versions: without ``broadcast``
    B has A's shape; with ``broadcast=1`` B has one element, or its shape is a contiguous run of
    A's dims starting at ``axis`` (default: A's last dims). The output has A's shape either way,
    and where B's shape must match part of A's, B's known dims tell A's there. onnxruntime has no
    kernels for these versions (it refuses such models); onnx's checker accepts them."""
    a, b = call.input(0), call.input(1)
    if a is None or a.shape is None:
        return TensorInfo(dtype, None)
    shape = a.shape
    if b is None or b.shape is None:
        return TensorInfo(dtype, shape)
    ra, rb = len(shape), len(b.shape)
    axis: int | None
    if call.op_type == "PRelu":
        axis = 1 if rb == 1 and ra >= 2 else ra - rb  # per channel: a slope [C] lines up with axis 1
        matched = False  # (a slope of one element is shared: its shape says nothing of X's)
    elif call.attr_int("broadcast", 0):
        axis = call.attr_int("axis", ra - rb)
        # B lines up with A unless it has one element: a dim of B provably != 1 says it has not
        matched = any(d != 1 if type(d) is int else dim_is_one(d, call.domain) is False for d in b.shape)
    else:
        axis, matched = 0, True  # no broadcasting: B has A's shape
    if axis is None or axis < 0 or axis + rb > ra or (not call.attr_int("broadcast", 0) and rb != ra
                                                      and call.op_type != "PRelu"):
        axis, matched = None, False  # not a form the spec allows (unless B has one element)
    if matched and axis is not None:
        filled = list(shape)
        for k, d in enumerate(b.shape):
            if filled[axis + k] is None or (type(d) is int and type(filled[axis + k]) is not int):
                filled[axis + k] = d  # equal wherever the model runs: keep the better known
        shape = tuple(filled)
    fn = _value_fn(call, [a, b]) if call.op_type != "PRelu" else None
    n = numel(shape)
    if fn is None or a.value is None or b.value is None or n is None or len(a.value) != n:
        return TensorInfo(dtype, shape)
    if len(b.value) == 1:
        col = list(b.value) * n
    elif axis is not None and tuple(shape[axis:axis + rb]) == b.shape and len(b.value) == numel(b.shape):
        # B's element for A's flat index i: i's coordinates axis .. axis+rb-1, B's own layout
        inner = numel(shape[axis + rb:]) or 1  # (an int: every dim of A is known here)
        count = len(b.value)
        col = [b.value[(i // inner) % count] for i in range(n)]
    else:
        return TensorInfo(dtype, shape)
    return TensorInfo(dtype, shape, tuple(fn(x, y) for x, y in zip(a.value, col)))


@register("Where")
def where(call: OpCall) -> list[TensorInfo | None]:
    ins = call.inputs
    dtype = call.dtype(1) or call.dtype(2)
    if len(ins) < 3 or any(t is None for t in ins):
        return [TensorInfo(dtype, None)]
    if broadcast_conflict([t.shape for t in ins]):  # type: ignore[union-attr]
        call.doubt()
    out = broadcast_shapes([t.shape for t in ins], call.domain, broadcast_join(call),  # type: ignore[union-attr]
                           call.learn if call.scope == 0 else None)
    value = None
    if out is not None:
        cols = _broadcast_values(ins, out)  # type: ignore[arg-type]
        if cols is not None:
            picked: list[Dim] = []
            for c, x, y in zip(*cols):
                if type(c) is int:
                    picked.append(x if c else y)
                else:
                    picked.append(x if dims_equal(x, y, call.domain) is True else None)
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
        sa = [1, *sa]
    if squeeze_b:
        sb = sb + [1]
    inner = (sa[-1], sb[-2])
    if (type(inner[0]) is int and type(inner[1]) is int and inner[0] != inner[1]) or \
            broadcast_conflict([tuple(sa[:-2]), tuple(sb[:-2])]):
        call.doubt()
    elif (inner[0] is None) is not (inner[1] is None) and call.op_type == "MatMul":
        call.same_dims((0, -1), (1, 0 if squeeze_b else -2))  # the kernel refuses unequal ones
    batch = broadcast_shapes([tuple(sa[:-2]), tuple(sb[:-2])], call.domain, broadcast_join(call),
                             call.learn if call.scope == 0 else None)
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
    trans_a, trans_b = call.attr_int("transA", 0), call.attr_int("transB", 0)
    m = a.shape[1] if trans_a else a.shape[0]  # type: ignore[index]
    n = b.shape[0] if trans_b else b.shape[1]  # type: ignore[index]
    k_a = a.shape[0] if trans_a else a.shape[1]  # type: ignore[index]
    k_b = b.shape[1] if trans_b else b.shape[0]  # type: ignore[index]
    if type(k_a) is int and type(k_b) is int and k_a != k_b:
        call.doubt()
    elif (k_a is None) is not (k_b is None):
        call.same_dims((0, 0 if trans_a else 1), (1, 1 if trans_b else 0))  # the kernel refuses unequal ones
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
            return [TensorInfo(t.dtype, t.shape, t.value)]
    else:
        axes = call.attr_ints("axes") or []
    try:
        norm = normalize_axes(axes, rank) if axes else tuple(range(rank))
    except AxisError:
        call.doubt()
        return [None]
    if keep:
        out = tuple(1 if k in norm else d for k, d in enumerate(t.shape))
    else:
        out = tuple(d for k, d in enumerate(t.shape) if k not in norm)
    value = None
    fn = _REDUCE_VALUES.get(call.op_type)
    if fn is None and call.op_type in ("ReduceMin", "ReduceMax"):
        fn = partial(dim_min if call.op_type == "ReduceMin" else dim_max, dom=call.domain)
    if fn is not None and t.value is not None and t.dtype in INT_TYPES and t.dtype != BOOL:
        exact = partial(_double_exact, dom=call.domain) if call.op_type in ("ReduceProd", "ReduceSum") else None
        value = _reduce_values(fn, t.value, t.shape, norm, exact, INT_RANGES.get(t.dtype))
    return [TensorInfo(t.dtype, out, value)]


# The reductions whose values shape arithmetic uses (tf2onnx multiplies dims with ReduceProd);
# integer types only: a float sum rounds at each step, in an order that is the kernel's.
# (and ReduceMin, ReduceMax: dim_min and dim_max in the call's domain)
_REDUCE_VALUES: dict[str, Callable[[Dim, Dim], Dim]] = {"ReduceProd": dim_mul, "ReduceSum": dim_add}


_DOUBLE_EXACT = 2**53


def _double_exact(v: Dim, dom: Domain) -> bool:
    """Whether ``v`` is an integer double holds exactly (symbols within the value domain's one
    built-in premise, ``dom.overflow_cap``)."""
    if type(v) is int:
        return -_DOUBLE_EXACT <= v <= _DOUBLE_EXACT
    if v is None:
        return False
    lo, hi = dim_bounds(v, dom, dom.overflow_cap)
    if lo is None or hi is None:
        return False
    # a polynomial whose coefficients share a factor 2**k is 2**k times one of a 2**k smaller
    # range: exact wherever that one is (b*s*64 with b, s up to 2**24)
    scale = 1
    if type(v) is Sym:
        g = 0
        for c in v.term_coefficients():
            g = math.gcd(g, c)
        scale = g & -g if g else 1
    return -_DOUBLE_EXACT * scale <= lo and hi <= _DOUBLE_EXACT * scale


def _reduce_values(fn: Callable[[Dim, Dim], Dim], value: tuple[Dim, ...], shape: Shape,
                   axes: tuple[int, ...], exact: Callable[[Dim], bool] | None = None,
                   bounds: tuple[int, int] | None = None) -> tuple[Dim, ...] | None:
    """The elements of a reduction of a small tensor of known int ``shape``, row-major; None for
    an empty reduction (onnxruntime's identity element of Min/Max is the type's extreme).

    onnxruntime sums and multiplies integers in double and converts back saturating
    (``ReduceSum([0, 2**63 - 2])`` is ``2**63 - 1``, ``ReduceProd`` of int32 ``[2**16, 2**16]`` is
    ``2**31 - 1``): with ``exact`` an element is stated only where every operand and partial result
    is one double holds exactly and the result lies in ``bounds`` (the type's range)."""
    n = numel(shape)
    if n is None or n != len(value) or n == 0:
        return None
    dims: list[int] = list(shape)  # type: ignore[arg-type]  # every dim is an int: numel() is
    if any(dims[a] == 0 for a in axes):
        return None
    strides = [1] * len(dims)
    for k in range(len(dims) - 2, -1, -1):
        strides[k] = strides[k + 1] * dims[k + 1]
    groups: dict[tuple[int, ...], Dim] = {}
    for flat, v in enumerate(value):
        key = tuple(flat // strides[k] % dims[k] for k in range(len(dims)) if k not in axes)
        if key not in groups:
            groups[key] = v if exact is None or exact(v) else None
            continue
        acc = groups[key]
        if acc is None or v is None or (exact is not None and not exact(v)):
            groups[key] = None
            continue
        acc = fn(acc, v)
        groups[key] = acc if exact is None or exact(acc) else None
    out = tuple(groups.values())
    if exact is not None and bounds is not None:
        out = tuple(None if type(v) is int and not bounds[0] <= v <= bounds[1] else v for v in out)
    return out


@register("ArgMax", "ArgMin")
def arg_reduce(call: OpCall) -> list[TensorInfo | None]:
    t = call.input(0)
    if t is None or t.shape is None:
        return [TensorInfo(TensorProto.INT64, None)]
    rank = len(t.shape)
    try:
        (axis,) = normalize_axes([call.attr_int("axis", 0) or 0], rank)
    except (AxisError, ValueError):
        call.doubt()
        return [None]
    if call.attr_int("keepdims", 1):
        out = tuple(1 if k == axis else d for k, d in enumerate(t.shape))
    else:
        out = tuple(d for k, d in enumerate(t.shape) if k != axis)
    return [TensorInfo(TensorProto.INT64, out)]

