"""A lint run over a repository: files found, each file's settings resolved from its nearest config,
the files linted (``linter.lint_paths``, grouped by identical settings), then the baseline applied.

Shared by ``shapeflow lint`` and ``shapeflow.lint()``, so both read the same settings.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

from .assume import parse_assumptions
from .baseline import Baseline, apply_baseline, load_baseline
from .config import CommandLine, ConfigCache, Resolved, Settings, resolve
from .discover import model_files
from .linter import FileResult, LintOptions, find_repo_root, lint_paths


@dataclass
class RunResult:
    results: list[FileResult]
    settings: list[tuple[str, Settings, Resolved]] = field(default_factory=list)  # per file
    baselined: int = 0  # findings hidden by a baseline
    root: str | None = None


def options_for(base: LintOptions, resolved: Resolved) -> LintOptions:
    """``base`` with the rules and switches of one file's settings."""
    codes = tuple(sorted(resolved.codes))
    # `assume` ("seq>=3", from the command line or the config): each file uses those that name
    # one of its symbols (linter.py)
    return replace(base, select=codes if codes else None, ignore=() if codes else ("SF",),
                   severity=resolved.severity, exit_zero=resolved.exit_zero,
                   assume=tuple(parse_assumptions(resolved.assume, "assume").items()))


def plan(paths: Sequence[str], cli: CommandLine, *, config: str | None = None, isolated: bool = False,
         use_git: bool = True) -> list[tuple[str, Settings, Resolved]]:
    """(file, its settings, resolved) for every model file ``paths`` name."""
    cache = ConfigCache(config, isolated)
    files = model_files(list(paths), cache.for_path, use_git=use_git)
    out = []
    for f in files:
        settings = cache.for_path(f)
        out.append((f, settings, resolve(settings, cli, f)))
    return out


def run(paths: Sequence[str], cli: CommandLine, base: LintOptions, *, config: str | None = None,
        isolated: bool = False, jobs: int = 1, use_baseline: bool = True,
        progress: Callable[[int, int, str], None] | None = None,
        phase_progress: Callable[[int, int], None] | None = None) -> RunResult:
    """Lint every model file ``paths`` name under its own settings. ``progress(done, total, path)``
    is called before each file when given, and ``phase_progress(done, total)`` during each file's
    inference (serial runs only: a parallel run has no order)."""
    planned = plan(paths, cli, config=config, isolated=isolated)
    root = base.repo_root or find_repo_root()
    baselines: dict[str, Baseline] = {}  # read before any work: a bad baseline is a usage error (exit 2)
    if use_baseline:
        for _, _, resolved in planned:
            if resolved.baseline:
                path = os.path.abspath(resolved.baseline)
                if path not in baselines:
                    baselines[path] = load_baseline(path)
    groups: dict[LintOptions, list[int]] = {}
    for k, (_, _, resolved) in enumerate(planned):
        groups.setdefault(options_for(base, resolved), []).append(k)
    results: list[FileResult | None] = [None] * len(planned)
    if progress is not None and jobs <= 1:
        for k, (path, _, resolved) in enumerate(planned):
            progress(k, len(planned), path)
            results[k] = lint_paths([path], replace(options_for(base, resolved), progress=phase_progress))[0]
        progress(len(planned), len(planned), "")
    else:
        for options, members in groups.items():
            for k, r in zip(members, lint_paths([planned[k][0] for k in members], options, jobs=jobs)):
                results[k] = r
    done = [r for r in results if r is not None]
    hidden = 0
    if use_baseline:
        by_file: dict[str, list[FileResult]] = {}
        for (_, _, resolved), r in zip(planned, done):
            if resolved.baseline:
                by_file.setdefault(os.path.abspath(resolved.baseline), []).append(r)
        for path, rs in by_file.items():
            hidden += apply_baseline(rs, baselines[path], root, diff=base.diff)
    return RunResult(done, planned, hidden, root)

