from __future__ import annotations

from typing import Iterator

from ..facts import AXES_ABSENT, AxisNode
from ..opsets import AXES_INPUT_SINCE
from .base import Finding, LintContext, Rule, judge_axis_nodes


class AxesFormMismatch(Rule):
    """Flags axes written in the wrong form for the node's opset, and an Unsqueeze without axes.

    ## What it does
    Before opset 13 Squeeze and Unsqueeze take ``axes`` as an attribute; from opset 13 on they take
    it as their second input. This rule reports an attribute where an input is expected, an input
    where an attribute is expected, and an Unsqueeze with neither.

    ## Why is this bad?
    onnxruntime and the onnx checker reject the node: an opset-13 Unsqueeze with an ``axes``
    attribute is not a valid node. It happens when a model's opset import is bumped without
    converting its nodes (``onnx.version_converter`` does it properly).

    ## Example
    Opset 13: ``Unsqueeze(x) axes=[0]`` (attribute). Opset 11: ``Unsqueeze(x, axes_tensor)``.

    ## Fix
    Convert the node to the form of its opset: from 13, an int64 initializer as input 2; before
    13, the ``axes`` attribute. Or convert the whole model with ``onnx.version_converter``.
    """

    code = "SF108"
    per_call = True

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        return judge_axis_nodes(ctx, lambda a: self._judge(ctx, a))

    def _judge(self, ctx: LintContext, a: AxisNode) -> Iterator[Finding]:
        op = f"{a.op_type}-{a.since_version}"
        if a.since_version >= AXES_INPUT_SINCE:
            if a.axes.attr_present:
                yield Finding(self.at(a), f"{op} takes axes as an input, not an attribute",
                              "move the axes into an int64 initializer passed as input 2")
                return
        elif a.axes.input_present:
            yield Finding(self.at(a), f"{op} takes axes as an attribute, not an input",
                          "write the axes as the node's `axes` attribute")
            return
        if a.op_type == "Unsqueeze" and a.axes.source == AXES_ABSENT:
            yield Finding(self.at(a), f"{op} has no axes", "Unsqueeze requires axes: add them")
