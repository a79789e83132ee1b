"""The operations whose result the domain decides: floor division and remainder by a constant
(``floor(E/k)`` is 0 where E lies in [0, k)), min and max (decided from the bounds where they can
be), truncating division, broadcasting, substitution and the simplifications built on them.
"""

from __future__ import annotations

import operator
from math import gcd
from typing import Mapping, Union

from .canonical import (
    _FLOOR, _MAX, _MIN, _MOD, _NAME, MAX_NESTING, Dim, Sym, _absorb_minmax, _add_const, _Atom, _atom_sym, _coerce,
    _exact_div, _floor_form, _from_dict, _monotone, _nesting, _scale, _split_const, _var_key, _weight, dim_add,
    dim_mul, dim_neg, dim_sub, has_minmax, plain_symbol,
)
from .domain import BASE, MAX_DIM, Domain, _diff_bounds, _nonzero, _sym_bounds, dim_bounds, dim_is_one, dims_equal

# How many folds (:func:`_fold`) may be under way, one inside another's operands.
_FOLD_DEPTH = 3


def _fold(d: Union[int, Sym], dom: Domain, depth: int) -> Union[int, Sym]:
    """An operand of a new min/max atom, folded (:func:`_fold_minmax`) once: only there, so that
    sums stay the one canonical polynomial whatever order they were added in. ``depth`` counts the
    folds under way: the fold's own operands are folded again, a few levels deep."""
    if type(d) is not Sym or len(d._terms) < 2 or not _nesting(d) or depth >= _FOLD_DEPTH:
        return d
    out = _fold_minmax(d, dom, depth + 1)
    return d if out is None else out


def _fold_minmax(s: Sym, dom: Domain, depth: int) -> Dim:
    """``R + max(A, B)`` as ``max(R + A, R + B)`` and ``R - max(A, B)`` as ``min(R - A, R - B)``
    (min alike), where that is smaller: the rest cancels into the operands, so that
    ``max(0, seq - max(3, seq) + 3)`` (a slice's length from clamped ends) is ``min(3, seq)``."""
    terms = s._terms
    if len(terms) < 2:
        return s
    for i, (mono, c) in enumerate(terms):
        if (c != 1 and c != -1) or len(mono) != 1 or (mono[0].kind != _MIN and mono[0].kind != _MAX):
            continue
        atom = mono[0]
        rest = _from_dict(dict(terms[:i] + terms[i + 1:]))
        if type(rest) is not Sym or rest.symbols().isdisjoint(_atom_sym(atom).symbols()):
            continue  # a constant rest is already pulled out (_minmax's canonical form)
        a, b = atom.expr, atom.other
        if c == 1:
            x, y, kind = dim_add(rest, a), dim_add(rest, b), atom.kind
        else:
            x, y, kind = dim_sub(rest, a), dim_sub(rest, b), (_MAX if atom.kind == _MIN else _MIN)
        folded = _min_or_max(kind, x, y, dom, depth)
        if type(folded) is int or (type(folded) is Sym and _weight(folded) < _weight(s)):
            return folded
    return s


