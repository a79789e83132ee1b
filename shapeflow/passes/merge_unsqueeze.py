"""Unsqueezes in a row are one (SPEC.md section 4)."""

from __future__ import annotations

from .. import codes
from ..axes import compose_unsqueeze
from .base import Match, NoMatch, Result, RewriteRule, RoundContext, fmt_axes, not_applicable
from .edit import Editor

MAX_RUN = 16

# Shared answers for roots the rule does not apply to (immutable).
_NOT_AFTER_UNSQUEEZE = not_applicable("input is not produced by an Unsqueeze")


class MergeUnsqueeze(RewriteRule):
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
    roots = ("Unsqueeze",)
    after = frozenset({"Unsqueeze"})

    def match(self, ctx: RoundContext, nid: int) -> Result:
        chain = ctx.chain(nid, "Unsqueeze", MAX_RUN)
        if not chain:
            return _NOT_AFTER_UNSQUEEZE
        a = ctx.unsqueeze_axes(nid)
        if isinstance(a, NoMatch):
            return a
        run: list[int] = []
        merged = a
        for u in chain:
            a1 = ctx.unsqueeze_axes(u)
            if isinstance(a1, NoMatch):
                if not run:
                    return a1
                break
            run.append(u)
            merged = compose_unsqueeze(a1, merged)
        def names() -> str:
            return ctx.display_run(run)

        if not ctx.only_reader(ctx.sid(nid), ctx.output(run[0]), nid):
            return NoMatch(f"{names()} then {ctx.display(nid)}: the first output has other readers or is "
                           "a graph output")
        return Match(nid, (nid, *run), (), lambda: f"{names()} then {ctx.display(nid)} {fmt_axes(a)} merge "  # type: ignore[arg-type]
                     f"to {fmt_axes(merged)}", "", (tuple(run), merged))

    def apply(self, ctx: RoundContext, edit: Editor, m: Match) -> None:
        run, merged = m.payload  # type: ignore[misc]
        edit.set_input(m.nid, 0, ctx.inputs(run[-1])[0])
        edit.set_axes(m.nid, merged)
        for u in run:
            edit.delete_node(u)
