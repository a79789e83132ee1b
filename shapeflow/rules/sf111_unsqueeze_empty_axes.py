from __future__ import annotations

from typing import Iterator

from ..facts import AxisNode
from .base import Finding, LintContext, Rule, judge_axis_nodes


class UnsqueezeEmptyAxes(Rule):
    """Flags an Unsqueeze whose axes list is empty: the node does nothing.

    ## What it does
    Reports Unsqueeze nodes with an empty ``axes`` attribute or an empty axes tensor.

    ## Why is this bad?
    The node is a no-op that costs a kernel launch and usually marks a bug in the code that
    computed the axes (an empty list where one axis was meant).

    ## Example
    ``Unsqueeze(x, axes=[])``.

    ## Fix
    Remove the node, or list the positions that were meant to be inserted.
    """

    code = "SF111"
    per_call = True

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        return judge_axis_nodes(ctx, lambda a: self._judge(ctx, a), "Unsqueeze")

    def _judge(self, ctx: LintContext, a: AxisNode) -> Iterator[Finding]:
        if a.axes.values is not None and len(a.axes.values) == 0:
            yield Finding(self.at(a), "no axes listed: the node is a no-op",
                          "remove the node or list the positions to insert")
