from __future__ import annotations

from .rewrites import RewriteHint


class FoldableConstant(RewriteHint):
    """Reports a Squeeze or Unsqueeze of a constant, which can be folded into the constant (info).

    ## What it does
    Reports a Squeeze or Unsqueeze with known axes whose data input is an initializer or a
    ``Constant`` node, where ``shapeflow optimize`` would replace the node by a new initializer with
    the new dims and the same bytes (external data stays external and is not read).

    ## Why is this bad?
    It is not wrong, but the reshape runs on every inference for a result that never changes, and
    the graph shows a node where a constant would do.

    ## Example
    ``b = Squeeze(bias: float[1, 768], [0])`` where ``bias`` is an initializer.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` folds it.
    """

    code = "SF203"
