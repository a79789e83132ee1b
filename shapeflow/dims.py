"""Symbolic dimensions (SPEC.md section 1).

A dim is an ``int`` (known), a :class:`Sym` (an expression over named symbols) or ``None``
(unknown). Every ``None`` is a different unknown, so nothing is ever provably equal to it.

A ``Sym`` is a polynomial with integer coefficients over *atoms*. An atom is a named symbol
(``batch``; any string read from a file is just a name, even ``"2*seq"``) or an opaque
sub-expression the polynomial form cannot express: ``floor(E/k)`` and ``E % k`` for a
positive int ``k``, and ``min(A, B)`` / ``max(A, B)``. Every result is put in one canonical form,
so structurally equal expressions compare and hash equal and print the same text; a result
without symbols is returned as an ``int``. A ``Sym`` therefore never stands for a constant.

The value domain (SPEC.md section 6): a named symbol is a dim, an integer in [0, 2**62] (no
tensor has more elements on one axis), unless the user stated a tighter range (:func:`assuming`, ``--assume seq>=3``); an expression over symbols (a
shape *value*) may be negative. :func:`dim_bounds` gives an interval that holds for every value
of the symbols in that domain, and ``min``/``max``/comparisons are decided from it where they can
be: ``min(3, seq)`` stays symbolic, ``max(seq + 1, 0)`` is ``seq + 1``.

The arithmetic is sound for every value of the symbols in the domain, with two allowances: a
division by a symbolic divisor is simplified only where the divisor could be zero solely in a
model that fails at run time anyway (``(batch*seq) // seq == batch``), and symbolic arithmetic is
exact integer arithmetic, which int64 matches while the values fit in it (no tensor has 2**63
elements; known ints are wrapped as int64 where the op does).

Beyond bounds, the module reasons about when an expression is 0 (:func:`zero_implies`,
:func:`zero_forcing_symbols`: a Reshape target ``4*batch`` over ``batch``), and keeps expressions
readable: a new min/max folds a sum into its operands (``max(0, seq - max(3, seq) + 3)`` is
``min(3, seq)``), the lattice laws and monotone floors decide more min/max, and a univariate
expression whose min/max settle from some small value on is joined with its small values
(:func:`simplest`, :func:`join_pieces`: a pool's ``max(floor(L/2), min(1, L))``).

This module is pure Python on purpose: inference, lint rules and rewrites share it, and it
runs per node on very large graphs, so the common cases (int with int, Sym with int) take a
short path.
"""

from __future__ import annotations

import operator
from contextlib import contextmanager
from contextvars import ContextVar
from math import gcd
from typing import Any, Iterator, Mapping, Optional, Union

__all__ = [
    "Dim",
    "Shape",
    "Sym",
    "Bound",
    "MAX_DIM",
    "affine_symbol",
    "assuming",
    "broadcast_dim",
    "current_assumptions",
    "zero_forcing_symbols",
    "zero_symbol",
    "zero_implies",
    "plain_symbol",
    "join_pieces",
    "prove_at_least",
    "prove_at_most",
    "prove_broadcast",
    "rebuild",
    "require_at_least",
    "dim_add",
    "dim_bounds",
    "dim_compare",
    "dim_floordiv",
    "dim_from_text",
    "dim_is_one",
    "dim_max",
    "dim_min",
    "dim_mod",
    "dim_mul",
    "dim_neg",
    "dim_nonnegative",
    "dim_resolve",
    "dim_exact_div",
    "dim_fmod",
    "dim_sub",
    "dim_to_json",
    "dim_truncdiv",
    "dims_equal",
    "format_shape",
    "has_minmax",
    "shape_to_json",
    "simplest",
    "substitute",
]

Dim = Union[int, "Sym", None]
Shape = Optional[tuple[Dim, ...]]  # None = unknown rank

_NAME, _FLOOR, _MOD, _MIN, _MAX = 0, 1, 2, 3, 4


def _operand_key(d: Union[int, "Sym"]) -> tuple[Any, ...]:
    # ints before expressions, so keys never compare an int with a tuple
    return (0, d) if type(d) is int else (1, d._key)  # type: ignore[union-attr]


class _Atom:
    """One factor of a monomial: a named symbol, ``floor(expr/k)``, ``expr % k``, or
    ``min(expr, other)`` / ``max(expr, other)`` (``other`` an int or a Sym; ``k`` unused).

    ``key`` is a nested tuple of strs and ints that totally orders atoms (kind first, so
    comparisons never meet mixed types); it is computed once because sorting and hashing use it.
    """

    __slots__ = ("kind", "name", "expr", "k", "other", "key", "size", "_hash")

    def __init__(self, kind: int, name: Optional[str], expr: Optional[Sym], k: int,
                 other: Union[int, "Sym", None] = None) -> None:
        self.kind = kind
        self.name = name
        self.expr = expr
        self.k = k
        self.other = other
        if expr is None:
            self.key: tuple[Any, ...] = (kind, name)
            self.size = 1
        elif other is None:
            self.key = (kind, expr._key, k)
            self.size = 1 + expr._size
        else:
            self.key = (kind, expr._key, _operand_key(other))
            self.size = 1 + expr._size + (other._size if type(other) is Sym else 1)
        self._hash = hash(self.key)

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, _Atom):
            return NotImplemented
        return self._hash == other._hash and self.key == other.key

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[Any, ...]:
        return (_Atom, (self.kind, self.name, self.expr, self.k, self.other))


