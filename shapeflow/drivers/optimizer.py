"""The driver of ``shapeflow optimize`` (the command is ``cli/optimize_cmd.py``; the API's
``optimize`` calls it too): judge the model once, refuse it when it has errors, then hand the
analysis to the rewrite engine (``shapeflow.passes``), which transforms and judges nothing.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Mapping, Sequence

from .analysis import analyze
from ..diagnostics import Diagnostic, Severity
from ..dims import Bound
from ..errors import EXIT_FINDINGS, LimitExceededError, ShapeflowError, timeout_as_configured
from ..io import LoadedModel
from ..limits import DEFAULT_LIMITS, Limits
from ..passes import OptimizeResult, require_file, require_known_ops, rewrite_model
from ..passes.fixpoint import Progress
from ..rewrites import select
from ..rules import Rule, select_rules


class OptimizeRefused(ShapeflowError):
    """The model has error-level findings: optimizing would silently "repair" it (exit 1)."""

    exit_code = EXIT_FINDINGS

    def __init__(self, message: str, diagnostics: list[Diagnostic], **kw: object) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]
        self.diagnostics = diagnostics


def error_rules() -> list[Rule]:
    """The rules that can refuse a model. No rule raises a finding above its default severity, so
    the warning and info rules need not run (SF2xx would only run the rewrite rules twice)."""
    return [r for r in select_rules() if r.severity == Severity.ERROR]


def refusal(diagnostics: Sequence[Diagnostic], path: str) -> OptimizeRefused | None:
    """The refusal of a model with these findings, or None when none is an error."""
    errors = [d for d in diagnostics if d.severity == Severity.ERROR]
    if not errors:
        return None
    return OptimizeRefused(f"refusing to optimize: {len(errors)} error-level finding"
                           f"{'' if len(errors) == 1 else 's'} (fix the model first)", errors, file=path)


def optimize_model(loaded: LoadedModel, *, rules: Sequence[str] | None = None, strict: bool = False,
                   limits: Limits = DEFAULT_LIMITS, progress: Progress | None = None,
                   explain: bool = True, full_inference: bool = False,
                   assumptions: Mapping[str, Bound] | None = None,
                   ranges: dict[str, Bound] | None = None) -> OptimizeResult:
    """Rewrite ``loaded.proto`` in place until no rule fires.

    Raises ``OptimizeRefused`` (exit 1) for a model with error-level findings, and
    ``ShapeflowError`` (exit 2) for one that cannot be optimized safely (invalid graph, unknown
    operator, unsupported opset, unsafe external data, a limit: what the engine requires of every
    model it rewrites, ``passes.requires``). ``rules`` selects rewrites by code, prefix or name
    (all by default); the other options are ``passes.rewrite_model``'s. ``ranges``, when given, is
    filled with the range of each symbol of the input model (the assumptions and what inference
    proved: ``--verify`` makes inputs within them).
    """
    chosen = select(rules)  # (a usage error for an unknown name comes first)
    require_file(loaded)  # (the engine checks it again; here it comes before the analysis)
    started = time.monotonic()
    analysis = analyze(loaded, limits=limits, rules=error_rules(), progress=progress, assumptions=assumptions)
    if ranges is not None:
        ranges.update(analysis.inference.ranges)
    require_known_ops(analysis.graph)  # exit 2, before the lint verdict (exit 1)
    refused = refusal(analysis.diagnostics, loaded.path)
    if refused is not None:
        raise refused
    # The engine's time limit is what the analysis left of the file's.
    left = replace(limits, timeout=max(limits.timeout - (time.monotonic() - started), 1e-9))
    try:
        return rewrite_model(loaded, chosen, graph=analysis.graph, inference=analysis.inference, strict=strict,
                             limits=left, progress=progress, explain=explain, full_inference=full_inference)
    except LimitExceededError as exc:
        raise timeout_as_configured(exc, limits.timeout) from None  # not what was left of it


__all__ = ["OptimizeRefused", "error_rules", "optimize_model", "refusal"]
