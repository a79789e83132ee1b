"""Identity nodes go (SPEC.md section 4).

Termination: each rewrite deletes a node and adds none.
"""

from __future__ import annotations

from .. import codes
from .base import Match, NoMatch, Result, RewriteRule, RoundContext, not_applicable
from .edit import Editor

_NO_INPUT = not_applicable("no input")
_NOT_TENSOR = not_applicable("not known to be a tensor (a sequence or optional stays)")


class IdentityNode(RewriteRule):
    """Identity(x) is x.

    Exporters leave Identity nodes behind (renamed weights, the leftovers of removed ops); every
    runtime drops them anyway. Its readers read ``x`` instead and it goes.

    Does not fire when its output must keep its name (a graph output, or read by name in a
    subgraph: an Identity is what keeps such a name), or when inference does not know that its
    input is a tensor (an Identity of a sequence or optional stays).
    """

    name = "identity-node"
    code = codes.IDENTITY_NODE.code
    roots = ("Identity",)

    def match(self, ctx: RoundContext, nid: int) -> Result:
        info = ctx.graph.nodes[nid]
        names, sid = info.inputs, info.scope
        if not names or not names[0] or not info.outputs or not info.outputs[0]:
            return _NO_INPUT
        x, z = names[0], info.outputs[0]
        t = ctx.tensor(sid, x) or ctx.tensor(sid, z)
        if t is None or t.dtype == 0:
            return _NOT_TENSOR
        if z in ctx.outputs(sid) or not ctx.direct_readers_only(sid, z):
            return NoMatch(f"{ctx.display(nid)}: '{z}' must keep its name (graph output or read by a "
                           "subgraph)")
        return Match(nid, (nid,), (), lambda: f"{ctx.display(nid)} passes '{x}' through", "", x,
                     tuple(ctx.readers(sid, z)))

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[str]) -> None:
        sid = ctx.sid(m.nid)
        edit.replace_uses(sid, ctx.output(m.nid), m.payload)
        edit.delete_node(m.nid)
