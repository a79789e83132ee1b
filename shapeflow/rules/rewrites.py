"""What the rewrite engine would do, as lint findings: the SF2xx rules, made from the rewrite specs.

Each rewrite of ``shapeflow/rewrites/`` (and the dead-node sweep, SF205) becomes a lint rule here:
same code, same name, its docstring as documentation. No rule file is written for them.

The rules judge nothing themselves: the lint driver (``analysis.analyze``) asks the engine
(``shapeflow.passes.find_candidates``) for its candidates on the graph and inference it already
has, and leaves them in the context under ``CANDIDATES``. So lint's SF2xx findings are exactly what
``optimize`` and ``lint --fix`` would rewrite.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Protocol, Sequence, cast

from ..codes import Code
from ..diagnostics import Diagnostic, Location
from ..passes.spec import Documented
from ..passes.sweep import DeadNodes
from ..rewrites import REWRITES
from .base import Finding, LintContext, Rule

if TYPE_CHECKING:
    from ..facts import AxisNode

# ctx.cache key of the engine's candidates, put there by the driver before the SF2xx rules run
CANDIDATES = "rewrite_candidates"
_BY_CODE = "rewrite_candidates_by_code"
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
    # A candidate rooted at a Squeeze/Unsqueeze has its location in its facts: cheaper
    # than ``location_of``, which reads the node's proto (at a hundred thousand findings, that counts).
    fact = c.fact
    return Rule.at(fact) if fact is not None else ctx.location_of(c.nid)


def findings(ctx: LintContext, code: str) -> Iterator[Finding]:
    for c in _by_code(ctx, code):
        yield Finding(_location(ctx, c), c.message, HINT)


class RewriteHint(Rule):
    """Base of the SF2xx rules: each reports the rewrite candidates of its code."""

    spec: type[Documented]

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        return findings(ctx, self.code)

    def diagnostics(self, ctx: LintContext) -> Iterator[Diagnostic]:
        # ``Rule.diagnostics`` of ``check`` (that loop, once more) without a Finding per candidate in
        # between: a large model has hundreds of thousands.
        code, name, severity, fixable, file = self.code, self.name, self.severity, self.fixable, ctx.file
        for c in _by_code(ctx, code):
            # (positional: the fields in their order, cheaper to pass than keywords)
            yield Diagnostic(code, name, severity, file, c.message, HINT, fixable, _location(ctx, c))


def hint_rule(spec: type[Documented]) -> type[RewriteHint]:
    """The lint rule of a rewrite spec (or of the sweep): its code, name and documentation."""
    entry = spec.code
    if not isinstance(entry, Code):
        raise TypeError(f"{spec.__name__} has no code")
    return type(spec.__name__, (RewriteHint,), {
        "__doc__": spec.__doc__, "__module__": spec.__module__, "__qualname__": spec.__qualname__,
        "code": entry.code, "entry": entry, "spec": spec,
    })


# The SF2xx rules, in code order; the sweep's reports nothing of its own (it only removes what the
# other rewrites leave unread), but its code is documented like the others.
HINT_RULES: tuple[type[RewriteHint], ...] = tuple(
    sorted((hint_rule(s) for s in (*REWRITES, DeadNodes)), key=lambda r: r.code))
# The codes whose findings are rewrite candidates.
CODES = frozenset(r.code for r in HINT_RULES if r.spec is not DeadNodes)
