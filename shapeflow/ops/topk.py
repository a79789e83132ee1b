"""TopK: the sorted axis becomes K (symbolic when shape arithmetic computes K)."""

from __future__ import annotations

from .._onnx import onnx
from ..axes import AxisError, normalize_axis
from ..dims import Dim
from ..tensorinfo import TensorInfo
from .base import OpCall, register


@register("TopK")
def topk(call: OpCall) -> list[TensorInfo | None]:
    x = call.input(0)
    dtype = x.dtype if x is not None else 0
    shape = x.shape if x is not None else None
    if shape is None:
        return [TensorInfo(dtype, None), TensorInfo(onnx.TensorProto.INT64, None)]
    given = call.attr_int("axis", -1)
    try:
        axis = normalize_axis(-1 if given is None else given, len(shape))
    except AxisError:
        return [None, None]
    k: Dim = None
    if call.since < 10:
        k = call.attr_int("k")
    else:
        v = call.value(1)
        if v is not None and len(v) == 1:
            k = v[0]
    if type(k) is int and k < 0:
        k = None  # refused by the runtime
    out = shape[:axis] + (k,) + shape[axis + 1:]
    return [TensorInfo(dtype, out), TensorInfo(onnx.TensorProto.INT64, out)]
