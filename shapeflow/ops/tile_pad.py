"""Ops that repeat, pad or cut a tensor along its axes: Tile, Pad, Split.

A repeat, pad or split size may itself be symbolic (shape arithmetic feeds them), and each axis is
computed on its own, so one unknown repeat or pad leaves the other axes known.
"""

from __future__ import annotations

from ..axes import AxisError, normalize_axis
from ..dims import Dim, dim_add, dim_floordiv, dim_mul, dim_sub
from ..tensorinfo import MAX_VALUE_ELEMS, TensorInfo
from .base import OpCall, register
from .fallback import infer_with_onnx


@register("Tile")
def tile(call: OpCall) -> list[TensorInfo | None]:
    if call.since < 6:  # Tile-1 takes (tiles, axis) inputs; rare enough to leave to onnx
        return infer_with_onnx(call)
    data = call.input(0)
    dtype = data.dtype if data is not None else 0
    shape = data.shape if data is not None else None
    reps = call.value(1)
    if shape is None:
        s = call.shape(1)
        rank = s[0] if s is not None and len(s) == 1 and type(s[0]) is int else None
        return [TensorInfo(dtype, None if rank is None else (None,) * rank)]
    if reps is None or len(reps) != len(shape):
        if reps is not None:
            call.doubt()
        return [TensorInfo(dtype, (None,) * len(shape))]
    out = tuple(dim_mul(d, r) for d, r in zip(shape, reps))
    value = None
    if len(shape) == 1 and data is not None and data.value is not None and type(reps[0]) is int:
        if 0 <= len(data.value) * reps[0] <= MAX_VALUE_ELEMS:
            value = data.value * reps[0]
    return [TensorInfo(dtype, out, value)]


def _pad_amounts(call: OpCall, rank: int) -> list[tuple[Dim, Dim]] | None:
    """(begin, end) padding per axis, None entries where unknown; None when nothing is usable."""
    if call.since < 11:
        pads = call.attr_ints("paddings" if call.since < 2 else "pads")
        if pads is None or len(pads) != 2 * rank:
            return None
        return [(pads[i], pads[rank + i]) for i in range(rank)]
    v = call.value(1)
    if v is None:
        return None
    axes: list[int] = list(range(rank))
    if call.since >= 18 and call.has_input(3):
        given = call.int_values(3)
        if given is None:
            return None
        try:
            axes = [normalize_axis(a, rank) for a in given]
        except AxisError:
            return None
        if len(set(axes)) != len(axes):
            return None
    n = len(axes)
    if len(v) != 2 * n:
        return None
    amounts: list[tuple[Dim, Dim]] = [(0, 0)] * rank
    for i, a in enumerate(axes):
        amounts[a] = (v[i], v[n + i])
    return amounts


@register("Pad")
def pad(call: OpCall) -> list[TensorInfo | None]:
    data = call.input(0)
    dtype = data.dtype if data is not None else 0
    shape = data.shape if data is not None else None
    if shape is None:
        return [TensorInfo(dtype, None)]
    amounts = _pad_amounts(call, len(shape))
    if amounts is None:
        return [TensorInfo(dtype, (None,) * len(shape))]
    # Every mode gives d + begin + end (negative pads crop); the runtime refuses a negative result.
    out = tuple(dim_add(dim_add(d, b), e) for d, (b, e) in zip(shape, amounts))
    return [TensorInfo(dtype, tuple(None if type(d) is int and d < 0 else d for d in out))]


_NOT_GIVEN: list[Dim] = []


def _split_sizes(call: OpCall) -> list[Dim] | None:
    """The sizes given (None: given but unknown), or ``_NOT_GIVEN`` for equal parts."""
    if call.since >= 13 or (call.since < 2 and call.has_input(1)):
        if not call.has_input(1):
            return _NOT_GIVEN
        v = call.value(1)
        return list(v) if v is not None else None
    given: list[Dim] | None = call.attr_ints("split")  # type: ignore[assignment]  # ints are dims
    return _NOT_GIVEN if given is None else given


@register("Split")
def split(call: OpCall) -> list[TensorInfo | None]:
    data = call.input(0)
    n_out = len(call.output_names)
    dtype = data.dtype if data is not None else 0
    shape = data.shape if data is not None else None
    if shape is None:
        return [TensorInfo(dtype, None) for _ in range(n_out)]
    try:
        axis = normalize_axis(call.attr_int("axis", 0) or 0, len(shape))
    except AxisError:
        call.doubt()
        return [None] * n_out
    d = shape[axis]
    sizes = _split_sizes(call)
    if call.since >= 18 and (sizes is _NOT_GIVEN) != call.has_attr("num_outputs"):
        call.doubt()  # Split-18 takes exactly one of the two
    if sizes and all(type(s) is int for s in sizes) and type(d) is int and sum(sizes) != d:  # type: ignore[arg-type]
        call.doubt()
    if sizes is None:
        return [TensorInfo(dtype, shape[:axis] + (None,) + shape[axis + 1:]) for _ in range(n_out)]
    if sizes is not _NOT_GIVEN:
        if len(sizes) != n_out:
            return [None] * n_out
    elif call.since >= 18 and call.has_attr("num_outputs"):
        # Chunks of ceil(d/n), the last one what is left (the runtime refuses a negative rest).
        if call.attr_int("num_outputs") != n_out or n_out < 1:
            return [None] * n_out
        chunk = dim_floordiv(dim_add(d, n_out - 1), n_out, call.domain)
        last = dim_sub(d, dim_mul(chunk, n_out - 1))
        sizes = [chunk] * (n_out - 1) + [None if type(last) is int and last < 0 else last]
    else:
        # Equal parts; the runtime refuses a length that does not divide.
        sizes = [dim_floordiv(d, n_out, call.domain)] * n_out
    return [TensorInfo(dtype, shape[:axis] + (s,) + shape[axis + 1:]) for s in sizes]
