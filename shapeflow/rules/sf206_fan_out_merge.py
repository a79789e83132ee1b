from __future__ import annotations

from .rewrites import RewriteHint


class FanOutMerge(RewriteHint):
    """Reports a Squeeze/Unsqueeze read only by Squeezes/Unsqueezes that can each absorb it (info).

    ## What it does
    Reports a Squeeze or Unsqueeze whose output two or more Squeeze/Unsqueeze nodes read (and
    nothing else: no other node, no subgraph, no graph output) when every reader can take it in,
    so that ``shapeflow optimize`` rewrites each reader against its input and removes it:
    ``U(a2)`` after ``U(a1)`` is ``U(a2 ∪ lift(a2, a1))``, ``S(b2)`` after ``S(b1)`` is
    ``S(b1 ∪ lift(b1, b2))``, and a reader that cancels it (SF201's algebra) becomes the identity
    or the node that is left. SF201 and SF202 report the same rewrites when the node has one reader.

    ## Why is this bad?
    It is not wrong, but the shared node is one kernel launch and one intermediate tensor that
    nothing needs. Every layer of a torch dynamo export has one: ``Unsqueeze(Range, [0, 1])`` read
    by ``Unsqueeze[3]`` and ``Unsqueeze[2]``.

    ## Example
    ``t = Unsqueeze(x, [0, 1]); p = Unsqueeze(t, [3]); q = Unsqueeze(t, [2])`` is
    ``p = Unsqueeze(x, [0, 1, 3]); q = Unsqueeze(x, [0, 1, 2])``.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` rewrites the readers and
    removes the node, keeping every graph output bit-identical.
    """

    code = "SF206"
