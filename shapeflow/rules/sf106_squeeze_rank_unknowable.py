from __future__ import annotations

from typing import Iterator

from ..dims import format_shape
from ..facts import AXES_ABSENT, AxisNode
from .base import Finding, LintContext, Rule, judge_axis_nodes


class SqueezeRankUnknowable(Rule):
    """Flags a Squeeze with no axes (or an empty axes tensor) on an input with symbolic or unknown dims.

    ## What it does
    A Squeeze without axes removes every dim that is 1 *at run time*. When the input has a symbolic
    or unknown dim, the output rank depends on the data, and this rule says so. (When even the
    input's rank is unknown, nothing is reported.)

    ## Why is this bad?
    ``Squeeze(x: [batch, 1, seq])`` returns rank 1 when batch is 1 and seq is 1, rank 2 otherwise:
    every op after it sees a different rank for some inputs. Shape inference (ours, onnx's and
    onnxruntime's) must give up on the rank, and exporters' traces with batch 1 hide the problem.

    ## Example
    ``Squeeze(x: [batch, 1, 16])`` with no axes.

    ## Fix
    Name the axes to remove: ``axes=[1]``.
    """

    code = "SF106"
    per_call = True

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        return judge_axis_nodes(ctx, lambda a: self._judge(ctx, a), "Squeeze")

    def _judge(self, ctx: LintContext, a: AxisNode) -> Iterator[Finding]:
        no_axes = a.axes.source == AXES_ABSENT
        empty = a.axes.values is not None and len(a.axes.values) == 0
        if not (no_axes or empty):
            return
        shape = a.input_shape
        # An input whose rank inference lost is an unknown fact, not a finding.
        if shape is None or all(type(d) is int for d in shape):
            return
        what = "no axes" if no_axes else "empty axes"
        msg = f"{what}: the output rank depends on which dims of {format_shape(shape)} are 1 at run time"
        yield Finding(self.at(a), msg, "list the axes to remove explicitly")
