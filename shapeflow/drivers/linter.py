"""The engine of ``shapeflow lint`` (the command is ``cli/lint_cmd.py``): the gate for models
committed next to code.

One file: load -> analyse (inference and the selected rules, once) -> severity overrides. With
``--fix``, the rewrite engine (``shapeflow.passes``) runs on that analysis, for what the run reports
and nothing else (errors and warnings; info codes only when shown or named; never a finding
suppressed in the model or listed in the baseline): first the repairs (SF104), then, when no
error-level finding is left, the reported SF2xx rewrites (what ``optimize`` would do, in part or
in full); the fixed model is analysed once more, and the
fix is dropped if that shows an error-level finding that was not there before. Many files: every one is processed, in
parallel processes with ``jobs > 1``, and the results come back in input order. Everything a
worker returns is plain picklable data.

Exit code of a file: 2 when it was rejected (unreadable SF001, invalid graph SF002, over a limit
SF006), 3 on an internal error, else 1 when an error-level finding remains (0 with
``exit_zero``), else 0. The run exits with the highest code of its files.
"""

from __future__ import annotations

import difflib
import os
import traceback
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Sequence

from .._onnx import onnx  # (onnx.printer, for --diff, imports onnx when asked for)
from .analysis import Analysis, analyze, error_findings
from ..diagnostics import Diagnostic, Severity
from ..errors import (
    EXIT_CLEAN, EXIT_FINDINGS, EXIT_INTERNAL, EXIT_REJECTED, LimitExceededError, ShapeflowError, display_path,
)
from ..graph import ModelGraph
from ..inference import Inference
from ..io import LoadedModel, load_model, parse_model_file, read_model_file, save_model
from ..assume import parse_assumptions
from ..codes import REFUSAL_CODES
from .config import severity_table
from ..limits import DEFAULT_LIMITS, Limits, file_deadline
from ..rules import LintContext, Rule, rejection_diagnostic, resolve_selector, select_rules
from . import suppress
from ..results import FileResultJSON

if TYPE_CHECKING:
    from .baseline import Baseline


@dataclass(frozen=True)
class LintOptions:
    select: tuple[str, ...] | None = None  # None: every rule
    ignore: tuple[str, ...] = ()
    severity: tuple[tuple[str, Severity], ...] = ()  # (selector, level), later entries win ties
    exit_zero: bool = False
    dims: tuple[tuple[str, int], ...] = ()
    # --assume statements ("seq>=3", "*>=1", "a==b"); each file uses those that name its symbols
    assume: tuple[str, ...] = ()
    limits: Limits = DEFAULT_LIMITS
    fix: bool = False
    diff: bool = False  # with fix: compute the change, write nothing
    repo_root: str | None = None  # models inside it must not resolve outside it (pre-commit)
    markers: bool = True  # read the model's own suppression markers (not with --isolated)
    # exit_zero came from a settings file: an error whose code means onnxruntime refuses the model
    # still fails the file (codes.REFUSAL_CODES; docs/threat-model.md)
    settings_exit_zero: bool = False
    # What is reported (and so what --fix may change): errors and warnings, info findings of the
    # codes the settings name explicitly (config.Resolved.named), every info finding with show_info.
    # None: the codes ``select`` names (a caller of lint_file selects by naming codes).
    show_info: bool = False
    named: tuple[str, ...] | None = None
    # --fix leaves alone what the baseline lists (its findings are not reported); None: no baseline
    baseline: str | None = None
    # inference progress on a terminal (serial runs only: a callable does not cross processes)
    progress: Callable[[int, int], None] | None = field(default=None, compare=False)


