"""The dead-node sweep, a step of its own after each round's rewrites: what a rewrite leaves
unread goes, and nothing else (SF205 dead-nodes).

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

from ..codes import INFO, Code
from ..graph import GRAPH_INPUT, INITIALIZER
from .spec import Documented

if TYPE_CHECKING:
    from .edit import Editor


class DeadNodes(Documented):
    """Nodes and initializers that a rewrite left unread go with it.

    ## What it does
    After each round of rewrites, removes the nodes and initializers that the round's rewrites
    left unread: a fold of ``Unsqueeze(Gather(Shape(x), 1), 0)`` leaves the Gather, the Shape and
    the Constant holding the index read by nobody. Starting from the tensors whose last reader a
    rewrite removed, a node goes when every one of its outputs is unread (not read by a node, not a
    graph output, not read by name inside a live subgraph), then its inputs are looked at in turn.
    Only standard (ai.onnx) nodes without subgraphs are removed; custom-domain nodes are opaque and
    stay. ``optimize`` counts the removed nodes under ``dead-nodes`` in its report.

    ## Why is this bad?
    A computation nobody reads is work for nothing; left behind by a rewrite, it would hide what
    the rewrite saved.

    ## Example
    ``s = Shape(x); d = Gather(s, 1); u = Unsqueeze(d, [0])`` with ``x`` of shape ``[b, 64]``:
    fold-known-value makes ``u`` the constant ``[64]``, and the sweep removes the Gather and the
    Shape.

    ## Fix
    There is nothing to select: the sweep always follows the rewrites (``optimize --rules SF205``
    or ``--rules dead-nodes`` is a usage error), and lint never reports it on its own.

    ## When it does not fire
    Nodes that were already dead in the input stay: removing them is not what a rewrite asked for,
    and a model with nothing to rewrite comes out byte-identical.
    """

    code = Code("SF205", "dead-nodes", INFO, fixable=True)


NAME = DeadNodes.name


def sweep(edit: "Editor") -> None:
    """Delete everything the round's rewrites left dead (a worklist, no recursion over the graph).
    Runs once per round, after the rewrites and before ``Editor.finish`` writes the lists back."""
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
        outs = edit.current_outputs(p)
        # (``name`` itself was just found unread: a producer of it alone needs no second look)
        if not (len(outs) == 1 and outs[0] == name) and any(  # type: ignore[arg-type,index]
                o and edit.needed(sid, o) for o in outs):  # type: ignore[attr-defined]
            continue
        edit.delete_node(p, dead=True)