_Mono = tuple[_Atom, ...]  # atoms sorted by key, repeated for powers; () is the constant term
_Terms = tuple[tuple[_Mono, int], ...]


def _atom_key(atom: _Atom) -> tuple[Any, ...]:
    return atom.key


def _mono_order(mono: _Mono) -> tuple[Any, ...]:
    # Higher degree first, then by atoms; the constant term (degree 0) sorts last.
    return (-len(mono), tuple(a.key for a in mono))


def _term_order(term: tuple[_Mono, int]) -> tuple[Any, ...]:
    return _mono_order(term[0])


class Sym:
    """An immutable, hashable symbolic expression in canonical form.

    Build one with :meth:`Sym.symbol` and the ``dim_*`` functions; the constructor is private.
    """

    __slots__ = ("_terms", "_key", "_hash", "_size", "_symbols", "_text", "_depth")
    # the slots' types, for the checker (set once in _make; the last three are caches)
    _terms: _Terms
    _key: tuple[Any, ...]
    _hash: int
    _size: int
    _symbols: Optional[frozenset[str]]
    _text: Optional[str]
    _depth: Optional[int]

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError("use Sym.symbol(name) and the dim_* functions to build a Sym")

    @classmethod
    def _make(cls, terms: _Terms) -> Sym:
        """Wrap terms that are already canonical: sorted, no zero coefficient, not constant."""
        self = object.__new__(cls)
        key = tuple((tuple(a.key for a in mono), c) for mono, c in terms)
        size = 0
        for mono, _ in terms:
            size += sum(a.size for a in mono) if mono else 1
        setattr_ = object.__setattr__
        setattr_(self, "_terms", terms)
        setattr_(self, "_key", key)
        setattr_(self, "_hash", hash(key))
        setattr_(self, "_size", size)
        setattr_(self, "_symbols", None)
        setattr_(self, "_text", None)
        setattr_(self, "_depth", None)
        return self

    @staticmethod
    def symbol(name: str) -> Sym:
        """A named symbol. The name is taken verbatim: no expression is parsed out of it."""
        if not isinstance(name, str):
            raise TypeError(f"a symbol name must be a str, not {type(name).__name__}")
        return Sym._make((((_Atom(_NAME, name, None, 0),), 1),))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Sym is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("Sym is immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        return (Sym._make, (self._terms,))

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Sym):
            return NotImplemented
        return self._hash == other._hash and self._key == other._key

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        text = self._text
        if text is None:
            text = _expr_text(self, whole=True)
            object.__setattr__(self, "_text", text)
        return text

    def __repr__(self) -> str:
        return f"Sym({str(self)!r})"

    def size(self) -> int:
        """Number of terms and atoms (nested atoms count their inside), for --max-expr-size."""
        return self._size

    def term_coefficients(self) -> list[int]:
        """The coefficient of each top-level term (the constant's included): every atom is an
        integer, so their gcd divides the expression's value at every binding."""
        return [c for _, c in self._terms]

    def coefficients(self) -> list[int]:
        """Every integer in the expression: coefficients, constant terms, divisors and min/max
        operands, nested ones included."""
        out: list[int] = []
        stack = [self]
        while stack:
            e = stack.pop()
            for mono, c in e._terms:
                out.append(c)
                for atom in mono:
                    if atom.expr is not None:
                        stack.append(atom.expr)
                        other = atom.other
                        if type(other) is Sym:
                            stack.append(other)
                        elif type(other) is int:
                            out.append(other)
                        else:
                            out.append(atom.k)
        return out

    def symbols(self) -> frozenset[str]:
        """Names of every symbol in the expression, including inside floor/mod atoms."""
        found = self._symbols
        if found is None:
            names: set[str] = set()
            for mono, _ in self._terms:
                for atom in mono:
                    if atom.expr is None:
                        names.add(atom.name)  # type: ignore[arg-type]  # name atoms always have one
                    else:
                        names |= atom.expr.symbols()
                        if type(atom.other) is Sym:
                            names |= atom.other.symbols()
            found = frozenset(names)
            object.__setattr__(self, "_symbols", found)
        return found


# ---------------------------------------------------------------------------------------------
# polynomial helpers


# How deep floor/mod/min/max atoms may nest: deeper results are unknown, so that printing and
# bounds (which recurse once per level) stay far from Python's recursion limit.
MAX_NESTING = 64


def _nesting(s: Union[int, Sym, None]) -> int:
    if type(s) is not Sym:
        return 0
    depth = s._depth
    if depth is None:
        depth = 0
        for mono, _ in s._terms:
            for atom in mono:
                if atom.expr is not None:
                    depth = max(depth, 1 + _nesting(atom.expr), 1 + _nesting(atom.other))
        object.__setattr__(s, "_depth", depth)
    return depth


def _atom_sym(atom: _Atom) -> Sym:
    return Sym._make((((atom,), 1),))


def _from_dict(poly: dict[_Mono, int]) -> Dim:
    """Canonicalise a mono -> coefficient mapping (consumed); a constant comes back as an int."""
    const = poly.pop((), 0)
    terms = [(m, c) for m, c in poly.items() if c]
    if not terms:
        return const
    terms.sort(key=_term_order)
    if const:
        terms.append(((), const))
    return Sym._make(tuple(terms))


