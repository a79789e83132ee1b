"""SF217 merge-squeeze: Squeezes in a row are one."""

from __future__ import annotations

from ..codes import INFO, Code
from ..passes.chain import DROP_ROOT, REPLACE_RUN, ChainPlan, ChainRewrite, ChainRow, Found, squeezes_merged
from ..passes.context import RoundContext
from ..passes.match import Match, NoMatch, Result


def _both_without_axes(ctx: RoundContext, nid: int, chain: list[int]) -> Result | None:
    """S() after S(): after the first no dim is 1, so the second removes nothing."""
    first = chain[0]
    if not (ctx.squeezes_all(first) and ctx.squeezes_all(nid)
            and ctx.axes_problem(first) is None and ctx.axes_problem(nid) is None):
        return None
    pair = f"{ctx.display(first)} then {ctx.display(nid)}, both without axes"
    if not ctx.only_reader(ctx.sid(nid), ctx.output(first), nid):
        return NoMatch(f"{pair}: the first output has other readers or is a graph output")
    return Match(nid, writes=(nid, first), message=f"{pair}: the second removes nothing",
                 payload=ChainPlan(DROP_ROOT, (first,), ()))


def _removes_a_dim(ctx: RoundContext, found: Found) -> NoMatch | str:
    if found.combined.rest:
        return ""
    return NoMatch(f"{ctx.display_run(found.run)} then {ctx.display(found.root)}: none removes a dim")


class MergeSqueeze(ChainRewrite):
    """S(b2) after S(b1) is S(b1 ∪ {lift(b1, q) : q ∈ b2}); S() after S() is S().

    ## What it does
    Reports a chain of two or more Squeeze nodes, each reading only the previous one's output,
    that ``shapeflow optimize`` would merge into one node. ``b2`` names positions of the first
    Squeeze's output; ``lift(b1, q)`` is the same dim's position in the first input. Negative and
    unsorted axes are normalised against their own node's input rank first; a Squeeze without
    axes counts as the positions of its 1-dims when the input shape is static. Two Squeezes
    without axes are one: after the first no dim is 1.

    ## Why is this bad?
    It is not wrong, but every extra node is a kernel launch and an intermediate tensor.

    ## Example
    ``t = Squeeze(x: [1, 3, 1], [0]); y = Squeeze(t, [1])`` is ``y = Squeeze(x, [0, 2])``.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` merges the chain.

    ## When it does not fire
    When the first Squeeze's output is read elsewhere or is a graph output, when either node's
    axes are not constants, when a rank is unknown, or when one Squeeze has no axes and the shape
    has symbolic dims (the removed positions then depend on run-time values).
    """

    code = Code("SF217", "merge-squeeze", INFO, fixable=True)
    aliases = ("mergeable-chain",)
    order = 240
    row = ChainRow(
        root="Squeeze", run="Squeeze", combine=squeezes_merged,
        why_not="",  # (a run of Squeezes always merges)
        says={REPLACE_RUN: "{names} then {root} {root_axes} merge to {rest}"},
        only_reader="{names} then {root}: the first output has other readers or is a graph output",
        check=_removes_a_dim, before=_both_without_axes,
    )
