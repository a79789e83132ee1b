"""onnxruntime's number semantics for the values inference tracks (SPEC.md section 6).

Inference carries the elements of small tensors (shape vectors, indices, scalars) as ints or
symbolic dims. An element is only as good as its type lets it be: int64 wraps, an int32 holds
what fits in 32 bits, a float16 holds 2048 but not 2049. :func:`canonical_value` puts every
tracked value through its tensor's element type after each op, so no rule has to remember it:
known ints are wrapped (integer types) or kept only when the float type holds them exactly, and a
symbolic element survives only when its bounds prove it fits (otherwise it is unknown).

Slice, Range, Cast and Reshape have rules of their own here, written from onnxruntime's kernels and
checked against them by brute force (tests/test_numeric.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from .._onnx import onnx
from ..dims import Dim, Domain, Sym, dim_bounds

TensorProto = onnx.TensorProto

INT_RANGES: dict[int, tuple[int, int]] = {
    TensorProto.INT64: (-(2**63), 2**63 - 1),
    TensorProto.INT32: (-(2**31), 2**31 - 1),
    TensorProto.INT16: (-(2**15), 2**15 - 1),
    TensorProto.INT8: (-(2**7), 2**7 - 1),
    TensorProto.UINT64: (0, 2**64 - 1),
    TensorProto.UINT32: (0, 2**32 - 1),
    TensorProto.UINT16: (0, 2**16 - 1),
    TensorProto.UINT8: (0, 2**8 - 1),
}

# float types: (significand bits including the implicit one, largest finite value)
FLOAT_FORMATS: dict[int, tuple[int, int]] = {
    TensorProto.FLOAT: (24, (2**24 - 1) * 2**104),
    TensorProto.DOUBLE: (53, (2**53 - 1) * 2**971),
    TensorProto.FLOAT16: (11, 65504),
    TensorProto.BFLOAT16: (8, (2**8 - 1) * 2**120),
}

BOOL = TensorProto.BOOL
INT64 = TensorProto.INT64
DOUBLE = TensorProto.DOUBLE
# An end at either of these means "to the end" in onnxruntime's Slice (and, for a negative step,
# "to the beginning": the spec would clamp it to dim - 1 instead; onnxruntime is what runs).
SLICE_TO_END = frozenset({2**31 - 1, 2**63 - 1})


def wrap_int(dtype: int, v: int) -> int:
    """``v`` stored in integer type ``dtype``: two's complement wrap-around."""
    lo, hi = INT_RANGES[dtype]
    if lo <= v <= hi:
        return v
    span = hi - lo + 1
    return (v - lo) % span + lo


def float_holds(dtype: int, v: int) -> bool:
    """Whether float type ``dtype`` represents the integer ``v`` exactly."""
    bits, largest = FLOAT_FORMATS[dtype]
    m = abs(v)
    if m > largest:
        return False
    if m == 0:
        return True
    m >>= (m & -m).bit_length() - 1  # drop trailing zero bits: what is left needs the significand
    return m.bit_length() <= bits


def _exact_range(dtype: int) -> tuple[int, int] | None:
    """The interval of integers a type holds exactly, every one of them."""
    r = INT_RANGES.get(dtype)
    if r is not None:
        return r
    f = FLOAT_FORMATS.get(dtype)
    if f is not None:
        return -(2 ** f[0]), 2 ** f[0]
    return None


# Symbolic arithmetic is exact; a typed tensor agrees while the value fits its type: a symbolic
# value is stated where it fits its type for every symbol up to the domain's built-in premise,
# ``Domain.overflow_cap`` (dims.OVERFLOW_CAP, 2**24; the reasons are given there).


_INT64_RANGE = (-(2**63), 2**63 - 1)


def _sym_fits(dtype: int, v: Sym, dom: Domain) -> bool:
    r = _INT64_RANGE if dtype == INT64 else _exact_range(dtype)  # (int64: shape vectors, the common case)
    if r is None:
        return False
    lo, hi = dim_bounds(v, dom, dom.overflow_cap)
    return lo is not None and hi is not None and r[0] <= lo and hi <= r[1]


def canonical_element(dtype: int, v: Dim, dom: Domain) -> Dim:
    """One tracked element as a tensor of ``dtype`` holds it (symbols ranging over ``dom``); None
    where that is not known."""
    if type(v) is int:
        if dtype in INT_RANGES:
            return wrap_int(dtype, v)
        if dtype == BOOL:
            return 1 if v else 0
        if dtype in FLOAT_FORMATS:
            return v if float_holds(dtype, v) else None
        return None
    if v is None:
        return None
    if dtype == BOOL:
        lo, hi = dim_bounds(v, dom)
        if (lo is not None and lo > 0) or (hi is not None and hi < 0):
            return 1
        return None
    return v if _sym_fits(dtype, v, dom) else None  # type: ignore[arg-type]


