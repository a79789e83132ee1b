"""The ``shapeflow`` command: a click group assembled from one module per command.

Exit codes (every command): 0 nothing at error level, 1 error-level findings (or a failed
--verify / --check), 2 usage error or rejected input, 3 internal error (a bug).
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
import threading
import traceback
import warnings
from typing import NoReturn, TextIO

import click

from ..errors import EXIT_INTERNAL, EXIT_REJECTED, ShapeflowError, ShapeflowWarning, display_path

EPILOG = """\b
Exit codes: 0 clean, 1 error-level findings, 2 usage error or rejected input, 3 internal error.
"""


def _show_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """--version, with the onnx it runs on (looked up only when asked for: importlib.metadata
    costs start-up time)."""
    if not value or ctx.resilient_parsing:
        return
    from importlib.metadata import PackageNotFoundError, version

    from .._version import __version__

    try:
        onnx_version = version("onnx")
    except PackageNotFoundError:  # pragma: no cover - onnx is a dependency
        onnx_version = "not installed"
    click.echo(f"shapeflow, version {__version__} (onnx {onnx_version})")
    ctx.exit()


# command name -> (module in this package, attribute): a command's module, and what it imports
# (onnx, the rules, SARIF, the passes), is loaded only when that command runs or help lists it.
COMMANDS: dict[str, tuple[str, str]] = {
    "clean": ("clean_cmd", "command"),
    "diff": ("diff_cmd", "command"),
    "infer": ("infer_cmd", "infer"),
    "lint": ("lint_cmd", "command"),
    "optimize": ("optimize_cmd", "command"),
    "rules": ("rules_cmd", "command"),
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use (start-up time of ``infer``)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module_name, attr = COMMANDS[cmd_name]
            module = importlib.import_module(f"{__name__}.{module_name}")
            self.add_command(getattr(module, attr), cmd_name)
        return self.commands.get(cmd_name)


@click.group(cls=LazyGroup, epilog=EPILOG,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_show_version,
              help="Show the version and exit.")
@click.option("--debug", is_flag=True, help="Show tracebacks for internal errors.")
def cli(debug: bool) -> None:
    """Symbolic shapes, axis lint and exact Squeeze/Unsqueeze rewrites for ONNX models."""


_SHOW_WARNING = warnings.showwarning


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    """shapeflow's own warnings as one line on stderr (``shapeflow: warning: ...``); others as
    Python shows them."""
    if issubclass(category, ShapeflowWarning):
        click.echo(display_path(f"shapeflow: warning: {message}"), err=True)  # (names from the model)
    else:
        _SHOW_WARNING(message, category, filename, lineno, file, line)


class Terminated(SystemExit):
    """SIGTERM arrived: raised where the program is, so that a write in progress removes its
    temporary file on the way out (as for Ctrl-C) instead of leaving it beside its target."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated(128 + signum)


def main(argv: list[str] | None = None) -> None:
    """Entry point: maps errors to exit codes and never shows a traceback unless --debug."""
    warnings.showwarning = _show_warning
    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args or bool(os.environ.get("SHAPEFLOW_DEBUG"))
    if sys.stdout is None or _closed(1):
        # Python starts with sys.stdout = None when file descriptor 1 is closed (``>&-``): every
        # report would vanish while the exit code still spoke. Say so instead, and do nothing.
        if sys.stderr is not None:
            click.echo("shapeflow: error: standard output is closed; nowhere to write the report "
                       "(redirect it, e.g. > /dev/null)", err=True)
        sys.exit(EXIT_REJECTED)
    # (signal handlers live in the main thread only; the caller's own comes back afterwards)
    previous = signal.signal(signal.SIGTERM, _terminate) if threading.current_thread() is threading.main_thread() \
        else None
    try:
        code = _run_cli(args, debug)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    sys.exit(code if isinstance(code, int) else 0)


def _run_cli(args: list[str], debug: bool) -> object:
    """The command's exit code (or None: 0), every error mapped to its code (``main``)."""
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
    except MemoryError:
        # an allocation failed (``--max-memory`` is checked up front; this is what it did not foresee,
        # or a tighter ``ulimit -v``): a limit, not a bug
        from ..errors import LimitExceededError
        from ..limits import Limits

        click.echo(str(LimitExceededError("max-memory", "out of memory", Limits.FLAGS["max_memory"])), err=True)
        code = EXIT_REJECTED
    except KeyboardInterrupt:
        code = 130
    except Terminated as exc:
        click.echo("terminated", err=True)
        code = exc.code if isinstance(exc.code, int) else 143
    except BrokenPipeError:
        code = 0
    except Exception as exc:  # a bug: say so in one line, and how to get the details
        if debug:
            traceback.print_exc()
        first = str(exc).splitlines()[0] if str(exc) else ""
        click.echo(f"shapeflow: internal error: {type(exc).__name__}: {first}"
                   + ("" if debug else " (please report it; run with --debug for the traceback)"), err=True)
        code = EXIT_INTERNAL
    return code


# The objects of the file a command finished last, while the process exits without tearing the
# interpreter down (``run``): freeing a 500k-node graph one object at a time takes 0.4 s, and the
# exit that follows would throw them away in one go. None: a caller's process (``main``), which
# frees them as usual.
_held: list[object] | None = None


def keep_until_exit(*objects: object) -> None:
    """Let ``objects`` outlive the command's frame when the process exits right after it (``run``),
    so that they are not freed one by one on the way out. The objects held before are let go: a
    command over several files calls this as each file starts (with no objects) and ends, so at
    most one file's objects are held."""
    if _held is not None:
        _held[:] = objects


def run() -> NoReturn:
    """``main()`` for a process of its own (``python -m shapeflow``): exits without tearing the
    interpreter down. Freeing a large model's objects one by one and unloading onnx and numpy take
    longer than the exit itself (30 ms at 10k nodes), and nothing needs it: the output is flushed
    here, files are closed by the code that opened them, and no thread is left running."""
    global _held
    _held = []
    try:
        main()
    except SystemExit as exc:
        if isinstance(exc.code, int) and _flushed():
            os._exit(exc.code)
        raise
    raise AssertionError("main() returned")  # pragma: no cover - main always exits


def _closed(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return True
    return False


def _flushed() -> bool:
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:  # (None: the descriptor was closed when Python started)
                stream.flush()
    except (OSError, ValueError):  # a closed pipe, a full disk: the usual shutdown reports it
        return False
    return True


__all__ = ["cli", "keep_until_exit", "main", "run"]
