from __future__ import annotations

from typing import Iterator

from ..facts import AxisNode
from .base import Finding, LintContext, Rule, judge_axis_nodes


class NegativeAxesOpset1(Rule):
    """Flags negative axes on a Squeeze-1 or Unsqueeze-1, where the spec allows none.

    ## What it does
    Reports negative axes on the version-1 operators (opset 1 to 10).

    ## Why is this bad?
    The opset-1 spec requires non-negative axes. onnxruntime runs them anyway (counting from the
    end), but onnx's own shape inference gets the shape wrong and stricter runtimes reject them. The
    same model means different things to different tools.

    ## Example
    ``Unsqueeze-1(x: [3], axes=[-1])``: onnxruntime gives ``[3, 1]``.

    ## Fix
    Write the non-negative axis (``axes=[1]``), or move the model to opset 11 or later where
    negative axes are defined.
    """

    code = "SF107"
    per_call = True

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        return judge_axis_nodes(ctx, lambda a: self._judge(ctx, a))

    def _judge(self, ctx: LintContext, a: AxisNode) -> Iterator[Finding]:
        if a.since_version != 1 or a.axes.values is None:
            return
        neg = [ax for ax in a.axes.values if ax < 0]
        if neg:
            listed = ", ".join(str(n) for n in neg)
            yield Finding(self.at(a), f"negative axes {listed} are not allowed before opset 11",
                          "write non-negative axes, or upgrade the model to opset 11+")
