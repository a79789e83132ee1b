"""Squeezes in a row are one (SPEC.md section 4)."""

from __future__ import annotations

from .. import codes
from .base import Match, NoMatch, Result, RoundContext
from .pattern import DROP_ROOT, REPLACE_RUN, ChainPlan, ChainRow, ChainRule, Found, squeezes_merged


def _both_without_axes(ctx: RoundContext, nid: int, chain: list[int]) -> Result | None:
    """S() after S(): after the first no dim is 1, so the second removes nothing."""
    first = chain[0]
    if not (ctx.squeezes_all(first) and ctx.squeezes_all(nid)
            and ctx.axes_problem(first) is None and ctx.axes_problem(nid) is None):
        return None
    pair = f"{ctx.display(first)} then {ctx.display(nid)}, both without axes"
    if not ctx.only_reader(ctx.sid(nid), ctx.output(first), nid):
        return NoMatch(f"{pair}: the first output has other readers or is a graph output")
    return Match(nid, (nid, first), (), f"{pair}: the second removes nothing", "", ChainPlan(DROP_ROOT, (first,), ()))


def _removes_a_dim(ctx: RoundContext, found: Found) -> NoMatch | str:
    if found.combined.rest:
        return ""
    return NoMatch(f"{ctx.display_run(found.run)} then {ctx.display(found.root)}: none removes a dim")


class MergeSqueeze(ChainRule):
    """S(b2) after S(b1) is S(b1 ∪ {lift(b1, q) : q ∈ b2}); S() after S() is S().

    ``b2`` names positions of the first Squeeze's output; ``lift(b1, q)`` is the same dim's
    position in the first input. Negative and unsorted axes are normalised against their own
    node's input rank first; a Squeeze without axes counts as the positions of its 1-dims when the
    input shape is static. Two Squeezes without axes are one: after the first no dim is 1. A run
    of Squeezes, each read only by the next, becomes one node.

    Does not fire when the first Squeeze's output is read elsewhere or is a graph output, when
    either node's axes are not constants, when a rank is unknown, or when one Squeeze has no axes
    and the shape has symbolic dims (the removed positions then depend on run-time values).
    """

    name = "merge-squeeze"
    code = codes.MERGEABLE_CHAIN.code
    row = ChainRow(
        root="Squeeze", run="Squeeze", combine=squeezes_merged,
        why_not="",  # (a run of Squeezes always merges)
        says={REPLACE_RUN: "{names} then {root} {root_axes} merge to {rest}"},
        only_reader="{names} then {root}: the first output has other readers or is a graph output",
        check=_removes_a_dim, before=_both_without_axes,
    )