def _add_const(s: Sym, k: int) -> Dim:
    if k == 0:
        return s
    terms = s._terms
    mono, c = terms[-1]
    if mono:
        return Sym._make(terms + (((), k),))
    c += k
    # The rest is never empty: a Sym always has a non-constant term.
    return Sym._make(terms[:-1] + (((), c),) if c else terms[:-1])


def _scale(s: Sym, k: int) -> Dim:
    if k == 0:
        return 0
    if k == 1:
        return s
    # Scaling keeps the order: terms are ordered by monomial only.
    return Sym._make(tuple((m, c * k) for m, c in s._terms))


def _add_syms(a: Sym, b: Sym) -> Dim:
    poly = dict(a._terms)
    for m, c in b._terms:
        poly[m] = poly.get(m, 0) + c
    return _from_dict(poly)


_FOLDING: list[bool] = []
_FOLD_DEPTH = 3


def _fold(d: Union[int, Sym]) -> Union[int, Sym]:
    """An operand of a new min/max atom, folded (:func:`_fold_minmax`) once: only there, so that
    sums stay the one canonical polynomial whatever order they were added in."""
    if type(d) is not Sym or len(d._terms) < 2 or not _nesting(d) or len(_FOLDING) >= _FOLD_DEPTH:
        return d
    _FOLDING.append(True)  # the fold's own operands are folded again, a few levels deep
    try:
        out = _fold_minmax(d)
    finally:
        _FOLDING.pop()
    return d if out is None else out


def _fold_minmax(s: Sym) -> Dim:
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
        folded = dim_min(x, y) if kind == _MIN else dim_max(x, y)
        if type(folded) is int or (type(folded) is Sym and _weight(folded) < _weight(s)):
            return folded
    return s


def _weight(s: Sym) -> tuple[int, int]:
    """How hard an expression is to read: its size, then how often it names a symbol."""
    names = 0
    stack = [s]
    while stack:
        e = stack.pop()
        for mono, _ in e._terms:
            for atom in mono:
                if atom.kind == _NAME:
                    names += 1
                else:
                    stack.append(atom.expr)  # type: ignore[arg-type]  # a non-name atom has one
                    if type(atom.other) is Sym:
                        stack.append(atom.other)
    return s._size, names


def _mono_mul(m1: _Mono, m2: _Mono) -> _Mono:
    if not m1:
        return m2
    if not m2:
        return m1
    return tuple(sorted(m1 + m2, key=_atom_key))


def _mul_syms(a: Sym, b: Sym) -> Dim:
    poly: dict[_Mono, int] = {}
    for m1, c1 in a._terms:
        for m2, c2 in b._terms:
            m = _mono_mul(m1, m2)
            poly[m] = poly.get(m, 0) + c1 * c2
    return _from_dict(poly)


def _mono_div(m: _Mono, d: _Mono) -> Optional[_Mono]:
    """m / d as a monomial, or None if d does not divide m."""
    rest = list(m)
    for atom in d:
        try:
            rest.remove(atom)
        except ValueError:
            return None
    return tuple(rest)


def _exact_div(a: Sym, b: Sym) -> Dim:
    """a / b when b is a single term dividing every term of a exactly, else None.

    Only then is the polynomial quotient the floor quotient for every nonzero value of b."""
    if len(b._terms) != 1:
        return None
    bm, bc = b._terms[0]
    poly: dict[_Mono, int] = {}
    for m, c in a._terms:
        if c % bc:
            return None
        q = _mono_div(m, bm)
        if q is None:
            return None
        poly[q] = c // bc
    return _from_dict(poly)


def _split_const(s: Sym) -> tuple[_Terms, int]:
    terms = s._terms
    mono, c = terms[-1]
    if mono:
        return terms, 0
    return terms[:-1], c


def _floordiv_const(s: Sym, k: int) -> Dim:
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
    lo, hi = _sym_bounds(inner, _ASSUMED.get())
    if lo >= 0 and hi < k:  # floor(E/k) == 0 when E lies in [0, k)
        return q
    return _add_const(_atom_sym(_Atom(_FLOOR, None, inner, k)), q)


def _mod_const(s: Sym, k: int) -> Dim:
    """s % k (Python semantics: the sign of k) for an int k != 0."""
    if k < 0:  # x % -k == -((-x) % k)
        return dim_neg(_mod_const(_scale(s, -1), -k))  # type: ignore[arg-type]  # -Sym is a Sym
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
                return dim_mul(g, _mod_const(atom.expr, k))  # type: ignore[arg-type]
    inner = Sym._make(inner_terms)
    if _nesting(inner) >= MAX_NESTING:
        return None
    lo, hi = _sym_bounds(inner, _ASSUMED.get())
    if lo >= 0 and hi < k:  # E % k == E when E lies in [0, k)
        return _scale(inner, g)
    return _scale(_atom_sym(_Atom(_MOD, None, inner, k)), g)


# ---------------------------------------------------------------------------------------------
# text


def _int_text(n: int) -> str:
    try:
        return str(n)
    except ValueError:  # beyond sys.get_int_max_str_digits(); printing must not crash
        return f"<{n.bit_length()}-bit integer>"


