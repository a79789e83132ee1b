from __future__ import annotations

from .rewrites import RewriteHint


class FoldableConstant(RewriteHint):
    """Reports a node whose value is a constant: a reshaped constant, or a value inference knows (info).

    ## What it does
    Reports a Squeeze or Unsqueeze with known axes whose data input is an initializer or a
    ``Constant`` node, where ``shapeflow optimize`` would replace the node by a new initializer with
    the new dims and the same bytes (external data stays external and is not read). Also reports a
    node whose output value inference knows exactly for every binding of the symbols (a small
    integer or bool tensor: ``Shape`` of a static tensor, ``Gather(Shape(h), 2)`` of a dim that is
    64, arithmetic, comparisons and ``ConstantOfShape`` on such values), at the end of each run of
    such nodes: ``optimize`` makes it an initializer and the nodes that only fed it go.

    ## Why is this bad?
    It is not wrong, but the nodes run on every inference for a result that never changes, and
    the graph shows a computation where a constant would do.

    ## Example
    ``b = Squeeze(bias: float[1, 768], [0])`` where ``bias`` is an initializer;
    ``d = Unsqueeze(Gather(Shape(h), 2), [0])`` where ``h`` is ``[batch, seq, 64]`` (``d`` is ``[64]``).

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` folds it.
    """

    code = "SF203"
