from __future__ import annotations

from typing import Iterator

from ..facts import AxisNode
from .base import Finding, LintContext, Rule, axes_rank, describe_repeat, judge_axis_nodes, repeated_axes


class SqueezeDuplicateAxes(Rule):
    """Flags a Squeeze whose axes name one input position twice, after normalising negatives.

    ## What it does
    Normalises each Squeeze axis against the input rank and reports positions named more than once.

    ## Why is this bad?
    The ONNX spec does not define it. onnxruntime removes the dim once, but other runtimes and
    converters may reject the node or remove two dims. The model means something only by accident.

    ## Example
    ``Squeeze(x: [1, 3, 1], axes=[0, -3])``: both axes are position 0.

    ## Fix
    List each position once (``axes=[0]``).
    """

    code = "SF103"
    per_call = True

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        return judge_axis_nodes(ctx, lambda a: self._judge(ctx, a), "Squeeze")

    def _judge(self, ctx: LintContext, a: AxisNode) -> Iterator[Finding]:
        r = axes_rank(a)
        if a.axes.values is None or r is None:
            return
        for position, raws in repeated_axes(a.axes.values, r):
            yield Finding(self.at(a), describe_repeat(position, raws), "list each squeezed position once")
