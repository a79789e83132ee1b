"""Options shared by several commands, defined once."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Callable, TypeVar

import click

from ..errors import UsageError
from ..limits import DEFAULT_LIMITS, Limits

F = TypeVar("F", bound=Callable[..., object])


def parse_dims(values: tuple[str, ...]) -> dict[str, int]:
    """``--dim batch=1 --dim seq=128`` -> {"batch": 1, "seq": 128}."""
    out: dict[str, int] = {}
    for item in values:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise click.BadParameter(f"expected NAME=VALUE, got '{item}'", param_hint="--dim")
        try:
            n = int(value)
        except ValueError:
            raise click.BadParameter(f"'{value}' is not an integer (in '{item}')", param_hint="--dim") from None
        if n < 0:
            raise click.BadParameter(f"a dim cannot be negative (in '{item}')", param_hint="--dim")
        out[name] = n
    return out


def complete_codes(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """Shell completion of rule selectors: codes (``SF1`` -> ``SF101``...) and names; after a comma,
    the next item."""
    from ..rules import ALL_RULES

    head, sep, last = incomplete.rpartition(",")
    prefix = head + sep
    words = [r.code for r in ALL_RULES] + [r.name for r in ALL_RULES]
    return [prefix + w for w in words if w.lower().startswith(last.lower())]


def debug_option(fn: F) -> F:
    """``--debug`` after the subcommand too (``shapeflow lint --debug``); ``main`` reads it from argv."""
    return click.option("--debug", is_flag=True, expose_value=False,
                        help="Show tracebacks for internal errors.")(fn)
def check_stdout_output(model: str, in_place: bool) -> None:
    """``-o -`` before any work: the binary model goes to stdout, so stdout must not be a
    terminal, and --in-place names another target."""
    if in_place:
        raise UsageError("give either -o OUTPUT or --in-place, not both", file=model)
    if sys.stdout.isatty():
        raise UsageError("refusing to write a binary model to a terminal; redirect stdout or give -o FILE",
                         file=model)


def dim_option(fn: F) -> F:
    return click.option("--dim", "dims", multiple=True, metavar="NAME=VALUE",
                        help="Bind a symbolic dim everywhere (repeatable), e.g. --dim batch=1.")(fn)


def assume_option(fn: F) -> F:
    return click.option("--assume", "assume", multiple=True, metavar="NAME>=K",
                        help="State a premise about symbolic dims (repeatable): a range, e.g. --assume seq>=3 "
                             "or --assume 'seq<=4096'; '*>=1' for every input dim; 'a==b' for two names "
                             "of one dim. Results then hold under it, and say so.")(fn)


if TYPE_CHECKING:
    _IntParam = click.ParamType[int]  # (generic in the stubs of click 8.2 on, not at run time before)
else:
    _IntParam = click.ParamType


class MemorySize(_IntParam):
    """A size in bytes: ``3000000000``, ``512M``, ``4G`` (powers of 1024)."""

    name = "size"
    _UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        text = str(value).strip().upper().removesuffix("B").removesuffix("I")
        unit = text[-1:] if text[-1:] in self._UNITS and text[-1:] else ""
        number = text[: len(text) - len(unit)]
        try:
            size = int(float(number) * self._UNITS[unit])
        except ValueError:
            self.fail(f"'{value}' is not a size (bytes, or a number with K, M or G)", param, ctx)
        if size < 1:
            self.fail(f"'{value}' is not a positive size", param, ctx)
        return size


def limit_options(fn: F) -> F:
    """--max-bytes, --max-nodes, ... (RELIABILITY.md section 1.1)."""
    d = DEFAULT_LIMITS
    opts = [
        click.option("--max-bytes", type=click.IntRange(min=1), default=d.max_bytes, show_default=True,
                     help="Refuse model files larger than this."),
        click.option("--max-nodes", type=click.IntRange(min=1), default=d.max_nodes, show_default=True,
                     help="Refuse models with more nodes (subgraphs included)."),
        click.option("--max-rank", type=click.IntRange(min=1), default=d.max_rank, show_default=True,
                     help="Refuse tensors of higher rank."),
        click.option("--max-axes-elems", type=click.IntRange(min=1), default=d.max_axes_elems,
                     show_default=True, help="Refuse axes lists longer than this."),
        click.option("--max-expr-size", type=click.IntRange(min=1), default=d.max_expr_size,
                     show_default=True, help="Refuse symbolic dims with more terms."),
        click.option("--timeout", type=click.FloatRange(min=0.001), default=d.timeout, show_default=True,
                     help="Seconds allowed per file."),
        click.option("--max-memory", type=MemorySize(), default=d.max_memory, show_default=True,
                     help="Refuse (exit 2) a model whose processing would need more memory than this "
                          "(bytes, or with K/M/G); default: 3/4 of physical memory."),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


def limits_from(kwargs: dict[str, Any]) -> Limits:
    """Pop the limit options out of a command's kwargs."""
    return Limits(
        max_bytes=int(kwargs.pop("max_bytes")),
        max_nodes=int(kwargs.pop("max_nodes")),
        max_rank=int(kwargs.pop("max_rank")),
        max_axes_elems=int(kwargs.pop("max_axes_elems")),
        max_expr_size=int(kwargs.pop("max_expr_size")),
        timeout=float(kwargs.pop("timeout")),
        max_memory=int(kwargs.pop("max_memory")),
    )


def progress_printer(label: str, min_nodes: int = 20_000) -> Callable[[int, int], None] | None:
    """Progress on stderr only when it is a terminal: pipes and CI logs stay clean."""
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int) -> None:
        if total >= min_nodes:
            # done == total: inference is over and the rules run (the caller clears the line)
            text = f"{label}: checking rules" if done >= total else f"{label}: {done:,}/{total:,} nodes"
            sys.stderr.write(f"\r\033[K{text}")
            sys.stderr.flush()

    return show


class FileProgress:
    """``linting 3/40: models/x.onnx: inferring 120,000/500,000 nodes`` on one terminal line: the
    file (``file``, for runs of several files) and the phase within it (``phase``, for large
    models). ``file_progress`` gives None on a pipe."""

    def __init__(self, label: str, min_nodes: int = 20_000) -> None:
        self.label = label
        self.min_nodes = min_nodes
        self.head = ""

    def file(self, done: int, total: int, path: str) -> None:
        if done >= total:
            clear_progress()
            self.head = ""
            return
        shown = path if len(path) <= 60 else "..." + path[-57:]
        self.head = f"{self.label} {done + 1:,}/{total:,}: {shown}" if total > 1 else f"{self.label} {shown}"
        if total > 1:
            self._write(self.head)

    def phase(self, done: int, total: int) -> None:
        if total >= self.min_nodes:
            # done == total: inference is over; the rules and the rewrite search run
            what = "checking rules" if done >= total else f"inferring {done:,}/{total:,} nodes"
            self._write(f"{self.head}: {what}")

    @staticmethod
    def _write(text: str) -> None:
        sys.stderr.write(f"\r\033[K{text}")
        sys.stderr.flush()


def file_progress(label: str) -> FileProgress | None:
    return FileProgress(label) if sys.stderr.isatty() else None


def show_status(text: str) -> None:
    """One transient status line (``writing out.onnx``) on a terminal; nothing on a pipe."""
    if sys.stderr.isatty():
        sys.stderr.write(f"\r\033[K{text}")
        sys.stderr.flush()


def clear_progress() -> None:
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K")
        sys.stderr.flush()
