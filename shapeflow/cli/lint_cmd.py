"""``shapeflow lint``: check models before they ship (pre-commit, CI)."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import click

from ..drivers.config import CommandLine, ConfigCache, parse_severities, resolve, settings_text, split_selectors
from ..errors import UsageError, display_path
from ..render.github import annotation, escape_data, escape_property, safe
from ..drivers.linter import FileResult, LintOptions, find_repo_root, run_exit_code
from ..render import lint_summary, lint_text
from ..render.json import lint_json
from ..render.report import concise_text, statistics_text
from ..rules import REJECTION_RULES, resolve_selector
from ..render.sarif import relative_path, sarif_log, truncation_note
from ..assume import parse_assumptions
from .options import assume_option, complete_codes, debug_option, dim_option, file_progress, limit_options, limits_from, parse_dims

if TYPE_CHECKING:
    from ..drivers.workspace import RunResult

FORMATS = ("text", "concise", "json", "jsonl", "sarif", "github")
# codes reported when a file cannot be processed at all: no setting can turn them off
UNIGNORABLE = frozenset(r.code for r in REJECTION_RULES)


@click.command("lint", epilog="""\b
Examples:
  shapeflow lint .                              (every *.onnx below, .gitignore honoured)
  shapeflow lint models/*.onnx --format sarif > shapeflow.sarif
  shapeflow lint model.onnx --select SF1 --ignore SF110 --severity SF105=error
  shapeflow lint model.onnx --fix --diff        (show the fix, write nothing)
  shapeflow lint . --write-baseline shapeflow-baseline.json   (then: --baseline FILE)
  shapeflow lint model.onnx --add-ignore        (mark today's findings in the model)
  find /models -name '*.onnx' | shapeflow lint --files-from - --format jsonl
  shapeflow lint --files-from zoo.txt --executor ray --ray-address auto   (README "Fleets")

\b
Settings live in the nearest pyproject.toml ([tool.shapeflow]) or shapeflow.toml to each
model; a code named on the command line is reported even if the file ignores it:
  [tool.shapeflow]
  select = ["SF1"]
  ignore = ["SF110"]
  per-file-ignores = { "legacy/**" = ["SF105"] }
  severity = { SF105 = "error" }

\b
Exit codes: 0 no error-level finding, 1 error-level findings (or, with --diff, a file
would change), 2 a file rejected (SF001 unreadable, SF002 invalid graph, SF006 over a limit),
no model file found, or a usage error, 3 internal error. With several files the highest code
wins; --exit-zero turns 1 into 0 but never hides a rejected file.""")
@click.argument("models", nargs=-1, type=click.Path(dir_okay=True, allow_dash=False))
@click.option("--files-from", "files_from", multiple=True, type=click.Path(dir_okay=False, allow_dash=True),
              metavar="FILE", help="Also lint the paths listed in FILE, one a line ('-': standard input).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
              help="text like a compiler's; concise: one line a finding; json; jsonl: one JSON object per "
                   "file, written as soon as it is done; SARIF 2.1.0; GitHub Actions annotations. "
                   "text and concise show errors and warnings (see --show-info).")
@click.option("--unordered", is_flag=True,
              help="--format jsonl: write each file's object when it completes, not in input order.")
@click.option("--select", multiple=True, metavar="CODES", shell_complete=complete_codes,
              help="Only these rules: codes, prefixes (SF1) or names, comma-separated or repeated.")
@click.option("--extend-select", multiple=True, metavar="CODES", shell_complete=complete_codes, help="Add these rules to the selection.")
@click.option("--ignore", multiple=True, metavar="CODES", shell_complete=complete_codes, help="Skip these rules (same syntax as --select).")
@click.option("--extend-ignore", multiple=True, metavar="CODES", shell_complete=complete_codes, help="Skip these rules too.")
@click.option("--severity", "severities", multiple=True, metavar="CODE=LEVEL",
              help="Change a rule's severity: error, warning or info (repeatable).")
@click.option("--exit-zero/--no-exit-zero", default=None,
              help="Exit 0 even with error-level findings (rejected files still exit 2).")
@click.option("--show-info", is_flag=True,
              help="Report info findings too (every format; --fix then applies their rewrites). Without it, "
                   "info findings are counted, and reported only for codes --select or the config names.")
@click.option("--exclude", "exclude", multiple=True, metavar="GLOB",
              help="Skip the model files this glob covers (relative to the current directory; repeatable). "
                   "Unlike a settings file's exclude, nothing of them is checked.")
@click.option("--force-exclude", is_flag=True,
              help="Apply exclusions to files named on the command line too (pre-commit names every file).")
@click.option("--statistics", is_flag=True, help="Print the number of findings per code instead of the findings.")
@click.option("--fix", is_flag=True,
              help="Apply, in place, the fixes of the findings reported: SF104 by default; the SF2xx rewrites "
                   "with --show-info or when selected by code or prefix (--select SF2).")
@click.option("--diff", is_flag=True, help="With --fix: print a diff of the model text instead of writing.")
@click.option("--add-ignore", is_flag=True,
              help="Write a shapeflow.ignore marker into each model for its current errors and warnings "
                   "(in place, atomically; nothing else changes).")
@click.option("--baseline", "baseline_path", type=click.Path(dir_okay=False), metavar="FILE",
              help="Report only findings not recorded in FILE (see --write-baseline).")
@click.option("--write-baseline", type=click.Path(dir_okay=False), metavar="FILE",
              help="Record every current error and warning in FILE and exit 0 (unless a file is rejected).")
@click.option("-j", "--jobs", type=click.IntRange(min=0), default=1, show_default=True,
              help="Lint files in this many processes (0: one per CPU). Output order stays the input order.")
@click.option("--executor", type=click.Choice(("local", "ray")), default="local", show_default=True,
              help="Where the per-file work runs: here (with -j processes) or as Ray tasks "
                   "(pip install -e '.[ray]').")
@click.option("--ray-address", metavar="ADDRESS", help="With --executor ray: the cluster to join (default: "
              "RAY_ADDRESS, or a new local cluster).")
@click.option("--task-timeout", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
              help="With --executor ray: cancel a file's task after this long and report the file "
                   "(default: twice --timeout plus 60 s).")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the cache.")
@click.option("--cache-dir", type=click.Path(file_okay=False), metavar="DIR",
              help="The cache folder (default: .shapeflow_cache next to the nearest config file, "
                   "or in the current directory). Entries count only when this user's shapeflow "
                   "wrote them (README, Safety). 'shapeflow clean' removes them.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, exists=True),
              help="Read the settings from this file (it must have a [tool.shapeflow] table).")
@click.option("--isolated", is_flag=True, help="Ignore every config file.")
@click.option("--show-settings", is_flag=True, help="Print the resolved settings and the file they came from, and exit.")
@click.option("-q", "--quiet", is_flag=True, help="No summary line on stderr.")
@debug_option
@dim_option
@assume_option
@limit_options
def command(models: tuple[str, ...], fmt: str, select: tuple[str, ...], extend_select: tuple[str, ...],
            ignore: tuple[str, ...], extend_ignore: tuple[str, ...], severities: tuple[str, ...],
            exit_zero: bool | None, show_info: bool, statistics: bool, fix: bool, diff: bool, add_ignore: bool,
            baseline_path: str | None, write_baseline: str | None, jobs: int, config_path: str | None,
            isolated: bool, show_settings: bool, quiet: bool, dims: tuple[str, ...], assume: tuple[str, ...],
            files_from: tuple[str, ...] = (), unordered: bool = False, executor: str = "local",
            ray_address: str | None = None, task_timeout: float | None = None, no_cache: bool = False,
            cache_dir: str | None = None, force_exclude: bool = False, exclude: tuple[str, ...] = (),
            **kwargs: object) -> int:
    """Lint MODELS (files or directories) for axis and shape errors; quiet (no stdout) when they are fine.

    Findings go to stdout, one summary line to stderr. Every file is processed: one that cannot
    be read is reported (SF001) and the others are still checked.
    """
    from ..drivers import workspace

    limits = limits_from(kwargs)
    bindings = parse_dims(dims)
    fix = fix or diff
    if add_ignore and (fix or write_baseline):
        raise UsageError("--add-ignore cannot be combined with --fix, --diff or --write-baseline")
    _check_ignorable(ignore, extend_ignore)
    cli = CommandLine(
        select=split_selectors(select, "--select") if select else None,
        extend_select=split_selectors(extend_select, "--extend-select"),
        ignore=split_selectors(ignore, "--ignore"),
        extend_ignore=split_selectors(extend_ignore, "--extend-ignore"),
        severity=parse_severities(list(severities)) if severities else {},
        exit_zero=exit_zero,
        baseline=os.path.abspath(baseline_path) if baseline_path else None,
        assume=assume,
    )
    if show_settings:
        _show_settings(models, cli, config_path, isolated)
        click.get_current_context().exit(0)
        return 0
    if files_from:
        models = models + tuple(_listed(files_from))
    _check_usage(models, fmt, unordered, executor, ray_address, task_timeout)
    options = LintOptions(dims=tuple(bindings.items()), limits=limits, fix=fix, diff=diff, repo_root=find_repo_root(),
                          show_info=show_info)
    workers = jobs or os.cpu_count() or 1
    shown_progress = None if quiet or executor == "ray" else file_progress("linting")
    from ..drivers.cache import cache_for

    store = None if no_cache or fix else cache_for(cache_dir, config_path, isolated)
    stream = _JsonLines(unordered, show_info) if fmt == "jsonl" and not (write_baseline or add_ignore or statistics) else None
    run = workspace.run(list(models), cli, options, config=config_path, isolated=isolated, jobs=workers,
                        use_baseline=not write_baseline, progress=shown_progress.file if shown_progress else None,
                        phase_progress=shown_progress.phase if shown_progress else None, cache=store,
                        executor=executor, ray_address=ray_address, task_timeout=task_timeout,
                        on_result=stream.add if stream is not None else None, force_exclude=force_exclude,
                        cli_exclude=exclude)
    results = run.results
    if not results:  # --force-exclude left nothing: the files named are not the project's to check
        if not quiet:
            click.echo("0 files: every model file named is excluded (--force-exclude)", err=True)
        click.get_current_context().exit(0)
        return 0
    if assume:
        _check_assumed(assume, results)
    debug = _debug()
    if write_baseline:
        read = [s.source for _, s, _ in run.settings if s.source] + ([config_path] if config_path else []) \
            + [f for f in files_from if f != "-"]
        code = _write_baseline(write_baseline, results, run.root, read, quiet=quiet, debug=debug)
        click.get_current_context().exit(code)
        return code
    if add_ignore:
        code = _add_ignore(results, limits, show_info=show_info, quiet=quiet, debug=debug)
        click.get_current_context().exit(code)
        return code
    _emit(results, fmt, diff=diff, debug=debug, show_info=show_info, statistics=statistics, root=run.root,
          quiet=quiet)
    if not quiet:
        click.echo(_summary(results, run, fix=fix, diff=diff, show_info=show_info, statistics=statistics), err=True)
    code = run_exit_code(results)
    click.get_current_context().exit(code)
    return code


def _check_usage(models: tuple[str, ...], fmt: str, unordered: bool, executor: str, ray_address: str | None,
                 task_timeout: float | None) -> None:
    """Usage errors of options that need others, and of a run with no model named."""
    if executor != "ray" and (ray_address or task_timeout is not None):
        raise UsageError(f"{'--ray-address' if ray_address else '--task-timeout'} needs --executor ray")
    if unordered and fmt != "jsonl":
        raise UsageError("--unordered needs --format jsonl")
    if not models:
        raise UsageError("no model files given (name .onnx files or directories)")


def _check_ignorable(ignore: tuple[str, ...], extend_ignore: tuple[str, ...]) -> None:
    """A usage error for ``--ignore`` of what cannot be ignored (a file that could not be linted)."""
    for key, values in (("--ignore", ignore), ("--extend-ignore", extend_ignore)):
        for item in split_selectors(values, key):
            codes = set(resolve_selector(item))
            if codes and codes <= UNIGNORABLE:
                raise UsageError(f"{key} {item}: cannot be ignored: {', '.join(sorted(codes))} reports a file "
                                 "that could not be linted at all, and hiding it would pass it unchecked")


def _check_assumed(assume: tuple[str, ...], results: list[FileResult]) -> None:
    """An --assume that names a symbol of no model linted is a typo, not a no-op."""
    used = {name for r in results for name in parse_assumptions(r.assumptions).names()}
    for name in sorted(parse_assumptions(assume).names()):
        if name not in used and any(not r.rejected for r in results):
            raise UsageError(f"--assume names '{name}', which is a symbol of no model linted")


def _show_settings(models: tuple[str, ...], cli: CommandLine, config_path: str | None, isolated: bool) -> None:
    """``--show-settings``: the resolved settings of each model (or folder) and where they came from."""
    cache = ConfigCache(config_path, isolated)
    blocks = []
    for arg in models or (".",):
        probe = os.path.join(arg, "model.onnx") if os.path.isdir(arg) else arg
        settings = cache.for_path(probe)
        blocks.append(settings_text(settings, resolve(settings, cli, probe), arg))
    click.echo("\n\n".join(blocks))


def _write_baseline(path: str, results: list[FileResult], root: str | None, inputs: list[str], *,
                    quiet: bool, debug: bool) -> int:
    """``--write-baseline``: record every current finding (and the settings files read, ``inputs``);
    the exit code (2 when a file was rejected)."""
    from .._version import __version__
    from ..drivers.baseline import write_baseline as write

    n = write(path, results, root, __version__, inputs=inputs)
    _notes(results, debug)
    if not quiet:
        click.echo(f"{display_path(path)}: recorded {n:,} finding{'s' if n != 1 else ''} "
                   f"of {len(results):,} file{'s' if len(results) != 1 else ''}", err=True)
    return max((r.exit_code for r in results if r.exit_code >= 2), default=0)


def _summary(results: list[FileResult], run: "RunResult", *, fix: bool, diff: bool, show_info: bool,
             statistics: bool) -> str:
    """The summary line on stderr: every finding counted, with how many are not reported (info
    not shown or named) and how many of the reported ones --fix would act on; the files a settings
    file excluded apart."""
    from ..drivers import workspace

    diags = [d for r in results for d in r.diagnostics]
    reported = [d for r in results for d in r.reported(show_info)]
    line = lint_summary(len(results) - len(run.excluded), diags,
                        rejected=sum(r.rejected for r in results if r.excluded_by is None),
                        failed=sum(1 for r in results if r.error), fixed=sum(r.fixed for r in results),
                        changed=sum(r.changed for r in results), fix=fix, diff=diff,
                        info_hidden=0 if statistics else len(diags) - len(reported),
                        fixable=sum(1 for d in reported if d.fixable))
    if run.baselined:
        line += f"; {run.baselined:,} in the baseline"
    if run.excluded:
        # a settings file's exclude is the repository's word: it cannot pass a model onnxruntime refuses
        n = len(run.excluded)
        out_of = sum(1 for r in results if r.excluded_by is not None and r.rejected)
        line += (f"; {n:,} more file{'s' if n != 1 else ''}{f' ({out_of:,} rejected)' if out_of else ''}, "
                 f"excluded by {', '.join(sorted({workspace.shown_source(s) for s in run.excluded.values()}))}, "
                 "checked only for what onnxruntime refuses")
    assumed = _assumptions(results)
    if assumed:
        line += f"; assuming {', '.join(assumed)}"
    return line


def _assumptions(results: list[FileResult]) -> list[str]:
    """The --assume ranges that were in force for any of the files."""
    return sorted({a for r in results for a in r.assumptions})


def _debug() -> bool:
    ctx = click.get_current_context()
    return (bool(ctx.params.get("debug")) or bool(ctx.find_root().params.get("debug"))
            or bool(os.environ.get("SHAPEFLOW_DEBUG")))


def _add_ignore(results: list[FileResult], limits: object, *, show_info: bool, quiet: bool, debug: bool) -> int:
    """``--add-ignore``: markers for each file's current findings, written in place."""
    from ..io import load_model, save_model
    from ..drivers.suppress import UNSUPPRESSIBLE, UNUSED_CODE, add_markers

    _notes(results, debug)
    written = files = unmarked = 0
    for r in results:
        if r.rejected or r.error:
            continue
        # a marker cannot hide what onnxruntime refuses (suppress.py): writing one would change nothing
        unmarked += sum(1 for d in r.diagnostics if d.code in UNSUPPRESSIBLE)
        wanted = [d for d in r.reported(show_info) if d.code != UNUSED_CODE and d.code not in UNSUPPRESSIBLE]
        if not wanted:
            continue
        loaded = load_model(r.path, limits)  # type: ignore[arg-type]
        n = add_markers(loaded.proto, wanted)
        if n:
            save_model(loaded.proto, r.path, input_path=r.path, in_place=True)
            written += n
            files += 1
    if not quiet:
        left = (f"; {unmarked:,} finding{'s' if unmarked != 1 else ''} onnxruntime refuses left unmarked "
                "(a marker cannot hide them)") if unmarked else ""
        click.echo(f"added {written:,} suppression marker{'s' if written != 1 else ''} "
                   f"to {files:,} file{'s' if files != 1 else ''}{left}", err=True)
    return max((r.exit_code for r in results if r.exit_code >= 2), default=0)


def _notes(results: list[FileResult], debug: bool) -> None:
    for r in results:
        for note in r.notes:
            click.echo(display_path(f"{r.path}: {note}"), err=True)
        if r.error:
            hint = "" if r.details is None or debug else " (please report it; run with --debug for the traceback)"
            click.echo(display_path(f"{r.path}: {r.error}{hint}"), err=True)
            if debug and r.details:
                click.echo(r.details.rstrip(), err=True)


def _emit(results: list[FileResult], fmt: str, *, diff: bool, debug: bool, show_info: bool = False,
          statistics: bool = False, root: str | None = None, quiet: bool = False) -> None:
    every = [d for r in results for d in r.diagnostics]
    # what every format reports: errors and warnings, info when shown or named (FileResult.reported)
    diags = [d for r in results for d in r.reported(show_info)]
    errors = [f"{r.path}: {r.error}" for r in results if r.error]
    _notes(results, debug)
    if statistics:
        if every:
            click.echo(statistics_text(every))
    elif fmt == "json":
        doc = lint_json(len(results), diags, every)
        assumed = _assumptions(results)
        if assumed:  # only an output that used assumptions carries them (SPEC.md section 6)
            doc["assumptions"] = assumed  # type: ignore[typeddict-unknown-key]
        click.echo(json.dumps(doc, indent=2))
    elif fmt == "jsonl":
        pass  # written file by file as they completed (_JsonLines)
    elif fmt == "sarif":
        from .._version import __version__

        log = sarif_log(diags, version=__version__, successful=not any(r.details for r in results),
                        notifications=errors, root=root)
        click.echo(json.dumps(log, indent=2))
        kept = len(log["runs"][0]["results"])  # type: ignore[index]
        if kept < len(diags) and not quiet:
            click.echo(truncation_note(kept, len(diags)), err=True)
    elif fmt == "github":
        lines = [annotation(d, root) for d in diags]
        for r in results:
            if r.error:
                lines.append(safe(f"::error file={escape_property(relative_path(r.path, root))},title=shapeflow::"
                                  f"{escape_data(r.error)}"))
        if lines:
            click.echo("\n".join(lines))
    elif diff:
        text = "".join(r.diff if r.diff.endswith("\n") else r.diff + "\n" for r in results if r.diff)
        if text:
            click.echo(text, nl=False)
    elif diags:
        click.echo(concise_text(diags) if fmt == "concise" else lint_text(diags))


def _listed(sources: tuple[str, ...]) -> list[str]:
    """The paths ``--files-from`` files list, one a line; empty lines are skipped."""
    import sys

    out: list[str] = []
    for source in sources:
        try:
            if source == "-":
                text = sys.stdin.buffer.read()
            else:
                with open(source, "rb") as f:
                    text = f.read()
        except OSError as exc:
            raise UsageError(f"--files-from {display_path(source)}: {exc.strerror or exc}") from None
        # split at \n only: str.splitlines also splits at form feeds, U+2028... which a path may hold
        for number, line in enumerate(text.decode("utf-8", "surrogateescape").split("\n"), 1):
            line = line.removesuffix("\r")
            if "\0" in line:  # no path holds one; the system calls would refuse it (exit 3 before)
                raise UsageError(f"--files-from {display_path(source)}: line {number} holds a NUL byte, "
                                 "which no path can (a list from find -print0 needs tr '\\0' '\\n')")
            if line.strip():
                out.append(line)
    return out


def jsonl_line(r: FileResult, show_info: bool = False) -> str:
    """A file's line of ``--format jsonl``: its ``FileResult.to_json()`` object (README, "Fleets")
    with the findings it reports (``FileResult.reported``), plus its ``assumptions`` when any were
    in force, on one line."""
    doc: dict[str, object] = dict(r.to_json())
    doc["diagnostics"] = [d.to_json() for d in r.reported(show_info)]
    if r.assumptions:
        doc["assumptions"] = list(r.assumptions)
    return json.dumps(doc)


class _JsonLines:
    """``--format jsonl``: each file's line on stdout as soon as it may go: in input order (a
    result that completes early waits for those before it), or with ``unordered`` at once."""

    def __init__(self, unordered: bool, show_info: bool = False) -> None:
        self.unordered = unordered
        self.show_info = show_info
        self.waiting: dict[int, FileResult] = {}
        self.next = 0

    def add(self, k: int, r: FileResult) -> None:
        import sys

        if self.unordered:
            click.echo(jsonl_line(r, self.show_info))
        else:
            self.waiting[k] = r
            while self.next in self.waiting:
                click.echo(jsonl_line(self.waiting.pop(self.next), self.show_info))
                self.next += 1
        sys.stdout.flush()