@dataclass
class FileResult:
    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    exit_code: int = EXIT_CLEAN
    rejected: bool = False
    error: str | None = None  # a one-line failure that is not a finding (write error, internal error)
    details: str | None = None  # traceback of an internal error, shown with --debug
    fixed: int = 0  # findings removed by --fix
    changed: bool = False  # --fix changed (or, with --diff, would change) the model
    diff: str = ""
    notes: list[str] = field(default_factory=list)  # what --fix could not do, and why
    anchors: dict[tuple[str, str], str] = field(default_factory=dict)  # unnamed nodes, for the baseline (suppress.py)
    assumptions: tuple[str, ...] = ()  # the --assume ranges in force for this file, as text
    # the model names external data: its result depends on files beside it (not cached, cache.py)
    external: bool = False
    refused: bool = False  # --fix: the rewrite engine refused the model (``passes.requires``; exit 2)
    # info codes reported like errors and warnings (named by the settings; set by workspace.run)
    named: tuple[str, ...] = ()
    # the settings file whose ``exclude`` covers this file: judged for refusals only (workspace.py)
    excluded_by: str | None = None

    def reported(self, show_info: bool = False) -> list[Diagnostic]:
        """The findings a run reports: errors and warnings, and the info findings of the codes the
        settings name (or all of them with ``show_info``); other info findings are only counted."""
        if show_info:
            return list(self.diagnostics)
        return [d for d in self.diagnostics if d.severity is not Severity.INFO or d.code in self.named]

    def to_json(self) -> FileResultJSON:
        return {"path": self.path, "exit_code": self.exit_code, "rejected": self.rejected, "error": self.error,
                "diagnostics": [d.to_json() for d in self.diagnostics]}


