"""What ``shapeflow optimize`` would rewrite, for the info rules SF201-SF203.

The rewrite rules live in ``shapeflow.passes``; lint asks them for their candidates on the graph and
inference it already has (no second inference), so lint and optimize cannot disagree.
"""

from __future__ import annotations

from typing import Iterator

from ..diagnostics import Diagnostic, Location
from .base import Finding, LintContext, Rule

_KEY = "rewrite_candidates"
_BY_CODE = "rewrite_candidates_by_code"
# ctx.cache key of {code: diagnostics} of the rules ``analysis.analyze`` has run on the context:
# the candidate search leaves out nodes with error-level findings, and need not find them again.
REPORTED = "reported"
CODES = frozenset({"SF201", "SF202", "SF203"})  # the rewrite rules' codes that lint reports
HINT = "`shapeflow optimize` or `shapeflow lint --fix` rewrites it"


def candidates(ctx: LintContext) -> list:
    """The rewrite candidates of this model, computed once per context. Empty when the passes
    module is not available (a build without it rewrites nothing, so there is nothing to report)."""
    if _KEY not in ctx.cache:
        try:
            from ..passes import find_candidates
        except ImportError:
            ctx.cache[_KEY] = []
        else:
            reported = ctx.cache.get(REPORTED)
            ctx.cache[_KEY] = find_candidates(ctx.graph, ctx.inference, codes=CODES,
                                              reported=reported)  # type: ignore[arg-type]
    return ctx.cache[_KEY]  # type: ignore[return-value]


def _by_code(ctx: LintContext, code: str) -> list:
    """The candidates of one code, in search order (split once for the three rules)."""
    split = ctx.cache.get(_BY_CODE)
    if split is None:
        split = {}
        for c in candidates(ctx):
            split.setdefault(c.code, []).append(c)
        ctx.cache[_BY_CODE] = split
    return split.get(code, [])  # type: ignore[union-attr]


def _location(ctx: LintContext, c) -> Location:  # type: ignore[no-untyped-def]
    # Every candidate is rooted at a Squeeze/Unsqueeze, whose facts hold its location: cheaper
    # than ``location_of``, which reads the node's proto (at a hundred thousand findings, that counts).
    fact = c.fact
    return Rule.at(fact) if fact is not None else ctx.location_of(c.nid)


def findings(ctx: LintContext, code: str) -> Iterator[Finding]:
    for c in _by_code(ctx, code):
        yield Finding(_location(ctx, c), c.message, HINT)


class RewriteHint(Rule):
    """Base of SF201-SF203: each reports the rewrite candidates of its code."""

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        return findings(ctx, self.code)

    def diagnostics(self, ctx: LintContext) -> Iterator[Diagnostic]:
        # ``Rule.diagnostics`` of ``check`` (that loop, once more) without a Finding per candidate in
        # between: a large model has hundreds of thousands.
        code, name, severity, fixable, file = self.code, self.name, self.severity, self.fixable, ctx.file
        for c in _by_code(ctx, code):
            # (positional: the fields in their order, cheaper to pass than keywords)
            yield Diagnostic(code, name, severity, file, c.message, HINT, fixable, _location(ctx, c))
