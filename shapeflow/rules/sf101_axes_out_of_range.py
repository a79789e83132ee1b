from __future__ import annotations

from typing import Iterator

from ..facts import AxisNode
from .base import Finding, LintContext, Rule, axes_rank, judge_axis_nodes


class AxesOutOfRange(Rule):
    """Flags Squeeze or Unsqueeze axes outside ``[-r, r-1]``.

    ## What it does
    Checks every axis of a Squeeze (r = input rank) or an Unsqueeze (r = output rank, the input
    rank plus the number of axes) against the valid range ``[-r, r-1]``.

    ## Why is this bad?
    onnxruntime refuses to run the node ("axis out of range"), so the model fails when that node is
    reached, often only on the code path that exercises it.

    ## Example
    ``Unsqueeze(x: [3, 4], axes=[3])``: the output has rank 3, so the valid axes are ``-3..2``.

    ## Fix
    Use an axis inside the range. For "the last position" write ``-1`` instead of a rank-dependent
    number, which stays right when the rank changes.
    """

    code = "SF101"
    per_call = True

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        return judge_axis_nodes(ctx, lambda a: self._judge(ctx, a))

    def _judge(self, ctx: LintContext, a: AxisNode) -> Iterator[Finding]:
        r = axes_rank(a)
        if a.axes.values is None or r is None:
            return
        bad = [ax for ax in a.axes.values if not -r <= ax < r]
        if bad:
            lo, hi = -r, r - 1
            listed = ", ".join(str(b) for b in bad[:5]) + (", ..." if len(bad) > 5 else "")
            what = "axis" if len(bad) == 1 else "axes"
            yield Finding(self.at(a), f"{what} {listed} out of range [{lo}, {hi}] (rank {r})",
                          f"use axes in [{lo}, {hi}]; -1 names the last position")
