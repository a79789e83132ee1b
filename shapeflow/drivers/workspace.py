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
from ..codes import REFUSAL_CODES
from .discover import find_models
from .cache import LintCache
from ..errors import UsageError, display_path
from .linter import FileResult, LintOptions, find_repo_root
from ..rules import ALL_RULES


@dataclass
class RunResult:
    results: list[FileResult]
    settings: list[tuple[str, Settings, Resolved]] = field(default_factory=list)  # per file
    baselined: int = 0  # findings hidden by a baseline
    root: str | None = None
    # index -> the settings file whose ``exclude`` covers that file: judged for refusals only
    excluded: dict[int, str] = field(default_factory=dict)


# What a file a settings file excludes is still judged for: the codes that mean onnxruntime
# refuses the model (docs/threat-model.md). The analysis runs these rules alone: the load-time
# checks, and the inference two of them (SF013, SF015) read; no axis rule, no rewrite search.
REFUSAL_RULES = tuple(sorted(r.code for r in ALL_RULES if r.code in REFUSAL_CODES))


def shown_source(source: str) -> str:
    """A settings file's path as findings name it: relative to the current directory when below it."""
    rel = os.path.relpath(source)
    return display_path(source if rel.startswith("..") else rel)


def excluded_note(source: str) -> str:
    return (f"(this file is excluded by {shown_source(source)}, and checked only for what onnxruntime "
            "refuses, which no setting hides)")


def gate_options(base: LintOptions, cli: CommandLine) -> LintOptions:
    """The options for a file a settings file excludes: the refusal rules only, at their own
    level, nothing from the settings file, no rewrite; the command line's limits, markers switch
    and exit-zero (the command line is trusted)."""
    return replace(base, select=REFUSAL_RULES, ignore=(), severity=(), exit_zero=bool(cli.exit_zero),
                   settings_exit_zero=False, assume=tuple(parse_assumptions(cli.assume, "--assume").texts()),
                   named=(), fix=False, diff=False, show_info=False, baseline=None)


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
         use_git: bool = True, force_exclude: bool = False,
         cli_exclude: Sequence[str] = ()) -> list[tuple[str, Settings, Resolved, str | None]]:
    """(file, its settings, resolved, the settings file that excludes it or None) for every model
    file ``paths`` name (``force_exclude``: exclusions apply to files named too;
    ``discover.find_models``)."""
    cache = ConfigCache(config, isolated)
    found, _ = find_models(list(paths), cache.for_path, use_git=use_git, force_exclude=force_exclude,
                           cli_exclude=cli_exclude)
    out = []
    for f in found:
        settings = cache.for_path(f.path)
        out.append((f.path, settings, resolve(settings, cli, f.path), f.excluded_by))
    return out


def _baselines(planned: list[tuple[str, Settings, Resolved, str | None]], excluded: dict[int, str],
               base: LintOptions) -> dict[str, Baseline]:
    """The baselines the files' settings name (excluded files have none), each read once."""
    baselines: dict[str, Baseline] = {}
    for k, (_, _, resolved, _) in enumerate(planned):
        if resolved.baseline and k not in excluded:
            path = os.path.abspath(resolved.baseline)
            if path not in baselines:
                baselines[path] = load_baseline(path, base.limits.max_memory)
    return baselines


def _options(planned: list[tuple[str, Settings, Resolved, str | None]], excluded: dict[int, str],
             base: LintOptions, cli: CommandLine, use_baseline: bool,
             progress: Callable[[int, int], None] | None) -> list[tuple[str, LintOptions]]:
    """Each file with the options it is linted with: its settings', or the gate's for a file a
    settings file excludes; one options object per distinct settings."""
    by_resolved: dict[Resolved, LintOptions] = {}
    gate: LintOptions | None = None
    out: list[tuple[str, LintOptions]] = []
    for k, (path, _, resolved, _) in enumerate(planned):
        if k in excluded:
            if gate is None:
                gate = gate_options(base, cli)
                if progress is not None:
                    gate = replace(gate, progress=progress)
            out.append((path, gate))
            continue
        options = by_resolved.get(resolved)
        if options is None:
            options = by_resolved[resolved] = options_for(base, resolved, use_baseline)
            if progress is not None:
                options = by_resolved[resolved] = replace(options, progress=progress)
        out.append((path, options))
    return out


def run(paths: Sequence[str], cli: CommandLine, base: LintOptions, *, config: str | None = None,
        isolated: bool = False, jobs: int = 1, use_baseline: bool = True,
        progress: Callable[[int, int, str], None] | None = None,
        phase_progress: Callable[[int, int], None] | None = None,
        cache: LintCache | None = None, executor: str = "local", ray_address: str | None = None,
        task_timeout: float | None = None,
        on_result: Callable[[int, FileResult], None] | None = None, force_exclude: bool = False,
        cli_exclude: Sequence[str] = ()) -> RunResult:
    """Lint every model file ``paths`` name under its own settings. ``progress(done, total, path)``
    is called before each file when given, and ``phase_progress(done, total)`` during each file's
    inference (serial runs only: a parallel run has no order).

    Each file is a task (``executors.Task``): run here, in ``jobs`` processes, or as Ray tasks
    (``executor="ray"``), through ``cache`` when given. ``on_result(index, result)`` is called for
    each file as soon as it is done (completion order; baseline already applied); the returned
    results are in input order whatever the executor.

    A file a settings file's ``exclude`` covers is judged for the refusal codes only
    (``gate_options``), its findings noted as such; ``cli_exclude`` (``--exclude``) removes
    files entirely."""
    from .executors import EXECUTORS, Task, import_ray, run_processes, run_ray, run_serial

    if executor not in EXECUTORS:
        raise UsageError(f"unknown executor '{executor}' (choose from {', '.join(EXECUTORS)})")
    if executor == "ray":
        if base.fix:
            raise UsageError("--fix writes models in place: run it without --executor ray")
        import_ray()  # before any work: a missing extra is a usage error
    if isolated:
        base = replace(base, markers=False)  # --isolated: neither settings files nor in-model markers
    planned = plan(paths, cli, config=config, isolated=isolated, force_exclude=force_exclude,
                   cli_exclude=cli_exclude)
    excluded = {k: by for k, (_, _, _, by) in enumerate(planned) if by is not None}
    root = base.repo_root or find_repo_root()
    # read before any work: a bad baseline is a usage error (exit 2)
    baselines = _baselines(planned, excluded, base) if use_baseline else {}
    if base.fix:
        cache = None  # --fix writes models: its results are never reused
    serial = executor == "local" and (jobs <= 1 or len(planned) <= 1)
    shown = phase_progress if serial and progress is not None else None
    tasks = [Task(path, options, cache)
             for path, options in _options(planned, excluded, base, cli, use_baseline, shown)]
    results: list[FileResult | None] = [None] * len(planned)
    hidden = 0

    def done(k: int, r: FileResult) -> None:
        nonlocal hidden
        r.named = tasks[k].options.named or ()  # (not part of a cached result: the settings' own)
        if k in excluded:
            note = excluded_note(excluded[k])
            r.diagnostics = [replace(d, hint=f"{d.hint} {note}" if d.hint else note) for d in r.diagnostics]
            r.excluded_by = excluded[k]
            results[k] = r
            if on_result is not None:
                on_result(k, r)
            return
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
    return RunResult([r for r in results if r is not None], [(p, s, r) for p, s, r, _ in planned], hidden, root,
                     excluded)
