"""What the user states about the model's symbols: ``--assume seq>=3`` (SPEC.md section 6).

A symbol is a dim, so by default it ranges over every integer >= 0, and everything shapeflow
states holds over that whole range. An assumption narrows it: ``seq>=3``, ``seq<=4096``,
``seq>0``, ``seq<65536``, or ``1<=seq<=8``; ``*>=1`` narrows every symbol of the model's inputs
(no empty input dims), and ``a==b`` states that two differently named symbols are one dim (tf2onnx
names every ``None`` dim on its own). These are the premises peers make silently; here they are
opt-in and reported wherever they were in force (the text summary, JSON ``"assumptions"``, the
optimize report).
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping, Sequence

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


EVERY = "*"
"""The name that stands for every symbol of the model's inputs: ``--assume '*>=1'``."""

_SAME = re.compile(r"^\s*([^<>=\s]+)\s*==\s*([^<>=\s]+)\s*$")


class Premises(dict[str, Bound]):
    """Parsed ``--assume`` statements: a range per symbol name (:data:`EVERY` for each symbol of
    the model's inputs), and ``same``, the pairs of names stated to be one dim (``a==b``)."""

    def __init__(self, ranges: Mapping[str, Bound] | Iterable[tuple[str, Bound]] = (),
                 same: Iterable[tuple[str, str]] = ()) -> None:
        super().__init__(ranges)
        self.same: tuple[tuple[str, str], ...] = tuple(same)

    def __bool__(self) -> bool:
        return len(self) > 0 or bool(self.same)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Premises):
            return dict.__eq__(self, other) and self.same == other.same
        return not self.same and dict.__eq__(self, other)

    __hash__ = None

    def names(self) -> set[str]:
        """The symbol names the statements mention (not :data:`EVERY`)."""
        return {k for k in self if k != EVERY} | {n for pair in self.same for n in pair}

    def texts(self) -> list[str]:
        """The statements as users write them, one each."""
        return assumption_texts(self) + [f"{a}=={b}" for a, b in self.same]


def parse_assumptions(items: Iterable[str], source: str = "--assume") -> Premises:
    """``["seq>=3", "seq<=4096", "a==b"]`` -> ``Premises({"seq": (3, 4096)}, same=[("a", "b")])``.
    Raises UsageError (exit 2) on text that is not such a statement, naming it."""
    out: dict[str, Bound] = {}
    same: list[tuple[str, str]] = []
    for item in items:
        m = _ONE.match(item)
        if m is not None:
            name, bound = m.group(1), _bound(m.group(2), int(m.group(3)))
        else:
            m = _BETWEEN.match(item)
            if m is None:
                pair = _SAME.match(item)
                if pair is not None and EVERY not in pair.groups():
                    if pair.group(1) != pair.group(2) and pair.groups() not in same:
                        same.append((pair.group(1), pair.group(2)))
                    continue
                raise UsageError(f"{source}: expected NAME>=K, NAME<=K, K<=NAME<=K or NAME==OTHER "
                                 f"(NAME may be '*': every symbol), got {item!r}")
            name = m.group(3)
            lo = int(m.group(1)) + (1 if m.group(2) == "<" else 0)
            hi = int(m.group(5)) - (1 if m.group(4) == "<" else 0)
            bound = (lo, hi)
        out[name] = _meet(out.get(name, (None, None)), bound)
    return Premises(out, same)


def resolve_premises(premises: Mapping[str, Bound], symbols: Iterable[str], only_known: bool = False,
                     file: str | None = None) -> tuple[dict[str, Bound], dict[str, str], list[str]]:
    """The statements as they apply to one model with input ``symbols``: the range of each symbol
    (:data:`EVERY`'s included), the aliases (``b`` -> ``a`` for ``a==b``; inference reads ``b`` as
    ``a``, whose range is then both ranges met), and the texts to report. ``only_known`` leaves out
    the statements that name a symbol the model does not have (lint over many models); otherwise
    that is a usage error (exit 2, :func:`check_assumptions`)."""
    known = set(symbols)
    same: Sequence[tuple[str, str]] = getattr(premises, "same", ())
    every = premises.get(EVERY)
    named = {k: v for k, v in premises.items() if k != EVERY}
    if only_known:
        named = {k: v for k, v in named.items() if k in known}
        same = [(a, b) for a, b in same if a in known and b in known]
    else:
        check_assumptions(named, known, file=file)
        for a, b in same:
            for n in (a, b):
                if n not in known:
                    check_assumptions({n: (None, None)}, known, file=file)
    parent: dict[str, str] = {}

    def root(n: str) -> str:
        while parent.get(n, n) != n:
            n = parent[n]
        return n

    for a, b in same:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[rb] = ra  # the first name stated stays: b reads as a
    aliases = {n: root(n) for n in parent if root(n) != n}
    ranges: dict[str, Bound] = {}
    for name in sorted(known if every is not None else named):
        bound = _meet(every or (None, None), named.get(name, (None, None)))
        if bound != (None, None):
            rep = aliases.get(name, name)
            ranges[rep] = _meet(ranges.get(rep, (None, None)), bound)
    texts = []
    if every is not None and known:
        texts.append(format_assumption(EVERY, every))
    texts += assumption_texts(named) + [f"{a}=={b}" for a, b in same]
    return ranges, aliases, texts


def alias_bindings(bindings: Mapping[str, int] | None, aliases: Mapping[str, str],
                   file: str | None = None) -> Mapping[str, int] | None:
    """``--dim`` bindings with each alias's value on the name it reads as (``--dim b=3`` with
    ``a==b`` binds ``a``); two values for one dim are a usage error (exit 2)."""
    if not bindings or not aliases:
        return bindings
    out = dict(bindings)
    for name, rep in aliases.items():
        if name in bindings:
            if out.get(rep, bindings[name]) != bindings[name]:
                raise UsageError(f"--assume {rep}=={name} contradicts --dim {rep}={out[rep]} and "
                                 f"--dim {name}={bindings[name]}", file=file)
            out[rep] = bindings[name]
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
