"""The rewrite engine: exact rewrites (SPEC.md section 4) run to a fixpoint.

The rewrites themselves are specs, one per file, in ``shapeflow/rewrites/``; this package is what
runs them, one concern per module:

* :mod:`.spec` (what a rewrite is), :mod:`.pattern` (the shapes rewrites match, and the common
  replacements), :mod:`.chain` (runs of Squeeze/Unsqueeze matched by table rows), :mod:`.match`
  (what a rewrite says about one root), :mod:`.context` (what it sees of a round);
* :mod:`.requires` (what the engine refuses to rewrite, whoever asks), :mod:`.dispatch` (which
  rewrites to ask about which root), :mod:`.rounds` (one round, its claims, and whether another is
  worth running), :mod:`.sweep` (the dead-node sweep after each round), :mod:`.edit` (the only
  code that changes the ModelProto), :mod:`.reinfer` (carrying inference to the next round),
  :mod:`.fixpoint` (the loop), :mod:`.candidates` (listing without changing), :mod:`.report`.

The engine transforms and judges nothing (it imports no lint rule and no driver):
:func:`find_candidates` lists what the rewrites would do to an indexed and inferred model (lint's
SF2xx findings are these); :func:`rewrite_model` edits a loaded model in place until no rewrite
fires; :func:`run_passes` chains several such passes. The drivers decide what to run:
``shapeflow.drivers.optimizer`` (``optimize``, which refuses models with error-level findings) and
``shapeflow.drivers.linter`` (``lint --fix``).
"""

from __future__ import annotations

from .candidates import find_candidates
from .dispatch import Place
from .fixpoint import Pass, PassesResult, rewrite_model, run_passes
from .report import Candidate, OptimizeResult, count_ops
from .requires import require_file, require_known_ops, requires
from .spec import Rewrite

__all__ = [
    "Candidate",
    "OptimizeResult",
    "Pass",
    "PassesResult",
    "Place",
    "Rewrite",
    "count_ops",
    "find_candidates",
    "require_file",
    "require_known_ops",
    "requires",
    "rewrite_model",
    "run_passes",
]
