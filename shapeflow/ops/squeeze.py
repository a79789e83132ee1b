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

from typing import Any

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


def _squeeze_axes(in_shape: tuple[Any, ...], values: tuple[int, ...]) -> tuple[tuple[int, ...] | None, Shape, bool]:
    """(normalised axes, output shape, whether a squeezed dim is known != 1) for explicit axes;
    (None, None, False) for an axis out of range."""
    try:
        normalized = normalize_axes(values, len(in_shape), allow_duplicates=True)
    except AxisError:
        return None, None, False
    fails = any(type(in_shape[a]) is int and in_shape[a] != 1 for a in normalized)
    try:
        return normalized, squeeze_shape(in_shape, normalized), fails
    except AxisError:
        return normalized, None, fails


@register("Squeeze")
def squeeze(call: OpCall) -> list[TensorInfo | None]:
    x = call.inputs[0] if call.inputs else None
    axes = read_axes(call)
    in_shape = x.shape if x is not None else None
    normalized: tuple[int, ...] | None = None
    out: Shape = None
    values = axes.values
    engine = call.engine
    if values is not None and len(values) > 0:
        if in_shape is not None:
            # Inference interns shapes and shares the axes of one tensor, so a chain of thousands of
            # Squeezes asks the same few questions: answer each once. The entry keeps the shape
            # alive, so its id stays its own for the whole run.
            key = ("Squeeze", id(in_shape), values)
            hit = engine.memo.get(key)
            if hit is None:
                hit = engine.memo[key] = (in_shape, *_squeeze_axes(in_shape, values))
            normalized, out = hit[1], hit[2]  # type: ignore[index]
            if hit[3]:  # type: ignore[index]
                engine.taint(call)  # the run fails here (SF104): what follows is not onnxruntime's
    elif axes.source == AXES_ABSENT or (values is not None and len(values) == 0) or axes.count == 0:
        out = squeeze_all(in_shape)
    elif axes.count == 1 and in_shape is not None and len(in_shape) >= 1:
        out = (None,) * (len(in_shape) - 1)
    dtype = x.dtype if x is not None else 0
    value = x.value if x is not None and out is not None else None
    result = TensorInfo(dtype, out, value)
    info = call.info
    # appended directly (what call.record does for an AxisNode): this runs for every Squeeze
    engine.axis_nodes.append(AxisNode(call.nid, engine.graph.scopes[call.scope].path,
                                      info.peek().name or f"#{info.index}", "Squeeze",
                                      call.since, info.inputs[0] if info.inputs else "", info.outputs[0],
                                      in_shape, out, axes, normalized))
    return [result]
