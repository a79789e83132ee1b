"""``shapeflow diff A B``: the signatures and the inferred shapes of two models, compared."""

from __future__ import annotations

import json

import click

from ..errors import UsageError, display_path
from ..drivers.modeldiff import diff_models, diff_text
from .options import assume_option, dim_option, limit_options, limits_from, parse_dims


@click.command("diff", epilog="""\b
Examples:
  shapeflow diff model.onnx model.opt.onnx
  shapeflow diff old_export.onnx new_export.onnx --signature-only
  shapeflow diff a.onnx b.onnx --format json

\b
A shape is "changed" when both models know a dim (or the rank, or the element type) and they
differ; a dim one model knows and the other leaves unknown is listed, not counted as a change.
Each model must also still pass onnx's checker and load in onnxruntime (when installed): a check
one of them fails and the other passes is a difference.

Exit codes: 0 same signature, no changed shape and the same validity, 1 a difference, 2
rejected input or usage error, 3 internal error.""")
@click.argument("model_a", metavar="A", type=click.Path(dir_okay=True, allow_dash=False))
@click.argument("model_b", metavar="B", type=click.Path(dir_okay=True, allow_dash=False))
@click.option("--shapes-only", is_flag=True, help="Compare only the inferred shapes of shared tensors.")
@click.option("--signature-only", is_flag=True, help="Compare only the graph inputs and outputs.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--no-validate", is_flag=True,
              help="Skip onnx's checker and the onnxruntime session (which reads the weights).")
@dim_option
@assume_option
@limit_options
def command(model_a: str, model_b: str, shapes_only: bool, signature_only: bool, fmt: str,
            dims: tuple[str, ...], assume: tuple[str, ...], no_validate: bool = False, **kwargs: object) -> int:
    """Compare the signatures (inputs and outputs: names, dtypes, symbolic dims) of A and B and
    the inferred shapes of the tensors present in both."""
    limits = limits_from(kwargs)
    if shapes_only and signature_only:
        raise UsageError("give at most one of --shapes-only and --signature-only")
    result = diff_models(model_a, model_b, dims=parse_dims(dims), signature=not shapes_only,
                         shapes=not signature_only, limits=limits, assume=assume, validate=not no_validate)
    if fmt == "json":
        click.echo(json.dumps(result.to_json(), indent=2))
    else:
        click.echo(diff_text(result))
    parts = []
    if result.check_signature:
        parts.append("same signature" if result.same_signature else
                     f"signature differs ({len(result.signature)})")
    if result.check_shapes:
        parts.append(f"{len(result.changed):,} of {result.shared:,} shared shapes changed")
    if result.validity_changes:
        parts.append(f"validity differs ({len(result.validity_changes)})")
    click.echo(f"{display_path(model_a)} vs {display_path(model_b)}: {', '.join(parts)}", err=True)
    click.get_current_context().exit(result.exit_code)
    return result.exit_code
