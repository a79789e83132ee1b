"""The rewrite engine: exact Squeeze/Unsqueeze rewrites (SPEC.md section 4) run to a fixpoint.

The engine transforms and judges nothing (it imports no lint rule and no driver):

* :func:`find_candidates` lists what the rewrite rules would do to an indexed and inferred model,
  without changing it (lint's SF2xx findings are these).
* :func:`rewrite_model` edits a loaded model in place until no rule fires, starting from the
  caller's index and inference; :func:`run_passes` chains several such passes.

The drivers decide what to run: ``shapeflow.optimizer`` (``optimize``, which refuses models with
error-level findings) and ``shapeflow.linter`` (``lint --fix``).
"""

from __future__ import annotations

from .manager import (
    Candidate, OptimizeResult, Pass, PassesResult, Place, check_known_ops, find_candidates, preflight,
    rewrite_model, run_passes,
)
from .registry import ALL_RULES, FIX_RULES, RULE_NAMES, resolve_rules, rules_for_codes

__all__ = [
    "ALL_RULES",
    "Candidate",
    "FIX_RULES",
    "OptimizeResult",
    "Pass",
    "PassesResult",
    "Place",
    "RULE_NAMES",
    "check_known_ops",
    "find_candidates",
    "preflight",
    "resolve_rules",
    "rewrite_model",
    "rules_for_codes",
    "run_passes",
]
