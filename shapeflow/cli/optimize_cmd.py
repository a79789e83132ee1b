"""``shapeflow optimize``: remove every Squeeze/Unsqueeze that the rewrite algebra allows."""

from __future__ import annotations

import json
import textwrap
import time
from typing import TYPE_CHECKING, Sequence

import click

from ..drivers.config import ConfigCache
from ..drivers.discover import model_files
from ..errors import EXIT_CLEAN, EXIT_FINDINGS, ShapeflowError, UsageError, display_path
from ..io import STDOUT, LoadedModel, check_output_path, load_model, save_model, write_to_stdout
from ..limits import Limits
from ..drivers.optimizer import OptimizeRefused, optimize_model
from ..passes import OptimizeResult
from ..rewrites import NAMES as RULE_NAMES
from ..rewrites import select as select_rewrites
from ..results import header
from ..render import format_diagnostic
from ..assume import parse_assumptions
from ..dims import Bound
from . import keep_until_exit
from .options import (
    assume_option, check_stdout_output, clear_progress, debug_option, limit_options, limits_from, parse_dims,
    progress_printer, show_status,
)

if TYPE_CHECKING:
    from ..drivers.rewritediff import Rewrite
    from ..drivers.verify import VerifyReport

COUNTS = ("nodes", "Squeeze", "Unsqueeze")


@click.command("optimize", epilog=f"""\b
Examples:
  shapeflow optimize model.onnx -o model.opt.onnx
  shapeflow optimize model.onnx -o - > model.opt.onnx   (the model on stdout, the report on stderr)
  shapeflow optimize model.onnx --in-place --verify
  shapeflow optimize model.onnx --check            (exit 1 if anything would change)
  shapeflow optimize model.onnx --dry-run -v       (list the rewrites, write nothing)
  shapeflow optimize model.onnx --dry-run --diff   (each rewrite before and after, with shapes)
  shapeflow optimize --check models/               (many files or directories: --check,
                                                    --in-place and --dry-run)

\b
Rules (--rules, comma-separated codes, prefixes or names, as lint --select; all by default):
{textwrap.fill(", ".join(RULE_NAMES), 96, initial_indent="  ", subsequent_indent="  ", break_on_hyphens=False)}
Nodes a rewrite leaves unread are always removed (SF205 dead-nodes).

\b
Exit codes: 0 done (or nothing to do), 1 error-level findings in the model (refused), --verify
found outputs that differ, or --check found something to rewrite; 2 rejected input, usage error,
or --verify could not verify (onnxruntime cannot load the original, or it runs at none of the
sizes tried: give sizes with --dim); 3 internal error. Nothing is written unless the exit code
is 0.""")
@click.argument("models", nargs=-1, required=True, type=click.Path(dir_okay=True, allow_dash=False))
@click.option("-o", "--output", type=click.Path(allow_dash=True),
              help="Write the optimized model here (required unless --in-place, --check or --dry-run); "
                   "'-' writes it to stdout (not a terminal) and the report to stderr.")
@click.option("--in-place", is_flag=True, help="Overwrite MODEL (atomically).")
@click.option("--force", is_flag=True, help="Overwrite OUTPUT if it exists.")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if any rewrite applies.")
@click.option("--dry-run", is_flag=True, help="Report what would change; write nothing.")
@click.option("--rules", "rule_names", metavar="CODES",
              help="Only these rewrites: codes (SF201), prefixes (SF2) or names, comma-separated.")
@click.option("--force-exclude", is_flag=True,
              help="Apply the config's exclude to files named on the command line too (pre-commit names every file).")
@click.option("--strict", is_flag=True,
              help="Cancel Squeeze→Unsqueeze only when the squeezed dims are statically 1.")
@click.option("--verify", is_flag=True,
              help="Run both models in onnxruntime (graph optimizations off) at two input sizes the model "
                   "accepts and require bit-identical outputs; outputs that differ exit 1, a model that "
                   "cannot be run exits 2; either way nothing is written.")
@click.option("--verify-value", type=click.IntRange(min=1), default=3, show_default=True,
              help="The larger value symbolic dims take in --verify (moved into their proven or assumed range).")
