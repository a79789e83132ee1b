"""Squeeze then Unsqueeze of the same positions is the identity (SPEC.md section 4)."""

from __future__ import annotations

from .. import codes
from .base import NoMatch, RoundContext, fmt_axes
from .pattern import IDENTITY, ChainRow, ChainRule, Found, squeezes_then_unsqueeze


def _unproven(ctx: RoundContext, found: Found) -> NoMatch | str:
    """A squeezed dim not known to be 1: cancelling removes the failure it would cause; --strict
    does not."""
    unproven = ctx.unproven_ones(found.run[-1], found.combined.run_axes)
    if not unproven:
        return ""
    dims = ", ".join(unproven)
    if ctx.strict:
        pair = (f"{ctx.display_run(found.run)} {fmt_axes(found.combined.run_axes)} then "
                f"{ctx.display(found.root)} {fmt_axes(found.root_axes)}")
        return NoMatch(f"{pair}: --strict and squeezed {dims} not statically 1")
    return f"removes a run-time failure when squeezed {dims} is not 1"


class CancelSqueezeUnsqueeze(ChainRule):
    """U(a) after S(b) is the identity when a = b.

    ``S(b)`` removes positions ``b`` of a rank-r input and ``U(b)`` puts 1-dims back at the same
    positions of a rank-r output: the shape and the data come back unchanged. A run of Squeezes,
    each read only by the next, counts as one Squeeze of the composed positions. If a squeezed dim
    is not 1 the Squeeze fails at run time, and the rewrite removes that failure: by default such
    pairs are cancelled when the dim is symbolic (the log says so per rewrite), under ``--strict``
    only when every squeezed dim is statically 1. A dim known to be != 1 is an SF104 error, and
    ``optimize`` refuses such models.

    Does not fire when the positions differ, when either node's axes are not constants (or the
    Squeeze has no axes on a shape with symbolic dims), when a rank is unknown, or when an Identity
    would be needed and the Squeeze stays for other readers.
    """

    name = "cancel-squeeze-unsqueeze"
    code = codes.CANCELLING_PAIR.code
    row = ChainRow(
        root="Unsqueeze", run="Squeeze", combine=squeezes_then_unsqueeze,
        why_not="{first} {first_axes} then {root} {root_axes}: the positions differ",
        says={IDENTITY: "{names} {run_axes} then {root} {root_axes} cancel"},
        check=_unproven,
    )
