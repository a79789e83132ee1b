from __future__ import annotations

from typing import Iterator

from ..diagnostics import Severity
from ..dims import Dim, Domain, Sym, dim_is_one, dim_resolve, dim_to_json
from ..facts import AxisNode
from .base import Finding, LintContext, Rule, axes_rank, in_range, judge_axis_nodes


def one_unless_empty(d: Dim, dom: Domain) -> list[str] | None:
    """The symbols of ``d`` when ``d`` is 1 wherever none of them is 0 in ``dom`` (``min(1, T)``,
    the length of ``x[-1:]``), so that the Squeeze fails only on an empty input; else None."""
    if type(d) is not Sym:
        return None
    names = sorted(d.symbols())
    nonempty = dom
    for n in names:
        lo, hi = dom.ranges.get(n, (None, None))
        if hi is not None and hi < 1:
            return None
        nonempty = nonempty.where(n, (max(lo or 0, 1), hi))
    return names if dim_resolve(d, nonempty) == 1 else None


class SqueezeSymbolicDim(Rule):
    """Flags a Squeeze axis on a dim that is symbolic or unknown.

    ## What it does
    Reports squeezed dims whose size is a symbol (``batch``), an expression (``seq + 1``) or unknown,
    so that nothing proves they are 1. A dim that is 1 unless one of its symbols is 0
    (``min(1, T)``, the length of ``x[-1:]`` on ``T`` frames, which tf2onnx writes before every
    LSTM output's Squeeze) fails only on an empty input: that finding says so and is only info.

    ## Why is this bad?
    The node runs only while that dim happens to be 1. A model exported with batch 1 and a dynamic
    ``batch`` axis works in the exporter's test and fails for batch 2.

    ## Example
    ``Squeeze(x: [batch, 3], axes=[0])``.

    ## Fix
    If the dim is always 1, declare it as 1 in the input shape. If not, the graph needs a Reshape or
    a different axis: the exporter traced a size-1 case. For a dim that fails only when a symbol is
    0, ``--assume 'T>=1'`` states that inputs are never empty (the finding goes away).
    """

    code = "SF105"
    per_call = True

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        return judge_axis_nodes(ctx, lambda a: self._judge(ctx, a), "Squeeze")

    def _judge(self, ctx: LintContext, a: AxisNode) -> Iterator[Finding]:
        r = axes_rank(a)
        if a.axes.values is None or r is None or a.input_shape is None:
            return
        shown: set[int] = set()
        for ax in in_range(a.axes.values, r):
            p = ax % r
            d = a.input_shape[p]
            if type(d) is not int and dim_is_one(d, ctx.inference.domain) is not False and p not in shown:  # else SF104's
                shown.add(p)
                what = f"dim '{dim_to_json(d)}'" if d is not None else "an unknown dim"
                empty = one_unless_empty(d, ctx.inference.domain)
                if empty:
                    names = " or ".join(empty)
                    assume = " ".join(f"--assume '{n}>=1'" for n in empty)
                    yield Finding(self.at(a), f"axis {ax} is {what}, which is 1 unless {names} is 0: "
                                  f"fails at run time only when {names} is 0 (an empty input)",
                                  f"if {names} is never 0, {assume} states it (and this goes away)",
                                  severity=Severity.INFO)
                    continue
                yield Finding(self.at(a), f"axis {ax} is {what}: fails at run time unless it is 1",
                              "declare the dim as 1 if it always is, or squeeze a different axis")
