from __future__ import annotations

from .rewrites import RewriteHint


class CancellingPair(RewriteHint):
    """Reports adjacent Squeeze and Unsqueeze nodes that cancel, in whole or in part (info).

    ## What it does
    Reports a Squeeze that follows an Unsqueeze (or the reverse) on the same tensor where
    ``shapeflow optimize`` would remove the pair or replace it by a single node: ``S(b)`` after
    ``U(a)`` with ``b == a`` is the identity, with ``b`` a subset of ``a`` (or ``a`` of ``b``) it
    leaves one node; ``U(a)`` after ``S(a)`` is the identity. The finding sits on the node where the
    pattern is rooted.

    ## Why is this bad?
    It is not wrong, but each node is a kernel launch and a copy or a view, and the pair hides the
    real shape flow. Exporters leave such pairs around every ``view`` and ``flatten``.
    (``U(a)`` after ``S(a)`` also removes a run-time failure when a squeezed dim is not 1; under
    ``optimize --strict`` only pairs whose squeezed dims are provably 1 are removed.)

    ## Example
    ``t = Unsqueeze(x, [1]); y = Squeeze(t, [1])``: ``y`` is ``x``.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` rewrites it, keeping every
    graph output bit-identical.
    """

    code = "SF201"