def _atom_text(atom: _Atom, whole: bool) -> str:
    if atom.kind == _NAME:
        return atom.name  # type: ignore[return-value]  # name atoms always have one
    expr = atom.expr
    assert expr is not None
    if atom.kind == _MIN or atom.kind == _MAX:
        other = atom.other
        first = _expr_text(expr, whole=True)
        second = _int_text(other) if type(other) is int else _expr_text(other, whole=True)  # type: ignore[arg-type]
        # the int first, as people write it: min(3, seq)
        pair = f"{second}, {first}" if type(other) is int else f"{first}, {second}"
        return f"{'min' if atom.kind == _MIN else 'max'}({pair})"
    inner = _expr_text(expr, whole=False)
    simple = len(expr._terms) == 1
    if atom.kind == _FLOOR:
        return f"floor({inner if simple else f'({inner})'}/{atom.k})"
    bare = simple and expr._terms[0][1] == 1 and len(expr._terms[0][0]) == 1
    text = f"{inner if bare else f'({inner})'} % {atom.k}"
    # % binds like *, so it gets brackets unless it is the whole expression.
    return text if whole else f"({text})"


def _mono_text(mono: _Mono, whole: bool) -> str:
    parts = []
    i = 0
    while i < len(mono):
        atom = mono[i]
        j = i + 1
        while j < len(mono) and mono[j] == atom:
            j += 1
        power = j - i
        text = _atom_text(atom, whole and len(mono) == 1)
        parts.append(text if power == 1 else f"{text}**{power}")
        i = j
    return "*".join(parts)


def _expr_text(s: Sym, whole: bool) -> str:
    terms = s._terms
    if len(terms) == 2 and terms[1][0] == () and terms[0][1] == 1 and len(terms[0][0]) == 1:
        atom = terms[0][0][0]
        if (atom.kind == _MIN or atom.kind == _MAX) and type(atom.other) is int:
            # max(2, seq) - 2 reads better as the clamp it came from: max(0, seq - 2)
            c = terms[1][1]
            inner = _add_const(atom.expr, c)  # type: ignore[arg-type]
            inner_text = _int_text(inner) if type(inner) is int else _expr_text(inner, whole=True)  # type: ignore[arg-type]
            return f"{'min' if atom.kind == _MIN else 'max'}({_int_text(atom.other + c)}, {inner_text})"
        if atom.kind == _MIN or atom.kind == _MAX:
            # max(-batch, seq - 1) + 1 reads better with the constant inside: max(-batch + 1, seq)
            c = terms[1][1]
            parts = []
            for operand in (atom.expr, atom.other):
                v = dim_add(operand, c)
                parts.append(_int_text(v) if type(v) is int else _expr_text(v, whole=True))  # type: ignore[arg-type]
            return f"{'min' if atom.kind == _MIN else 'max'}({parts[0]}, {parts[1]})"
    out = []
    for i, (mono, c) in enumerate(terms):
        neg = c < 0
        mag = -c if neg else c
        if not mono:
            text = _int_text(mag)
        else:
            body = _mono_text(mono, whole and len(terms) == 1 and c == 1)
            text = body if mag == 1 else f"{_int_text(mag)}*{body}"
        if i == 0:
            out.append(f"-{text}" if neg else text)
        else:
            out.append(f" - {text}" if neg else f" + {text}")
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# public arithmetic


def _coerce(d: object) -> Dim:
    # Accept numpy integers and the like from initializers; keep Python ints unbounded.
    if d is None or type(d) is int or type(d) is Sym:
        return d
    return operator.index(d)  # type: ignore[arg-type]  # TypeError for anything else


def dim_add(a: Dim, b: Dim) -> Dim:
    if type(a) is int and type(b) is int:
        return a + b
    a, b = _coerce(a), _coerce(b)
    if a is None or b is None:
        return None
    if isinstance(a, int):
        return a + b if isinstance(b, int) else _add_const(b, a)
    if isinstance(b, int):
        return _add_const(a, b)
    return _add_syms(a, b)


def dim_neg(a: Dim) -> Dim:
    if type(a) is int:
        return -a
    a = _coerce(a)
    if a is None:
        return None
    if isinstance(a, int):
        return -a
    return _scale(a, -1)


def dim_sub(a: Dim, b: Dim) -> Dim:
    if type(a) is int and type(b) is int:
        return a - b
    return dim_add(a, dim_neg(b))


def dim_mul(a: Dim, b: Dim) -> Dim:
    if type(a) is int and type(b) is int:
        return a * b
    a, b = _coerce(a), _coerce(b)
    if a is None or b is None:
        return None
    if isinstance(a, int):
        return a * b if isinstance(b, int) else _scale(b, a)
    if isinstance(b, int):
        return _scale(a, b)
    return _mul_syms(a, b)


def dim_floordiv(a: Dim, b: Dim) -> Dim:
    """Floor division (Python semantics). ``None`` for a zero divisor or when not expressible."""
    if type(a) is int and type(b) is int:
        return a // b if b else None
    a, b = _coerce(a), _coerce(b)
    if a is None or b is None:
        return None
    if isinstance(b, int):
        if b == 0:
            return None
        return a // b if isinstance(a, int) else _floordiv_const(a, b)
    # Symbolic divisor: only exact cases, which hold whenever the division can run (b != 0).
    if isinstance(a, int):
        return 0 if a == 0 else None
    if a == b:
        return 1
    return _exact_div(a, b)


