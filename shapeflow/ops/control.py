"""If and Loop: outputs come from the bodies, which the engine infers before calling these rules."""

from __future__ import annotations

from ..dims import Dim, Shape, dims_equal
from ..tensorinfo import TensorInfo
from .base import OpCall, register


def merge_shapes(a: Shape, b: Shape) -> Shape:
    """What holds for both: equal dims stay, others become unknown; different ranks are unknown."""
    if a is None or b is None or len(a) != len(b):
        return None
    out: list[Dim] = []
    for x, y in zip(a, b):
        out.append(x if dims_equal(x, y) is True else None)
    return tuple(out)


def merge(a: TensorInfo | None, b: TensorInfo | None) -> TensorInfo | None:
    if a is None or b is None:
        return None
    value = a.value if a.value is not None and a.value == b.value else None
    return TensorInfo(a.dtype or b.dtype, merge_shapes(a.shape, b.shape), value)


@register("If")
def if_(call: OpCall) -> list[TensorInfo | None]:
    then = call.subgraph_outputs("then_branch")
    other = call.subgraph_outputs("else_branch")
    n = len(call.output_names)
    if then is None or other is None:
        return [None] * n
    cond = call.value(0)
    if cond is not None and len(cond) == 1 and type(cond[0]) is int:
        return list(then if cond[0] else other)  # a constant condition picks its branch
    return [merge(a, b) for a, b in zip(then, other)]


@register("Loop")
def loop(call: OpCall) -> list[TensorInfo | None]:
    body = call.subgraph_outputs("body")
    n = len(call.output_names)
    if body is None:
        return [None] * n
    carried = call.inputs[2:]
    outs: list[TensorInfo | None] = []
    for k in range(len(carried)):
        b = body[1 + k] if 1 + k < len(body) else None
        outs.append(merge(carried[k], b))
    for b in body[1 + len(carried):]:
        # scan outputs stack one value per iteration along a new leading dim
        outs.append(TensorInfo(b.dtype, None if b.shape is None else (None,) + b.shape) if b else None)
    return outs[:n] + [None] * (n - len(outs))
