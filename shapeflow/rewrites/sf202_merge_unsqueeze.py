"""SF202 merge-unsqueeze: Unsqueezes in a row are one."""

from __future__ import annotations

from ..codes import INFO, Code
from ..passes.chain import REPLACE_RUN, ChainRewrite, ChainRow, unsqueezes_merged


class MergeUnsqueeze(ChainRewrite):
    """U(a2) after U(a1) is U(a2 ∪ {lift(a2, p) : p ∈ a1}).

    ## What it does
    Reports a chain of two or more Unsqueeze nodes, each reading only the previous one's output,
    that ``shapeflow optimize`` would merge into one node. The second Unsqueeze's 1s take
    positions ``a2`` of the final output; the first one's 1s sit at the positions left free,
    counted in order (``lift(s, p)`` is the p-th position not in ``s``). Negative and unsorted axes
    are normalised against their own node's output rank first.

    ## Why is this bad?
    It is not wrong, but every extra node is a kernel launch and an intermediate tensor. The
    extended attention mask of BERT/GPT-2 exports (``mask.unsqueeze(1).unsqueeze(2)``) is the
    usual case.

    ## Example
    ``t = Unsqueeze(mask, [1]); y = Unsqueeze(t, [2])`` is ``y = Unsqueeze(mask, [1, 2])``.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` merges the chain.

    ## When it does not fire
    When the first Unsqueeze's output is read elsewhere or is a graph output, when either node's
    axes are not constants, or when the first input's rank is unknown.
    """

    code = Code("SF202", "merge-unsqueeze", INFO, fixable=True)
    aliases = ("mergeable-chain",)
    order = 230
    row = ChainRow(
        root="Unsqueeze", run="Unsqueeze", combine=unsqueezes_merged,
        why_not="",  # (a run of Unsqueezes always merges)
        says={REPLACE_RUN: "{names} then {root} {root_axes} merge to {rest}"},
        only_reader="{names} then {root}: the first output has other readers or is a graph output",
    )
