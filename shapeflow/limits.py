"""Resource limits (RELIABILITY.md section 1.1), each raised by a command-line flag."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    max_bytes: int = 2**31 - 1
    max_nodes: int = 2_000_000
    max_rank: int = 1024
    max_axes_elems: int = 4096
    max_expr_size: int = 256
    timeout: float = 120.0

    # flag names used in "raise with --flag" messages
    FLAGS = {
        "max_bytes": "--max-bytes",
        "max_nodes": "--max-nodes",
        "max_rank": "--max-rank",
        "max_axes_elems": "--max-axes-elems",
        "max_expr_size": "--max-expr-size",
        "timeout": "--timeout",
    }


DEFAULT_LIMITS = Limits()
