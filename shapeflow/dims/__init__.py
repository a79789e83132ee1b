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
tensor has more elements on one axis), unless a tighter range is stated (``--assume seq>=3``, or
a fact inference proved); an expression over symbols (a shape *value*) may be negative. That
domain is a value, :class:`Domain`, passed to every function that decides from it (none is
ambient). :func:`dim_bounds` gives an interval that holds for every value of the symbols in a
domain, and ``min``/``max``/comparisons are decided from it where they can be: ``min(3, seq)``
stays symbolic, ``max(seq + 1, 0)`` is ``seq + 1``.

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

The package, by layer (each module imports only those before it): :mod:`.canonical` (the form,
and the ring operations), :mod:`.text` (printing and reading), :mod:`.domain` (bounds),
:mod:`.zeros` (zero sets) and :mod:`.algebra` (the operations the domain decides). Everything
public is re-exported here: ``from shapeflow.dims import X``.
"""

from __future__ import annotations

from .algebra import (
    broadcast_dim, dim_exact_div, dim_floordiv, dim_fmod, dim_max, dim_min, dim_mod, dim_resolve, dim_truncdiv,
    join_pieces, rebuild, require_at_least, simplest, substitute,
)
from .canonical import (
    MAX_NESTING, Dim, Shape, Sym, affine_symbol, dim_add, dim_mul, dim_neg, dim_sub, has_minmax, plain_symbol,
)
from .domain import (
    BASE, MAX_DIM, OVERFLOW_CAP, Bound, Domain, dim_bounds, dim_compare, dim_is_one, dim_nonnegative, dims_equal,
    prove_broadcast,
)
from .text import dim_from_text, dim_to_json, format_shape, shape_to_json
from .zeros import zero_forcing_symbols, zero_implies, zero_symbol


__all__ = [
    "Dim",
    "Shape",
    "Sym",
    "Bound",
    "MAX_DIM",
    "MAX_NESTING",
    "affine_symbol",
    "BASE",
    "broadcast_dim",
    "Domain",
    "OVERFLOW_CAP",
    "zero_forcing_symbols",
    "zero_symbol",
    "zero_implies",
    "plain_symbol",
    "join_pieces",
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
