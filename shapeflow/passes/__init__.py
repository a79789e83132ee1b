"""Exact Squeeze/Unsqueeze rewrites (SPEC.md section 4), run to a fixpoint by ``optimize``.

Two entry points:

* :func:`find_candidates` lists what the rewrite rules would do to an analysed model, without
  changing it (the lint rules SF201-SF203 report these).
* :func:`optimize_model` edits a loaded model in place until no rule fires.
"""

from __future__ import annotations

from .manager import Candidate, OptimizeRefused, OptimizeResult, find_candidates, optimize_model
from .registry import ALL_RULES, RULE_NAMES, resolve_rules

__all__ = [
    "ALL_RULES",
    "Candidate",
    "OptimizeRefused",
    "OptimizeResult",
    "RULE_NAMES",
    "find_candidates",
    "optimize_model",
    "resolve_rules",
]
