"""SF209 identity-node: an Identity node goes, its readers read its input."""

from __future__ import annotations

from typing import Any

from ..codes import INFO, Code
from ..passes.context import RoundContext
from ..passes.edit import Editor
from ..passes.match import Match, NoMatch, Result, not_applicable
from ..passes.pattern import DATA_INPUT, Bound, Bypass, Guard, Op
from ..passes.spec import Rewrite

_NOT_TENSOR = not_applicable("not known to be a tensor (a sequence or optional stays)")


class _Tensor(Guard):
    """Inference knows that the node's input (or output) is a tensor."""

    def check(self, ctx: RoundContext, nid: int) -> NoMatch | None:
        info = ctx.graph.nodes[nid]
        t = ctx.tensor(info.scope, info.inputs[0]) or ctx.tensor(info.scope, info.outputs[0])
        return _NOT_TENSOR if t is None or t.dtype == 0 else None


class IdentityNode(Rewrite):
    """Identity(x) is x.

    ## What it does
    Reports an ``Identity`` whose output is not a graph output and not read by name inside a
    subgraph, where ``shapeflow optimize`` would delete it and let its readers read its input.
    Exporters leave Identity nodes behind (renamed weights, the leftovers of removed ops).

    ## Why is this bad?
    It is not wrong, but it is a node that does nothing: a runtime drops it anyway, and it hides
    the pattern around it from the other rewrites.

    ## Example
    ``y = Identity(x); z = Shape(y)``: ``Shape`` can read ``x``.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` removes it. Each rewrite
    deletes a node and adds none.

    ## When it does not fire
    When its output must keep its name (a graph output, or read by name in a subgraph: an Identity
    is what keeps such a name), or when inference does not know that its input is a tensor (an
    Identity of a sequence or optional stays).
    """

    code = Code("SF209", "identity-node", INFO, fixable=True)
    order = 530
    pattern = Op("Identity", guards=(DATA_INPUT, _Tensor()))
    replacement = Bypass("{root} passes '{x}' through")

    def check(self, ctx: RoundContext, b: Bound) -> Result:
        return self.replacement.plan(ctx, b.root, ctx.inputs(b.root)[0])

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[Any]) -> None:
        self.replacement.apply(ctx, edit, m)
