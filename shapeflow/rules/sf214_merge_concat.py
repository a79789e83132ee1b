from __future__ import annotations

from .rewrites import RewriteHint


class MergeConcat(RewriteHint):
    """Reports a Concat read only by a Concat along the same axis (info).

    ## What it does
    Reports ``Concat(a, Concat(b, c), d)`` where the inner Concat has no other reader and both
    concatenate along the same axis: ``shapeflow optimize`` writes ``Concat(a, b, c, d)``.

    ## Why is this bad?
    It is not wrong, but it runs two nodes (and copies the data twice) for one concatenation.
    Exporters build shape vectors in pieces this way.

    ## Example
    ``Resize(x, sizes=Concat(Slice(Shape(x), 0, 2), Concat(h, w)))``: the sizes are one Concat of
    three inputs.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` merges them.
    """

    code = "SF214"
