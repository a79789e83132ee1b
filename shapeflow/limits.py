"""Resource limits (RELIABILITY.md section 1.1), each raised by a command-line flag."""

from __future__ import annotations

import os
from dataclasses import dataclass


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
