"""BatchNormalization and InstanceNormalization: the output is the input's shape, and each
per-channel input (scale, bias, and BatchNormalization's mean and variance) has one dim, the
channels: onnxruntime refuses the node otherwise (``Invalid input scale: 0th dimension != 3``,
``size of scale != input channel count``), so wherever the model runs an unknown one of those dims
is the known one (``OpCall.same_dims``). tf2onnx's LayerNorm below opset 17 builds the scale as
``Expand(1.0, int32 product of two dims)``, a value that may wrap; the kernel fixes it.
"""

from __future__ import annotations

from ..tensorinfo import TensorInfo
from .base import OpCall, register, same_as_input


@register("BatchNormalization")
def batch_normalization(call: OpCall) -> list[TensorInfo | None]:
    out = same_as_input(call)
    # spatial=0 (before version 9) has per-element inputs; training mode is left alone
    if call.since >= 7 and call.attr_int("spatial", 1) == 1 and not call.attr_int("training_mode", 0):
        _per_channel(call, 5)
    return out


@register("InstanceNormalization")
def instance_normalization(call: OpCall) -> list[TensorInfo | None]:
    out = same_as_input(call)
    _per_channel(call, 3)
    return out


def _per_channel(call: OpCall, n: int) -> None:
    x = call.shape(0)
    if call.scope == 0 and x is not None and len(x) >= 2:
        call.same_dims((0, 1), *((i, 0) for i in range(1, n) if call.has_input(i)))