def canonical_value(dtype: int, value: tuple[Dim, ...], dom: Domain,
                    memo: dict[tuple[int, tuple[Dim, ...]], tuple[Dim, ...]] | None = None) -> tuple[Dim, ...] | None:
    """``value`` as a tensor of ``dtype`` holds it (see the module docstring) in ``dom``; None when
    no element is known or the type is not one whose values are tracked.

    ``canonical_value_plain`` with ``memo``, the caller's table of the values whose every symbolic
    element fits, by value (a model repeats a few shape vectors, ``[batch, seq, 8]``, thousands of
    times, and each symbol's bounds took most of the time of inferring them). A value that fits
    keeps fitting in a narrower domain: one table serves a domain and every narrowing of it
    (inference's run, whose domain only narrows as it proves facts), never another domain."""
    if dtype == INT64:
        # the common case: shape vectors of small ints, unchanged
        for v in value:
            if type(v) is not int or not -(2**63) <= v < 2**63:
                break
        else:
            return value
    elif dtype not in INT_RANGES and dtype not in FLOAT_FORMATS and dtype != BOOL:
        return None
    if not MEMO or memo is None:
        return canonical_value_plain(dtype, value, dom)
    for v in value:  # only ints and symbols are keys: True == 1 and 1.0 == 1 would share an entry
        t = type(v)
        if t is not int and t is not Sym:
            return canonical_value_plain(dtype, value, dom)
    key = (dtype, value)
    found = memo.get(key)
    if found is not None:
        return found
    out = canonical_value_plain(dtype, value, dom)
    if out is not None:
        for v in out:
            if v is None:
                break
        else:
            # Every element fits, and keeps fitting in every narrowing of ``dom``. (An element
            # that does not fit might fit later: such answers are not kept.)
            memo[key] = out
    return out


def canonical_value_plain(dtype: int, value: tuple[Dim, ...], dom: Domain) -> tuple[Dim, ...] | None:
    """``canonical_value`` without its fast paths: every element through ``canonical_element``."""
    if dtype not in INT_RANGES and dtype not in FLOAT_FORMATS and dtype != BOOL:
        return None
    out = tuple(canonical_element(dtype, v, dom) for v in value)
    for v in out:
        if v is not None:
            return out
    return None


# Whether ``canonical_value`` uses the memo it is given (tests/test_fast_paths.py compares it with
# the plain one).
MEMO = True


def cast_element(src: int, dst: int, v: Dim, dom: Domain) -> Dim:
    """``Cast(to=dst)`` of one element of type ``src`` (tracked float values are integral), in ``dom``."""
    if v is None:
        return None
    if src in FLOAT_FORMATS and dst in INT_RANGES:
        # float -> int truncates toward zero (integral already); out of range is undefined
        lo, hi = INT_RANGES[dst]
        if type(v) is int:
            return v if lo <= v <= hi else None
        blo, bhi = dim_bounds(v, dom, dom.overflow_cap)
        return v if blo is not None and bhi is not None and lo <= blo and bhi <= hi else None
    return canonical_element(dst, v, dom)


# -- Slice ------------------------------------------------------------------------------------------

def slice_range(d: int, start: int, end: int, step: int) -> range:
    """The indices onnxruntime's Slice takes from a dim of length ``d`` (``step`` != 0)."""
    if start < 0:
        start += d
    if step < 0:
        start = min(max(start, 0), d - 1)
    else:
        start = min(max(start, 0), d)
    if end in SLICE_TO_END:
        end = -1 if step < 0 else d
    else:
        if end < 0:
            end += d
        end = min(max(end, -1), d) if step < 0 else min(max(end, 0), d)
    if step > 0:
        n = max(0, -((start - end) // step))
    else:
        n = max(0, -((end - start) // -step))
    return range(start, start + n * step, step) if n else range(0)


# -- Reshape ----------------------------------------------------------------------------------------

def reshape_dims(dims: Sequence[int], target: Sequence[int], allowzero: int) -> list[int] | None:
    """The output shape onnxruntime's Reshape gives ``dims`` for ``target``, or None where it
    fails. A 0 copies the input's dim (unless ``allowzero``); a -1 is the input's size over the
    product of the other dims, and where that product is 0 (only possible with ``allowzero``: a
    0 without it fails) the input must be empty and the -1 is the product of the input's non-zero
    dims over the target's non-zero ones (``[0, 5, 64] -> [0, 5, -1, 16]`` is ``[0, 5, 4, 16]``)."""
    out: list[int] = []
    minus_at = -1
    size = 1
    for k, t in enumerate(target):
        if t == 0 and not allowzero:
            if k >= len(dims):
                return None
            t = dims[k]
        if t == -1:
            if minus_at >= 0:
                return None
            minus_at = k
        elif t < 0:
            return None
        else:
            size *= t
        out.append(t)
    n = 1
    for d in dims:
        n *= d
    if minus_at >= 0:
        if size:
            if n % size:
                return None
            out[minus_at] = n // size
        else:
            if not allowzero or n:
                return None
            nz_in = nz_out = 1
            for d in dims:
                nz_in *= d or 1
            for k, t in enumerate(out):
                if k != minus_at:
                    nz_out *= t or 1
            if nz_in % nz_out:
                return None
            out[minus_at] = nz_in // nz_out
    total = 1
    for d in out:
        total *= d
    return out if total == n else None
