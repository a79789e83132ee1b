"""Unsqueeze then Squeeze: what both name cancels (SPEC.md section 4)."""

from __future__ import annotations

from dataclasses import dataclass

from .. import codes
from ..axes import cancel_unsqueeze_squeeze, compose_unsqueeze
from .base import (
    IdentityPlan, Match, NoMatch, Result, RewriteRule, RoundContext, apply_identity, fmt_axes,
    identity_match, not_applicable,
)
from .edit import Editor

# Runs of Unsqueezes longer than this are cancelled over several rounds (keeps a match O(1)).
MAX_RUN = 16

# Shared answers for roots the rule does not apply to (immutable).
_NOT_AFTER_UNSQUEEZE = not_applicable("input is not produced by an Unsqueeze")


@dataclass(frozen=True)
class _Partial:
    chain: tuple[int, ...]  # the Unsqueezes, nearest first
    kind: str  # "unsqueeze": U(rest) is left; "squeeze": S(rest) is left
    rest: tuple[int, ...]


class CancelUnsqueezeSqueeze(RewriteRule):
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
    roots = ("Squeeze",)
    after = frozenset({"Unsqueeze"})

    def match(self, ctx: RoundContext, nid: int) -> Result:
        chain = ctx.chain(nid, "Unsqueeze", MAX_RUN)
        if not chain:
            return _NOT_AFTER_UNSQUEEZE
        b = ctx.squeeze_axes(nid)
        if isinstance(b, NoMatch):
            return b
        axes: list[tuple[int, ...]] = []
        for u in chain:
            a = ctx.unsqueeze_axes(u)
            if isinstance(a, NoMatch):
                if not axes:
                    return a
                break
            axes.append(a)
        # The longest run that cancels wins: it removes the most nodes.
        for depth in range(len(axes), 0, -1):
            a = axes[depth - 1]
            for j in range(depth - 2, -1, -1):
                a = compose_unsqueeze(a, axes[j])
            result = cancel_unsqueeze_squeeze(a, b)
            if result is not None:
                break
        else:
            return NoMatch(f"{ctx.display(chain[0])} axes {fmt_axes(axes[0])} and {ctx.display(nid)} "
                           f"axes {fmt_axes(b)} overlap only partly")
        run = chain[:depth]
        kind, rest = result

        def pair() -> str:
            names = ctx.display_run(run)
            return f"{names} {fmt_axes(a)} then {ctx.display(nid)} {fmt_axes(b)}"  # type: ignore[arg-type]

        if kind == "identity":
            return identity_match(ctx, run, nid, lambda: f"{pair()} cancel")
        if not ctx.only_reader(ctx.sid(nid), ctx.output(run[0]), nid):
            return NoMatch(f"{pair()}: the Unsqueeze output has other readers; a partial cancel would "
                           "not remove a node")
        left = "Unsqueeze" if kind == "unsqueeze" else "Squeeze"
        return Match(nid, (nid, *run), (), lambda: f"{pair()} cancel to {left} {fmt_axes(rest)}", "",
                     _Partial(tuple(run), kind, rest))

    def apply(self, ctx: RoundContext, edit: Editor, m: Match) -> None:
        plan = m.payload
        if isinstance(plan, IdentityPlan):
            apply_identity(edit, plan)
            return
        assert isinstance(plan, _Partial)
        nearest, top = plan.chain[0], plan.chain[-1]
        x = ctx.inputs(top)[0]
        if plan.kind == "unsqueeze":
            # The nearest Unsqueeze keeps what the Squeeze did not cancel, reads x, and takes over
            # the Squeeze's output name.
            z = ctx.output(m.nid)
            edit.delete_node(m.nid)
            edit.set_input(nearest, 0, x)
            edit.set_axes(nearest, plan.rest)
            edit.set_output(nearest, 0, z)
            for u in plan.chain[1:]:
                edit.delete_node(u)
        else:
            # The Squeeze reads x and removes only the positions the Unsqueezes did not insert.
            edit.set_input(m.nid, 0, x)
            edit.set_axes(m.nid, plan.rest)
            for u in plan.chain:
                edit.delete_node(u)
