"""Constants: initializers and Constant nodes, whose small integer values inference tracks."""

from __future__ import annotations

import sys

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

from ..tensorinfo import MAX_VALUE_ELEMS, TensorInfo
from .base import INT_TYPES, OpCall, register

_BIG_ENDIAN = sys.byteorder == "big"

FLOAT_TYPES = frozenset({TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16})


def is_external(t: onnx.TensorProto) -> bool:
    return t.data_location == TensorProto.EXTERNAL


def tensor_values(t: onnx.TensorProto) -> tuple | None:
    """The elements of a small, embedded integer (or integral float) tensor; never reads external data."""
    if is_external(t):
        return None
    n = 1
    for d in t.dims:
        n *= int(d)
    if n > MAX_VALUE_ELEMS or n < 0:
        return None
    if t.data_type in INT_TYPES:
        try:
            arr = _from_raw(t)
            if arr is None:
                arr = numpy_helper.to_array(t)
        except Exception:
            return None
        if arr.size != n:
            return None
        return tuple(int(x) for x in arr.reshape(-1).tolist())
    if t.data_type in FLOAT_TYPES and n <= 64:
        # Shape arithmetic in float (Cast to float, Div, Ceil, Cast back) appears in exports; only
        # integral values are tracked so that the arithmetic stays exact.
        try:
            raw = _from_raw(t)
            arr = (raw if raw is not None else numpy_helper.to_array(t)).reshape(-1).tolist()
        except Exception:
            return None
        if len(arr) == n and all(float(x).is_integer() for x in arr):
            return tuple(int(x) for x in arr)
    return None


# Element types whose raw_data numpy reads as is on a little-endian machine.
_RAW_DTYPES = {
    TensorProto.INT64: np.dtype("<i8"), TensorProto.INT32: np.dtype("<i4"),
    TensorProto.FLOAT: np.dtype("<f4"), TensorProto.DOUBLE: np.dtype("<f8"),
}


def _from_raw(t: onnx.TensorProto) -> np.ndarray | None:
    """The flat array of an embedded ``raw_data`` tensor of a common type, or None to let
    ``numpy_helper.to_array`` decide. Exporters write one small Constant per use (axes, indices,
    scalars), and ``to_array``'s generality costs more than the rest of their inference."""
    dtype = _RAW_DTYPES.get(t.data_type)
    if dtype is None or _BIG_ENDIAN or not t.HasField("raw_data") or t.HasField("segment"):
        return None
    return np.frombuffer(t.raw_data, dtype=dtype)


def tensor_info_from_proto(t: onnx.TensorProto) -> TensorInfo:
    return TensorInfo(t.data_type, tuple(int(d) for d in t.dims), tensor_values(t))


@register("Constant")
def constant(call: OpCall) -> list[TensorInfo | None]:
    a = call.attrs
    if "value" in a:
        return [tensor_info_from_proto(a["value"].t)]
    if "value_int" in a:
        return [TensorInfo(TensorProto.INT64, (), (int(a["value_int"].i),))]
    if "value_ints" in a:
        vals = tuple(int(x) for x in a["value_ints"].ints)
        return [TensorInfo(TensorProto.INT64, (len(vals),), vals if len(vals) <= MAX_VALUE_ELEMS else None)]
    if "value_float" in a:
        return [TensorInfo(TensorProto.FLOAT, ())]
    if "value_floats" in a:
        return [TensorInfo(TensorProto.FLOAT, (len(a["value_floats"].floats),))]
    if "value_string" in a:
        return [TensorInfo(TensorProto.STRING, ())]
    if "value_strings" in a:
        return [TensorInfo(TensorProto.STRING, (len(a["value_strings"].strings),))]
    if "sparse_value" in a:
        sv = a["sparse_value"].sparse_tensor
        return [TensorInfo(sv.values.data_type, tuple(int(d) for d in sv.dims))]
    return [None]
