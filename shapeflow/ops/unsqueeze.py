"""Unsqueeze, every version (1, 11, 13, 21, 23, 24, 25, ...): insert dims of size 1.

The axes are positions in the *output* (rank = input rank + number of axes); negative axes count
from its end (onnxruntime accepts them at opset 1 too). A repeated axis, an axis out of range, or
missing axes make the output unknown (onnxruntime refuses such a node). An empty axes tensor is a
no-op. Axes known only at run time still give the rank when their count is known.
"""

from __future__ import annotations

from typing import Any

from ..axes import AxisError, normalize_axes, unsqueeze_shape
from ..dims import Shape
from ..facts import AxisNode
from ..tensorinfo import TensorInfo
from .axes_input import read_axes
from .base import OpCall, register


def _unsqueeze_axes(in_shape: tuple[Any, ...], values: tuple[int, ...]) -> tuple[tuple[int, ...] | None, Shape]:
    """(normalised axes, output shape) for known axes; (None, None) when they are invalid."""
    try:
        normalized = normalize_axes(values, len(in_shape) + len(values))
    except AxisError:
        return None, None
    try:
        return normalized, unsqueeze_shape(in_shape, normalized)
    except AxisError:
        return normalized, None


@register("Unsqueeze")
def unsqueeze(call: OpCall) -> list[TensorInfo | None]:
    x = call.inputs[0] if call.inputs else None
    axes = read_axes(call)
    in_shape = x.shape if x is not None else None
    normalized: tuple[int, ...] | None = None
    out: Shape = None
    engine = call.engine
    if in_shape is not None:
        values = axes.values
        if values is not None:
            # One answer per (interned input shape, axes): see squeeze.py.
            key = ("Unsqueeze", id(in_shape), values)
            hit = engine.memo.get(key)
            if hit is None:
                hit = engine.memo[key] = (in_shape, *_unsqueeze_axes(in_shape, values))
            normalized, out = hit[1], hit[2]  # type: ignore[index]
        elif axes.count is not None:
            out = (None,) * (len(in_shape) + axes.count)
    dtype = x.dtype if x is not None else 0
    value = x.value if x is not None and out is not None else None
    info = call.info
    # appended directly (what call.record does for an AxisNode): this runs for every Unsqueeze
    engine.axis_nodes.append(AxisNode(call.nid, engine.graph.scopes[call.scope].path,
                                      info.peek().name or f"#{info.index}", "Unsqueeze",
                                      call.since, info.inputs[0] if info.inputs else "", info.outputs[0],
                                      in_shape, out, axes, normalized))
    return [TensorInfo(dtype, out, value)]
