from __future__ import annotations

from typing import Iterator

from ..dims import dim_is_one, dim_to_json
from .base import Finding, LintContext, Rule, axes_rank, in_range


class SqueezeSymbolicDim(Rule):
    """Flags a Squeeze axis on a dim that is symbolic or unknown.

    ## What it does
    Reports squeezed dims whose size is a symbol (``batch``), an expression (``seq + 1``) or unknown,
    so that nothing proves they are 1.

    ## Why is this bad?
    The node runs only while that dim happens to be 1. A model exported with batch 1 and a dynamic
    ``batch`` axis works in the exporter's test and fails for batch 2.

    ## Example
    ``Squeeze(x: [batch, 3], axes=[0])``.

    ## Fix
    If the dim is always 1, declare it as 1 in the input shape. If not, the graph needs a Reshape or
    a different axis: the exporter traced a size-1 case.
    """

    code = "SF105"
    per_call = True

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        for a in ctx.axis_nodes("Squeeze"):
            r = axes_rank(a)
            if a.axes.values is None or r is None or a.input_shape is None:
                continue
            shown: set[int] = set()
            for ax in in_range(a.axes.values, r):
                p = ax % r
                d = a.input_shape[p]
                if type(d) is not int and dim_is_one(d) is not False and p not in shown:  # else SF104's
                    shown.add(p)
                    what = f"dim '{dim_to_json(d)}'" if d is not None else "an unknown dim"
                    yield Finding(self.at(a), f"axis {ax} is {what}: fails at run time unless it is 1",
                                  "declare the dim as 1 if it always is, or squeeze a different axis")
