from __future__ import annotations

from .rewrites import RewriteHint


class NoOpReshape(RewriteHint):
    """Reports a Reshape or Expand that returns its input unchanged (info).

    ## What it does
    Reports a ``Reshape`` or ``Expand`` whose output shape is, dim by dim and for every binding of
    the symbols, its input's shape, where ``shapeflow optimize`` would remove it (its readers read
    the input). Expand: every target element is 1 or the input's dim at its position. Reshape: the
    same rank, each element the input's dim, or 0 with ``allowzero=0``, or one -1 among static
    dims.

    ## Why is this bad?
    It is not wrong, but the node copies (or views) a tensor for nothing, and the target's
    computation (often ``Shape(x)`` itself) runs with it.

    ## Example
    ``y = Expand(x, Shape(x))`` is ``x``; so is ``Reshape(x, [0, 0, 12, 64])`` of a ``[b, s, 12,
    64]`` tensor.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` removes it, unless its
    output is a graph output.
    """

    code = "SF212"
