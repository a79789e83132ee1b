"""Squeeze then Unsqueeze of the same positions is the identity (SPEC.md section 4)."""

from __future__ import annotations

from .. import codes
from ..axes import cancel_squeeze_unsqueeze, compose_squeeze
from .base import (
    IdentityPlan, Match, NoMatch, Result, RewriteRule, RoundContext, apply_identity, fmt_axes,
    identity_match, not_applicable,
)
from .edit import Editor

MAX_RUN = 16

# Shared answers for roots the rule does not apply to (immutable).
_NOT_AFTER_SQUEEZE = not_applicable("input is not produced by a Squeeze")


class CancelSqueezeUnsqueeze(RewriteRule):
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
    roots = ("Unsqueeze",)
    after = frozenset({"Squeeze"})

    def match(self, ctx: RoundContext, nid: int) -> Result:
        chain = ctx.chain(nid, "Squeeze", MAX_RUN)
        if not chain:
            return _NOT_AFTER_SQUEEZE
        a = ctx.unsqueeze_axes(nid)
        if isinstance(a, NoMatch):
            return a
        axes: list[tuple[int, ...]] = []
        for s in chain:
            b = ctx.squeeze_axes(s)
            if isinstance(b, NoMatch):
                if not axes:
                    return b
                break
            axes.append(b)
        for depth in range(len(axes), 0, -1):
            b = axes[depth - 1]
            for j in range(depth - 2, -1, -1):
                b = compose_squeeze(b, axes[j])
            if cancel_squeeze_unsqueeze(b, a):
                break
        else:
            return NoMatch(f"{ctx.display(chain[0])} {fmt_axes(axes[0])} then {ctx.display(nid)} "
                           f"{fmt_axes(a)}: the positions differ")
        run = chain[:depth]

        def pair() -> str:
            names = ctx.display_run(run)
            return f"{names} {fmt_axes(b)} then {ctx.display(nid)} {fmt_axes(a)}"  # type: ignore[arg-type]

        unproven = ctx.unproven_ones(run[-1], b)
        note = ""
        if unproven:
            dims = ", ".join(unproven)
            if ctx.strict:
                return NoMatch(f"{pair()}: --strict and squeezed {dims} not statically 1")
            note = f"removes a run-time failure when squeezed {dims} is not 1"
        return identity_match(ctx, run, nid, lambda: f"{pair()} cancel", note)

    def apply(self, ctx: RoundContext, edit: Editor, m: Match) -> None:
        assert isinstance(m.payload, IdentityPlan)
        apply_identity(edit, m.payload)
