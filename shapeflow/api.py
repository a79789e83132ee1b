"""The typed Python API, under the names of the commands: ``infer``, ``lint``, ``optimize``."""

from __future__ import annotations

import os
from typing import Mapping, Sequence

from .analysis import Analysis, analyze
from .io import load_model, save_model
from .limits import DEFAULT_LIMITS, Limits
from .linter import FileResult, LintOptions, lint_paths
from .optimizer import optimize_model
from .passes import OptimizeResult

PathLike = str | os.PathLike[str]


def infer(path: PathLike, *, dims: Mapping[str, int] | None = None,
          limits: Limits = DEFAULT_LIMITS) -> Analysis:
    """Load ``path``, infer every tensor's shape and run the structure and axis rules.

    Raises ``ShapeflowError`` when the model cannot be read or understood.
    """
    loaded = load_model(path, limits)
    return analyze(loaded, dims=dims, limits=limits)


def lint(paths: PathLike | Sequence[PathLike], *, select: Sequence[str] | None = None,
         ignore: Sequence[str] = (), dims: Mapping[str, int] | None = None,
         limits: Limits = DEFAULT_LIMITS, jobs: int = 1) -> list[FileResult]:
    """Lint one or more models, as ``shapeflow lint`` does (without ``--fix``): one ``FileResult``
    per path, in order. Unreadable files are results with SF001, not exceptions."""
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    options = LintOptions(select=tuple(select) if select is not None else None, ignore=tuple(ignore),
                          dims=tuple((dims or {}).items()), limits=limits)
    return lint_paths([os.fspath(p) for p in items], options, jobs=jobs)


def optimize(path: PathLike, output: PathLike | None = None, *, rules: Sequence[str] | None = None,
             strict: bool = False, force: bool = False, limits: Limits = DEFAULT_LIMITS) -> OptimizeResult:
    """Run the rewrite rules on ``path`` to a fixpoint; write the result to ``output`` when given
    (atomically; byte-identical to the input when nothing changed).

    Raises ``ShapeflowError``: exit code 1 for a model with error-level findings (it is refused,
    not repaired), 2 for one that cannot be read or optimized safely.
    """
    loaded = load_model(path, limits)
    result = optimize_model(loaded, rules=rules, strict=strict, limits=limits)
    if output is not None:
        save_model(result.model if result.changed else loaded.raw, output, input_path=path, force=force)
    return result
