from __future__ import annotations

from .rewrites import RewriteHint


class IdentityNode(RewriteHint):
    """Reports an Identity node whose readers could read its input (info).

    ## What it does
    Reports an ``Identity`` whose output is not a graph output and not read by name inside a
    subgraph, where ``shapeflow optimize`` would delete it and let its readers read its input.
    An Identity of a sequence or optional (or of a value of unknown type) is left alone.

    ## Why is this bad?
    It is not wrong, but it is a node that does nothing: a runtime drops it anyway, and it hides
    the pattern around it from the other rewrites.

    ## Example
    ``y = Identity(x); z = Shape(y)``: ``Shape`` can read ``x``.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` removes it.
    """

    code = "SF209"
