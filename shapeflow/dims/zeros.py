"""When is an expression 0? Zero sets over the symbols (a Reshape target ``4*batch`` is 0 where
``batch`` is), decided in the domain."""

from __future__ import annotations

from typing import Mapping, Optional, Union

from .canonical import _FLOOR, _MAX, _MIN, _MOD, _NAME, Dim, Sym, _Atom, _coerce, _split_const
from .domain import BASE, Bound, Domain, _atom_bounds, _sym_bounds


# ---------------------------------------------------------------------------------------------
# zero sets: when is an expression 0?
#
# A zero set is written as a disjunction of conjunctions of "symbol == 0": a frozenset of
# frozensets of names, ``{{batch}, {seq}}`` for ``batch*seq``, ``{{batch, seq}}`` for
# ``batch + seq``, ``{frozenset()}`` for "always". Two approximations are computed: one that
# contains every binding where the expression is 0 (:func:`_zero_over`, None when nothing useful
# is known), and one contained in it (:func:`_zero_under`, the empty family when nothing is).

_Clauses = frozenset[frozenset[str]]
_NEVER: _Clauses = frozenset()
_ALWAYS: _Clauses = frozenset({frozenset()})
_MAX_CLAUSES = 64


def _absorb(clauses: set[frozenset[str]]) -> _Clauses:
    # a conjunction that contains another one adds nothing to the disjunction
    return frozenset(c for c in clauses if not any(o < c for o in clauses))


def _z_or(a: _Clauses, b: _Clauses) -> _Clauses:
    return _absorb(set(a) | set(b))


def _z_and(a: _Clauses, b: _Clauses) -> Optional[_Clauses]:
    if len(a) * len(b) > _MAX_CLAUSES:
        return None
    return _absorb({x | y for x in a for y in b})


def _sign_known(d: Union[int, Sym], lo_at_least: int, assumed: Mapping[str, Bound]) -> bool:
    lo, _ = (d, d) if type(d) is int else _sym_bounds(d, assumed)  # type: ignore[arg-type]
    return lo >= lo_at_least


def _atom_zero_over(atom: _Atom, assumed: Mapping[str, Bound]) -> Optional[_Clauses]:
    kind = atom.kind
    if kind == _NAME:
        r = assumed.get(atom.name)  # type: ignore[arg-type]
        if r is not None and r[0] is not None and r[0] >= 1:
            return _NEVER
        return frozenset({frozenset({atom.name})})  # type: ignore[arg-type]
    lo, hi = _atom_bounds(atom, assumed)
    if lo > 0 or hi < 0:
        return _NEVER
    if kind == _MIN or kind == _MAX:
        a, b = atom.expr, atom.other
        assert a is not None and b is not None
        if not (_sign_known(a, 0, assumed) and _sign_known(b, 0, assumed)):
            return None
        za, zb = _zero_over(a, assumed), _zero_over(b, assumed)
        if za is None or zb is None:
            return None
        # of two non-negative operands, the min is 0 when either is, the max when both are
        return _z_or(za, zb) if kind == _MIN else _z_and(za, zb)
    return None  # floor and mod are 0 on ranges, not only at 0


def _zero_over(d: Union[int, Sym], assumed: Mapping[str, Bound]) -> Optional[_Clauses]:
    """Every binding where ``d`` is 0 satisfies one of the clauses (None: no such family known)."""
    if type(d) is int:
        return _ALWAYS if d == 0 else _NEVER
    lo, hi = _sym_bounds(d, assumed)  # type: ignore[arg-type]
    if lo > 0 or hi < 0:
        return _NEVER
    terms, const = _split_const(d)  # type: ignore[arg-type]
    if const or len({c > 0 for _, c in terms}) != 1:
        # mixed signs, or a constant, cancel in ways the clauses cannot say (seq - 1); where the
        # constant keeps the sum away from 0 the bounds above have seen it
        return None
    total = _ALWAYS
    for mono, _ in terms:
        # a sum of same-signed non-negative terms is 0 when every term is
        mono_z: Optional[_Clauses] = _NEVER
        for atom in mono:
            lo_a, _ = _atom_bounds(atom, assumed)
            if lo_a < 0:
                return None
            za = _atom_zero_over(atom, assumed)
            if za is None:
                return None
            mono_z = _z_or(mono_z, za)  # type: ignore[arg-type]
        nxt = _z_and(total, mono_z)  # type: ignore[arg-type]
        if nxt is None:
            return None
        total = nxt
    return total


def _atom_zero_under(atom: _Atom, assumed: Mapping[str, Bound]) -> _Clauses:
    kind = atom.kind
    if kind == _NAME:
        return frozenset({frozenset({atom.name})})  # type: ignore[arg-type]
    a = atom.expr
    assert a is not None
    if kind == _FLOOR or kind == _MOD:  # floor(0/k) and 0 % k are 0
        return _zero_under(a, assumed)
    b = atom.other
    assert b is not None
    za, zb = _zero_under(a, assumed), _zero_under(b, assumed)
    if kind == _MIN:  # min(0, b) is 0 when b >= 0
        return _z_or(za if _sign_known(b, 0, assumed) else _NEVER, zb if _sign_known(a, 0, assumed) else _NEVER)
    both = _z_and(za, zb)  # max(0, 0)
    return both if both is not None else _NEVER


def _zero_under(d: Union[int, Sym], assumed: Mapping[str, Bound]) -> _Clauses:
    """Each clause, where it holds, makes ``d`` 0 (the empty family: no such clause known)."""
    if type(d) is int:
        return _ALWAYS if d == 0 else _NEVER
    terms, const = _split_const(d)  # type: ignore[arg-type]
    if const:
        return _NEVER
    total = _ALWAYS
    for mono, _ in terms:
        mono_z = _NEVER
        for atom in mono:  # a product is 0 when a factor is
            mono_z = _z_or(mono_z, _atom_zero_under(atom, assumed))
        nxt = _z_and(total, mono_z)  # and a sum when every term is
        if nxt is None:
            return _NEVER
        total = nxt
    return total


def zero_implies(t: Dim, d: Dim, dom: Domain = BASE) -> bool:
    """Whether ``t == 0`` implies ``d == 0`` for every value of the symbols in the domain: a
    computed Reshape target ``4*batch`` at a position whose input dim is ``batch`` (a 0 there
    copies ``batch``, which is then 0 as well)."""
    t, d = _coerce(t), _coerce(d)
    if t is None or d is None:
        return False
    over = _zero_over(t, dom.ranges)
    if over is None:
        return False
    if not over:
        return True
    under = _zero_under(d, dom.ranges)
    return all(any(u <= c for u in under) for c in over)


def zero_symbol(d: Dim, dom: Domain = BASE) -> Optional[str]:
    """The one symbol ``x`` such that ``d`` is 0 only where ``x`` is (``seq``, ``4*seq``,
    ``seq*min(3, seq)``), else None."""
    d = _coerce(d)
    if type(d) is not Sym:
        return None
    over = _zero_over(d, dom.ranges)
    if over is None or len(over) != 1:
        return None
    (clause,) = over
    return next(iter(clause)) if len(clause) == 1 else None


def zero_forcing_symbols(d: Dim, dom: Domain = BASE) -> list[str]:
    """The symbols whose being 0 makes ``d`` 0 (``batch`` and ``seq`` for ``16*batch*min(3, seq)``):
    where the model runs only if ``d != 0``, each of them is >= 1."""
    d = _coerce(d)
    if d is None:
        return []
    return sorted(next(iter(c)) for c in _zero_under(d, dom.ranges) if len(c) == 1)
