"""Dead-node cleanup: what a rewrite leaves unread goes, and nothing else.

A fold turns ``Unsqueeze(Gather(Shape(x), 1), 0)`` into a constant; the Gather, the Shape and the
Constant holding the index are then read by nobody. Starting from the tensors whose last reader a
rewrite removed, the sweep deletes their producers when *every* output of the producer is unread
(not read by a node, not a graph output, not read by name inside a live subgraph), then looks at
that producer's inputs in turn, and so on. Initializers left unread are removed the same way.

It never starts anywhere else: nodes that were already dead in the input stay (removing them is not
what the user asked for, and a model with nothing to rewrite must come out byte-identical). It only
deletes standard (ai.onnx) nodes without subgraphs; custom-domain nodes are opaque and stay.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import codes
from ..graph import GRAPH_INPUT, INITIALIZER

if TYPE_CHECKING:
    from .edit import Editor

NAME = codes.DEAD_NODES.name  # the sweep's code is SF205 (codes.py); it is no rule of its own


def sweep(edit: "Editor") -> None:
    """Delete everything the round's rewrites left dead (a worklist, no recursion over the graph)."""
    g = edit.g
    ctx = edit.ctx
    released = edit.released
    while released:
        sid, name = released.pop()
        if edit.is_gone(sid, name) or edit.needed(sid, name):
            continue
        scope = g.scopes[sid]
        if edit.added_initializer(sid, name):
            # made an initializer this round (a Constant node converted, a value folded), and its
            # last reader went in the same round: the index still names the deleted node
            edit.remove_initializer(sid, name)
            continue
        p = scope.producer.get(name)
        if p is None:
            # Read from an enclosing scope: this body no longer needs it, perhaps nobody does.
            if scope.parent is not None:
                released.append((scope.parent, name))
            continue
        if p == GRAPH_INPUT:
            continue
        if p == INITIALIZER:
            if (scope.kind == "graph" and name in scope.initializers
                    and (sid, name) not in ctx.overridable):
                edit.remove_initializer(sid, name)
            continue
        if p in edit.deleted:
            continue
        info = g.nodes[p]
        if info.domain != "" or info.since_version is None or info.subscopes:
            continue
        if any(o and edit.needed(sid, o) for o in edit.current_outputs(p)):  # type: ignore[attr-defined]
            continue
        edit.delete_node(p, dead=True)
