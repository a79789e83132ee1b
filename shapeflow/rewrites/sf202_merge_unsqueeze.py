"""Unsqueezes in a row are one (SPEC.md section 4)."""

from __future__ import annotations

from .. import codes
from .pattern import REPLACE_RUN, ChainRow, ChainRule, unsqueezes_merged


class MergeUnsqueeze(ChainRule):
    """U(a2) after U(a1) is U(a2 ∪ {lift(a2, p) : p ∈ a1}).

    The second Unsqueeze's 1s take positions ``a2`` of the final output; the first one's 1s sit at
    the positions left free, counted in order (``lift``). Negative and unsorted axes are normalised
    against their own node's output rank first. A run of Unsqueezes, each read only by the next,
    becomes one node.

    Does not fire when the first Unsqueeze's output is read elsewhere or is a graph output, when
    either node's axes are not constants, or when the first input's rank is unknown.
    """

    name = "merge-unsqueeze"
    code = codes.MERGEABLE_CHAIN.code
    row = ChainRow(
        root="Unsqueeze", run="Unsqueeze", combine=unsqueezes_merged,
        why_not="",  # (a run of Unsqueezes always merges)
        says={REPLACE_RUN: "{names} then {root} {root_axes} merge to {rest}"},
        only_reader="{names} then {root}: the first output has other readers or is a graph output",
    )
