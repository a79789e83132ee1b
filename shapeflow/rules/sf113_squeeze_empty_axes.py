from __future__ import annotations

from typing import Iterator

from ..facts import AXES_ATTRIBUTE, AxisNode
from .base import Finding, LintContext, Rule, judge_axis_nodes


class SqueezeEmptyAxes(Rule):
    """Flags a Squeeze whose axes tensor is empty, where onnxruntime and onnx disagree.

    ## What it does
    Reports a Squeeze-13+ whose axes input is present but holds no elements (or a Squeeze-1/11 with
    an empty ``axes`` attribute).

    ## Why is this bad?
    onnxruntime treats empty axes like no axes and removes *every* dim of size 1; onnx's shape
    inference keeps the shape unchanged. The model's declared shapes and its run-time shapes then
    differ (``[1, 3, 1]`` declared, ``[3]`` computed). shapeflow follows onnxruntime, because that is
    what runs.

    ## Example
    ``Squeeze(x: [1, 3, 1], axes=[])`` gives ``[3]`` in onnxruntime.

    ## Fix
    Name the axes to remove (``axes=[0, 2]``), or drop the node if it was meant as a no-op.
    """

    code = "SF113"
    per_call = True

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        return judge_axis_nodes(ctx, lambda a: self._judge(ctx, a), "Squeeze")

    def _judge(self, ctx: LintContext, a: AxisNode) -> Iterator[Finding]:
        if a.axes.values is not None and len(a.axes.values) == 0:
            form = "attribute" if a.axes.source == AXES_ATTRIBUTE else "tensor"
            yield Finding(self.at(a), f"empty axes {form}: onnxruntime removes every 1-dim, "
                          "onnx's shape inference keeps the shape",
                          "list the axes to remove explicitly")
