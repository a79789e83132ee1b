"""Unsqueeze then Squeeze: what both name cancels (SPEC.md section 4)."""

from __future__ import annotations

from .. import codes
from .pattern import IDENTITY, NEAREST_TAKES_OVER, REPLACE_RUN, ChainRow, ChainRule, unsqueezes_then_squeeze

_PAIR = "{names} {run_axes} then {root} {root_axes}"


class CancelUnsqueezeSqueeze(ChainRule):
    """S(b) after U(a) is the identity when b = a; U(a - b) when b ⊂ a; S(b - a) when a ⊂ b.

    ``U(a)`` inserts 1-dims at the positions ``a`` of its output and ``S(b)`` removes the positions
    ``b`` of its input, which is that output: the 1s both name cancel. The leftover positions are
    renumbered without the cancelled ones (``axes.cancel_unsqueeze_squeeze``). Every squeezed
    position that U inserted is 1 by construction, so nothing that ran before fails after. A run
    of Unsqueezes, each read only by the next, is first composed into one U (merge-unsqueeze's
    identity), so ``Squeeze(Unsqueeze(Unsqueeze(x, 0), 2), [0, 2])`` goes in one step.

    Does not fire when the axes overlap only partly, when either node's axes are not constants
    (or the Squeeze has no axes on a shape with symbolic dims), when a rank is unknown, or when the
    Unsqueeze output has other readers and the rewrite would not remove a node.
    """

    name = "cancel-unsqueeze-squeeze"
    code = codes.CANCELLING_PAIR.code
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
