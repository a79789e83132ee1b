"""A lint run over a repository: files found, each file's settings resolved from its nearest config,
the files linted (one task per file, ``executors.py``: here, in processes or on Ray, through the
cache), then the baseline applied to each result.

Shared by ``shapeflow lint`` and ``shapeflow.lint()``, so both read the same settings.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

from ..assume import parse_assumptions
from .baseline import Baseline, apply_baseline, load_baseline
from .config import CommandLine, ConfigCache, Resolved, Settings, resolve
from .discover import model_files
from .cache import LintCache
from ..errors import UsageError
from .linter import FileResult, LintOptions, find_repo_root


@dataclass
class RunResult:
    results: list[FileResult]
    settings: list[tuple[str, Settings, Resolved]] = field(default_factory=list)  # per file
    baselined: int = 0  # findings hidden by a baseline
    root: str | None = None


def options_for(base: LintOptions, resolved: Resolved, use_baseline: bool = True) -> LintOptions:
    """``base`` with the rules and switches of one file's settings."""
    codes = tuple(sorted(resolved.codes))
    # `assume` ("seq>=3", from the command line or the config): each file uses those that name
    # one of its symbols (linter.py)
    return replace(base, select=codes if codes else None, ignore=() if codes else ("SF",),
                   severity=resolved.severity, exit_zero=resolved.exit_zero,
                   settings_exit_zero=resolved.settings_exit_zero,
                   assume=tuple(parse_assumptions(resolved.assume, "assume").texts()),
                   named=tuple(sorted(resolved.named)),
                   # --fix leaves what the baseline lists alone (only a fix reads it there)
                   baseline=(os.path.abspath(resolved.baseline) if base.fix and use_baseline and resolved.baseline
                             else None))


def plan(paths: Sequence[str], cli: CommandLine, *, config: str | None = None, isolated: bool = False,
         use_git: bool = True, force_exclude: bool = False) -> list[tuple[str, Settings, Resolved]]:
    """(file, its settings, resolved) for every model file ``paths`` name (``force_exclude``:
    ``exclude`` applies to files named too; ``discover.model_files``)."""
    cache = ConfigCache(config, isolated)
    files = model_files(list(paths), cache.for_path, use_git=use_git, force_exclude=force_exclude)
    out = []
    for f in files:
        settings = cache.for_path(f)
        out.append((f, settings, resolve(settings, cli, f)))
    return out


def run(paths: Sequence[str], cli: CommandLine, base: LintOptions, *, config: str | None = None,
        isolated: bool = False, jobs: int = 1, use_baseline: bool = True,
        progress: Callable[[int, int, str], None] | None = None,
        phase_progress: Callable[[int, int], None] | None = None,
        cache: LintCache | None = None, executor: str = "local", ray_address: str | None = None,
        task_timeout: float | None = None,
        on_result: Callable[[int, FileResult], None] | None = None, force_exclude: bool = False) -> RunResult:
    """Lint every model file ``paths`` name under its own settings. ``progress(done, total, path)``
    is called before each file when given, and ``phase_progress(done, total)`` during each file's
    inference (serial runs only: a parallel run has no order).

    Each file is a task (``executors.Task``): run here, in ``jobs`` processes, or as Ray tasks
    (``executor="ray"``), through ``cache`` when given. ``on_result(index, result)`` is called for
    each file as soon as it is done (completion order; baseline already applied); the returned
    results are in input order whatever the executor."""
    from .executors import EXECUTORS, Task, import_ray, run_processes, run_ray, run_serial

    if executor not in EXECUTORS:
        raise UsageError(f"unknown executor '{executor}' (choose from {', '.join(EXECUTORS)})")
    if executor == "ray":
        if base.fix:
            raise UsageError("--fix writes models in place: run it without --executor ray")
        import_ray()  # before any work: a missing extra is a usage error
    if isolated:
        base = replace(base, markers=False)  # --isolated: neither settings files nor in-model markers
    planned = plan(paths, cli, config=config, isolated=isolated, force_exclude=force_exclude)
    root = base.repo_root or find_repo_root()
    baselines: dict[str, Baseline] = {}  # read before any work: a bad baseline is a usage error (exit 2)
    if use_baseline:
        for _, _, resolved in planned:
            if resolved.baseline:
                path = os.path.abspath(resolved.baseline)
                if path not in baselines:
                    baselines[path] = load_baseline(path, base.limits.max_memory)
    if base.fix:
        cache = None  # --fix writes models: its results are never reused
    serial = executor == "local" and (jobs <= 1 or len(planned) <= 1)
    by_resolved: dict[Resolved, LintOptions] = {}
    tasks = []
    for path, _, resolved in planned:
        options = by_resolved.get(resolved)
        if options is None:
            options = by_resolved[resolved] = options_for(base, resolved, use_baseline)
            if serial and progress is not None:
                options = by_resolved[resolved] = replace(options, progress=phase_progress)
        tasks.append(Task(path, options, cache))
    results: list[FileResult | None] = [None] * len(planned)
    hidden = 0

    def done(k: int, r: FileResult) -> None:
        nonlocal hidden
        r.named = tasks[k].options.named or ()  # (not part of a cached result: the settings' own)
        baseline = planned[k][2].baseline if use_baseline else None
        if baseline:
            # entries are keyed by file: one file at a time hides what the whole run would
            hidden += apply_baseline([r], baselines[os.path.abspath(baseline)], root, diff=base.diff)
        results[k] = r
        if on_result is not None:
            on_result(k, r)

    if executor == "ray":
        run_ray(tasks, done, address=ray_address, timeout=task_timeout)
    elif serial:
        run_serial(tasks, done, progress)
    else:
        run_processes(tasks, done, jobs)
    return RunResult([r for r in results if r is not None], planned, hidden, root)