def dim_mod(a: Dim, b: Dim) -> Dim:
    """Remainder with the sign of the divisor (Python semantics); ``None`` for a zero divisor."""
    if type(a) is int and type(b) is int:
        return a % b if b else None
    a, b = _coerce(a), _coerce(b)
    if a is None or b is None:
        return None
    if isinstance(b, int):
        if b == 0:
            return None
        return a % b if isinstance(a, int) else _mod_const(a, b)
    if isinstance(a, int):
        return 0 if a == 0 else None
    if a == b or _exact_div(a, b) is not None:
        return 0
    return None


def _const_diff(a: Union[int, Sym], b: Union[int, Sym]) -> Optional[int]:
    """a - b when it is the same for every value of the symbols (seq + 3 vs seq), else None."""
    if isinstance(a, int):
        return a - b if isinstance(b, int) else None
    if isinstance(b, int):
        return None  # a Sym always has a non-constant term
    var_a, const_a = _split_const(a)
    var_b, const_b = _split_const(b)
    return const_a - const_b if var_a == var_b else None


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


def _monotone(s: Sym) -> bool:
    """Whether ``s`` never decreases as any symbol grows: non-negative coefficients (the constant
    term aside) over names, floor and min/max atoms of such expressions (mod is not monotone)."""
    for mono, c in s._terms:
        if not mono:
            continue
        if c < 0:
            return False
        for atom in mono:
            if atom.kind == _MOD:
                return False
            if atom.expr is not None and not _monotone(atom.expr):
                return False
            if type(atom.other) is Sym and not _monotone(atom.other):
                return False
    return True


def require_at_least(d: Dim, k: int) -> bool:
    """Record (:func:`prove_at_least`) what ``d >= k`` says about its one symbol, where the model
    runs only if ``d >= k`` (a Conv refuses a window longer than its padded input): for ``d``
    monotone in one symbol ``x``, the least ``x`` with ``d >= k``. Returns whether a fact was
    recorded."""
    if type(d) is not Sym or not _monotone(d):
        return False
    names = d.symbols()
    if len(names) != 1:
        return False
    (name,) = names
    lo, _ = dim_bounds(d)
    if lo is not None and lo >= k:
        return False
    low, high = 0, MAX_DIM
    if substitute(d, {name: high}) < k:  # type: ignore[operator]
        return False
    while low < high:  # the least x with d(x) >= k
        mid = (low + high) // 2
        if substitute(d, {name: mid}) >= k:  # type: ignore[operator]
            high = mid
        else:
            low = mid + 1
    return prove_at_least(name, low) if low > 0 else False


def affine_symbol(d: Dim) -> Optional[tuple[str, int, int]]:
    """``(x, a, b)`` when ``d`` is ``a*x + b`` for one named symbol ``x`` (``seq - 1``), else None."""
    if type(d) is not Sym:
        return None
    terms, b = _split_const(d)
    if len(terms) != 1:
        return None
    mono, a = terms[0]
    if len(mono) != 1 or mono[0].kind != _NAME:
        return None
    return mono[0].name, a, b  # type: ignore[return-value]  # a _NAME atom always has a name


def plain_symbol(d: Dim) -> Optional[str]:
    """The name when ``d`` is one named symbol (``seq``, not ``seq + 1``), else None."""
    if type(d) is Sym and len(d._terms) == 1:
        mono, c = d._terms[0]
        if c == 1 and len(mono) == 1 and mono[0].kind == _NAME:
            return mono[0].name
    return None


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


def _var_key(s: Sym) -> tuple[Any, ...]:
    return s._key if s._terms[-1][0] else s._key[:-1]


def _atom_plus_const(d: Union[int, Sym]) -> Optional[tuple[_Atom, int]]:
    """``(atom, c)`` when ``d`` is one atom (coefficient 1) plus a constant ``c``."""
    if type(d) is not Sym:
        return None
    terms, c = _split_const(d)
    if len(terms) != 1:
        return None
    mono, coeff = terms[0]
    if coeff != 1 or len(mono) != 1:
        return None
    return mono[0], c


def _floor_form(d: Union[int, Sym]) -> Optional[tuple[Sym, int, int]]:
    """``(E, k, c)`` when ``d`` is ``floor(E/k) + c``."""
    found = _atom_plus_const(d)
    if found is None or found[0].kind != _FLOOR:
        return None
    atom, c = found
    return atom.expr, atom.k, c  # type: ignore[return-value]  # a floor atom has an expr


def _floor_le(a: Union[int, Sym], b: Union[int, Sym]) -> bool:
    """``a <= b`` for two ``floor(E/k) + c`` of one ``k``, because floor is monotone:
    ``floor(E/k) + c`` is ``floor((E + k*c)/k)``, so ``E1 + k*c1 <= E2 + k*c2`` is enough."""
    fa, fb = _floor_form(a), _floor_form(b)
    if fa is None or fb is None or fa[1] != fb[1]:
        return False
    k = fa[1]
    lo, _ = _diff_bounds(dim_add(fb[0], k * fb[2]), dim_add(fa[0], k * fa[2]))  # type: ignore[arg-type]
    return lo >= 0


def _minmax_args(d: Union[int, Sym]) -> Optional[tuple[int, Dim, Dim]]:
    """``(kind, p, q)`` when ``d`` is ``min(p, q)`` or ``max(p, q)`` (its constant put back in)."""
    found = _atom_plus_const(d)
    if found is None or (found[0].kind != _MIN and found[0].kind != _MAX):
        return None
    atom, c = found
    return atom.kind, dim_add(atom.expr, c), dim_add(atom.other, c)


