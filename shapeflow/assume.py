"""What the user states about the model's symbols: ``--assume seq>=3`` (SPEC.md section 6).

A symbol is a dim, so by default it ranges over every integer >= 0, and everything shapeflow
states holds over that whole range. An assumption narrows it: ``seq>=3``, ``seq<=4096``,
``seq>0``, ``seq<65536``, or ``1<=seq<=8``. It is opt-in and reported wherever it was in force
(the text summary, JSON ``"assumptions"``, the optimize report).
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping

from .dims import MAX_DIM, Bound
from .errors import UsageError

# (ASCII digits only: int() would also read other scripts' digits)
_ONE = re.compile(r"^\s*([^<>=\s]+)\s*(>=|<=|>|<|==)\s*(-?[0-9]+)\s*$")
_BETWEEN = re.compile(r"^\s*(-?[0-9]+)\s*(<=|<)\s*([^<>=\s]+)\s*(<=|<)\s*(-?[0-9]+)\s*$")


def _bound(op: str, k: int) -> Bound:
    if op == ">=":
        return k, None
    if op == ">":
        return k + 1, None
    if op == "<=":
        return None, k
    if op == "<":
        return None, k - 1
    return k, k


def _meet(a: Bound, b: Bound) -> Bound:
    lo = a[0] if b[0] is None else b[0] if a[0] is None else max(a[0], b[0])
    hi = a[1] if b[1] is None else b[1] if a[1] is None else min(a[1], b[1])
    return lo, hi


def parse_assumptions(items: Iterable[str], source: str = "--assume") -> dict[str, Bound]:
    """``["seq>=3", "seq<=4096"]`` -> ``{"seq": (3, 4096)}``. Raises UsageError (exit 2) on text
    that is not such a statement, naming it."""
    out: dict[str, Bound] = {}
    for item in items:
        m = _ONE.match(item)
        if m is not None:
            name, bound = m.group(1), _bound(m.group(2), int(m.group(3)))
        else:
            m = _BETWEEN.match(item)
            if m is None:
                raise UsageError(f"{source}: expected NAME>=K, NAME<=K or K<=NAME<=K, got {item!r}")
            name = m.group(3)
            lo = int(m.group(1)) + (1 if m.group(2) == "<" else 0)
            hi = int(m.group(5)) - (1 if m.group(4) == "<" else 0)
            bound = (lo, hi)
        out[name] = _meet(out.get(name, (None, None)), bound)
    return out


def check_assumptions(ranges: Mapping[str, Bound], symbols: Iterable[str],
                      bindings: Mapping[str, int] | None = None, file: str | None = None) -> None:
    """Refuse (UsageError, exit 2) an assumption that names no symbol of the model, or that
    contradicts a static fact: an empty range, a negative upper bound (a dim is >= 0), or a value
    bound with ``--dim``."""
    known = set(symbols)
    for name, (lo, hi) in sorted(ranges.items()):
        if name not in known:
            shown = ", ".join(sorted(known)[:8]) or "none"
            raise UsageError(f"--assume names '{name}', which is not a symbol of the model "
                             f"(its symbols: {shown})", file=file)
        if hi is not None and hi < 0:
            raise UsageError(f"--assume {name}<={hi} contradicts the model: '{name}' is a dim, "
                             "never negative", file=file)
        if lo is not None and hi is not None and lo > hi:
            raise UsageError(f"--assume gives '{name}' an empty range ({lo}..{hi})", file=file)
        if lo is not None and lo > MAX_DIM:
            raise UsageError(f"--assume {name}>={lo} contradicts the model: no dim exceeds 2^62", file=file)
        if bindings and name in bindings:
            v = bindings[name]
            if (lo is not None and v < lo) or (hi is not None and v > hi):
                raise UsageError(f"--assume for '{name}' contradicts --dim {name}={v}", file=file)


def check_proven(assumed: Mapping[str, Bound], ranges: Mapping[str, Bound], file: str | None = None) -> None:
    """Refuse (UsageError, exit 2) an assumption that contradicts a fact the graph proves: the
    ranges inference ended with are the assumptions narrowed by its facts, so an empty one means
    the model runs at no binding the user assumed (``--assume seq<=0`` where a -1 Reshape proves
    ``seq >= 1``)."""
    for name in sorted(assumed):
        lo, hi = ranges.get(name, assumed[name])
        if lo is not None and hi is not None and lo > hi:
            raise UsageError(f"--assume {format_assumption(name, assumed[name])} contradicts the model: "
                             f"it runs only where {name}>={lo}", file=file)


def format_assumption(name: str, bound: Bound) -> str:
    """``seq>=3``, ``seq<=8``, ``3<=seq<=8``, ``seq==4``: the text users write."""
    lo, hi = bound
    if lo is not None and hi is not None:
        return f"{name}=={lo}" if lo == hi else f"{lo}<={name}<={hi}"
    if lo is not None:
        return f"{name}>={lo}"
    return f"{name}<={hi}"


def assumption_texts(ranges: Mapping[str, Bound]) -> list[str]:
    return [format_assumption(k, ranges[k]) for k in sorted(ranges)]