@click.option("--dim", "dims", multiple=True, metavar="NAME=VALUE",
              help="With --verify: run with this symbolic dim at VALUE (repeatable); rewrites never rely on it.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="json: one document; with several files, one compact document per line.")
@click.option("--diff", "show_diff", is_flag=True,
              help="Show each rewrite: the nodes before and after, with the shapes of their tensors.")
@click.option("-v", "--verbose", count=True, help="-v: every rewrite with node names; -vv: also why rules did not fire.")
@click.option("-q", "--quiet", is_flag=True, help="No summary line on stderr.")
@debug_option
@assume_option
@limit_options
def command(models: tuple[str, ...], output: str | None, in_place: bool, force: bool, check: bool, dry_run: bool,
            rule_names: str | None, strict: bool, verify: bool, verify_value: int, fmt: str,
            show_diff: bool, verbose: int, quiet: bool, assume: tuple[str, ...], dims: tuple[str, ...] = (),
            force_exclude: bool = False, **kwargs: object) -> int:
    """Rewrite the Squeeze/Unsqueeze chains of MODELS without changing what they compute.

    Cancels pairs, merges chains, folds constants and statically known shape values, turns
    Shape→Gather→Unsqueeze into one shape slice, and runs to a fixpoint. A model with
    nothing to rewrite is written byte-identical; running optimize on its output changes nothing.
    With several files (or directories, searched for *.onnx) every file is processed and the
    highest exit code wins.
    """
    limits = limits_from(kwargs)
    assumptions = parse_assumptions(assume)
    sizes = parse_dims(dims)
    if sizes and not verify:
        raise UsageError("--dim sets input sizes for --verify (optimize's rewrites hold for every size): "
                         "add --verify, or use --assume")
    writes = not (check or dry_run)
    if output is not None and in_place:
        raise UsageError("give either -o OUTPUT or --in-place, not both")
    if writes and output is None and not in_place:
        raise UsageError("-o OUTPUT is required (or --in-place, --check, --dry-run)")
    rules = [r.strip() for r in rule_names.split(",") if r.strip()] if rule_names is not None else None
    select_rewrites(rules)  # a usage error for an unknown one, before any file is read
    files = model_files(list(models), ConfigCache().for_path, force_exclude=force_exclude)
    if not files:  # --force-exclude left nothing: the files named are not the project's to check
        if not quiet:
            click.echo("0 files: every model file named is excluded (--force-exclude)", err=True)
        return _exit(EXIT_CLEAN)
    if output is not None and len(files) > 1:
        raise UsageError("-o OUTPUT takes one model; use --in-place, --check or --dry-run for several")
    if len(files) == 1:  # one file: its errors are the command's (exit code and message as they were)
        return _exit(_one(files[0], output, in_place, force, check, dry_run, rules, strict, verify, verify_value,
                          fmt, verbose, quiet, limits, writes, show_diff, assumptions, sizes))
    # several files in JSON: one document per line (JSON Lines), so the stream stays parseable
    fmt = "jsonl" if fmt == "json" else fmt
    code = EXIT_CLEAN
    for model in files:
        try:
            one = _one(model, output, in_place, force, check, dry_run, rules, strict, verify, verify_value,
                       fmt, verbose, quiet, limits, writes, show_diff, assumptions, sizes)
        except ShapeflowError as exc:  # this file is rejected; the others are still processed
            click.echo(str(exc), err=True)
            one = exc.exit_code
        code = max(code, one)
    return _exit(code)


def _verify_ranges(result: OptimizeResult, ranges: dict[str, Bound]) -> dict[str, Bound]:
    """The range of every symbol the optimized model is promised to match in (an alias of
    ``--assume a==b`` shares its representative's), for ``--verify``'s bindings."""
    out = dict(ranges)
    for name, rep in result.aliases.items():
        out[name] = out.get(rep, (None, None))
    return out


def _one(model: str, output: str | None, in_place: bool, force: bool, check: bool, dry_run: bool,
         rules: list[str] | None, strict: bool, verify: bool, verify_value: int, fmt: str, verbose: int,
         quiet: bool, limits: Limits, writes: bool, show_diff: bool = False,
         assumptions: dict[str, Bound] | None = None, sizes: dict[str, int] | None = None) -> int:
    """Optimize one file; its exit code."""
    keep_until_exit()  # (the previous file's objects are not needed any more)
    to_stdout = writes and output == STDOUT
    if to_stdout:
        check_stdout_output(model, in_place)
    elif writes and output is not None:
        check_output_path(output, input_path=model, force=force)
    started = time.perf_counter()
    loaded = load_model(model, limits)
    ranges: dict[str, Bound] = {}
    try:
        result = optimize_model(loaded, rules=rules, strict=strict, limits=limits,
                                progress=progress_printer("optimizing"), explain=verbose > 0 or show_diff,
                                assumptions=assumptions, ranges=ranges)
    except OptimizeRefused as exc:
        clear_progress()
        _refused(model, exc, fmt)  # (fmt "jsonl": one compact JSON document per line)
        return EXIT_FINDINGS
    clear_progress()

    report: VerifyReport | None = None
    if verify and result.changed:
        report = _verify(model, loaded, result, rules, strict, limits, verify_value, assumptions,
                         _verify_ranges(result, ranges), sizes)
    verified: bool | None = None if report is None else True if report.ok else False if report.status == "differs" else None
    if verify and report is None:
        verified = True  # nothing changed: nothing to compare

    rewrites = None
    if show_diff:  # (before the input's bytes are freed for the write)
        from ..drivers.rewritediff import optimize_diff

        rewrites = optimize_diff(loaded.raw, result.model, model, result.log, limits) if result.changed else []
    target = model if in_place else output
    written = False
    if result.changed:
        # the input's bytes are written only when nothing changed (--diff has read them above):
        # free them before serializing
        loaded.raw = b""
    if writes and (report is None or report.ok):
        show_status(f"writing {display_path(str(target))}")
        if to_stdout:
            write_to_stdout(result.model if result.changed else loaded.raw, input_path=model,
                            max_memory=limits.max_memory)
            written = True
        elif result.changed:
            save_model(result.model, target, input_path=model, in_place=in_place, force=force,  # type: ignore[arg-type]
                       max_memory=limits.max_memory)
            written = True
        elif not in_place:
            save_model(loaded.raw, target, input_path=model, force=force)  # type: ignore[arg-type]
            written = True
        clear_progress()

    _report(model, target if writes else None, result, fmt, verbose, verified, report, check, dry_run,
            rewrites, err=to_stdout, verify=verify)
    keep_until_exit(loaded, result, report)
    elapsed = time.perf_counter() - started
    if fmt == "text" and not quiet:
        b, a = result.before, result.after
        sq_b, sq_a = b["Squeeze"] + b["Unsqueeze"], a["Squeeze"] + a["Unsqueeze"]
        state = "written" if written else ("would change" if result.changed else "unchanged")
        click.echo(f"{display_path(model)}: Squeeze+Unsqueeze {sq_b:,} → {sq_a:,}, nodes {b['nodes']:,} → "
                   f"{a['nodes']:,} in {elapsed:.2f} s ({state})", err=True)
    if report is not None and not report.ok:
        return report.exit_code  # 1: outputs differ; 2: could not verify
    if check and result.changed:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _verify(model: str, loaded: LoadedModel, result: OptimizeResult, rules: list[str] | None, strict: bool,
            limits: Limits, verify_value: int, assumptions: dict[str, Bound] | None, ranges: dict[str, Bound],
            sizes: dict[str, int] | None) -> VerifyReport:
    """``--verify``: compare the models; on a difference, find the rewrite rule responsible by
    optimizing the input again with fewer rules (``verify.culprit``)."""
    from ..io import load_model_bytes
    from ..drivers.verify import DIFFERS, culprit, verify_models

    show_status("verifying in onnxruntime")
    report = verify_models(loaded.raw, result.model, directory=loaded.directory, values=(1, verify_value),
                           ranges=ranges, fixed=sizes, aliases=result.aliases)
    if report.status == DIFFERS and report.failing is not None:
        fired = [name for name in RULE_NAMES if result.rewrites.get(name)]
        original = loaded.raw

        def rerun(chosen: Sequence[str]) -> bytes | None:
            again = optimize_model(load_model_bytes(original, model, limits), rules=list(chosen), strict=strict,
                                   limits=limits, explain=False, assumptions=assumptions)
            return again.model.SerializeToString() if again.changed else None

        show_status("verifying: looking for the rewrite responsible")
        try:
            report.rewrite = culprit(original, fired, rerun, report.failing, directory=loaded.directory)
        except ShapeflowError:
            pass  # (a subset of the rules is refused or fails: the difference itself stands)
    clear_progress()
    return report


def _exit(code: int) -> int:
    click.get_current_context().exit(code)
    return code  # pragma: no cover - exit() raises


def _refused(model: str, exc: OptimizeRefused, fmt: str) -> None:
    if fmt in ("json", "jsonl"):
        click.echo(json.dumps({**header(), "model": model, "output": None, "refused": exc.message,
                               "diagnostics": [d.to_json() for d in exc.diagnostics]}, indent=2 if fmt == "json" else None))
        return
    for d in exc.diagnostics:
        click.echo(format_diagnostic(d), err=True)
    click.echo(str(exc), err=True)


def _report(model: str, output: str | None, result: OptimizeResult, fmt: str, verbose: int,
            verified: bool | None, report: "VerifyReport | None", check: bool, dry_run: bool,
            rewrites: "list[Rewrite] | None" = None, err: bool = False, verify: bool = False) -> None:
    if fmt in ("json", "jsonl"):
        doc: dict[str, object] = {
            **header(),
            "model": model,
            "output": output,
            "before": {k: result.before.get(k, 0) for k in COUNTS},
            "after": {k: result.after.get(k, 0) for k in COUNTS},
            "rewrites": dict(result.rewrites),
            "verified": verified,
        }
        if report is not None:
            doc["verify"] = report.to_json()
        if result.premises:  # only an output that used assumptions carries them (SPEC.md section 6)
            doc["assumptions"] = list(result.premises)
        if verbose:
            doc["log"] = list(result.log)
        if verbose > 1:
            doc["skipped"] = list(result.skipped)
        if rewrites is not None:
            doc["diff"] = [r.to_json() for r in rewrites]
        click.echo(json.dumps(doc, indent=2 if fmt == "json" else None), err=err)
        return
    # the real names are in the JSON document above; the text is for a terminal
    lines = [f"{display_path(model)} -> {display_path(output)}" if output else display_path(model)]
    lines.append(f"  {'':<10} {'before':>10} {'after':>10}")
    for k in COUNTS:
        lines.append(f"  {k:<10} {result.before.get(k, 0):>10,} {result.after.get(k, 0):>10,}")
    if result.rewrites:
        fired = ", ".join(f"{name} {n:,}" for name, n in result.rewrites.items())
        lines.append(f"  rewrites: {fired}")
    else:
        lines.append("  nothing to rewrite" + ("" if check or dry_run else ": written byte-identical"))
    if result.premises:
        lines.append(f"  assuming {', '.join(result.premises)}: rewrites may rely on it")
    if result.notes:
        lines.append(f"  {len(result.notes):,} rewrite(s) remove a run-time failure (a squeezed dim not known "
                     "to be 1, a Reshape target element not known to fit): the model no longer fails there "
                     "(--strict keeps them)")
    if report is not None:
        if report.ok:
            lines.append(f"  verified: {report.summary()}")
        elif report.status == "differs":
            lines.append(f"  verify FAILED: outputs differ: {report.summary()}; nothing written")
        else:
            lines.append(f"  could not verify: {report.summary()}; nothing written")
    elif verify:
        lines.append("  verified: nothing changed")
    if check and result.changed:
        lines.append("  --check: the model would change")
    if verbose and result.log:
        lines.append("rewrites:")
        lines.extend(f"  {line}" for line in result.log)
    if verbose > 1 and result.skipped:
        lines.append("not fired:")
        lines.extend(f"  {line}" for line in result.skipped)
    if rewrites:
        from ..drivers.rewritediff import diff_text

        lines.append(diff_text(rewrites))
    click.echo("\n".join(lines), err=err)
