from __future__ import annotations

from typing import Iterator

from .base import Finding, LintContext, Rule


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
        for a in ctx.axis_nodes("Unsqueeze"):
            if a.axes.values is not None and len(a.axes.values) == 0:
                yield Finding(self.at(a), "no axes listed: the node is a no-op",
                              "remove the node or list the positions to insert")
