from __future__ import annotations

from typing import Iterator

from ..diagnostics import Severity
from .base import Finding, LintContext, Rule, axes_rank, in_range


class SqueezeNonUnitDim(Rule):
    """Flags a Squeeze axis on a dim known not to be 1.

    ## What it does
    Looks up each squeezed dim in the inferred input shape and reports those that are a known
    integer other than 1.

    ## Why is this bad?
    ONNX Squeeze removes only dims of size 1: onnxruntime fails at run time ("Dimension of input 1
    must be 1 instead of 3"). Paddle's ``squeeze`` instead *keeps* a dim that is not 1, so models
    converted from Paddle (and hand-written graphs that copy its habit) carry axes that Paddle ignored
    and ONNX rejects.

    ## Example
    ``Squeeze(x: [1, 3, 1, 5], axes=[0, 2, 3])``: dim 3 is 5. Paddle returns ``[3, 5]``; onnxruntime
    raises.

    ## Fix
    Drop the offending axes, which is what Paddle computed: ``axes=[0, 2]`` gives ``[3, 5]``.
    ``shapeflow lint --fix`` does this, and removes the node when no axis is left.
    """

    code = "SF104"
    name = "squeeze-non-unit-dim"
    severity = Severity.ERROR
    fixable = True

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        for a in ctx.axis_nodes("Squeeze"):
            r = axes_rank(a)
            if a.axes.values is None or r is None or a.input_shape is None:
                continue
            shown: set[int] = set()
            for ax in in_range(a.axes.values, r):
                p = ax % r
                d = a.input_shape[p]
                if type(d) is int and d != 1 and p not in shown:
                    shown.add(p)
                    yield Finding(self.at(a), f"axis {ax} has dim {d}, not 1",
                                  f"drop axis {ax} (Paddle's squeeze keeps such dims); "
                                  "`shapeflow lint --fix` does it")
