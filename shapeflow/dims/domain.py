"""The value domain of the symbols and the bounds of every expression in it (SPEC.md section 6).

A named symbol is a dim: an integer in [0, MAX_DIM], unless the user stated a tighter range.
:func:`dim_bounds` gives an interval that holds an expression for every value of its symbols in
the domain; comparisons (:func:`dims_equal`, :func:`dim_is_one`) are decided from it.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator, Mapping, Optional, Union

from .canonical import _FLOOR, _MIN, _MOD, _NAME, Dim, Sym, _Atom, _coerce, _const_diff, dim_sub, plain_symbol


# ---------------------------------------------------------------------------------------------
# the domain: bounds of every expression, from symbols >= 0 and the user's assumptions

Bound = tuple[Optional[int], Optional[int]]
"""A closed interval ``(lo, hi)`` of integers; ``None`` is unbounded on that side."""

_NO_RANGES: dict[str, Bound] = {}
_ASSUMED: ContextVar[Mapping[str, Bound]] = ContextVar("shapeflow_assumed", default=_NO_RANGES)

_INF = float("inf")
MAX_DIM = 2**62
"""The largest value a symbol takes: no tensor has a dim of 2**62 elements (4 EiB of bytes)."""
_Ext = Union[int, float]  # an int, or +-inf


@contextmanager
def assuming(ranges: Mapping[str, Bound]) -> Iterator[None]:
    """Within the block, symbol ``name`` ranges over ``ranges[name]`` (intersected with >= 0)
    instead of all integers >= 0. Only what the user stated belongs here (``--assume``)."""
    token = _ASSUMED.set(dict(ranges))
    try:
        yield
    finally:
        _ASSUMED.reset(token)


def current_assumptions() -> Mapping[str, Bound]:
    """The ranges in force: the :func:`assuming` block's (empty outside one)."""
    return _ASSUMED.get()


def prove_at_least(name: str, k: int) -> bool:
    """Record, inside an :func:`assuming` block, that symbol ``name`` is >= ``k`` wherever the
    model runs (inference proves such facts: a Reshape's ``-1`` fails over an empty product).
    Returns whether the range got tighter; outside a block nothing is recorded."""
    ranges = _ASSUMED.get()
    if not isinstance(ranges, dict) or ranges is _NO_RANGES:
        return False
    lo, hi = ranges.get(name, (None, None))
    if lo is not None and lo >= k:
        return False
    ranges[name] = (k, hi)
    return True


def prove_at_most(name: str, k: int) -> bool:
    """As :func:`prove_at_least`, for ``name <= k``."""
    ranges = _ASSUMED.get()
    if not isinstance(ranges, dict) or ranges is _NO_RANGES:
        return False
    lo, hi = ranges.get(name, (None, None))
    if hi is not None and hi <= k:
        return False
    ranges[name] = (lo, k)
    return True


def prove_broadcast(a: Dim, b: Dim) -> None:
    """Record what a broadcast of dims ``a`` and ``b`` proves about a symbol wherever the model
    runs (they are equal, or one of them is 1): against a known ``k >= 2`` a symbol is 1 or ``k``,
    so in ``[1, k]``; against 0 it is 0 or 1; against an expression that is never 1 (``seq + 2``,
    or a symbol proved >= 2) it is >= 1 and at most that expression's bound."""
    for x, other in ((a, b), (b, a)):
        name = plain_symbol(x)
        if name is None or other is None:
            continue
        if type(other) is int:
            if other == 0:
                prove_at_most(name, 1)
            elif other >= 2:
                prove_at_least(name, 1)
                prove_at_most(name, other)
        elif dim_is_one(other) is False:
            lo, hi = dim_bounds(other)
            if lo is not None and lo >= 2:
                prove_at_least(name, 1)
                if hi is not None:
                    prove_at_most(name, hi)


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


def dim_bounds(d: Dim, cap: int = MAX_DIM) -> Bound:
    """An interval that holds ``d`` for every value of its symbols in the domain (symbols >= 0,
    or what :func:`assuming` states); ``(None, None)`` for an unknown dim. ``cap`` lowers the
    symbols' upper bound (the int64 overflow check, ops/numeric.py)."""
    d = _coerce(d)
    if d is None:
        return None, None
    if isinstance(d, int):
        return d, d
    lo, hi = _sym_bounds(d, _ASSUMED.get(), cap)
    return (None if type(lo) is float else lo), (None if type(hi) is float else hi)  # type: ignore[return-value]


def _diff_bounds(a: Union[int, Sym], b: Union[int, Sym]) -> tuple[_Ext, _Ext]:
    d = dim_sub(a, b)
    if type(d) is int:
        return d, d
    return _sym_bounds(d, _ASSUMED.get())  # type: ignore[arg-type]


def dim_compare(a: Dim, b: Dim) -> Optional[tuple[_Ext, _Ext]]:
    """The bounds of ``a - b`` (for Less/Greater/Equal), or None when either is unknown."""
    a, b = _coerce(a), _coerce(b)
    if a is None or b is None:
        return None
    return _diff_bounds(a, b)


def _nonzero(d: Dim) -> bool:
    lo, hi = dim_bounds(d)
    return (lo is not None and lo > 0) or (hi is not None and hi < 0)


def dim_is_one(d: Dim) -> Optional[bool]:
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
    lo, hi = _sym_bounds(d, _ASSUMED.get())
    if lo > 1 or hi < 1:
        return False
    return True if lo == hi == 1 else None


def dims_equal(a: Dim, b: Dim) -> Optional[bool]:
    """True if provably the same, False if provably different, None if unknown."""
    a, b = _coerce(a), _coerce(b)
    if a is None or b is None:
        return None
    # seq and seq + 1 differ for every value of seq; seq and 3 or batch and seq may not.
    diff = _const_diff(a, b)
    if diff is not None:
        return diff == 0
    lo, hi = _diff_bounds(a, b)
    if lo > 0 or hi < 0:
        return False
    return True if lo == hi == 0 else None


def dim_nonnegative(d: Dim) -> bool:
    """True when ``d`` is provably >= 0 for every value of its symbols in the domain.

    It lets shape arithmetic decide ``Equal(Shape(x)[0], -1)`` (exporters' ``-1`` handling before
    Reshape and Expand): a dim is never -1."""
    lo, _ = dim_bounds(d)
    return lo is not None and lo >= 0
