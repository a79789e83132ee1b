"""The canonical form of a dim expression, and the ring operations on it (SPEC.md section 1).

A ``Sym`` is a polynomial with integer coefficients over *atoms* (a named symbol, or an opaque
``floor(E/k)``, ``E % k``, ``min(A, B)``, ``max(A, B)``), kept in one canonical form so that equal
expressions compare, hash and print alike. Sums, differences and products (:func:`dim_add`,
:func:`dim_sub`, :func:`dim_mul`, :func:`dim_neg`) are decided here and need no domain: they are
the same for every value of the symbols. The structural helpers the other modules of this package
read forms with (``_split_const``, ``_floor_form``...) live here too.
"""

from __future__ import annotations

import operator
from typing import Any, Optional, Union


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


def _const_diff(a: Union[int, Sym], b: Union[int, Sym]) -> Optional[int]:
    """a - b when it is the same for every value of the symbols (seq + 3 vs seq), else None."""
    if isinstance(a, int):
        return a - b if isinstance(b, int) else None
    if isinstance(b, int):
        return None  # a Sym always has a non-constant term
    var_a, const_a = _split_const(a)
    var_b, const_b = _split_const(b)
    return const_a - const_b if var_a == var_b else None


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


def has_minmax(d: Dim) -> bool:
    """Whether ``d`` has a min or max in it, at any depth."""
    if type(d) is not Sym or not _nesting(d):  # (the nesting depth is cached: plain polynomials)
        return False
    for mono, _ in d._terms:
        for atom in mono:
            if atom.kind == _MIN or atom.kind == _MAX or has_minmax(atom.expr) or has_minmax(atom.other):
                return True
    return False


# Text renders this form (``Sym.__str__``): the one import of a later module of the package, at the
# end, where every name text.py takes from here is defined (the package imports this module first).
from .text import _expr_text  # noqa: E402