def _floordiv_const(s: Sym, k: int, dom: Domain) -> Dim:
    """floor(s / k) for an int k != 0."""
    if k == 1:
        return s
    if k < 0:  # floor(s / -k) == floor(-s / k)
        s, k = _scale(s, -1), -k  # type: ignore[assignment]  # -Sym is a Sym
        if k == 1:
            return s
    var, const = _split_const(s)
    if all(c % k == 0 for _, c in var):
        # floor((k*P + c) / k) == P + floor(c / k) because P takes integer values.
        return _add_const(Sym._make(tuple((m, c // k) for m, c in var)), const // k)
    # Pull whole multiples of k out of the constant, then divide out the common factor, so
    # equal quotients written differently meet one atom: (seq + 5)//4 == (seq + 1)//4 + 1 and
    # (2*seq)//4 == seq//2.
    q, r = divmod(const, k)
    g = gcd(k, r, *(c for _, c in var))
    inner_terms = tuple((m, c // g) for m, c in var)
    if r:
        inner_terms += (((), r // g),)
    k //= g
    if len(inner_terms) == 1 and inner_terms[0][1] == 1 and len(inner_terms[0][0]) == 1:
        atom = inner_terms[0][0][0]
        if atom.kind == _FLOOR:  # floor(floor(x/j)/k) == floor(x/(j*k)) for positive j, k
            return _add_const(_atom_sym(_Atom(_FLOOR, None, atom.expr, atom.k * k)), q)
    inner = Sym._make(inner_terms)
    if _nesting(inner) >= MAX_NESTING:
        return None
    lo, hi = _sym_bounds(inner, dom.ranges)
    if lo >= 0 and hi < k:  # floor(E/k) == 0 when E lies in [0, k)
        return q
    return _add_const(_atom_sym(_Atom(_FLOOR, None, inner, k)), q)


def _mod_const(s: Sym, k: int, dom: Domain) -> Dim:
    """s % k (Python semantics: the sign of k) for an int k != 0."""
    if k < 0:  # x % -k == -((-x) % k)
        return dim_neg(_mod_const(_scale(s, -1), -k, dom))  # type: ignore[arg-type]  # -Sym is a Sym
    if k == 1:
        return 0
    # Only the coefficients modulo k matter, as every atom takes integer values.
    var, const = _split_const(s)
    const %= k
    var = tuple((m, c % k) for m, c in var if c % k)
    if not var:
        return const
    # (g*x) % (g*j) == g * (x % j): one atom for every multiple.
    g = gcd(k, const, *(c for _, c in var))
    inner_terms = tuple((m, c // g) for m, c in var)
    if const:
        inner_terms += (((), const // g),)
    k //= g
    if len(inner_terms) == 1 and inner_terms[0][1] == 1 and len(inner_terms[0][0]) == 1:
        atom = inner_terms[0][0][0]
        if atom.kind == _MOD:
            if atom.k <= k:  # x % j lies in [0, j), so a further % k (k >= j) changes nothing
                return _scale(_atom_sym(atom), g)
            if atom.k % k == 0:  # (x % j) % k == x % k when k divides j
                return dim_mul(g, _mod_const(atom.expr, k, dom))  # type: ignore[arg-type]
    inner = Sym._make(inner_terms)
    if _nesting(inner) >= MAX_NESTING:
        return None
    lo, hi = _sym_bounds(inner, dom.ranges)
    if lo >= 0 and hi < k:  # E % k == E when E lies in [0, k)
        return _scale(inner, g)
    return _scale(_atom_sym(_Atom(_MOD, None, inner, k)), g)


def dim_floordiv(a: Dim, b: Dim, dom: Domain = BASE) -> Dim:
    """Floor division (Python semantics). ``None`` for a zero divisor or when not expressible."""
    if type(a) is int and type(b) is int:
        return a // b if b else None
    a, b = _coerce(a), _coerce(b)
    if a is None or b is None:
        return None
    if isinstance(b, int):
        if b == 0:
            return None
        return a // b if isinstance(a, int) else _floordiv_const(a, b, dom)
    # Symbolic divisor: only exact cases, which hold whenever the division can run (b != 0).
    if isinstance(a, int):
        return 0 if a == 0 else None
    if a == b:
        return 1
    return _exact_div(a, b)


def dim_mod(a: Dim, b: Dim, dom: Domain = BASE) -> Dim:
    """Remainder with the sign of the divisor (Python semantics); ``None`` for a zero divisor."""
    if type(a) is int and type(b) is int:
        return a % b if b else None
    a, b = _coerce(a), _coerce(b)
    if a is None or b is None:
        return None
    if isinstance(b, int):
        if b == 0:
            return None
        return a % b if isinstance(a, int) else _mod_const(a, b, dom)
    if isinstance(a, int):
        return 0 if a == 0 else None
    if a == b or _exact_div(a, b) is not None:
        return 0
    return None


def require_at_least(d: Dim, k: int, dom: Domain) -> Domain:
    """``dom`` with what ``d >= k`` proves about the one symbol of ``d``, where the model runs only
    if ``d >= k`` (a Conv refuses a window longer than its padded input): for ``d`` monotone in one
    symbol ``x``, ``x`` is at least the least ``x`` with ``d >= k``. ``dom`` itself when nothing
    is learned."""
    if type(d) is not Sym or not _monotone(d):
        return dom
    names = d.symbols()
    if len(names) != 1:
        return dom
    (name,) = names
    lo, _ = dim_bounds(d, dom)
    if lo is not None and lo >= k:
        return dom
    low, high = 0, MAX_DIM
    if substitute(d, {name: high}, dom) < k:  # type: ignore[operator]
        return dom
    while low < high:  # the least x with d(x) >= k
        mid = (low + high) // 2
        if substitute(d, {name: mid}, dom) >= k:  # type: ignore[operator]
            high = mid
        else:
            low = mid + 1
    return dom.at_least(name, low) if low > 0 else dom


def _floor_le(a: Union[int, Sym], b: Union[int, Sym], dom: Domain) -> bool:
    """``a <= b`` for two ``floor(E/k) + c`` of one ``k``, because floor is monotone:
    ``floor(E/k) + c`` is ``floor((E + k*c)/k)``, so ``E1 + k*c1 <= E2 + k*c2`` is enough."""
    fa, fb = _floor_form(a), _floor_form(b)
    if fa is None or fb is None or fa[1] != fb[1]:
        return False
    k = fa[1]
    lo, _ = _diff_bounds(dim_add(fb[0], k * fb[2]), dim_add(fa[0], k * fa[2]), dom.ranges)  # type: ignore[arg-type]
    return lo >= 0


def _minmax(kind: int, a: Union[int, Sym], b: Union[int, Sym], dom: Domain, depth: int = 0) -> Dim:
    a, b = _fold(a, dom, depth), _fold(b, dom, depth)
    if a == b:
        return a
    absorbed = _absorb_minmax(kind, a, b)
    if absorbed is not None:
        return absorbed
    lo, hi = _diff_bounds(a, b, dom.ranges)
    if lo < 0 < hi and type(a) is Sym and type(b) is Sym:
        # min(floor(L/2), floor((L + 1)/2)) is floor(L/2): the bounds of the difference cannot see it
        if _floor_le(a, b, dom):
            hi = 0
        elif _floor_le(b, a, dom):
            lo = 0
        else:
            # nor min(seq, max(0, seq - 3)): the difference folded, max(-3, -seq), is <= 0
            diff = _fold(dim_sub(a, b), dom, depth)  # type: ignore[arg-type]
            if type(diff) is Sym:
                lo, hi = _sym_bounds(diff, dom.ranges)
    if kind == _MIN:
        if hi <= 0:
            return a
        if lo >= 0:
            return b
    else:
        if lo >= 0:
            return a
        if hi <= 0:
            return b
    # Canonical form: an int operand second, else the operand with the smaller variable part
    # first; the first's constant term pulled out, min(x + c, y + c) == min(x, y) + c, so that
    # max(seq - 3, 0) and max(seq, 3) - 3 meet one atom.
    if type(a) is int or (type(b) is Sym and _var_key(b) < _var_key(a)):  # type: ignore[arg-type]
        a, b = b, a
    assert type(a) is Sym
    _, c = _split_const(a)
    if c:
        a = _add_const(a, -c)  # type: ignore[assignment]  # a Sym minus its constant stays a Sym
        b = dim_add(b, -c)  # type: ignore[assignment]
    if type(b) is int and len(a._terms) == 1:
        # max(max(x, 1), 2) == max(x, 2): chained slices end in one clamp, x[:4][:2] is min(2, x)
        mono, coeff = a._terms[0]
        if coeff == 1 and len(mono) == 1 and mono[0].kind == kind and type(mono[0].other) is int:
            atom = mono[0]
            bound = min(atom.other, b) if kind == _MIN else max(atom.other, b)  # type: ignore[type-var]  # an int: tested above
            return dim_add(_minmax(kind, atom.expr, bound, dom, depth), c)  # type: ignore[arg-type]
    if max(_nesting(a), _nesting(b)) >= MAX_NESTING:
        return None
    return _add_const(_atom_sym(_Atom(kind, None, a, 0, b)), c)


def dim_min(a: Dim, b: Dim, dom: Domain = BASE) -> Dim:
    """min(a, b): decided from the bounds in ``dom`` where it can be, else a ``min`` atom."""
    if type(a) is int and type(b) is int:
        return a if a <= b else b
    a, b = _coerce(a), _coerce(b)
    if a is None or b is None:
        return None
    return _minmax(_MIN, a, b, dom)


def dim_max(a: Dim, b: Dim, dom: Domain = BASE) -> Dim:
    """max(a, b): decided from the bounds in ``dom`` where it can be, else a ``max`` atom."""
    if type(a) is int and type(b) is int:
        return a if a >= b else b
    a, b = _coerce(a), _coerce(b)
    if a is None or b is None:
        return None
    return _minmax(_MAX, a, b, dom)


def _min_or_max(kind: int, a: Dim, b: Dim, dom: Domain, depth: int) -> Dim:
    """:func:`dim_min` or :func:`dim_max` inside a fold (``depth`` folds under way)."""
    if type(a) is int and type(b) is int:
        return (a if a <= b else b) if kind == _MIN else (a if a >= b else b)
    a, b = _coerce(a), _coerce(b)
    if a is None or b is None:
        return None
    return _minmax(kind, a, b, dom, depth)


def dim_truncdiv(a: Dim, b: Dim, dom: Domain = BASE) -> Dim:
    """Integer division rounding toward zero (onnxruntime's int Div); ``None`` for a zero divisor
    or where the sign of the dividend is not known."""
    if type(a) is int and type(b) is int:
        if b == 0:
            return None
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    a, b = _coerce(a), _coerce(b)
    if a is None or b is None:
        return None
    if isinstance(b, Sym):
        return dim_floordiv(a, b, dom)  # only exact quotients, which truncate alike
    if b == 0:
        return None
    if b < 0:
        return dim_neg(dim_truncdiv(a, -b, dom))
    lo, hi = dim_bounds(a, dom)
    if lo is not None and lo >= 0:
        return dim_floordiv(a, b, dom)
    if hi is not None and hi <= 0:
        return dim_neg(dim_floordiv(dim_neg(a), b, dom))
    return None


def dim_fmod(a: Dim, b: Dim, dom: Domain = BASE) -> Dim:
    """Remainder with the sign of the dividend (C's fmod; ONNX Mod with fmod=1, the float Mod).
    A divisor that may be 0 gives None: in float that is NaN, not a failed run."""
    if type(b) is not int and not _nonzero(b, dom):
        return None
    q = dim_truncdiv(a, b, dom)
    if q is None:
        return None
    return dim_sub(a, dim_mul(q, b))


def dim_exact_div(a: Dim, b: Dim, dom: Domain = BASE) -> Dim:
    """a / b when the quotient is an integer for every value of the symbols (float Div of shape
    values), else ``None``."""
    if type(a) is int and type(b) is int:
        return a // b if b and a % b == 0 else None
    a, b = _coerce(a), _coerce(b)
    if a is None or b is None or b == 0:
        return None
    if isinstance(b, Sym):
        # exact quotients only, and only where b is never 0: float Div by 0 is inf or NaN
        return dim_floordiv(a, b, dom) if _nonzero(b, dom) else None
    if isinstance(a, int):
        return a // b if a % b == 0 else None
    for _, c in a._terms:
        if c % b:
            return None
    return dim_floordiv(a, b, dom)


def broadcast_dim(a: Dim, b: Dim, dom: Domain = BASE) -> Dim:
    """One dim of numpy broadcasting, assuming the model runs.

    1 with x gives x; a known k != 1 wins (the other must be k or 1 for the model to run);
    equal dims give themselves. Two different known ints other than 1 cannot broadcast: ``None``.
    """
    a, b = _coerce(a), _coerce(b)
    if isinstance(a, int):
        if a == 1:
            return b
        if isinstance(b, int) and b != 1 and b != a:
            return None
        return a
    if isinstance(b, int):
        return a if b == 1 else b
    if a is None or b is None:
        return None  # an unknown could be 1 or could equal the other
    if a == b:
        return a
    # seq + 2 vs batch: if the model runs, batch is 1 or seq + 2; either way the result is seq + 2
    if dim_is_one(a, dom) is False:
        return a
    if dim_is_one(b, dom) is False:
        return b
    # min(512, seq) vs seq: where seq is 1 so is the other, so the result is seq (equal, or the
    # other is 1, or the model fails); the same test the other way round
    for x, y in ((a, b), (b, a)):
        name = plain_symbol(y)
        if name is not None and substitute(x, {name: 1}, dom) == 1:
            return y
        if _min_of(x, y, dom):
            return y
    # batch vs seq, both >= 1 (proved, or assumed): one is 1 and the other is the larger, or they
    # are equal; either way the larger (a 0 would break this: 0 against 1 broadcasts to 0)
    alo, _ = dim_bounds(a, dom)
    blo, _ = dim_bounds(b, dom)
    if alo is not None and alo >= 1 and blo is not None and blo >= 1:
        return dim_max(a, b, dom)
    return None


def _min_of(x: Union[int, Sym], y: Union[int, Sym], dom: Domain) -> bool:
    """Whether ``x`` is ``min(c, y)`` with ``c >= 1``: where ``y`` is 1 so is ``x`` (a position
    table sliced to a computed length, ``pos[:T]``, against ``T``)."""
    if type(x) is not Sym or len(x._terms) != 1:
        return False
    mono, c = x._terms[0]
    if c != 1 or len(mono) != 1 or mono[0].kind != _MIN:
        return False
    atom = mono[0]
    for this, other in ((atom.expr, atom.other), (atom.other, atom.expr)):
        if this == y:
            lo, _ = dim_bounds(other, dom)
            return lo is not None and lo >= 1
    return False


def substitute(d: Dim, bindings: Mapping[str, int], dom: Domain = BASE) -> Dim:
    """Bind symbols to ints everywhere (inside floor/mod too); a fully bound expr becomes an int."""
    d = _coerce(d)
    if not isinstance(d, Sym) or not bindings or d.symbols().isdisjoint(bindings):
        return d
    return _evaluate(d, bindings, dom)


def rebuild(d: Dim, dom: Domain = BASE) -> Dim:
    """``d`` built again from its parts, so that min/max/floor/mod are decided in ``dom`` (where
    ``seq >= 1``, ``max(1, seq)`` is ``seq``)."""
    d = _coerce(d)
    return _evaluate(d, {}, dom) if isinstance(d, Sym) else d


def join_pieces(x: str, c: int, first: int, lows: list[Dim], high: Dim, dom: Domain = BASE,
                indicator: bool = False) -> Dim:
    """One expression equal to ``high`` wherever symbol ``x >= c`` and to ``lows[i]`` at
    ``x = first + i``, or None. A few clamp forms of ``high`` are tried and each is checked: at
    the low values by substitution, and above ``c`` by building it again in that domain
    (:func:`rebuild`), where its min/max atoms are decided. ``x[T-1:T]`` is 1 from T = 1 and 0 at
    T = 0: ``min(1, T)``; a 2-wide, stride-2 pool over L is ``floor(L/2)`` from L = 2, 1 at L = 1
    and 0 at 0: ``max(min(1, L), floor(L/2))``. With ``indicator`` and one low value (``c = 1``),
    ``high + (low - high(0))*(1 - min(1, x))`` is the last resort: exact at every x, if not pretty
    (``4*b*min(1, s)`` where high is ``4*b`` and low 0)."""
    if high is None or any(low is None for low in lows):
        return None
    sym = Sym.symbol(x)
    clamps = [dim_max(dim_add(sym, k), 0, dom) for k in range(-c - 1, c + 2)]
    candidates: list[Dim] = [high, dim_max(high, 0, dom)]
    for clamp in clamps:
        candidates += [dim_min(high, clamp, dom), dim_min(dim_max(high, 0, dom), clamp, dom)]
    for m in (1, 2):
        for clamp in clamps:
            candidates.append(dim_max(high, dim_min(m, clamp, dom), dom))
    for k in range(1, c + 2):  # what a falling x leaves: max(batch, 1 - seq)
        candidates.append(dim_max(high, dim_sub(k, sym), dom))
    if indicator and c == 1 and first == 0:
        zero = dim_sub(1, dim_min(1, sym, dom))
        candidates.append(dim_add(high, dim_mul(dim_sub(lows[0], substitute(high, {x: 0}, dom)), zero)))
    above = dom.where(x, (c, dom.ranges.get(x, (None, None))[1]))
    for cand in candidates:
        if cand is None:
            continue
        if dims_equal(rebuild(cand, above), high, above) is not True:
            continue
        if all(dims_equal(substitute(cand, {x: first + i}, dom), low, dom) is True for i, low in enumerate(lows)):
            return cand
    return None


# How far above a symbol's lower bound simplest() looks for the point where min/max settle.
_SETTLE = 8


def simplest(d: Dim, dom: Domain = BASE) -> Dim:
    """``d`` in a simpler equivalent form, when ``d`` has one symbol and min/max atoms that settle
    (are decided) from some small value of it on: the settled form joined with the values below
    (:func:`join_pieces`), kept only when it reads easier. Pool output lengths:
    ``-floor(max(-2, -L)/2) + floor(max(2, L)/2) - 1`` is ``max(min(1, L), floor(L/2))``."""
    if type(d) is not Sym or not has_minmax(d):
        return d
    names = d.symbols()
    if len(names) != 1:
        return d
    (x,) = names
    ranges = dom.ranges
    lo, hi = ranges.get(x, (None, None))
    first = max(lo or 0, 0)
    for c in range(first, first + _SETTLE + 1):
        if hi is not None and c > hi:
            return d
        high = rebuild(d, dom.where(x, (c, hi)))
        if not has_minmax(high):
            break
    else:
        return d
    lows = [substitute(d, {x: v}, dom) for v in range(first, c)]
    joined = join_pieces(x, c, first, lows, high, dom)
    if type(joined) is int or (type(joined) is Sym and _weight(joined) < _weight(d)):
        return joined
    return d


def _evaluate(s: Sym, bindings: Mapping[str, int], dom: Domain) -> Dim:
    total: Dim = 0
    for mono, c in s._terms:
        term: Dim = c
        for atom in mono:
            term = dim_mul(term, _evaluate_atom(atom, bindings, dom))
        total = dim_add(total, term)
    return total


def _evaluate_atom(atom: _Atom, bindings: Mapping[str, int], dom: Domain) -> Dim:
    if atom.kind == _NAME:
        if atom.name in bindings:
            return operator.index(bindings[atom.name])  # type: ignore[index]
        return _atom_sym(atom)
    assert atom.expr is not None
    # (no bindings: rebuild(), every level again)
    inner = substitute(atom.expr, bindings, dom) if bindings else _evaluate(atom.expr, bindings, dom)
    if atom.kind == _FLOOR:
        return dim_floordiv(inner, atom.k, dom)
    if atom.kind == _MOD:
        return dim_mod(inner, atom.k, dom)
    other = atom.other
    if type(other) is Sym:
        other = substitute(other, bindings, dom) if bindings else _evaluate(other, bindings, dom)
    return dim_min(inner, other, dom) if atom.kind == _MIN else dim_max(inner, other, dom)


def dim_resolve(d: Dim, dom: Domain = BASE) -> Dim:
    """``d`` rebuilt from its atoms, innermost first, in ``dom``:
    every min, max, floor and mod those ranges decide is decided. Under ``T >= 1``,
    ``max(0, T - max(1, T) + 1)`` is 1, which its bounds alone cannot tell. (Recursion follows
    the nesting of the expression, which :data:`MAX_NESTING` bounds.)"""
    d = _coerce(d)
    if not isinstance(d, Sym):
        return d
    total: Dim = 0
    for mono, c in d._terms:
        term: Dim = c
        for atom in mono:
            term = dim_mul(term, _resolve_atom(atom, dom))
        total = dim_add(total, term)
    return total


def _resolve_atom(atom: _Atom, dom: Domain) -> Dim:
    if atom.kind == _NAME:
        return _atom_sym(atom)
    inner = dim_resolve(atom.expr, dom)
    if atom.kind == _FLOOR:
        return dim_floordiv(inner, atom.k, dom)
    if atom.kind == _MOD:
        return dim_mod(inner, atom.k, dom)
    other = dim_resolve(atom.other, dom)
    return dim_min(inner, other, dom) if atom.kind == _MIN else dim_max(inner, other, dom)
