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

This module is pure Python on purpose: inference, lint rules and rewrites share it, and it
runs per node on very large graphs, so the common cases (int with int, Sym with int) take a
short path.
"""

from __future__ import annotations

import operator
from contextlib import contextmanager
from contextvars import ContextVar
from math import gcd
from typing import Iterator, Mapping, Optional, Union

__all__ = [
    "Dim",
    "Shape",
    "Sym",
    "Bound",
    "MAX_DIM",
    "assuming",
    "broadcast_dim",
    "current_assumptions",
    "monomial_symbols",
    "plain_symbol",
    "prove_at_least",
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
    "shape_to_json",
    "substitute",
]

Dim = Union[int, "Sym", None]
Shape = Optional[tuple[Dim, ...]]  # None = unknown rank

_NAME, _FLOOR, _MOD, _MIN, _MAX = 0, 1, 2, 3, 4


def _operand_key(d: Union[int, "Sym"]) -> tuple:
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
            self.key: tuple = (kind, name)
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

    def __reduce__(self) -> tuple:
        return (_Atom, (self.kind, self.name, self.expr, self.k, self.other))


_Mono = tuple[_Atom, ...]  # atoms sorted by key, repeated for powers; () is the constant term
_Terms = tuple[tuple[_Mono, int], ...]


def _atom_key(atom: _Atom) -> tuple:
    return atom.key


def _mono_order(mono: _Mono) -> tuple:
    # Higher degree first, then by atoms; the constant term (degree 0) sorts last.
    return (-len(mono), tuple(a.key for a in mono))


def _term_order(term: tuple[_Mono, int]) -> tuple:
    return _mono_order(term[0])


class Sym:
    """An immutable, hashable symbolic expression in canonical form.

    Build one with :meth:`Sym.symbol` and the ``dim_*`` functions; the constructor is private.
    """

    __slots__ = ("_terms", "_key", "_hash", "_size", "_symbols", "_text", "_depth")
    # the slots' types, for the checker (set once in _make; the last three are caches)
    _terms: _Terms
    _key: tuple
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

    def __reduce__(self) -> tuple:
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


def plain_symbol(d: Dim) -> Optional[str]:
    """The name when ``d`` is one named symbol (``seq``, not ``seq + 1``), else None."""
    if type(d) is Sym and len(d._terms) == 1:
        mono, c = d._terms[0]
        if c == 1 and len(mono) == 1 and mono[0].kind == _NAME:
            return mono[0].name
    return None


def monomial_symbols(d: Dim) -> Optional[list[str]]:
    """The names of ``d`` when it is a product of named symbols and a nonzero int (``16*batch*seq``),
    so that ``d != 0`` means every one of them is >= 1; else None."""
    if type(d) is not Sym or len(d._terms) != 1:
        return None
    mono, _ = d._terms[0]
    names: list[str] = []
    for atom in mono:
        if atom.kind != _NAME:
            return None
        names.append(atom.name)  # type: ignore[arg-type]  # a _NAME atom always has a name
    return names


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


def _var_key(s: Sym) -> tuple:
    return s._key if s._terms[-1][0] else s._key[:-1]


def _minmax(kind: int, a: Union[int, Sym], b: Union[int, Sym]) -> Dim:
    if a == b:
        return a
    lo, hi = _diff_bounds(a, b)
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


def shape_to_json(s: Shape) -> Optional[list]:
    if s is None:
        return None
    return [dim_to_json(d) for d in s]


def substitute(d: Dim, bindings: Mapping[str, int]) -> Dim:
    """Bind symbols to ints everywhere (inside floor/mod too); a fully bound expr becomes an int."""
    d = _coerce(d)
    if not isinstance(d, Sym) or not bindings or d.symbols().isdisjoint(bindings):
        return d
    return _evaluate(d, bindings)


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
    inner = substitute(atom.expr, bindings)
    if atom.kind == _FLOOR:
        return dim_floordiv(inner, atom.k)
    if atom.kind == _MOD:
        return dim_mod(inner, atom.k)
    other = substitute(atom.other, bindings)
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
