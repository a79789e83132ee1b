"""What the rewrite engine would do, as lint findings: the info rules SF201-SF204 and SF207-SF210.

The rules judge nothing themselves and import no rewrite code: the lint driver
(``analysis.analyze``) asks the engine (``shapeflow.passes.find_candidates``) for its candidates on
the graph and inference it already has, and leaves them in the context under ``CANDIDATES``. So
lint's SF2xx findings are exactly what ``optimize`` and ``lint --fix`` would rewrite.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Protocol, Sequence, cast

from .. import codes
from ..diagnostics import Diagnostic, Location
from .base import Finding, LintContext, Rule

if TYPE_CHECKING:
    from ..facts import AxisNode

# ctx.cache key of the engine's candidates, put there by the driver before the SF2xx rules run
CANDIDATES = "rewrite_candidates"
_BY_CODE = "rewrite_candidates_by_code"
# The codes whose findings are rewrite candidates (SF205 dead-nodes has none of its own: the sweep
# only removes what the other rewrites leave unread).
CODES = frozenset(c for c in codes.REWRITE_CODES if c != codes.DEAD_NODES.code)
HINT = "`shapeflow optimize` or `shapeflow lint --fix` rewrites it"


class CandidateLike(Protocol):
    """What a rewrite candidate (``passes.Candidate``) tells lint."""

    @property
    def code(self) -> str | None: ...
    @property
    def nid(self) -> int: ...
    @property
    def message(self) -> str: ...
    @property
    def fact(self) -> "AxisNode | None": ...


def candidates(ctx: LintContext) -> Sequence[CandidateLike]:
    """The engine's candidates for this model (none when the driver asked for none)."""
    return cast("Sequence[CandidateLike]", ctx.cache.get(CANDIDATES, ()))


def _by_code(ctx: LintContext, code: str) -> list[CandidateLike]:
    """The candidates of one code, in search order (split once for the rules)."""
    split = cast("dict[str | None, list[CandidateLike]] | None", ctx.cache.get(_BY_CODE))
    if split is None:
        table: dict[str | None, list[CandidateLike]] = {}
        for c in candidates(ctx):
            table.setdefault(c.code, []).append(c)
        ctx.cache[_BY_CODE] = split = table
    return split.get(code, [])


def _location(ctx: LintContext, c: CandidateLike) -> Location:
    # Every candidate is rooted at a Squeeze/Unsqueeze, whose facts hold its location: cheaper
    # than ``location_of``, which reads the node's proto (at a hundred thousand findings, that counts).
    fact = c.fact
    return Rule.at(fact) if fact is not None else ctx.location_of(c.nid)


def findings(ctx: LintContext, code: str) -> Iterator[Finding]:
    for c in _by_code(ctx, code):
        yield Finding(_location(ctx, c), c.message, HINT)


class RewriteHint(Rule):
    """Base of SF201-SF204 and SF207-SF210: each reports the rewrite candidates of its code."""

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        return findings(ctx, self.code)

    def diagnostics(self, ctx: LintContext) -> Iterator[Diagnostic]:
        # ``Rule.diagnostics`` of ``check`` (that loop, once more) without a Finding per candidate in
        # between: a large model has hundreds of thousands.
        code, name, severity, fixable, file = self.code, self.name, self.severity, self.fixable, ctx.file
        for c in _by_code(ctx, code):
            # (positional: the fields in their order, cheaper to pass than keywords)
            yield Diagnostic(code, name, severity, file, c.message, HINT, fixable, _location(ctx, c))
