"""``shapeflow infer``: the shapes, symbolic where they are symbolic, and the diagnostics."""

from __future__ import annotations

import time
from typing import Sequence

import click

from ..drivers.analysis import Analysis, gc_paused, premise_hints
from ..drivers.annotate import AnnotateResult, annotate, drop_fixed
from ..errors import EXIT_CLEAN, EXIT_FINDINGS, UsageError, display_path
from ..io import STDOUT, check_output_path, load_model, refuse_unsafe_external_data, save_model, write_to_stdout
from ..render.pictures import DEFAULT_DEPTH, DEFAULT_MAX_DRAW, FORMATS, PictureOptions, picture
from ..render import count_by_severity, infer_text, summary_line
from ..render.json import infer_json_chunks
from ..drivers.infer_settings import infer_with_settings, unknown_symbols
from . import keep_until_exit
from .options import (
    assume_option, check_stdout_output, clear_progress, debug_option, dim_option, limit_options, limits_from,
    parse_dims, progress_printer,
)


def split_names(text: str) -> list[str]:
    """``--around`` items: split at commas; ``\\,`` is a comma of a name and ``\\\\`` a backslash
    (a node may be called ``a,b``). Any other backslash is kept as it is."""
    out: list[str] = []
    current: list[str] = []
    k = 0
    while k < len(text):
        c = text[k]
        if c == "\\" and k + 1 < len(text) and text[k + 1] in ",\\":
            current.append(text[k + 1])
            k += 2
            continue
        if c == ",":
            out.append("".join(current))
            current = []
        else:
            current.append(c)
        k += 1
    out.append("".join(current))
    return out


@click.command(epilog="""\b
Examples:
  shapeflow infer model.onnx
  shapeflow infer model.onnx --format json --dim batch=1
  shapeflow infer model.onnx -o model.shapes.onnx
  shapeflow infer model.onnx --format dot --findings | dot -Tsvg > findings.svg
  shapeflow infer model.onnx --format graphml --around sq_3,unsq_7 --depth 3 > part.graphml
  shapeflow infer model.onnx -o - > model.shapes.onnx   (the model on stdout, the report on stderr)

Exit codes: 0 no error-level finding, 1 error-level findings, 2 rejected input or usage error,
3 internal error.""")
@click.argument("model", type=click.Path(dir_okay=True, allow_dash=False))
@click.option("--all", "all_tensors", is_flag=True, help="List every tensor, not only Squeeze/Unsqueeze.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "dot", "graphml"]), default="text",
              show_default=True, help="dot (Graphviz) and graphml print a picture of the graph instead of the table.")
@click.option("--around", "around", metavar="NODE[,NODE...]", multiple=True,
              help="dot/graphml: draw only the neighbourhood of these nodes (names, or keys such as main/sq_3; "
                   "repeatable; write a comma in a name as \\, and a backslash as \\\\).")
@click.option("--depth", type=click.IntRange(min=0), default=DEFAULT_DEPTH, show_default=True,
              help="dot/graphml: tensor hops around --around / --findings nodes.")
@click.option("--findings", "around_findings", is_flag=True,
              help="dot/graphml: draw only the neighbourhood of the nodes with findings.")
@click.option("--max-draw", type=click.IntRange(min=1), default=DEFAULT_MAX_DRAW, show_default=True,
              help="dot/graphml: refuse (exit 2) to draw more nodes than this; use --around instead.")
@click.option("-o", "--output", type=click.Path(allow_dash=True),
              help="Write the model with inferred shapes as value_info (refused, exit 2, if its external "
                   "data is unsafe); '-' writes it to stdout (not a terminal) and the report to stderr.")
@click.option("--refine-outputs", is_flag=True,
              help="With -o: also refine the graph outputs' declarations (unknown dims, invented names).")
@click.option("--fix-declarations", is_flag=True,
              help="With -o: rewrite declarations that contradict the inferred shapes (SF112) with them "
                   "(graph outputs only with --refine-outputs; graph inputs never).")
@click.option("--force", is_flag=True, help="Overwrite OUTPUT if it exists.")
@click.option("--in-place", is_flag=True, help="Record the shapes in MODEL itself.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, exists=True),
              help="Read the settings from this file instead of the nearest config (as lint does).")
