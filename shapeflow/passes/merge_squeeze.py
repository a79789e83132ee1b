"""Squeezes in a row are one (SPEC.md section 4)."""

from __future__ import annotations

from .. import codes
from ..axes import compose_squeeze
from .base import Match, NoMatch, Result, RewriteRule, RoundContext, fmt_axes, not_applicable
from .edit import Editor

MAX_RUN = 16

# Shared answers for roots the rule does not apply to (immutable).
_NOT_AFTER_SQUEEZE = not_applicable("input is not produced by a Squeeze")


class MergeSqueeze(RewriteRule):
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
    roots = ("Squeeze",)
    after = frozenset({"Squeeze"})

    def match(self, ctx: RoundContext, nid: int) -> Result:
        chain = ctx.chain(nid, "Squeeze", MAX_RUN)
        if not chain:
            return _NOT_AFTER_SQUEEZE
        first = chain[0]
        exclusive = ctx.only_reader(ctx.sid(nid), ctx.output(first), nid)
        if (ctx.squeezes_all(first) and ctx.squeezes_all(nid)
                and ctx.axes_problem(first) is None and ctx.axes_problem(nid) is None):
            pair = f"{ctx.display(first)} then {ctx.display(nid)}, both without axes"
            if not exclusive:
                return NoMatch(f"{pair}: the first output has other readers or is a graph output")
            return Match(nid, (nid, first), (), f"{pair}: the second removes nothing", "", None)
        b = ctx.squeeze_axes(nid)
        if isinstance(b, NoMatch):
            return b
        run: list[int] = []
        merged = b
        for s in chain:
            b1 = ctx.squeeze_axes(s)
            if isinstance(b1, NoMatch):
                if not run:
                    return b1
                break
            run.append(s)
            merged = compose_squeeze(b1, merged)
        def names() -> str:
            return ctx.display_run(run)

        if not exclusive:
            return NoMatch(f"{names()} then {ctx.display(nid)}: the first output has other readers or is "
                           "a graph output")
        if not merged:
            return NoMatch(f"{names()} then {ctx.display(nid)}: none removes a dim")
        return Match(nid, (nid, *run), (), lambda: f"{names()} then {ctx.display(nid)} {fmt_axes(b)} merge "  # type: ignore[arg-type]
                     f"to {fmt_axes(merged)}", "", (tuple(run), merged))

    def apply(self, ctx: RoundContext, edit: Editor, m: Match) -> None:
        if m.payload is None:
            # S() after S(): the first keeps removing every 1-dim and takes over the output name.
            first = m.writes[1]
            z = ctx.output(m.nid)
            edit.delete_node(m.nid)
            edit.set_output(first, 0, z)
            return
        run, merged = m.payload  # type: ignore[misc]
        edit.set_input(m.nid, 0, ctx.inputs(run[-1])[0])
        edit.set_axes(m.nid, merged)
        for s in run:
            edit.delete_node(s)