def _absorb_minmax(kind: int, a: Union[int, Sym], b: Union[int, Sym]) -> Dim:
    """The lattice laws: ``min(min(x, y), x)`` is ``min(x, y)`` and ``min(max(x, y), x)`` is ``x``
    (max alike); None when neither applies."""
    for x, y in ((a, b), (b, a)):
        args = _minmax_args(x)
        if args is not None and (args[1] == y or args[2] == y):
            return x if args[0] == kind else y
    return None


def _minmax(kind: int, a: Union[int, Sym], b: Union[int, Sym]) -> Dim:
    a, b = _fold(a), _fold(b)
    if a == b:
        return a
    absorbed = _absorb_minmax(kind, a, b)
    if absorbed is not None:
        return absorbed
    lo, hi = _diff_bounds(a, b)
    if lo < 0 < hi and type(a) is Sym and type(b) is Sym:
        # min(floor(L/2), floor((L + 1)/2)) is floor(L/2): the bounds of the difference cannot see it
        if _floor_le(a, b):
            hi = 0
        elif _floor_le(b, a):
            lo = 0
        else:
            # nor min(seq, max(0, seq - 3)): the difference folded, max(-3, -seq), is <= 0
            diff = _fold(dim_sub(a, b))  # type: ignore[arg-type]
            if type(diff) is Sym:
                lo, hi = _sym_bounds(diff, _ASSUMED.get())
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
            return dim_add(_minmax(kind, atom.expr, bound), c)  # type: ignore[arg-type]
    if max(_nesting(a), _nesting(b)) >= MAX_NESTING:
        return None
    return _add_const(_atom_sym(_Atom(kind, None, a, 0, b)), c)


def dim_min(a: Dim, b: Dim) -> Dim:
    """min(a, b): decided from the bounds where it can be, else a ``min`` atom."""
    if type(a) is int and type(b) is int:
        return a if a <= b else b
    a, b = _coerce(a), _coerce(b)
    if a is None or b is None:
        return None
    return _minmax(_MIN, a, b)


def dim_max(a: Dim, b: Dim) -> Dim:
    """max(a, b): decided from the bounds where it can be, else a ``max`` atom."""
    if type(a) is int and type(b) is int:
        return a if a >= b else b
    a, b = _coerce(a), _coerce(b)
    if a is None or b is None:
        return None
    return _minmax(_MAX, a, b)


def dim_truncdiv(a: Dim, b: Dim) -> Dim:
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
        return dim_floordiv(a, b)  # only exact quotients, which truncate alike
    if b == 0:
        return None
    if b < 0:
        return dim_neg(dim_truncdiv(a, -b))
    lo, hi = dim_bounds(a)
    if lo is not None and lo >= 0:
        return dim_floordiv(a, b)
    if hi is not None and hi <= 0:
        return dim_neg(dim_floordiv(dim_neg(a), b))
    return None


def _nonzero(d: Dim) -> bool:
    lo, hi = dim_bounds(d)
    return (lo is not None and lo > 0) or (hi is not None and hi < 0)


def dim_fmod(a: Dim, b: Dim) -> Dim:
    """Remainder with the sign of the dividend (C's fmod; ONNX Mod with fmod=1, the float Mod).
    A divisor that may be 0 gives None: in float that is NaN, not a failed run."""
    if type(b) is not int and not _nonzero(b):
        return None
    q = dim_truncdiv(a, b)
    if q is None:
        return None
    return dim_sub(a, dim_mul(q, b))


def dim_exact_div(a: Dim, b: Dim) -> Dim:
    """a / b when the quotient is an integer for every value of the symbols (float Div of shape
    values), else ``None``."""
    if type(a) is int and type(b) is int:
        return a // b if b and a % b == 0 else None
    a, b = _coerce(a), _coerce(b)
    if a is None or b is None or b == 0:
        return None
    if isinstance(b, Sym):
        # exact quotients only, and only where b is never 0: float Div by 0 is inf or NaN
        return dim_floordiv(a, b) if _nonzero(b) else None
    if isinstance(a, int):
        return a // b if a % b == 0 else None
    for _, c in a._terms:
        if c % b:
            return None
    return dim_floordiv(a, b)


def broadcast_dim(a: Dim, b: Dim) -> Dim:
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
    if dim_is_one(a) is False:
        return a
    if dim_is_one(b) is False:
        return b
    # min(512, seq) vs seq: where seq is 1 so is the other, so the result is seq (equal, or the
    # other is 1, or the model fails); the same test the other way round
    for x, y in ((a, b), (b, a)):
        name = plain_symbol(y)
        if name is not None and substitute(x, {name: 1}) == 1:
            return y
        if _min_of(x, y):
            return y
    # batch vs seq, both >= 1 (proved, or assumed): one is 1 and the other is the larger, or they
    # are equal; either way the larger (a 0 would break this: 0 against 1 broadcasts to 0)
    alo, _ = dim_bounds(a)
    blo, _ = dim_bounds(b)
    if alo is not None and alo >= 1 and blo is not None and blo >= 1:
        return dim_max(a, b)
    return None


def _min_of(x: Union[int, Sym], y: Union[int, Sym]) -> bool:
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
            lo, _ = dim_bounds(other)
            return lo is not None and lo >= 1
    return False


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


