"""Resource limits (RELIABILITY.md section 1.1), each raised by a command-line flag."""

from __future__ import annotations

import contextlib
import os
import time
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Iterator


def default_max_memory() -> int:
    """Three quarters of the machine's physical memory (4 GiB when it cannot be read): room for the
    rest of the system, and a bound that a hostile file cannot talk shapeflow past."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") * 3 // 4)
    except (ValueError, OSError, AttributeError):
        return 4 << 30


@dataclass(frozen=True)
class Limits:
    max_bytes: int = 2**31 - 1
    max_nodes: int = 2_000_000
    max_rank: int = 1024
    max_axes_elems: int = 4096
    max_expr_size: int = 256
    timeout: float = 120.0
    max_memory: int = default_max_memory()

    # flag names used in "raise with --flag" messages
    FLAGS = {
        "max_bytes": "--max-bytes",
        "max_nodes": "--max-nodes",
        "max_rank": "--max-rank",
        "max_axes_elems": "--max-axes-elems",
        "max_expr_size": "--max-expr-size",
        "timeout": "--timeout",
        "max_memory": "--max-memory",
    }


DEFAULT_LIMITS = Limits()


# ``--timeout`` is a time per file: the lint driver sets when the current file's work must end
# (``file_deadline``), and each phase that walks the model (the count before the parse, the
# check of its strings, the index, inference, the rules, the markers) checks that one moment.
# Without a driver's deadline (a library call, ``infer``), a phase allows ``--timeout`` from its
# own start.
_FILE_DEADLINE: ContextVar[float | None] = ContextVar("shapeflow_file_deadline", default=None)


def deadline(limits: Limits) -> float:
    """The ``time.monotonic()`` by which the current file's work must end (module note above)."""
    found = _FILE_DEADLINE.get()
    return found if found is not None else time.monotonic() + limits.timeout


@contextlib.contextmanager
def file_deadline(timeout: float) -> Iterator[float]:
    """Within the block, every phase of the current file ends by ``timeout`` seconds from now."""
    at = time.monotonic() + timeout
    token = _FILE_DEADLINE.set(at)
    try:
        yield at
    finally:
        _FILE_DEADLINE.reset(token)
