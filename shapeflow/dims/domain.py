"""The value domain of the symbols, and the bounds of every expression in it (SPEC.md section 6).

A named symbol is a dim: an integer in [0, MAX_DIM], unless a tighter range is stated. A
:class:`Domain` is that statement as a value: the ranges in force (the user's ``--assume``, and
what inference proved on the way), the user's own statements as reported with every output, and
the built-in premise (:data:`OVERFLOW_CAP`). :func:`dim_bounds` gives an interval that holds an
expression for every value of its symbols in a domain; comparisons (:func:`dims_equal`,
:func:`dim_is_one`) are decided from it. Nothing here is ambient: every function that decides
from the bounds takes the domain as an argument (:data:`BASE`, no premise, by default).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Mapping, Optional, Union

from .canonical import _FLOOR, _MIN, _MOD, _NAME, Dim, Sym, _Atom, _coerce, _const_diff, dim_sub, plain_symbol

Bound = tuple[Optional[int], Optional[int]]
"""A closed interval ``(lo, hi)`` of integers; ``None`` is unbounded on that side."""

_INF = float("inf")
MAX_DIM = 2**62
"""The largest value a symbol takes: no tensor has a dim of 2**62 elements (4 EiB of bytes)."""
_Ext = Union[int, float]  # an int, or +-inf

# Symbolic arithmetic is exact; a typed tensor agrees while the value fits its type. The one
# built-in premise of the value domain: a symbolic value is stated where it fits its type for every
# symbol up to OVERFLOW_CAP, in every type alike (ops/numeric.py). ``64*batch*seq`` fits int64,
# ``seq`` fits int32 and float32 (tf2onnx's shape arithmetic is int32), ``batch*seq`` fits int64 but
# not int32; ``(batch*seq)**4`` and anything with an INT64_MAX sentinel in it fit nothing. (The cap
# is about 17 minutes of 16 kHz audio on one axis; products of dims that large are tensors of 2**48
# elements.)
OVERFLOW_CAP = 2**24

_NONE: Mapping[str, Bound] = MappingProxyType({})
_NO_ALIASES: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True, eq=False)
class Domain:
    """Where the symbols range: a value, made once by a driver from ``--assume`` (or a config) and
    held by the inference result and the rewrite context, which pass it to the algebra.

    ``ranges`` maps a symbol to its range (intersected with ``[0, MAX_DIM]`` when read); a symbol
    not in it is any dim. It holds the user's statements and, during and after inference, the facts
    inference proved (a ``-1`` Reshape target makes ``seq >= 1`` wherever the model runs):
    :meth:`at_least` and :meth:`at_most` return a new domain, never change this one. ``stated`` are
    the user's ranges alone, ``aliases`` the symbols stated to be another (``--assume a==b``: ``b``
    is read as ``a``), ``statements`` those statements as reported (:meth:`assumed`).
    ``overflow_cap`` is the built-in premise (:data:`OVERFLOW_CAP`). (Compared by identity: a
    domain is one value passed around, not a key.)"""

    # (the defaults: one empty read-only mapping each)
    ranges: Mapping[str, Bound] = field(default_factory=lambda: _NONE)
    stated: Mapping[str, Bound] = field(default_factory=lambda: _NONE)
    aliases: Mapping[str, str] = field(default_factory=lambda: _NO_ALIASES)
    statements: tuple[str, ...] = ()
    overflow_cap: int = OVERFLOW_CAP

    @classmethod
    def from_premises(cls, stated: Mapping[str, Bound], aliases: Mapping[str, str] | None = None,
                      statements: tuple[str, ...] = ()) -> Domain:
        """The domain of the user's statements: ``stated`` ranges (``{"seq": (3, None)}``), ``aliases``
        and the statements' text, as a driver resolved them for one model."""
        return cls(dict(stated), dict(stated), dict(aliases or {}), tuple(statements))

    def assumed(self) -> tuple[str, ...]:
        """What an output made in this domain reports it relied on: the user's statements (the
        built-in premise is the contract of every output, SPEC.md section 6, and is not repeated)."""
        return self.statements

    def proven(self) -> dict[str, Bound]:
        """The ranges in force beyond what the user stated (what inference proved)."""
        return {k: v for k, v in self.ranges.items() if self.stated.get(k) != v}

    def with_ranges(self, ranges: Mapping[str, Bound]) -> Domain:
        """This domain with ``ranges`` in force instead (copied)."""
        return replace(self, ranges=dict(ranges))

    def where(self, name: str, bound: Bound) -> Domain:
        """This domain with symbol ``name`` ranging over ``bound`` (replacing its range): a case of
        a proof (``seq >= 3``, where min/max settle)."""
        return replace(self, ranges={**self.ranges, name: bound})

    def at_least(self, name: str, k: int) -> Domain:
        """This domain with ``name >= k`` proved (itself when already known)."""
        lo, hi = self.ranges.get(name, (None, None))
        if lo is not None and lo >= k:
            return self
        return self.where(name, (k, hi))

    def at_most(self, name: str, k: int) -> Domain:
        """This domain with ``name <= k`` proved (itself when already known)."""
        lo, hi = self.ranges.get(name, (None, None))
        if hi is not None and hi <= k:
            return self
        return self.where(name, (lo, k))


