from __future__ import annotations

from .rewrites import RewriteHint


class CommonSubexpression(RewriteHint):
    """Reports a node that repeats an earlier node with the same op, attributes and inputs (info).

    ## What it does
    Reports a node of the same scope, op (ai.onnx), attributes and inputs (the same tensors, in
    order) as an earlier node, where ``shapeflow optimize`` would delete it and let its readers
    read the earlier node's outputs. Random ops (RandomNormal, Bernoulli, Dropout...), sequence
    and optional ops, nodes with subgraphs and outputs that must keep their names are left alone.

    ## Why is this bad?
    It is not wrong, but the same values are computed twice. Exporters repeat whole shape
    computations (``Shape -> Gather -> Unsqueeze -> Concat``, once per use), which keeps the graph
    large and hides that the shapes are the same.

    ## Example
    ``a = Shape(x)`` and later ``b = Shape(x)``: ``b``'s readers can read ``a``.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` merges them.
    """

    code = "SF207"
