"""Squeeze, every version (1, 11, 13, 21, 23, 24, 25, ...): remove dims of size 1.

Semantics followed (SPEC.md section 1), onnxruntime's where it and the spec differ:
- axes listed: remove those positions; negative axes count from the end (onnxruntime accepts them at
  opset 1 too); a repeated axis is removed once (onnxruntime tolerates it).
- no axes, or an *empty* axes tensor: remove every dim equal to 1 (onnx's shape inference keeps the
  shape for empty axes; onnxruntime squeezes). When a dim might be 1 at run time, the output rank
  is unknown.
- axes known only at run time: with one axis the rank is input rank - 1; otherwise unknown.
An axis out of range makes the output unknown; a squeezed dim known != 1 fails at run time, so any
answer is sound there and the intended one (the axes removed) is kept.
"""

from __future__ import annotations

from ..axes import AxisError, normalize_axes, squeeze_shape
from ..dims import Shape
from ..facts import AXES_ABSENT, AxisNode
from ..tensorinfo import TensorInfo
from .axes_input import read_axes
from .base import OpCall, register


def squeeze_all(shape: Shape) -> Shape:
    """Remove every 1-dim, or None when some dim might or might not be 1."""
    if shape is None:
        return None
    if any(type(d) is not int for d in shape):
        return None
    return tuple(d for d in shape if d != 1)


@register("Squeeze")
def squeeze(call: OpCall) -> list[TensorInfo | None]:
    x = call.input(0)
    axes = read_axes(call)
    in_shape = x.shape if x is not None else None
    normalized: tuple[int, ...] | None = None
    out: Shape = None
    if axes.values is not None and len(axes.values) > 0:
        if in_shape is not None:
            try:
                normalized = normalize_axes(axes.values, len(in_shape), allow_duplicates=True)
                out = squeeze_shape(in_shape, normalized)
            except AxisError:
                out = None
    elif axes.source == AXES_ABSENT or (axes.values is not None and len(axes.values) == 0) or axes.count == 0:
        out = squeeze_all(in_shape)
    elif axes.count == 1 and in_shape is not None and len(in_shape) >= 1:
        out = (None,) * (len(in_shape) - 1)
    dtype = x.dtype if x is not None else 0
    value = x.value if x is not None and out is not None else None
    result = TensorInfo(dtype, out, value)
    g = call.engine.graph
    call.record(AxisNode(call.nid, g.scopes[call.scope].path, g.display(call.nid), "Squeeze", call.since,
                         call.input_names[0] if call.input_names else "", call.output_names[0],
                         in_shape, out, axes, normalized))
    return [result]
