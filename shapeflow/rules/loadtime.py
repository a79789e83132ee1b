"""What the load-time rules (SF011-SF018) share: which nodes onnxruntime checks when it creates a
session, and each node's signature, computed once per model (``LintContext.cache``).

onnxruntime checks every node of the main graph and of every subgraph in it. A model-local function
is inlined where it is called, so the nodes of a function that nothing calls are never checked
(only their input and output counts are: ``live_scopes``).
"""

from __future__ import annotations

from ..graph import ModelGraph
from ..signatures import Signature, signature
from .base import LintContext

# Squeeze and Unsqueeze carry their own rules for axes given in the wrong form (SF108) or with the
# wrong attributes (SF117): these ops' attributes and input counts are theirs.
AXIS_OPS = frozenset({"Squeeze", "Unsqueeze"})

_LIVE = "loadtime.live"
_SIGS = "loadtime.signatures"


def live_scopes(ctx: LintContext) -> list[bool]:
    """Per scope: whether onnxruntime checks its nodes (not a function body nothing calls)."""
    found = ctx.cache.get(_LIVE)
    if found is None:
        found = ctx.cache[_LIVE] = _live(ctx.graph)
    return found  # type: ignore[return-value]


def _live(g: ModelGraph) -> list[bool]:
    live = [not g.in_function(s.id) for s in g.scopes]
    if not g.functions:
        return live
    # The scopes nested in each function, then the calls: from every live node, transitively.
    inside: dict[int, list[int]] = {}
    for s in g.scopes:
        root = s
        while root.parent is not None:
            root = g.scopes[root.parent]
        if root.kind == "function":
            inside.setdefault(root.id, []).append(s.id)
    pending = [s.id for s in g.scopes if live[s.id]]
    while pending:
        sid = pending.pop()
        for nid in g.scopes[sid].nodes:
            info = g.nodes[nid]
            if info.since_version is not None:
                continue
            fsid = g.functions.get((info.peek().domain, info.op_type))
            if fsid is None or live[fsid]:
                continue
            for member in inside.get(fsid, [fsid]):
                live[member] = True
                pending.append(member)
    return live


def node_signatures(ctx: LintContext) -> list[Signature | None]:
    """Per node id: the signature of the operator version it runs (None: no schema, a custom
    operator or a function call), each looked up once per (domain, op_type, version)."""
    found = ctx.cache.get(_SIGS)
    if found is not None:
        return found  # type: ignore[return-value]
    seen: dict[str, dict[str, dict[int, Signature | None]]] = {}
    out: list[Signature | None] = []
    add = out.append
    for info in ctx.graph.nodes:
        since = info.since_version
        if since is None:
            add(None)
            continue
        by_op = seen.get(info.domain)
        if by_op is None:
            by_op = seen[info.domain] = {}
        versions = by_op.get(info.op_type)
        if versions is None:
            versions = by_op[info.op_type] = {}
        sig = versions.get(since, False)
        if sig is False:
            sig = versions[since] = signature(info.domain, info.op_type, since)
        add(sig)  # type: ignore[arg-type]
    ctx.cache[_SIGS] = out
    return out
