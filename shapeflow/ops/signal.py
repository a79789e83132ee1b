"""Signal ops whose shapes onnx's own inference gets wrong: STFT.

STFT (opset 17): ``signal`` is ``[batch, length, 1 or 2]``; the output is ``[batch, frames, bins,
2]`` with ``frames = floor((length - F) / step) + 1`` and ``bins = floor(F/2) + 1`` when
``onesided`` (the default: 1) or ``F`` otherwise, where ``F`` is ``frame_length`` or, without it,
the window's length. onnx's shape function reads an absent ``onesided`` as 0 and states ``F``
bins where onnxruntime gives ``floor(F/2) + 1``, so this rule replaces it (and
``fallback.UNTRUSTED`` keeps onnx's answer out). onnxruntime, checked by the tests: it refuses a
frame longer than the signal, a step below 1, and a node with neither ``window`` nor
``frame_length``; it accepts ``onesided`` with a complex signal (``[.., 2]``) and gives the
one-sided bins.
"""

from __future__ import annotations

from ..dims import Dim, dim_add, dim_floordiv, dim_sub, require_at_least
from ..tensorinfo import TensorInfo
from .base import OpCall, register


def _scalar(call: OpCall, i: int) -> int | None:
    if not call.has_input(i):
        return None
    v = call.int_values(i)
    return v[0] if v is not None and len(v) == 1 else None


@register("STFT")
def stft(call: OpCall) -> list[TensorInfo | None]:
    sig = call.input(0)
    dtype = sig.dtype if sig is not None else 0
    if sig is None or sig.shape is None:
        return [TensorInfo(dtype, (None, None, None, 2))]
    if len(sig.shape) != 3:
        return [TensorInfo(dtype, None)]
    batch, length = sig.shape[0], sig.shape[1]
    frame: Dim = None
    if call.has_input(3):
        frame = _scalar(call, 3)
    elif call.has_input(2):
        w = call.shape(2)
        frame = w[0] if w is not None and len(w) == 1 else None
    if type(frame) is int and frame < 1:
        frame = None
    step = _scalar(call, 1)
    frames: Dim = None
    if frame is not None and step is not None and step >= 1:
        if type(length) is int and type(frame) is int and length < frame:
            frames = None  # the runtime refuses a frame longer than the signal
        else:
            frames = dim_add(dim_floordiv(dim_sub(length, frame), step, call.domain), 1)
            if call.scope == 0 and type(frame) is int:
                # a main-graph node runs wherever the model does: the signal is at least a frame
                call.learn(require_at_least(length, frame, call.domain))
    onesided = call.attr_int("onesided", 1)
    bins: Dim = None
    if frame is not None:
        bins = dim_add(dim_floordiv(frame, 2, call.domain), 1) if onesided else frame
    return [TensorInfo(dtype, (batch, frames, bins, 2))]
