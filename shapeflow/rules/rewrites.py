"""What ``shapeflow optimize`` would rewrite, for the info rules SF201-SF203.

The rewrite rules live in ``shapeflow.passes``; lint asks them for their candidates on the graph and
inference it already has (no second inference), so lint and optimize cannot disagree.
"""

from __future__ import annotations

from typing import Iterator

from .base import Finding, LintContext

_KEY = "rewrite_candidates"
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
            ctx.cache[_KEY] = list(find_candidates(ctx.graph, ctx.inference))
    return ctx.cache[_KEY]  # type: ignore[return-value]


def findings(ctx: LintContext, code: str) -> Iterator[Finding]:
    for c in candidates(ctx):
        if c.code == code:
            yield Finding(ctx.location_of(c.nid), c.message, HINT)