def _sign_known(d: Union[int, Sym], lo_at_least: int) -> bool:
    lo, _ = (d, d) if type(d) is int else _sym_bounds(d, _ASSUMED.get())  # type: ignore[arg-type]
    return lo >= lo_at_least


def _atom_zero_over(atom: _Atom) -> Optional[_Clauses]:
    kind = atom.kind
    if kind == _NAME:
        r = _ASSUMED.get().get(atom.name)  # type: ignore[arg-type]
        if r is not None and r[0] is not None and r[0] >= 1:
            return _NEVER
        return frozenset({frozenset({atom.name})})  # type: ignore[arg-type]
    lo, hi = _atom_bounds(atom, _ASSUMED.get())
    if lo > 0 or hi < 0:
        return _NEVER
    if kind == _MIN or kind == _MAX:
        a, b = atom.expr, atom.other
        assert a is not None and b is not None
        if not (_sign_known(a, 0) and _sign_known(b, 0)):
            return None
        za, zb = _zero_over(a), _zero_over(b)
        if za is None or zb is None:
            return None
        # of two non-negative operands, the min is 0 when either is, the max when both are
        return _z_or(za, zb) if kind == _MIN else _z_and(za, zb)
    return None  # floor and mod are 0 on ranges, not only at 0


def _zero_over(d: Union[int, Sym]) -> Optional[_Clauses]:
    """Every binding where ``d`` is 0 satisfies one of the clauses (None: no such family known)."""
    if type(d) is int:
        return _ALWAYS if d == 0 else _NEVER
    lo, hi = _sym_bounds(d, _ASSUMED.get())  # type: ignore[arg-type]
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
            lo_a, _ = _atom_bounds(atom, _ASSUMED.get())
            if lo_a < 0:
                return None
            za = _atom_zero_over(atom)
            if za is None:
                return None
            mono_z = _z_or(mono_z, za)  # type: ignore[arg-type]
        nxt = _z_and(total, mono_z)  # type: ignore[arg-type]
        if nxt is None:
            return None
        total = nxt
    return total


def _atom_zero_under(atom: _Atom) -> _Clauses:
    kind = atom.kind
    if kind == _NAME:
        return frozenset({frozenset({atom.name})})  # type: ignore[arg-type]
    a = atom.expr
    assert a is not None
    if kind == _FLOOR or kind == _MOD:  # floor(0/k) and 0 % k are 0
        return _zero_under(a)
    b = atom.other
    assert b is not None
    za, zb = _zero_under(a), _zero_under(b)
    if kind == _MIN:  # min(0, b) is 0 when b >= 0
        return _z_or(za if _sign_known(b, 0) else _NEVER, zb if _sign_known(a, 0) else _NEVER)
    both = _z_and(za, zb)  # max(0, 0)
    return both if both is not None else _NEVER


def _zero_under(d: Union[int, Sym]) -> _Clauses:
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
            mono_z = _z_or(mono_z, _atom_zero_under(atom))
        nxt = _z_and(total, mono_z)  # and a sum when every term is
        if nxt is None:
            return _NEVER
        total = nxt
    return total


def zero_implies(t: Dim, d: Dim) -> bool:
    """Whether ``t == 0`` implies ``d == 0`` for every value of the symbols in the domain: a
    computed Reshape target ``4*batch`` at a position whose input dim is ``batch`` (a 0 there
    copies ``batch``, which is then 0 as well)."""
    t, d = _coerce(t), _coerce(d)
    if t is None or d is None:
        return False
    over = _zero_over(t)
    if over is None:
        return False
    if not over:
        return True
    under = _zero_under(d)
    return all(any(u <= c for u in under) for c in over)


def zero_symbol(d: Dim) -> Optional[str]:
    """The one symbol ``x`` such that ``d`` is 0 only where ``x`` is (``seq``, ``4*seq``,
    ``seq*min(3, seq)``), else None."""
    d = _coerce(d)
    if type(d) is not Sym:
        return None
    over = _zero_over(d)
    if over is None or len(over) != 1:
        return None
    (clause,) = over
    return next(iter(clause)) if len(clause) == 1 else None


def zero_forcing_symbols(d: Dim) -> list[str]:
    """The symbols whose being 0 makes ``d`` 0 (``batch`` and ``seq`` for ``16*batch*min(3, seq)``):
    where the model runs only if ``d != 0``, each of them is >= 1."""
    d = _coerce(d)
    if d is None:
        return []
    return sorted(next(iter(c)) for c in _zero_under(d) if len(c) == 1)


def dim_from_text(text: str) -> Dim:
    """A dim read from a file: a decimal int, ``None`` for an empty string, else a symbol name."""
    if text == "":
        return None
    if text.isascii() and text.isdigit():
        try:
            return int(text)
        except ValueError:  # more digits than int() will parse: keep it as a name
            pass
    return Sym.symbol(text)


def dim_to_json(d: Dim) -> Union[int, str, None]:
    d = _coerce(d)
    if isinstance(d, Sym):
        return str(d)
    return d


def shape_to_json(s: Shape) -> Optional[list[Any]]:
    if s is None:
        return None
    return [dim_to_json(d) for d in s]


