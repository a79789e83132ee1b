from __future__ import annotations

from .rewrites import RewriteHint


class ReshapeRoundTrip(RewriteHint):
    """Reports two Reshapes that undo each other around elementwise ops (info).

    ## What it does
    Reports ``Reshape(f(Reshape(x, a)), b)`` where ``f`` is a region of elementwise ops (``Add``,
    ``Mul``, ``Pow``, ``Tanh``, ``Erf``, ``Cast``...) whose other inputs are constants with one
    element, no tensor of the region is read elsewhere, and inference states the result's shape
    equal to x's, dim by dim for every binding: ``shapeflow optimize`` lets the region read x and
    removes both Reshapes.

    ## Why is this bad?
    It is not wrong, but elementwise ops give the same elements in the same order whatever the
    shape, so the two Reshapes (and the computation of their targets) run for nothing.

    ## Example
    dynamo's GPT-2 export: ``h = Gemm(...)`` of shape ``[b*s, 1024]``, ``v = Reshape(h, [b, s,
    1024])``, a GELU of Mul/Pow/Add/Tanh with scalar constants, then ``Reshape(gelu, [-1, 1024])``:
    the GELU can read ``h`` directly.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` rewrites it: the
    region's last node takes the second Reshape's output name, its other tensors new names.
    """

    code = "SF215"
