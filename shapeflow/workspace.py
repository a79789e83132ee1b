"""A lint run over a repository: files found, each file's settings resolved from its nearest config,
the files linted (``linter.lint_paths``, grouped by identical settings), then the baseline applied.

Shared by ``shapeflow lint`` and ``shapeflow.lint()``, so both read the same settings.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Callable, Mapping, Sequence

from . import suppress
from .analysis import Analysis, analyze
from .baseline import Baseline, apply_baseline, load_baseline
from .config import CommandLine, ConfigCache, Resolved, Settings, resolve
from .discover import model_files
from .inference import Progress
from .io import LoadedModel
from .limits import DEFAULT_LIMITS, Limits
from .linter import FileResult, LintOptions, find_repo_root, lint_paths, severity_table
from .rules import select_rules


@dataclass
class RunResult:
    results: list[FileResult]
    settings: list[tuple[str, Settings, Resolved]] = field(default_factory=list)  # per file
    baselined: int = 0  # findings hidden by a baseline
    root: str | None = None


def options_for(base: LintOptions, resolved: Resolved) -> LintOptions:
    """``base`` with the rules and switches of one file's settings."""
    codes = tuple(sorted(resolved.codes))
    # ISSUE 9 (the lead): resolved.assume holds the config's / command line's `assume` facts
    # ("seq>=3", as written); pass them into the options for the analysis here.
    return replace(base, select=codes if codes else None, ignore=() if codes else ("SF",),
                   severity=resolved.severity, exit_zero=resolved.exit_zero)


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
        progress: Callable[[int, int, str], None] | None = None) -> RunResult:
    """Lint every model file ``paths`` name under its own settings. ``progress(done, total, path)``
    is called before each file when given (serial runs only: a parallel run has no order)."""
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
            results[k] = lint_paths([path], options_for(base, resolved))[0]
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


def infer_with_settings(loaded: LoadedModel, *, dims: Mapping[str, int] | None = None,
                        limits: Limits = DEFAULT_LIMITS, config: str | None = None, isolated: bool = False,
                        progress: Progress | None = None) -> Analysis:
    """``analyze`` for ``infer`` (the command and the API) under the model's settings: the rules
    its config selects (among SF0xx/SF1xx, what infer reports), their severities and the in-model
    suppressions, findings in graph order."""
    settings = ConfigCache(config, isolated).for_path(loaded.path or "model.onnx")
    resolved = resolve(settings, CommandLine(), loaded.path)
    rules = [r for r in select_rules(ignore=["SF2"]) if r.code in resolved.codes]
    result = analyze(loaded, dims=dims, limits=limits, rules=rules, progress=progress)
    table = severity_table(resolved.severity)
    diags = result.diagnostics
    if table:
        diags = [d.with_severity(table[d.code]) if d.code in table and table[d.code] is not d.severity else d
                 for d in diags]
    result.diagnostics, _ = suppress.apply(loaded.path, loaded.proto, loaded.raw, diags, resolved.codes, table)
    return result


def unknown_symbols(loaded: LoadedModel, names: Sequence[str]) -> list[str]:
    """The names among ``names`` that no ``dim_param`` of the model declares (``--dim nosuch=3``)."""
    raw = loaded.raw
    candidates = {n for n in names if n.encode() in raw}  # a byte search rules most typos out at once
    missing = set(names) - candidates
    if candidates:
        for deep in (False, True):  # nested graphs only when the top level did not declare them all
            left = candidates - _symbols(loaded, deep)
            if not left:
                break
        missing |= left
    return sorted(missing)


def _symbols(loaded: LoadedModel, deep: bool) -> set[str]:
    out: set[str] = set()
    for _, body in suppress.iter_bodies(loaded.proto, deep):
        for field_name in ("input", "output", "value_info"):
            for vi in getattr(body, field_name, ()):
                if not isinstance(vi, str):  # a function's inputs and outputs are names only
                    out.update(d.dim_param for d in vi.type.tensor_type.shape.dim if d.dim_param)
    return out