@click.option("--isolated", is_flag=True, help="Ignore every config file.")
@click.option("-q", "--quiet", is_flag=True, help="No summary line on stderr.")
@debug_option
@dim_option
@assume_option
@limit_options
def infer(model: str, all_tensors: bool, fmt: str, around: tuple[str, ...], depth: int, around_findings: bool,
          max_draw: int, output: str | None, refine_outputs: bool, fix_declarations: bool, force: bool,
          in_place: bool,
          config_path: str | None, isolated: bool, quiet: bool, dims: tuple[str, ...], assume: tuple[str, ...],
          **kwargs: object) -> int:
    """Infer the shapes of MODEL and report axis errors.

    Prints a table of every Squeeze and Unsqueeze (input shape, axes, output shape), then the
    diagnostics; a one-line summary goes to stderr.
    """
    limits = limits_from(kwargs)
    bindings = parse_dims(dims)
    names = tuple(n.strip() for item in around for n in split_names(item) if n.strip())
    if (names or around_findings) and fmt not in FORMATS:
        raise UsageError("--around and --findings select what a picture shows: use them with --format dot or graphml")
    if around and not names:
        raise UsageError("--around needs at least one node name")
    if fix_declarations and output is None and not in_place:
        raise UsageError("--fix-declarations rewrites declarations in the model written: use it with -o OUT or --in-place")
    to_stdout = output == STDOUT
    if to_stdout:
        check_stdout_output(model, in_place)
    elif output is not None:
        check_output_path(output, input_path=model, in_place=in_place, force=force)
    started = time.perf_counter()
    loaded = load_model(model, limits)
    if output is not None or in_place:
        # The annotated model would pass an unsafe data reference on: refused as optimize
        # refuses it (exit 2, nothing written); without -o it is an SF001 finding (exit 1).
        refuse_unsafe_external_data(loaded)
    for name in unknown_symbols(loaded, list(bindings)):
        click.echo(f"{display_path(model)}: warning: --dim {name}: the model has no symbolic dim named "
                   f"'{name}' (nothing bound)", err=True)
    result = infer_with_settings(loaded, dims=bindings, limits=limits, config=config_path, isolated=isolated,
                                 progress=progress_printer("inferring"), assume=assume)
    premises = result.inference.premises
    clear_progress()
    drawing: str | None = None
    if fmt in FORMATS:  # before anything is written: an unknown --around name writes nothing
        drawing = picture(result, fmt, PictureOptions(around=names, depth=depth, findings=around_findings,
                                                      max_draw=max_draw))
        if around_findings and not names and not result.diagnostics:
            click.echo(f"{display_path(model)}: no findings to draw around: the picture is empty", err=True)
    if in_place and output is None:
        output = model
    annotated = None
    if output is not None:
        _ = result.declared  # the report shows the file's declarations, read before -o writes its own
        annotated = annotate(result.graph, result.inference, refine_outputs=refine_outputs,
                             fix_declarations=fix_declarations)
        if annotated.fixed:  # the report is of the model written: the rewritten declarations are fixed
            result.diagnostics = drop_fixed(result.graph, result.inference, result.diagnostics, result.path)
        # the file's bytes are not needed any more: serializing while holding them costs their size
        loaded.raw = b""
        if to_stdout:
            write_to_stdout(loaded.proto, input_path=model, max_memory=limits.max_memory)
        else:
            save_model(loaded.proto, output, input_path=model, force=force, in_place=in_place,
                       max_memory=limits.max_memory)
    _print_result(result, fmt, drawing, all_tensors=all_tensors, err=to_stdout)
    counts = count_by_severity(result.diagnostics)
    elapsed = time.perf_counter() - started
    nodes = result.graph.node_count()
    if not quiet:
        click.echo(f"{display_path(model)}: {len(result.inference.axis_nodes):,} Squeeze/Unsqueeze, "
                   f"{summary_line(counts)} ({nodes:,} node{'' if nodes == 1 else 's'} in {elapsed:.2f} s)"
                   + (f"; assuming {', '.join(premises)}" if premises else ""), err=True)
        _premise_hints(model, result)
    if annotated is not None and output is not None:
        _report_written(output, annotated, premises, quiet=quiet)
    code = EXIT_FINDINGS if counts["error"] else EXIT_CLEAN
    keep_until_exit(loaded, result, annotated)
    click.get_current_context().exit(code)
    return code


def _print_result(result: Analysis, fmt: str, drawing: str | None, *, all_tensors: bool, err: bool) -> None:
    """The shapes and findings (on stderr when the model itself goes to stdout)."""
    # Rendering a large model allocates a container per row; none forms a cycle, and collecting
    # would mean traversing the whole analysis again.
    with gc_paused():
        if fmt == "json":
            # All pieces first (an error while rendering prints nothing), then written piece by
            # piece: the document of a 500k-node model is 200 MB, not worth joining and encoding whole.
            chunks = list(infer_json_chunks(result))
            for chunk in chunks:
                # color=True: no scan for ANSI codes to strip (the document has none: JSON escapes
                # every control character), which would read all 200 MB again
                click.echo(chunk, nl=False, err=err, color=True)
            click.echo(err=err)
        elif drawing is not None:
            click.echo(drawing, nl=False, err=err)
        else:
            click.echo(infer_text(result, all_tensors=all_tensors), err=err)


def _premise_hints(model: str, result: Analysis) -> None:
    """A dim left unknown only for want of a premise: say which one would decide it."""
    for text, added, simpler in premise_hints(result):
        what = [f"{added:,} more dim{'' if added == 1 else 's'}"] if added else []
        if simpler:
            what.append(f"{simpler:,} dim{'' if simpler == 1 else 's'} more simply")
        click.echo(f"{display_path(model)}: hint: assuming {text} would state {' and '.join(what)} "
                   f"(--assume '{text}')", err=True)


def _report_written(output: str, annotated: AnnotateResult, premises: Sequence[str], *, quiet: bool) -> None:
    """What ``-o`` wrote into the model, on stderr."""
    if not quiet:
        more = f", {annotated.replaced} invented dim names replaced" if annotated.replaced else ""
        if annotated.fixed:
            more += f", {annotated.fixed} contradicting declarations rewritten"
        if annotated.kept:
            more += f", {annotated.kept} contradicting declarations kept (SF112)"
        click.echo(f"{display_path(output)}: {annotated.added} value_info entries added, "
                   f"{annotated.filled} declared dims filled{more}", err=True)
    if premises:
        # the file records shapes, not the ranges they hold in (a model gains no metadata keys)
        click.echo(f"{display_path(output)}: warning: the shapes written hold only where "
                   f"{', '.join(premises)}; the file does not record that", err=True)
