from __future__ import annotations

from .rewrites import RewriteHint


class IdentityElement(RewriteHint):
    """Reports integer or bool arithmetic with its identity element (info).

    ## What it does
    Reports ``x + 0``, ``x - 0``, ``x * 1``, ``x / 1``, ``And(x, True)``, ``Or(x, False)`` and
    ``Xor(x, False)`` on integer or bool tensors, where the constant's value is known for every
    binding and broadcasting it leaves x's shape unchanged: ``shapeflow optimize`` removes the node
    (its readers read x).

    ## Why is this bad?
    It is not wrong, but the node computes a copy of x, and the constant (often a
    ``ConstantOfShape`` or an all-True mask) is built for nothing.

    ## Example
    dynamo exports start attention masks with ``And(ones, cond)``, where ``ones`` is an all-True
    constant: the result is ``cond``.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` removes it, unless its
    output is a graph output. Float tensors are left alone (``-0 + 0`` is ``+0``).
    """

    code = "SF213"
