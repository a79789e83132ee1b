from __future__ import annotations

from .rewrites import RewriteHint


class ShapeSlice(RewriteHint):
    """Reports a Shape -> Gather -> Unsqueeze that one shape slice can replace (info).

    ## What it does
    Reports an ``Unsqueeze(Gather(Shape(x), i), [0])`` that ``shapeflow optimize`` would turn into
    the one-element slice ``shape(x)[k:k+1]``: from opset 15 a single ``Shape(x, start=k, end=k+1)``
    node, before that a ``Slice`` of the Shape output. The Gather and the Shape go when nothing else
    reads them. The finding sits on the Unsqueeze.

    ## Why is this bad?
    It is not wrong, but three nodes (and a 0-d tensor in between) compute what one node does.
    PyTorch exports ``x.size(i)`` used in a new shape this way, once per dim, so exported models
    carry dozens of them around every ``view`` and ``reshape``.

    ## Example
    ``s = Shape(x); d = Gather(s, 1); y = Unsqueeze(d, [0])`` is ``y = Shape(x, start=1, end=2)``
    at opset 15.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` rewrites it, keeping every
    graph output bit-identical.
    """

    code = "SF204"
