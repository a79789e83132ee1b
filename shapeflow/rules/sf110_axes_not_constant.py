from __future__ import annotations

from typing import Iterator

from ..facts import AXES_EXTERNAL, AXES_RUNTIME, AxisNode
from .base import Finding, LintContext, Rule, judge_axis_nodes


class AxesNotConstant(Rule):
    """Reports axes whose values are not known before run time (info).

    ## What it does
    Notes each Squeeze or Unsqueeze whose axes come from a graph input, an op that inference cannot
    evaluate, or an initializer stored as external data (which shapeflow never reads).

    ## Why is this bad?
    It is not wrong, but none of the axis checks can run on such a node and its output shape is
    (partly) unknown, so errors there surface only at run time. This rule says so instead of
    staying silent.

    ## Example
    ``Unsqueeze(x, axes)`` where ``axes`` is a graph input.

    ## Fix
    None needed. If the axes are in fact fixed, make them an initializer so they can be checked.
    """

    code = "SF110"
    per_call = True

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        return judge_axis_nodes(ctx, lambda a: self._judge(ctx, a))

    def _judge(self, ctx: LintContext, a: AxisNode) -> Iterator[Finding]:
        if a.axes.source == AXES_RUNTIME:
            yield Finding(self.at(a), "axes are computed at run time; the node cannot be checked statically",
                          "make the axes an initializer if they are fixed")
        elif a.axes.source == AXES_EXTERNAL:
            yield Finding(self.at(a), "axes are stored as external data, which shapeflow does not read",
                          "store small tensors such as axes inside the model")
