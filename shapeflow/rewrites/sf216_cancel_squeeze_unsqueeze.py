"""SF216 cancel-squeeze-unsqueeze: a Squeeze then an Unsqueeze of the same positions is the identity."""

from __future__ import annotations

from ..codes import INFO, Code
from ..passes.chain import IDENTITY, ChainRewrite, ChainRow, Found, squeezes_then_unsqueeze
from ..passes.context import RoundContext, fmt_axes
from ..passes.match import NoMatch


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


class CancelSqueezeUnsqueeze(ChainRewrite):
    """U(a) after S(b) is the identity when a = b.

    ## What it does
    Reports an Unsqueeze that puts back the 1-dims a Squeeze just removed: ``S(b)`` removes
    positions ``b`` of a rank-r input and ``U(b)`` puts 1-dims back at the same positions of a
    rank-r output, so the shape and the data come back unchanged, and ``shapeflow optimize``
    removes the pair. A run of Squeezes, each read only by the next, counts as one Squeeze of the
    composed positions. The finding sits on the Unsqueeze.

    ## Why is this bad?
    It is not wrong, but each node is a kernel launch and a copy or a view, and the pair hides the
    real shape flow.

    ## Example
    ``t = Squeeze(x: [b, 1, 64], [1]); y = Unsqueeze(t, [1])``: ``y`` is ``x``.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` rewrites it. If a
    squeezed dim is not 1 the Squeeze fails at run time, and the rewrite removes that failure: by
    default such pairs are cancelled when the dim is symbolic (the log says so per rewrite), under
    ``optimize --strict`` only when every squeezed dim is statically 1. A dim known to be != 1 is
    an SF104 error, and ``optimize`` refuses such models.

    ## When it does not fire
    When the positions differ, when either node's axes are not constants (or the Squeeze has no
    axes on a shape with symbolic dims), when a rank is unknown, or when an Identity would be
    needed and the Squeeze stays for other readers.
    """

    code = Code("SF216", "cancel-squeeze-unsqueeze", INFO, fixable=True)
    aliases = ("cancelling-pair",)
    order = 220
    row = ChainRow(
        root="Unsqueeze", run="Squeeze", combine=squeezes_then_unsqueeze,
        why_not="{first} {first_axes} then {root} {root_axes}: the positions differ",
        says={IDENTITY: "{names} {run_axes} then {root} {root_axes} cancel"},
        check=_unproven,
    )
