"""Reading the ``axes`` of a Squeeze or Unsqueeze, whichever form the model uses.

Below opset 13 the axes are an attribute; from 13 on they are input 1. Models in the wrong form
exist (hand-edited, or converted between opsets badly); the facts record both so that SF108 can
judge, and inference uses whichever is there.
"""

from __future__ import annotations

from .._onnx import onnx

from ..errors import LimitExceededError
from ..facts import (
    AXES_ABSENT, AXES_ATTRIBUTE, AXES_COMPUTED, AXES_CONSTANT, AXES_EXTERNAL, AXES_INITIALIZER,
    AXES_RUNTIME, AxesInfo,
)
from ..graph import INITIALIZER
from ..opsets import AXES_INPUT_SINCE
from .base import OpCall, numel
from .constants import flat_values


def read_axes(call: OpCall) -> AxesInfo:
    info = call.info
    names = info.inputs
    if not info.has_attrs and len(names) > 1 and names[1]:
        # The form of opset 13 on, and the one exporters repeat thousands of times: answered from
        # the memo below once its tensor has been read.
        found = call.engine.memo.get(("axes", call.scope, names[1], False))
        if found is not None:
            return found  # type: ignore[return-value]
    attr = call.attrs.get("axes") if info.has_attrs else None
    attr_present = attr is not None
    input_present = len(names) > 1 and bool(names[1])
    limit = call.engine.limits.max_axes_elems
    prefer_attr = call.since < AXES_INPUT_SINCE
    if attr_present and (prefer_attr or not input_present):
        if attr.ref_attr_name or attr.type != onnx.AttributeProto.INTS:  # type: ignore[union-attr]
            # ``axes = @a`` in a function body: the caller's value, unknown here. A mistyped
            # attribute (INT, FLOATS, ...) is refused by onnxruntime (SF117): no values either,
            # rather than the empty list its ``ints`` field reads as.
            return AxesInfo(AXES_ATTRIBUTE, None, True, input_present)
        values = tuple(int(x) for x in attr.ints)  # type: ignore[union-attr]
        if len(values) > limit:
            raise _limit(call, len(values))
        return AxesInfo(AXES_ATTRIBUTE, values, True, input_present, count=len(values))
    if input_present:
        # Exporters share one axes tensor among thousands of nodes. What is known about it is the
        # same for every reader in one scope (one definition per name), so it is worked out once;
        # AxesInfo is frozen, so the readers can share it. A limit error is raised, never cached.
        key = ("axes", call.scope, names[1], attr_present)
        memo = call.engine.memo
        found = memo.get(key)
        if found is None:
            found = memo[key] = _read_input(call, attr_present, limit)
        return found  # type: ignore[return-value]
    return AxesInfo(AXES_ABSENT, None, attr_present, False)


def _read_input(call: OpCall, attr_present: bool, limit: int) -> AxesInfo:
    name = call.input_names[1]
    t = call.input(1)
    dtype = t.dtype if t is not None else None
    rank = t.rank if t is not None else None
    count = numel(t.shape) if t is not None else None
    graph = call.engine.graph
    where = graph.definition(call.scope, name)
    proto: onnx.TensorProto | None = None
    source = AXES_RUNTIME
    if where is not None:
        sid, producer = where
        if producer == INITIALIZER:
            proto = graph.scopes[sid].initializers.get(name)
            source = AXES_INITIALIZER
        elif producer >= 0:
            pinfo = graph.nodes[producer]
            if pinfo.op_type == "Constant" and pinfo.domain == "":
                pnode = pinfo.peek()
                source = AXES_CONSTANT
                for a in pnode.attribute:
                    if a.name == "value" and not a.ref_attr_name:  # ``value = @v``: the caller's
                        proto = a.t
    if count is not None and count > limit:
        raise _limit(call, count)
    if proto is not None:
        if proto.data_location == onnx.TensorProto.EXTERNAL:
            return AxesInfo(AXES_EXTERNAL, None, attr_present, True, dtype, rank, count)
        # Exporters share one axes initializer among thousands of nodes: decode it once per run.
        cache = call.engine.constant_cache
        key = (where[0], name)  # type: ignore[index]
        if key in cache:
            values = cache[key]
        else:
            # Read the proto itself: the value tracker stops at small tensors, axes lists may be longer.
            try:
                values = tuple(int(x) for x in flat_values(proto))
            except Exception:
                values = None
            cache[key] = values
        return AxesInfo(source, values, attr_present, True, dtype, rank, count)
    if t is not None and t.value is not None and all(type(v) is int for v in t.value):
        if source == AXES_RUNTIME:
            source = AXES_COMPUTED
        return AxesInfo(source, tuple(t.value), attr_present, True, dtype, rank, count)  # type: ignore[arg-type]
    return AxesInfo(source if source != AXES_INITIALIZER else AXES_RUNTIME, None, attr_present, True,
                    dtype, rank, count)


def _limit(call: OpCall, value: int) -> LimitExceededError:
    g = call.engine.graph
    return LimitExceededError("max-axes-elems", value, "--max-axes-elems", file=g.path,
                         node=g.display(call.nid))
