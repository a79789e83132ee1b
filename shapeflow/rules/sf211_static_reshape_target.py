from __future__ import annotations

from .rewrites import RewriteHint


class StaticReshapeTarget(RewriteHint):
    """Reports a Reshape whose computed target is a constant, dim by dim (info).

    ## What it does
    Reports a ``Reshape`` whose target is computed at run time but is, element by element, an
    integer or the input's own dim at the same position, where ``shapeflow optimize`` would give
    it the constant target: the input's dims become 0 ("copy the input's dim", ``allowzero=0``),
    the integers stay. One other symbolic element becomes -1 only where that is right for every
    binding, empty tensors included. With ``allowzero=1`` it fires only when the target has no 0
    and a -1 only beside elements provably at least 1, and drops the attribute. The nodes that computed the target go when nothing else
    reads them.

    ## Why is this bad?
    It is not wrong, but exporters compute ``view(b, s, 12, 64)`` as ``Shape -> Gather -> Unsqueeze
    -> Concat`` chains, several nodes per Reshape, for a target that ``[0, 0, 12, 64]`` states
    once.

    ## Example
    ``x: [b, s, 768]; t = Concat(Unsqueeze(Gather(Shape(x), 0)), Unsqueeze(Gather(Shape(x), 1)),
    [12], [64]); y = Reshape(x, t)`` is ``y = Reshape(x, [0, 0, 12, 64])``.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` rewrites it, keeping every
    graph output bit-identical.
    """

    code = "SF211"
