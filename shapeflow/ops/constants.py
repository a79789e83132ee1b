"""Constants: initializers and Constant nodes, whose small integer values inference tracks."""

from __future__ import annotations

from typing import Any

import sys

from .._onnx import onnx
from ..io import STORAGE_FIELDS
from ..tensorinfo import MAX_VALUE_ELEMS, TensorInfo
from .base import INT_TYPES, OpCall, register
from .numeric import wrap_int

TensorProto = onnx.TensorProto

_BIG_ENDIAN = sys.byteorder == "big"

FLOAT_TYPES = frozenset({TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16})


def is_external(t: onnx.TensorProto) -> bool:
    return t.data_location == TensorProto.EXTERNAL


def tensor_values(t: onnx.TensorProto) -> tuple[Any, ...] | None:
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
            flat = flat_values(t)
        except Exception:
            return None
        if len(flat) != n:
            return None
        return tuple(int(x) for x in flat)
    if t.data_type in FLOAT_TYPES and n <= 64:
        # Shape arithmetic in float (Cast to float, Div, Ceil, Cast back) appears in exports; only
        # integral values are tracked so that the arithmetic stays exact.
        try:
            flat = flat_values(t)
        except Exception:
            return None
        if len(flat) == n and all(float(x).is_integer() for x in flat):
            return tuple(int(x) for x in flat)
    return None


# memoryview formats of the element types whose raw_data a little-endian machine reads as is
_RAW_FORMATS: dict[int, str] = {
    TensorProto.INT64: "q", TensorProto.INT32: "i", TensorProto.INT16: "h", TensorProto.INT8: "b",
    TensorProto.UINT64: "Q", TensorProto.UINT32: "I", TensorProto.UINT16: "H", TensorProto.UINT8: "B",
    TensorProto.BOOL: "?", TensorProto.FLOAT: "f", TensorProto.DOUBLE: "d",
}
# newer typeshed types memoryview.cast() by literal format only, hence the two ignores (unused on older mypy)
_ITEMSIZE = {fmt: memoryview(b"").cast(fmt).itemsize for fmt in _RAW_FORMATS.values()}  # type: ignore[call-overload, unused-ignore]
# the typed field that holds each of them otherwise (onnx.proto: small integers widen to int32)
_FIELDS: dict[int, str] = {dtype: STORAGE_FIELDS[dtype] for dtype in _RAW_FORMATS}


# Types whose typed field is wider than they are (onnx.proto: small integers and bool in int32_data,
# uint32 in uint64_data): onnxruntime converts each element to the type (static_cast: wraps, and
# any non-zero bool is true), so 300 stored for a uint8 is 44 at run time.
_NARROWED = frozenset({TensorProto.INT8, TensorProto.UINT8, TensorProto.INT16, TensorProto.UINT16,
                       TensorProto.UINT32})
_HALF_TYPES = (TensorProto.FLOAT16, TensorProto.BFLOAT16)


def flat_values(t: onnx.TensorProto) -> list[Any]:
    """The elements of an embedded tensor, flattened, as onnxruntime reads them whatever field
    holds them; raises on data it cannot decode (or that onnxruntime refuses).

    Exporters write one small Constant or initializer per use (axes, indices, scalars): the common
    types are read straight from the message, which spares numpy and onnx's ``to_array`` (and
    their import); other types (float16, ...) go through ``numpy_helper.to_array``."""
    if t.HasField("segment"):
        raise ValueError("segmented tensor")
    dtype = t.data_type
    fmt = _RAW_FORMATS.get(dtype)
    if fmt is not None and not _BIG_ENDIAN:
        if t.HasField("raw_data"):
            raw = t.raw_data
            if len(raw) % _ITEMSIZE[fmt]:
                raise ValueError(f"raw_data of {len(raw)} bytes is not a whole number of elements")
            return list(memoryview(raw).cast(fmt).tolist())  # type: ignore[call-overload, unused-ignore]
        values = list(getattr(t, _FIELDS[dtype]))
        if dtype in _NARROWED:
            return [wrap_int(dtype, v) for v in values]
        if dtype == TensorProto.BOOL:
            return [v != 0 for v in values]
        return values
    if dtype in _HALF_TYPES and not t.HasField("raw_data"):
        # the 16 bits of each element in int32_data; onnxruntime refuses anything wider
        for v in t.int32_data:
            if not 0 <= v <= 0xFFFF:
                raise ValueError(f"{v} in int32_data is no 16-bit pattern")
    return list(onnx.numpy_helper.to_array(t).reshape(-1).tolist())


def tensor_info_from_proto(t: onnx.TensorProto) -> TensorInfo:
    return TensorInfo(t.data_type, tuple(t.dims[:]), tensor_values(t))


@register("Constant")
def constant(call: OpCall) -> list[TensorInfo | None]:
    a = call.attrs
    ref = next((v for v in a.values() if v.ref_attr_name), None)
    if ref is not None:
        # ``value_int = @n`` in a function body: the value is the caller's, unknown here; only the
        # scalar forms still tell the shape.
        scalar = {"value_int": TensorProto.INT64, "value_float": TensorProto.FLOAT,
                  "value_string": TensorProto.STRING}.get(ref.name)
        return [TensorInfo(scalar, ()) if scalar is not None else None]
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
