"""SF201 cancel-unsqueeze-squeeze: an Unsqueeze then a Squeeze cancel, in whole or in part."""

from __future__ import annotations

from ..codes import INFO, Code
from ..passes.chain import IDENTITY, NEAREST_TAKES_OVER, REPLACE_RUN, ChainRewrite, ChainRow, unsqueezes_then_squeeze

_PAIR = "{names} {run_axes} then {root} {root_axes}"


class CancelUnsqueezeSqueeze(ChainRewrite):
    """S(b) after U(a) is the identity when b = a; U(a - b) when b ⊂ a; S(b - a) when a ⊂ b.

    ## What it does
    Reports a Squeeze that follows an Unsqueeze on the same tensor where ``shapeflow optimize``
    would remove the pair or replace it by a single node. ``U(a)`` inserts 1-dims at the positions
    ``a`` of its output and ``S(b)`` removes the positions ``b`` of its input, which is that
    output: the 1s both name cancel. The leftover positions are renumbered without the cancelled
    ones (``axes.cancel_unsqueeze_squeeze``). A run of Unsqueezes, each read only by the next, is
    first composed into one (merge-unsqueeze's identity), so
    ``Squeeze(Unsqueeze(Unsqueeze(x, 0), 2), [0, 2])`` goes in one step. The finding sits on the
    Squeeze.

    ## Why is this bad?
    It is not wrong, but each node is a kernel launch and a copy or a view, and the pair hides the
    real shape flow. Exporters leave such pairs around every ``view`` and ``flatten``.

    ## Example
    ``t = Unsqueeze(x, [1]); y = Squeeze(t, [1])``: ``y`` is ``x``.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` rewrites it, keeping every
    graph output bit-identical: every squeezed position that U inserted is 1 by construction, so
    nothing that ran before fails after.

    ## When it does not fire
    When the axes overlap only partly, when either node's axes are not constants (or the Squeeze
    has no axes on a shape with symbolic dims), when a rank is unknown, or when the Unsqueeze
    output has other readers and the rewrite would not remove a node.
    """

    code = Code("SF201", "cancel-unsqueeze-squeeze", INFO, fixable=True)
    aliases = ("cancelling-pair",)
    order = 210
    row = ChainRow(
        root="Squeeze", run="Unsqueeze", combine=unsqueezes_then_squeeze,
        why_not="{first} axes {first_axes} and {root} axes {root_axes} overlap only partly",
        says={
            IDENTITY: _PAIR + " cancel",
            NEAREST_TAKES_OVER: _PAIR + " cancel to {left} {rest}",  # U(a - b) is left
            REPLACE_RUN: _PAIR + " cancel to {left} {rest}",  # S(b - a) is left
        },
        only_reader=_PAIR + ": the Unsqueeze output has other readers; a partial cancel would not remove a node",
    )
