"""The ``shapeflow`` command: a click group assembled from one module per command.

Exit codes (every command): 0 nothing at error level, 1 error-level findings (or a failed
--verify / --check), 2 usage error or rejected input, 3 internal error (a bug).
"""

from __future__ import annotations

import os
import sys
import traceback
from importlib.metadata import PackageNotFoundError, version

import click

from ..errors import EXIT_INTERNAL, EXIT_REJECTED, ShapeflowError

EPILOG = """\b
Exit codes: 0 clean, 1 error-level findings, 2 usage error or rejected input, 3 internal error.
"""


def _version() -> str:
    try:
        return version("shapeflow")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "0+unknown"


@click.group(epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(_version(), "--version", prog_name="shapeflow")
@click.option("--debug", is_flag=True, help="Show tracebacks for internal errors.")
def cli(debug: bool) -> None:
    """Symbolic shapes, axis lint and exact Squeeze/Unsqueeze rewrites for ONNX models."""


def _register() -> None:
    from . import infer_cmd

    cli.add_command(infer_cmd.infer)
    for name in ("lint_cmd", "rules_cmd", "optimize_cmd"):
        try:
            module = __import__(f"{__name__}.{name}", fromlist=["command"])
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            continue
        cli.add_command(module.command)


_register()


def main(argv: list[str] | None = None) -> None:
    """Entry point: maps errors to exit codes and never shows a traceback unless --debug."""
    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args or bool(os.environ.get("SHAPEFLOW_DEBUG"))
    try:
        code = cli.main(args=args, prog_name="shapeflow", standalone_mode=False)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.ClickException as exc:
        exc.show()
        code = EXIT_REJECTED if exc.exit_code == 1 else exc.exit_code
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        code = 130
    except ShapeflowError as exc:
        click.echo(str(exc), err=True)
        code = exc.exit_code
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:
        code = 0
    except Exception as exc:  # a bug: say so in one line, and how to get the details
        if debug:
            traceback.print_exc()
        first = str(exc).splitlines()[0] if str(exc) else ""
        click.echo(f"shapeflow: internal error: {type(exc).__name__}: {first}"
                   + ("" if debug else " (please report it; run with --debug for the traceback)"), err=True)
        code = EXIT_INTERNAL
    sys.exit(code if isinstance(code, int) else 0)


__all__ = ["cli", "main"]
