from __future__ import annotations

from typing import Iterator

from .._onnx import onnx
from .base import Finding, LintContext, Rule
from .loadtime import live_scopes

_CONV_LIKE = ("Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "MaxPool", "AveragePool", "LpPool")
_RNN = ("LSTM", "GRU", "RNN")

# (op_type, attribute) -> ((from opset, the values onnxruntime accepts), ...), newest first. What
# onnxruntime's kernels accept when the session is created (a value outside fails "Exception during
# initialization"); tests/test_load_validity.py loads every value listed, and one that is not.
_STRINGS: dict[tuple[str, str], tuple[tuple[int, frozenset[str]], ...]] = {
    ("Resize", "mode"): ((1, frozenset({"nearest", "linear", "cubic"})),),
    ("Upsample", "mode"): ((1, frozenset({"nearest", "linear", "cubic"})),),
    ("Resize", "coordinate_transformation_mode"): ((1, frozenset({
        "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
        "tf_half_pixel_for_nn", "tf_crop_and_resize"})),),
    ("Resize", "nearest_mode"): ((1, frozenset({"round_prefer_floor", "round_prefer_ceil", "floor", "ceil", ""})),),
    ("Resize", "keep_aspect_ratio_policy"): ((1, frozenset({"stretch", "not_larger", "not_smaller"})),),
    ("Pad", "mode"): ((1, frozenset({"constant", "reflect", "edge", "wrap"})),),
    ("DepthToSpace", "mode"): ((1, frozenset({"DCR", "CRD"})),),
    ("GridSample", "mode"): ((20, frozenset({"linear", "nearest", "cubic"})),
                             (1, frozenset({"bilinear", "nearest", "bicubic"}))),
    ("GridSample", "padding_mode"): ((1, frozenset({"zeros", "border", "reflection"})),),
    **{(op, "auto_pad"): ((1, frozenset({"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID", ""})),) for op in _CONV_LIKE},
    **{(op, "direction"): ((1, frozenset({"forward", "reverse", "bidirectional"})),) for op in _RNN},
}
# Integer attributes with the values onnxruntime's CPU kernels implement.
_INTS: dict[tuple[str, str], tuple[frozenset[int], str]] = {
    **{(op, "layout"): (frozenset({0}), "batch-major RNNs (layout=1) are not implemented by onnxruntime's CPU "
                        "kernels") for op in _RNN},
}
_DTYPE_NUMBERS = frozenset(onnx.TensorProto.DataType.values())
_WATCHED = frozenset(op for op, _ in (*_STRINGS, *_INTS)) | {"Cast"}


def _accepted(op: str, attr: str, since: int) -> frozenset[str] | None:
    for first, values in _STRINGS.get((op, attr), ()):
        if since >= first:
            return values
    return None


def _show(values: frozenset[str]) -> str:
    return ", ".join(repr(v) for v in sorted(values) if v)


class InvalidAttributeValue(Rule):
    """Flags an attribute value that onnxruntime refuses when it creates the node's kernel.

    ## What it does
    Checks the attributes whose values are a closed list: the ``mode`` of Resize, Upsample, Pad,
    DepthToSpace and GridSample, Resize's ``coordinate_transformation_mode``, ``nearest_mode``
    and ``keep_aspect_ratio_policy``, the ``auto_pad`` of convolutions and pooling, the
    ``direction`` and ``layout`` of LSTM, GRU and RNN, and Cast's ``to`` (a data type number).
    Values are case-sensitive, as onnxruntime reads them.

    ## Why is this bad?
    onnx's checker accepts any string there, but onnxruntime fails to create the session
    ("Exception during initialization: ... Invalid 'mode' attribute value"), and a Cast to a type
    number no ONNX release defines fails its type inference. ``layout=1`` (batch-major) is valid
    ONNX, but onnxruntime's CPU kernels do not implement it.

    ## Example
    ``Pad(x, pads) mode="CONSTANT"``; ``Conv(x, w) auto_pad="same_upper"``; ``Cast(x) to=999``;
    ``LSTM(x, W, R) layout=1``.

    ## Fix
    Write one of the values the operator lists, spelled as the specification spells it; for a
    batch-major RNN, Transpose its input and output around a ``layout=0`` node.
    """

    code = "SF014"

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        g = ctx.graph
        live = live_scopes(ctx)
        for nid, info in enumerate(g.nodes):
            if (info.domain != "" or info.op_type not in _WATCHED or not info.has_attrs or info.since_version is None
                    or not live[info.scope]):
                continue
            op, since = info.op_type, info.since_version
            label = f"{op}-{since}"
            for attr in info.peek().attribute[:]:
                if attr.ref_attr_name:
                    continue
                if attr.type == onnx.AttributeProto.STRING:
                    accepted = _accepted(op, attr.name, since)
                    value = attr.s.decode("utf-8", "replace")
                    if accepted is not None and value not in accepted:
                        yield Finding(ctx.location_of(nid), f"{attr.name}={value!r} is not a value {label} accepts "
                                      f"({_show(accepted)})", f"write one of {_show(accepted)}")
                elif attr.type == onnx.AttributeProto.INT:
                    if op == "Cast" and attr.name == "to":
                        if attr.i not in _DTYPE_NUMBERS:
                            yield Finding(ctx.location_of(nid), f"to={attr.i} is not a data type",
                                          "write a TensorProto.DataType number (1 float, 7 int64, ...)")
                        continue
                    rule = _INTS.get((op, attr.name))
                    if rule is not None and attr.i not in rule[0]:
                        yield Finding(ctx.location_of(nid), f"{attr.name}={attr.i}: {rule[1]}",
                                      f"use {attr.name}={min(rule[0])}")
