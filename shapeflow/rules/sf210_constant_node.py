from __future__ import annotations

from .rewrites import RewriteHint


class ConstantNode(RewriteHint):
    """Reports a Constant node of the main graph that can be an initializer (info).

    ## What it does
    Reports a ``Constant`` node of the main graph (``value``, ``value_float(s)``,
    ``value_int(s)`` or ``value_string(s)``) whose output is not a graph output, where
    ``shapeflow optimize`` would store its value as an initializer of the same name. Constants in
    subgraphs and function bodies, sparse values and models below IR version 4 are left alone.

    ## Why is this bad?
    It is not wrong, but a node runs where a stored value would do, and the constant is hidden
    from the rewrites that fold constants.

    ## Example
    ``c = Constant(value=[0])`` read by ``Unsqueeze(x, c)``.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` turns it into an
    initializer.
    """

    code = "SF210"
