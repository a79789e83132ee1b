from __future__ import annotations

from typing import Iterator

from ..dims import Dim
from ..facts import AxisNode, kept_axes, non_unit_axes
from .base import Finding, LintContext, Rule, judge_axis_nodes

__all__ = ["SqueezeNonUnitDim", "kept_axes", "non_unit_axes"]


def _shown(d: Dim) -> str:
    # a symbolic dim is provably not 1 from its bounds (seq + 2, or seq under --assume seq>=2)
    return f"{d}, not 1" if type(d) is int else f"'{d}', never 1"


class SqueezeNonUnitDim(Rule):
    """Flags a Squeeze axis on a dim known not to be 1.

    ## What it does
    Looks up each squeezed dim in the inferred input shape and reports the node when some are a
    known integer other than 1, listing those axes. Symbolic and unknown dims are SF105's.

    ## Why is this bad?
    ONNX Squeeze removes only dims of size 1, and raises on any other: onnxruntime refuses the
    model at load time when the shape is static ("Dimension of input 3 must be 1 instead of 5"),
    and fails at run time when the dim comes from data. Paddle's ``squeeze`` instead *keeps* a dim
    that is not 1, so models converted from Paddle (and hand-written graphs that copy its habit)
    carry axes that Paddle ignored and ONNX rejects. The model still passes
    ``onnx.checker.check_model`` without ``full_check``, so nothing flags it before it runs.

    ## Example
    ``Squeeze(x: [1, 3, 1, 5], axes=[0, 2, 3])``: dim 3 is 5. Paddle returns ``[3, 5]``;
    onnxruntime raises.

    ## Fix
    Drop the offending axes, which is what Paddle computed: ``axes=[0, 2]`` gives ``[3, 5]``.
    ``shapeflow lint --fix`` does this (writing the axes in the form of the node's opset, as a new
    initializer, never editing a shared one) and removes the node when no axis is left, since a
    Squeeze without axes would remove every 1-dim instead.
    """

    code = "SF104"
    per_call = True

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        return judge_axis_nodes(ctx, lambda a: self._judge(ctx, a), "Squeeze")

    def _judge(self, ctx: LintContext, a: AxisNode) -> Iterator[Finding]:
        bad = non_unit_axes(a, ctx.inference.domain)
        if not bad:
            return
        if len(bad) == 1:
            ax, _, d = bad[0]
            what = f"axis {ax} has dim {_shown(d)}"
        else:
            what = "axes " + ", ".join(f"{ax} (dim {d if type(d) is int else repr(str(d))})"
                                       for ax, _, d in bad) + " are not 1"
        keep = kept_axes(a, ctx.inference.domain)
        dropped = ("axis " if len(bad) == 1 else "axes ") + ", ".join(str(ax) for ax, _, _ in bad)
        if keep:
            fix = f"drop {dropped} (axes=[{', '.join(str(k) for k in keep)}]) for Paddle's result"
        else:
            fix = f"drop {dropped}; with no axis left, remove the node (Paddle's result)"
        yield Finding(self.at(a),
                      f"{what}: ONNX Squeeze raises (Paddle's squeeze would keep the dim)",
                      f"{fix}; `shapeflow lint --fix` does it")