def substitute(d: Dim, bindings: Mapping[str, int]) -> Dim:
    """Bind symbols to ints everywhere (inside floor/mod too); a fully bound expr becomes an int."""
    d = _coerce(d)
    if not isinstance(d, Sym) or not bindings or d.symbols().isdisjoint(bindings):
        return d
    return _evaluate(d, bindings)


def rebuild(d: Dim) -> Dim:
    """``d`` built again from its parts, so that min/max/floor/mod are decided in the domain in
    force now (inside an :func:`assuming` block, ``max(1, seq)`` is ``seq`` under ``seq>=1``)."""
    d = _coerce(d)
    return _evaluate(d, {}) if isinstance(d, Sym) else d


def join_pieces(x: str, c: int, first: int, lows: list[Dim], high: Dim, indicator: bool = False) -> Dim:
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
    clamps = [dim_max(dim_add(sym, k), 0) for k in range(-c - 1, c + 2)]
    candidates: list[Dim] = [high, dim_max(high, 0)]
    for clamp in clamps:
        candidates += [dim_min(high, clamp), dim_min(dim_max(high, 0), clamp)]
    for m in (1, 2):
        for clamp in clamps:
            candidates.append(dim_max(high, dim_min(m, clamp)))
    for k in range(1, c + 2):  # what a falling x leaves: max(batch, 1 - seq)
        candidates.append(dim_max(high, dim_sub(k, sym)))
    if indicator and c == 1 and first == 0:
        zero = dim_sub(1, dim_min(1, sym))
        candidates.append(dim_add(high, dim_mul(dim_sub(lows[0], substitute(high, {x: 0})), zero)))
    ranges = _ASSUMED.get()
    above = {**ranges, x: (c, ranges.get(x, (None, None))[1])}
    for cand in candidates:
        if cand is None:
            continue
        with assuming(above):
            if dims_equal(rebuild(cand), high) is not True:
                continue
        if all(dims_equal(substitute(cand, {x: first + i}), low) is True for i, low in enumerate(lows)):
            return cand
    return None


def has_minmax(d: Dim) -> bool:
    """Whether ``d`` has a min or max in it, at any depth."""
    if type(d) is not Sym or not _nesting(d):  # (the nesting depth is cached: plain polynomials)
        return False
    for mono, _ in d._terms:
        for atom in mono:
            if atom.kind == _MIN or atom.kind == _MAX or has_minmax(atom.expr) or has_minmax(atom.other):
                return True
    return False


# How far above a symbol's lower bound simplest() looks for the point where min/max settle.
_SETTLE = 8


def simplest(d: Dim) -> Dim:
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
    ranges = _ASSUMED.get()
    lo, hi = ranges.get(x, (None, None))
    first = max(lo or 0, 0)
    for c in range(first, first + _SETTLE + 1):
        if hi is not None and c > hi:
            return d
        with assuming({**ranges, x: (c, hi)}):
            high = rebuild(d)
        if not has_minmax(high):
            break
    else:
        return d
    lows = [substitute(d, {x: v}) for v in range(first, c)]
    joined = join_pieces(x, c, first, lows, high)
    if type(joined) is int or (type(joined) is Sym and _weight(joined) < _weight(d)):
        return joined
    return d


def _evaluate(s: Sym, bindings: Mapping[str, int]) -> Dim:
    total: Dim = 0
    for mono, c in s._terms:
        term: Dim = c
        for atom in mono:
            term = dim_mul(term, _evaluate_atom(atom, bindings))
        total = dim_add(total, term)
    return total


def _evaluate_atom(atom: _Atom, bindings: Mapping[str, int]) -> Dim:
    if atom.kind == _NAME:
        if atom.name in bindings:
            return operator.index(bindings[atom.name])  # type: ignore[index]
        return _atom_sym(atom)
    assert atom.expr is not None
    # (no bindings: rebuild(), every level again)
    inner = substitute(atom.expr, bindings) if bindings else _evaluate(atom.expr, bindings)
    if atom.kind == _FLOOR:
        return dim_floordiv(inner, atom.k)
    if atom.kind == _MOD:
        return dim_mod(inner, atom.k)
    other = atom.other
    if type(other) is Sym:
        other = substitute(other, bindings) if bindings else _evaluate(other, bindings)
    return dim_min(inner, other) if atom.kind == _MIN else dim_max(inner, other)


def dim_resolve(d: Dim) -> Dim:
    """``d`` rebuilt from its atoms, innermost first, under the ranges in force (:func:`assuming`):
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
            term = dim_mul(term, _resolve_atom(atom))
        total = dim_add(total, term)
    return total


def _resolve_atom(atom: _Atom) -> Dim:
    if atom.kind == _NAME:
        return _atom_sym(atom)
    inner = dim_resolve(atom.expr)
    if atom.kind == _FLOOR:
        return dim_floordiv(inner, atom.k)
    if atom.kind == _MOD:
        return dim_mod(inner, atom.k)
    other = dim_resolve(atom.other)
    return dim_min(inner, other) if atom.kind == _MIN else dim_max(inner, other)


def _dim_text(d: Dim) -> str:
    if d is None:
        return "?"
    if isinstance(d, Sym):
        return str(d)
    return _int_text(operator.index(d))


def format_shape(s: Shape) -> str:
    """Human text: ``[batch, seq + 1, 4]``; ``?`` for an unknown rank or an unknown dim."""
    if s is None:
        return "?"
    return "[" + ", ".join(_dim_text(d) for d in s) + "]"