BASE = Domain()
"""No premise beyond the built-in one: every symbol is any dim."""


def prove_broadcast(a: Dim, b: Dim, dom: Domain) -> Domain:
    """``dom`` with what a broadcast of dims ``a`` and ``b`` proves about a symbol wherever the model
    runs (they are equal, or one of them is 1): against a known ``k >= 2`` a symbol is 1 or ``k``,
    so in ``[1, k]``; against 0 it is 0 or 1; against an expression that is never 1 (``seq + 2``,
    or a symbol proved >= 2) it is >= 1 and at most that expression's bound."""
    for x, other in ((a, b), (b, a)):
        name = plain_symbol(x)
        if name is None or other is None:
            continue
        if type(other) is int:
            if other == 0:
                dom = dom.at_most(name, 1)
            elif other >= 2:
                dom = dom.at_least(name, 1).at_most(name, other)
        elif dim_is_one(other, dom) is False:
            lo, hi = dim_bounds(other, dom)
            if lo is not None and lo >= 2:
                dom = dom.at_least(name, 1)
                if hi is not None:
                    dom = dom.at_most(name, hi)
    return dom


def _emul(x: _Ext, y: _Ext) -> _Ext:
    # products of interval endpoints: 0 times an unbounded side is 0 (the values are finite)
    if x == 0 or y == 0:
        return 0
    return x * y


def _imul(a: tuple[_Ext, _Ext], b: tuple[_Ext, _Ext]) -> tuple[_Ext, _Ext]:
    if a[0] >= 0 and b[0] >= 0:  # the common case: both non-negative
        return _emul(a[0], b[0]), _emul(a[1], b[1])
    c = (_emul(a[0], b[0]), _emul(a[0], b[1]), _emul(a[1], b[0]), _emul(a[1], b[1]))
    return min(c), max(c)


def _efloordiv(x: _Ext, k: int) -> _Ext:
    return x if type(x) is float else x // k


def _atom_bounds(atom: _Atom, assumed: Mapping[str, Bound], cap: int = MAX_DIM) -> tuple[_Ext, _Ext]:
    kind = atom.kind
    if kind == _NAME:
        r = assumed.get(atom.name) if assumed else None  # type: ignore[arg-type]
        if r is None:
            return 0, cap
        rlo, rhi = r
        return (0 if rlo is None or rlo < 0 else rlo), (cap if rhi is None or rhi > cap else rhi)
    assert atom.expr is not None
    if kind == _MOD:
        return 0, atom.k - 1
    lo, hi = _sym_bounds(atom.expr, assumed, cap)
    if kind == _FLOOR:
        return _efloordiv(lo, atom.k), _efloordiv(hi, atom.k)
    other = atom.other
    olo: _Ext
    ohi: _Ext
    if type(other) is int:
        olo = ohi = other
    else:  # a min/max atom's other operand is an int or a Sym
        olo, ohi = _sym_bounds(other, assumed, cap)  # type: ignore[arg-type]  # a Sym here
    if kind == _MIN:
        return min(lo, olo), min(hi, ohi)
    return max(lo, olo), max(hi, ohi)


