"""Unsqueeze, every version (1, 11, 13, 21, 23, 24, 25, ...): insert dims of size 1.

The axes are positions in the *output* (rank = input rank + number of axes); negative axes count
from its end (onnxruntime accepts them at opset 1 too). A repeated axis, an axis out of range, or
missing axes make the output unknown (onnxruntime refuses such a node). An empty axes tensor is a
no-op. Axes known only at run time still give the rank when their count is known.
"""

from __future__ import annotations

from ..axes import AxisError, normalize_axes, unsqueeze_shape
from ..dims import Shape
from ..facts import AxisNode
from ..tensorinfo import TensorInfo
from .axes_input import read_axes
from .base import OpCall, register


@register("Unsqueeze")
def unsqueeze(call: OpCall) -> list[TensorInfo | None]:
    x = call.input(0)
    axes = read_axes(call)
    in_shape = x.shape if x is not None else None
    normalized: tuple[int, ...] | None = None
    out: Shape = None
    if in_shape is not None:
        if axes.values is not None:
            try:
                normalized = normalize_axes(axes.values, len(in_shape) + len(axes.values))
                out = unsqueeze_shape(in_shape, normalized)
            except AxisError:
                out = None
        elif axes.count is not None:
            out = (None,) * (len(in_shape) + axes.count)
    dtype = x.dtype if x is not None else 0
    value = x.value if x is not None and out is not None else None
    g = call.engine.graph
    call.record(AxisNode(call.nid, g.scopes[call.scope].path, g.display(call.nid), "Unsqueeze", call.since,
                         call.input_names[0] if call.input_names else "", call.output_names[0],
                         in_shape, out, axes, normalized))
    return [TensorInfo(dtype, out, value)]
