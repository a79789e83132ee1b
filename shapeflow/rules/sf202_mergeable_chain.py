from __future__ import annotations

from .rewrites import RewriteHint


class MergeableChain(RewriteHint):
    """Reports consecutive Unsqueezes, or consecutive Squeezes, that one node can replace (info).

    ## What it does
    Reports a chain of two or more Unsqueeze (or two or more Squeeze) nodes, each reading only the
    previous one's output, that ``shapeflow optimize`` would merge into one node:
    ``U(a2)`` after ``U(a1)`` is ``U(a2 ∪ lift(a2, a1))`` and ``S(b2)`` after ``S(b1)`` is
    ``S(b1 ∪ lift(b1, b2))``, where ``lift(s, p)`` is the p-th position not in ``s``.

    ## Why is this bad?
    It is not wrong, but every extra node is a kernel launch and an intermediate tensor. The
    extended attention mask of BERT/GPT-2 exports (``mask.unsqueeze(1).unsqueeze(2)``) is the
    usual case.

    ## Example
    ``t = Unsqueeze(mask, [1]); y = Unsqueeze(t, [2])`` is ``y = Unsqueeze(mask, [1, 2])``.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` merges the chain.
    """

    code = "SF202"