class _Linter:
    """Lints files with one set of options: the selected rules and severity table are built once."""

    def __init__(self, options: LintOptions) -> None:
        self.options = options
        self.rules: list[Rule] = select_rules(options.select, options.ignore)
        self.codes = {r.code for r in self.rules}
        self.severity = severity_table(options.severity)
        self.dims = dict(options.dims)
        self.named = frozenset(options.named if options.named is not None
                               else (code for s in options.select or () for code in resolve_selector(s)))
        self._baseline: Baseline | None = None  # read when --fix first needs it

    # -- one file --------------------------------------------------------------------------------
    def run(self, path: str, data: bytes | None = None, source: str | None = None) -> FileResult:
        """Lint ``path``; ``data``: its bytes, when the caller read them already (the cache);
        ``source``: where to read it, when not at ``path`` (a Ray worker's current directory is
        not the caller's). Findings always name ``path``."""
        result = FileResult(path)
        try:
            with file_deadline(self.options.limits.timeout):  # --timeout is per file, every phase in it
                self._lint(path, result, data, source)
        except ShapeflowError as exc:
            result.diagnostics = [rejection_diagnostic(exc, path)] if exc.code or isinstance(exc, LimitExceededError) else []
            result.rejected = bool(result.diagnostics)
            result.error = None if result.rejected else str(exc)
            result.exit_code = exc.exit_code
            result.changed = False
            result.diff = ""
        except MemoryError:
            # an allocation failed (``ulimit -v``, or what the --max-memory checks did not foresee):
            # a limit this file hit, not a bug; the others are still linted
            limit = LimitExceededError("max-memory", "out of memory", Limits.FLAGS["max_memory"], file=path)
            result.diagnostics = [rejection_diagnostic(limit, path)]
            result.rejected = True
            result.error = None
            result.exit_code = limit.exit_code
            result.changed = False
            result.diff = ""
        except Exception as exc:  # a bug: report it for this file and go on with the others
            self._internal(result, exc)
        return result

    def _internal(self, result: FileResult, exc: BaseException) -> None:
        first = str(exc).splitlines()[0] if str(exc) else ""
        result.error = f"internal error: {type(exc).__name__}: {first}"
        result.details = traceback.format_exc()
        result.exit_code = EXIT_INTERNAL
        result.diagnostics = []

    def _lint(self, path: str, result: FileResult, data: bytes | None = None, source: str | None = None) -> None:
        opts = self.options
        deadline = suppress.Deadline(opts.limits.timeout, path)  # the phases after inference count too
        if data is None and source is None:
            loaded = load_model(path, opts.limits, repo_root=_root_for(path, opts.repo_root))
        else:
            if data is None:
                data = self.read(source or path)
            loaded = parse_model_file(path, data, opts.limits, source=source)
        result.external = loaded.external
        analysis = self._analyze(loaded)
        result.assumptions = analysis.inference.premises
        diags = self._finish(analysis.diagnostics)
        if opts.fix:
            # A finding suppressed in the model or listed in the baseline is not reported, so it is
            # not the user's to fix: its node is left alone.
            visible, anchors = suppress.apply(path, loaded.proto, loaded.raw, diags, self.codes, self.severity,
                                              markers=opts.markers, deadline=deadline)
            if opts.baseline is not None:
                visible = self._not_baselined(path, visible, anchors)
            shown = {(d.code, d.location.graph, d.location.node) for d in visible}
            blocked = frozenset((d.location.graph, d.location.node) for d in diags
                                if d.fixable and d.location.node is not None
                                and (d.code, d.location.graph, d.location.node) not in shown)
            try:
                diags = self._fix(loaded, analysis, diags, result, blocked)
            except LimitExceededError:
                raise
            except ShapeflowError as exc:  # what the engine requires of a model it rewrites (requires.py)
                where = f"node '{exc.node}': " if exc.node else ""
                result.error = f"fix refused: {where}{exc.message}"
                result.refused = True
        # in-model suppressions, SF008, graph order and baseline fingerprints (suppress.py)
        diags, result.anchors = suppress.apply(path, loaded.proto, loaded.raw, diags, self.codes, self.severity,
                                               markers=opts.markers, deadline=deadline)
        result.diagnostics = diags
        has_error = any(d.severity is Severity.ERROR for d in diags)
        code = EXIT_FINDINGS if has_error or (opts.diff and result.changed) else EXIT_CLEAN
        if opts.exit_zero and not (opts.settings_exit_zero and refusal_errors(diags)):
            code = EXIT_CLEAN
        result.exit_code = code
        if result.refused:
            result.exit_code = EXIT_REJECTED  # the engine refused to rewrite it: as optimize would

    def _reported(self, code: str) -> bool:
        """Whether findings of ``code`` are reported (so that --fix may act on them)."""
        if self.options.show_info or code in self.named:
            return True
        from ..rules import BY_CODE  # (every rule's code: the table's and the rewrites' own)

        return self.severity.get(code, BY_CODE[code].severity) is not Severity.INFO

    def _not_baselined(self, path: str, diags: list[Diagnostic], anchors: dict[tuple[str, str], str]) -> list[Diagnostic]:
        from .baseline import load_baseline, unlisted  # (baseline.py reads FileResult from here)

        if self._baseline is None:
            self._baseline = load_baseline(self.options.baseline)  # type: ignore[arg-type]
        return unlisted(path, diags, anchors, self._baseline, self.options.repo_root or find_repo_root())

    def read(self, path: str) -> bytes:
        """The file's bytes, read with every check of ``load_model``; raises ShapeflowError."""
        return read_model_file(path, self.options.limits, repo_root=_root_for(path, self.options.repo_root))

    def _analyze(self, loaded: LoadedModel) -> Analysis:
        return analyze(loaded, dims=self.dims, limits=self.options.limits, rules=self.rules,
                       assumptions=parse_assumptions(self.options.assume, "assume"), only_known_symbols=True,
                       progress=self.options.progress)

    def _finish(self, diags: list[Diagnostic]) -> list[Diagnostic]:
        if not self.severity:
            return list(diags)
        out = []
        for d in diags:
            level = self.severity.get(d.code)
            out.append(d if level is None or level is d.severity else d.with_severity(level))
        return out

    # -- --fix -----------------------------------------------------------------------------------
    def _fix(self, loaded: LoadedModel, analysis: Analysis, diags: list[Diagnostic],
             result: FileResult, blocked: frozenset[tuple[str, str]] = frozenset()) -> list[Diagnostic]:
        from ..passes import Pass, requires, run_passes  # here: plain lint never rewrites
        from ..rewrites import for_codes
        from .rewritediff import summarized_text  # (weights as digests: a diff never dumps them)

        opts = self.options
        # Only the fixes of reported findings: errors and warnings, info (SF2xx) when shown or
        # named. A hook that reports nothing changes nothing.
        reportable = {code for code in self.codes if self._reported(code)}
        fixable_before = sum(1 for d in diags if d.fixable and d.code in reportable)
        if not fixable_before:
            return diags
        # What the engine refuses to rewrite, it refuses here first, as optimize does before its
        # verdict on errors: the same inputs are refused (exit 2) whichever driver asks.
        requires(loaded, analysis.graph)
        found = {d.code for d in diags if d.fixable and (d.location.graph, d.location.node) not in blocked}
        repairs = for_codes(found & reportable, repairs=True)
        # Every reported rewrite, not only those with findings now: one rewrite can open the way
        # for another (a cancel, then a merge), and optimize would do that one too.
        rewrites = for_codes(reportable)
        before_text = summarized_text(loaded.proto) if opts.diff else ""
        graph: ModelGraph | None = analysis.graph
        inference: Inference | None = analysis.inference
        errors = self._model_errors(loaded, analysis)
        errors_before = list(errors)
        changed = False
        # Repairs first: they state what the author meant (Paddle's semantics); the rewrites then
        # simplify the meant model, not the broken one.
        if repairs:
            done = run_passes(loaded, [Pass("repairs", tuple(repairs), blocked)], graph=graph,
                              inference=inference, limits=opts.limits, explain=False)
            repaired = done.results[0][1]
            fixed_at = {(code, g, n) for code, g, n in repaired.roots}
            errors = [d for d in errors if (d.code, d.location.graph, d.location.node) not in fixed_at]
            result.notes.extend(f"not fixed: {why}" for why in repaired.skipped)
            if done.changed:
                changed = True
                graph = inference = None  # the engine indexes the repaired model itself
        if rewrites and (changed or any(d.fixable and d.code.startswith("SF2") and d.code in reportable
                                        and (d.location.graph, d.location.node) not in blocked for d in diags)):
            if errors:
                # optimize refuses a model with error-level findings; the findings stay reported,
                # and the repairs above still stand.
                result.notes.append(f"rewrites not applied: refusing to optimize: {len(errors)} error-level "
                                    f"finding{'' if len(errors) == 1 else 's'} (fix the model first)")
            else:
                if self.dims:
                    # Dims bound by --dim hold for this lint, not for every run of the model: the
                    # rewrites must be exact for all of them (optimize's inference binds none).
                    graph = inference = None
                done = run_passes(loaded, [Pass("rewrites", tuple(rewrites), blocked)], graph=graph,
                                  inference=inference, limits=opts.limits, explain=False)
                changed = changed or done.changed
        if not changed:
            return diags
        fixed = _reloaded(loaded, loaded.proto)
        # The one analysis of the result, with every error rule (selected or not) for the verdict.
        judged = self._reanalyze(fixed).diagnostics
        new = _new_errors(errors_before, judged)
        after = self._finish([d for d in judged if d.code in self.codes])
        if new:
            # The fix would break something that was fine: keep the model as it is, and say why.
            for d in new:
                where = f" at '{d.location.node}'" if d.location.node else ""
                result.notes.append(f"fix not applied: it would introduce {d.code} {d.name}{where}: {d.message}")
            return diags
        result.changed = True
        result.fixed = max(0, fixable_before - sum(1 for d in after if d.fixable and d.code in reportable))
        if opts.diff:
            result.diff = _ended("".join(difflib.unified_diff(
                before_text.splitlines(keepends=True), summarized_text(fixed.proto).splitlines(keepends=True),
                fromfile=f"{display_path(loaded.path)} (before)",
                tofile=f"{display_path(loaded.path)} (after --fix)")))
        else:
            save_model(fixed.proto, fixed.path, input_path=fixed.path, in_place=True)
        return after

    def _model_errors(self, loaded: LoadedModel, analysis: Analysis) -> list[Diagnostic]:
        """Every error of the model, selected or not: optimize would refuse the model for any of them."""
        reported: dict[str, list[Diagnostic]] = {code: [] for code in self.codes}
        for d in analysis.diagnostics:
            reported.setdefault(d.code, []).append(d)
        return list(error_findings(LintContext(loaded.path, analysis.graph, analysis.inference), reported))

    def _reanalyze(self, loaded: LoadedModel) -> Analysis:
        judges = [r for r in select_rules() if r.severity is Severity.ERROR and r.code not in self.codes]
        try:
            return analyze(loaded, dims=self.dims, limits=self.options.limits,
                           rules=sorted(self.rules + judges, key=lambda r: r.code))
        except LimitExceededError:
            raise  # a limit (the time limit above all) is hit by the input's size, not by a bug
        except ShapeflowError as exc:
            # The input passed; if the fixed model does not, the fix is wrong: a bug, never the
            # user's problem, and nothing is written.
            raise RuntimeError(f"--fix produced a model that fails its own checks: {exc}") from None


