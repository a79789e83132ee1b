"""``shapeflow lint``: check models before they ship (pre-commit, CI)."""

from __future__ import annotations

import json
import os

import click

from ..config import LintConfig, load_config, merge, parse_severities, split_selectors
from ..errors import display_path
from ..render.github import annotation, escape_data, escape_property, safe
from ..linter import FileResult, LintOptions, find_repo_root, lint_paths, run_exit_code
from ..render import lint_summary, lint_text
from ..render.json import lint_json
from ..render.sarif import relative_path, sarif_log
from .options import dim_option, limit_options, limits_from, parse_dims

FORMATS = ("text", "json", "sarif", "github")


@click.command("lint", epilog="""\b
Examples:
  shapeflow lint model.onnx
  shapeflow lint models/*.onnx --format sarif > shapeflow.sarif
  shapeflow lint model.onnx --select SF1 --ignore SF110 --severity SF105=error
  shapeflow lint model.onnx --fix --diff      (show the fix, write nothing)

\b
Settings can live in pyproject.toml (the command line wins):
  [tool.shapeflow]
  select = ["SF1"]
  ignore = ["SF110"]
  severity = { SF105 = "error" }
  exit-zero = false

\b
Exit codes: 0 no error-level finding, 1 error-level findings (or, with --diff, a file
would change), 2 a file rejected (SF001 unreadable, SF002 invalid graph, SF006 over a limit)
or a usage error, 3 internal error. With several files the highest code wins; --exit-zero
turns 1 into 0 but never hides a rejected file.""")
@click.argument("models", nargs=-1, type=click.Path(dir_okay=True, allow_dash=False))
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
              help="text like a compiler's; json (SPEC section 3); SARIF 2.1.0; GitHub Actions annotations.")
@click.option("--select", multiple=True, metavar="CODES",
              help="Only these rules: codes, prefixes (SF1) or names, comma-separated or repeated.")
@click.option("--ignore", multiple=True, metavar="CODES", help="Skip these rules (same syntax as --select).")
@click.option("--severity", "severities", multiple=True, metavar="CODE=LEVEL",
              help="Change a rule's severity: error, warning or info (repeatable).")
@click.option("--exit-zero/--no-exit-zero", default=None,
              help="Exit 0 even with error-level findings (rejected files still exit 2).")
@click.option("--fix", is_flag=True, help="Apply the fixes of fixable rules (SF104, SF201-SF203), in place.")
@click.option("--diff", is_flag=True, help="With --fix: print a diff of the model text instead of writing.")
@click.option("-j", "--jobs", type=click.IntRange(min=0), default=1, show_default=True,
              help="Lint files in this many processes (0: one per CPU). Output order stays the input order.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, exists=True),
              help="Read [tool.shapeflow] from this file instead of the nearest pyproject.toml.")
@click.option("--isolated", is_flag=True, help="Ignore pyproject.toml settings.")
@click.option("-q", "--quiet", is_flag=True, help="No summary line on stderr.")
@dim_option
@limit_options
def command(models: tuple[str, ...], fmt: str, select: tuple[str, ...], ignore: tuple[str, ...],
            severities: tuple[str, ...], exit_zero: bool | None, fix: bool, diff: bool, jobs: int,
            config_path: str | None, isolated: bool, quiet: bool, dims: tuple[str, ...], **kwargs: object) -> int:
    """Lint MODELS for axis and shape errors; quiet (no stdout) when they are fine.

    Findings go to stdout, one summary line to stderr. Every file is processed: one that cannot
    be read is reported (SF001) and the others are still checked.
    """
    limits = limits_from(kwargs)
    bindings = parse_dims(dims)
    fix = fix or diff
    base = LintConfig() if isolated else load_config(config_path)
    settings = merge(
        base,
        select=split_selectors(select, "--select") if select else None,
        ignore=split_selectors(ignore, "--ignore") if ignore else None,
        severity=parse_severities(list(severities)) if severities else {},
        exit_zero=exit_zero,
    )
    options = LintOptions(
        select=settings.select,
        ignore=settings.ignore,
        severity=tuple(settings.severity.items()),
        exit_zero=bool(settings.exit_zero),
        dims=tuple(bindings.items()),
        limits=limits,
        fix=fix,
        diff=diff,
        repo_root=find_repo_root(),
    )
    workers = jobs or os.cpu_count() or 1
    results = lint_paths(list(models), options, jobs=workers)
    debug = bool(click.get_current_context().find_root().params.get("debug")) or bool(os.environ.get("SHAPEFLOW_DEBUG"))
    _emit(results, fmt, diff=diff, debug=debug)
    if not quiet:
        diags = [d for r in results for d in r.diagnostics]
        click.echo(lint_summary(len(results), diags, rejected=sum(r.rejected for r in results),
                                failed=sum(1 for r in results if r.error), fixed=sum(r.fixed for r in results),
                                changed=sum(r.changed for r in results), fix=fix, diff=diff), err=True)
    code = run_exit_code(results)
    click.get_current_context().exit(code)
    return code


def _emit(results: list[FileResult], fmt: str, *, diff: bool, debug: bool) -> None:
    diags = [d for r in results for d in r.diagnostics]
    errors = [f"{r.path}: {r.error}" for r in results if r.error]
    for r in results:
        for note in r.notes:
            click.echo(display_path(f"{r.path}: {note}"), err=True)
        if r.error:
            hint = "" if r.details is None or debug else " (please report it; run with --debug for the traceback)"
            click.echo(display_path(f"{r.path}: {r.error}{hint}"), err=True)
            if debug and r.details:
                click.echo(r.details.rstrip(), err=True)
    if fmt == "json":
        click.echo(json.dumps(lint_json(len(results), diags), indent=2))
    elif fmt == "sarif":
        from .. import __version__

        click.echo(json.dumps(sarif_log(diags, version=__version__, successful=not any(r.details for r in results),
                                        notifications=errors), indent=2))
    elif fmt == "github":
        lines = [annotation(d) for d in diags]
        for r in results:
            if r.error:
                lines.append(safe(f"::error file={escape_property(relative_path(r.path))},title=shapeflow::"
                                  f"{escape_data(r.error)}"))
        if lines:
            click.echo("\n".join(lines))
    elif diff:
        text = "".join(r.diff if r.diff.endswith("\n") else r.diff + "\n" for r in results if r.diff)
        if text:
            click.echo(text, nl=False)
    else:
        if diags:
            click.echo(lint_text(diags))