def _sym_bounds(s: Sym, assumed: Mapping[str, Bound], cap: int = MAX_DIM) -> tuple[_Ext, _Ext]:
    total_lo: _Ext = 0
    total_hi: _Ext = 0
    for mono, c in s._terms:
        lo: _Ext = 1
        hi: _Ext = 1
        for atom in mono:
            lo, hi = _imul((lo, hi), _atom_bounds(atom, assumed, cap))
        lo, hi = _emul(lo, c), _emul(hi, c)
        if c < 0:
            lo, hi = hi, lo
        total_lo += lo
        total_hi += hi
    return total_lo, total_hi


def dim_bounds(d: Dim, dom: Domain = BASE, cap: int = MAX_DIM) -> Bound:
    """An interval that holds ``d`` for every value of its symbols in ``dom``; ``(None, None)`` for
    an unknown dim. ``cap`` lowers the symbols' upper bound (the overflow check, ops/numeric.py:
    ``dom.overflow_cap``)."""
    d = _coerce(d)
    if d is None:
        return None, None
    if isinstance(d, int):
        return d, d
    lo, hi = _sym_bounds(d, dom.ranges, cap)
    return (None if type(lo) is float else lo), (None if type(hi) is float else hi)  # type: ignore[return-value]


def _diff_bounds(a: Union[int, Sym], b: Union[int, Sym], assumed: Mapping[str, Bound]) -> tuple[_Ext, _Ext]:
    d = dim_sub(a, b)
    if type(d) is int:
        return d, d
    return _sym_bounds(d, assumed)  # type: ignore[arg-type]


def dim_compare(a: Dim, b: Dim, dom: Domain = BASE) -> Optional[tuple[_Ext, _Ext]]:
    """The bounds of ``a - b`` (for Less/Greater/Equal), or None when either is unknown."""
    a, b = _coerce(a), _coerce(b)
    if a is None or b is None:
        return None
    return _diff_bounds(a, b, dom.ranges)


def _nonzero(d: Dim, dom: Domain) -> bool:
    lo, hi = dim_bounds(d, dom)
    return (lo is not None and lo > 0) or (hi is not None and hi < 0)


def dim_is_one(d: Dim, dom: Domain = BASE) -> Optional[bool]:
    """True if known to be 1, False if known not to be 1, None if it depends on the symbols.

    A symbol is never judged != 1 on its own (``batch`` may well be 1 at run time); ``seq + 2`` is,
    and so is ``seq`` under ``--assume seq>=2``."""
    if type(d) is int:
        return d == 1
    d = _coerce(d)
    if d is None:
        return None
    if isinstance(d, int):
        return d == 1
    lo, hi = _sym_bounds(d, dom.ranges)
    if lo > 1 or hi < 1:
        return False
    return True if lo == hi == 1 else None


def dims_equal(a: Dim, b: Dim, dom: Domain = BASE) -> Optional[bool]:
    """True if provably the same in ``dom``, False if provably different, None if unknown."""
    a, b = _coerce(a), _coerce(b)
    if a is None or b is None:
        return None
    # seq and seq + 1 differ for every value of seq; seq and 3 or batch and seq may not.
    diff = _const_diff(a, b)
    if diff is not None:
        return diff == 0
    lo, hi = _diff_bounds(a, b, dom.ranges)
    if lo > 0 or hi < 0:
        return False
    return True if lo == hi == 0 else None


def dim_nonnegative(d: Dim, dom: Domain = BASE) -> bool:
    """True when ``d`` is provably >= 0 for every value of its symbols in ``dom``.

    It lets shape arithmetic decide ``Equal(Shape(x)[0], -1)`` (exporters' ``-1`` handling before
    Reshape and Expand): a dim is never -1."""
    lo, _ = dim_bounds(d, dom)
    return lo is not None and lo >= 0
