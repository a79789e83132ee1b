from __future__ import annotations

from typing import Iterator

from ..facts import AxisNode
from .base import Finding, LintContext, Rule, axes_rank, describe_repeat, judge_axis_nodes, repeated_axes


class DuplicateAxes(Rule):
    """Flags an Unsqueeze whose axes name one output position twice, after normalising negatives.

    ## What it does
    Normalises each axis against the output rank (``-1`` is the last position) and reports any
    position that appears more than once.

    ## Why is this bad?
    The ONNX spec makes repeated Unsqueeze axes an error and onnxruntime refuses to load the node
    ("Axis 0 is referred to more than once"). Negative axes hide the repeat: on a rank-2 input,
    ``[1, -3]`` names position 1 twice in the rank-4 output.

    ## Example
    ``Unsqueeze(x: [3, 4], axes=[0, -4])``: the output rank is 4 and both axes are position 0.

    ## Fix
    List each inserted position once. To insert two leading dims write ``[0, 1]``.
    """

    code = "SF102"
    per_call = True

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        return judge_axis_nodes(ctx, lambda a: self._judge(ctx, a), "Unsqueeze")

    def _judge(self, ctx: LintContext, a: AxisNode) -> Iterator[Finding]:
        r = axes_rank(a)
        if a.axes.values is None or r is None:
            return
        for position, raws in repeated_axes(a.axes.values, r):
            yield Finding(self.at(a), describe_repeat(position, raws),
                          "list each inserted position once")