def refusal_errors(diags: Sequence[Diagnostic]) -> list[Diagnostic]:
    """The error-level findings whose code means onnxruntime refuses the model: what no file of the
    repository (config, baseline, marker, cache entry) may hide or pass (docs/threat-model.md)."""
    return [d for d in diags if d.severity is Severity.ERROR and d.code in REFUSAL_CODES]


def _new_errors(before: Sequence[Diagnostic], after: Sequence[Diagnostic]) -> list[Diagnostic]:
    """Error-level findings of ``after`` whose rule and place had none in ``before``."""
    had = {(d.code, d.location.graph, d.location.node, d.location.tensor)
           for d in before if d.severity is Severity.ERROR}
    return [d for d in after if d.severity is Severity.ERROR
            and (d.code, d.location.graph, d.location.node, d.location.tensor) not in had]


def _ended(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def _reloaded(loaded: LoadedModel, proto: onnx.ModelProto) -> LoadedModel:
    # raw must describe proto: writers copy raw bytes as they are when they see no change.
    return LoadedModel(path=loaded.path, proto=proto, raw=proto.SerializeToString(), directory=loaded.directory)


def _root_for(path: str, repo_root: str | None) -> str | None:
    """Contain a model in the repository only when it is named as a file of the repository (what
    pre-commit passes): then a symlink out of the repository is refused. A path the user names
    outside it is their explicit choice."""
    if repo_root is None:
        return None
    absolute = os.path.abspath(path)
    root = os.path.abspath(repo_root)
    return repo_root if absolute == root or absolute.startswith(root.rstrip(os.sep) + os.sep) else None


def find_repo_root(start: str | None = None) -> str | None:
    """The nearest directory holding ``.git``, from ``start`` (default: the current directory) up."""
    d = os.path.abspath(start or os.getcwd())
    while True:
        if os.path.exists(os.path.join(d, ".git")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


# -- many files ----------------------------------------------------------------------------------

def lint_file(path: str, options: LintOptions = LintOptions()) -> FileResult:
    return _Linter(options).run(path)


class Linter(_Linter):
    """Lints files with one set of options (the executors keep one per set of options)."""


def lint_paths(paths: Sequence[str], options: LintOptions = LintOptions(), jobs: int = 1) -> list[FileResult]:
    """Lint every path; the results are in the order of ``paths`` whatever ``jobs`` is."""
    if jobs <= 1 or len(paths) <= 1:
        linter = _Linter(options)
        return [linter.run(p) for p in paths]
    results: list[FileResult] = []
    with ProcessPoolExecutor(max_workers=min(jobs, len(paths))) as pool:
        # One task per file, options included: rebuilding the rule list is cheap, and no worker
        # keeps state between files.
        futures = [pool.submit(lint_file, p, options) for p in paths]
        for path, fut in zip(paths, futures):
            try:
                results.append(fut.result())
            except Exception as exc:  # the worker died (killed, out of memory): that file failed
                results.append(FileResult(path, exit_code=EXIT_INTERNAL,
                                          error=f"internal error: worker failed: {type(exc).__name__}: {exc}"))
    return results


def run_exit_code(results: Sequence[FileResult]) -> int:
    return max((r.exit_code for r in results), default=EXIT_CLEAN)
