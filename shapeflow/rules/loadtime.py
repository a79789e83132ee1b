"""What the load-time rules (SF011-SF018) share: which nodes onnxruntime checks when it creates a
session, and each node's signature.

onnxruntime checks every node of the main graph and of every subgraph in it. A model-local function
is inlined where it is called, so the nodes of a function that nothing calls are never checked
(only their input and output counts are: ``live_scopes``).
"""

from __future__ import annotations

from ..graph import ModelGraph, NodeInfo
from ..signatures import Signature, signature

# Squeeze and Unsqueeze carry their own rules for axes given in the wrong form (SF108) or with the
# wrong attributes (SF117): these ops' attributes and input counts are theirs.
AXIS_OPS = frozenset({"Squeeze", "Unsqueeze"})


def live_scopes(g: ModelGraph) -> list[bool]:
    """Per scope: whether onnxruntime checks its nodes (not a function body nothing calls)."""
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


class Signatures:
    """``signature`` per node, looked up once per (domain, op, version) of a model."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str, int], Signature | None] = {}

    def of(self, info: NodeInfo) -> Signature | None:
        since = info.since_version
        if since is None:
            return None
        key = (info.domain, info.op_type, since)
        try:
            return self._seen[key]
        except KeyError:
            found = self._seen[key] = signature(*key)
            return found
