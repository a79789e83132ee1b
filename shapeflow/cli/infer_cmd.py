"""``shapeflow infer``: the shapes, symbolic where they are symbolic, and the diagnostics."""

from __future__ import annotations

import time

import click

from ..analysis import analyze, gc_paused
from ..annotate import annotate
from ..errors import EXIT_CLEAN, EXIT_FINDINGS, display_path
from ..io import STDOUT, check_output_path, load_model, refuse_unsafe_external_data, save_model, write_to_stdout
from ..render import count_by_severity, infer_text, summary_line
from ..render.json import infer_json_chunks
from .options import check_stdout_output, clear_progress, dim_option, limit_options, limits_from, parse_dims, progress_printer


@click.command(epilog="""\b
Examples:
  shapeflow infer model.onnx
  shapeflow infer model.onnx --format json --dim batch=1
  shapeflow infer model.onnx -o model.shapes.onnx
  shapeflow infer model.onnx -o - > model.shapes.onnx   (the model on stdout, the report on stderr)

Exit codes: 0 no error-level finding, 1 error-level findings, 2 rejected input or usage error,
3 internal error.""")
@click.argument("model", type=click.Path(dir_okay=True, allow_dash=False))
@click.option("--all", "all_tensors", is_flag=True, help="List every tensor, not only Squeeze/Unsqueeze.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("-o", "--output", type=click.Path(allow_dash=True),
              help="Write the model with inferred shapes as value_info (refused, exit 2, if its external "
                   "data is unsafe); '-' writes it to stdout (not a terminal) and the report to stderr.")
@click.option("--force", is_flag=True, help="Overwrite OUTPUT if it exists.")
@click.option("--in-place", is_flag=True, help="Record the shapes in MODEL itself.")
@dim_option
@limit_options
def infer(model: str, all_tensors: bool, fmt: str, output: str | None, force: bool, in_place: bool,
          dims: tuple[str, ...], **kwargs: object) -> int:
    """Infer the shapes of MODEL and report axis errors.

    Prints a table of every Squeeze and Unsqueeze (input shape, axes, output shape), then the
    diagnostics; a one-line summary goes to stderr.
    """
    limits = limits_from(kwargs)
    bindings = parse_dims(dims)
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
    result = analyze(loaded, dims=bindings, limits=limits, progress=progress_printer("inferring"))
    clear_progress()
    if in_place and output is None:
        output = model
    if output is not None:
        annotate(result.graph, result.inference)
        # the file's bytes are not needed any more: serializing while holding them costs their size
        loaded.raw = b""
        if to_stdout:
            write_to_stdout(loaded.proto, input_path=model, max_memory=limits.max_memory)
        else:
            save_model(loaded.proto, output, input_path=model, force=force, in_place=in_place,
                       max_memory=limits.max_memory)
    # Rendering a large model allocates a container per row; none forms a cycle, and collecting
    # would mean traversing the whole analysis again.
    with gc_paused():
        if fmt == "json":
            # All pieces first (an error while rendering prints nothing), then written piece by
            # piece: the document of a 500k-node model is 200 MB, not worth joining and encoding whole.
            chunks = list(infer_json_chunks(result))
            for chunk in chunks:
                click.echo(chunk, nl=False, err=to_stdout)
            click.echo(err=to_stdout)
        else:
            click.echo(infer_text(result, all_tensors=all_tensors), err=to_stdout)
    counts = count_by_severity(result.diagnostics)
    elapsed = time.perf_counter() - started
    click.echo(f"{display_path(model)}: {len(result.inference.axis_nodes)} Squeeze/Unsqueeze, {summary_line(counts)} "
               f"({result.graph.node_count():,} nodes in {elapsed:.2f} s)", err=True)
    code = EXIT_FINDINGS if counts["error"] else EXIT_CLEAN
    click.get_current_context().exit(code)
    return code
