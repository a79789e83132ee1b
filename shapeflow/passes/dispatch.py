"""Which rewrites to ask about which root: the round's roots, in order, each with the rewrites whose
pattern can match there (its root op types, and what produces its data input)."""

from __future__ import annotations

from typing import Collection, Sequence

from ..graph import INITIALIZER
from ..inference import Inference
from ..ops.control import zero_trip_nodes
from . import _fast
from .context import (
    ANY_OP, AXIS_OPS, FROM_CUSTOM, FROM_GRAPH_INPUT, FROM_INITIALIZER, FROM_NOTHING, FROM_OUTER_SCOPE,
    RoundContext,
)
from .pattern import SAME_KEY
from .spec import Rewrite

# Where a node is, as findings name it: (graph path, node display id). Blocked nodes come as these,
# because node ids are those of one round's index and the caller's findings know only names.
Place = tuple[str, str]


class Dispatch:
    """The rewrites to try on a root, in priority order, by the root's op type and what produces its
    data input (``Pattern.after``): most roots end no pattern, and asking every rewrite about
    them was most of the time of a round."""

    def __init__(self, rules: Sequence[Rewrite]) -> None:
        self.rules = list(rules)
        self._table: dict[tuple[str, str], list[Rewrite]] = {}
        # The op types some rewrite is rooted at (ANY_OP: every node); when they are only
        # Squeeze/Unsqueeze, a round visits the nodes with axis facts and nothing else.
        self.root_ops: frozenset[str] = frozenset(op for r in self.rules for op in r.roots)
        # What a next round depends on (``Pattern.depends``): the rewrites whose matches depend
        # only on a node's own op, inputs and attributes, and the op types the others are rooted at.
        self.keyed = [r for r in self.rules if r.pattern.depends == SAME_KEY]
        self.neighbourhood_ops: frozenset[str] = frozenset(
            op for r in self.rules if r.pattern.depends != SAME_KEY for op in r.roots)
        self._neighbourhood_rules: dict[str, list[Rewrite]] = {}  # (``unsettled``: by op type)

    def unsettled(self, ctx: RoundContext, roots: list[int]) -> list[int]:
        """The ``roots`` some rewrite may still fire on in a later round (``Rewrite.settled``):
        only their neighbourhoods decide whether another round is worth running."""
        by_op = self._neighbourhood_rules
        nodes = ctx.graph.nodes
        out = []
        for nid in roots:
            op = nodes[nid].op_type
            rules = by_op.get(op)
            if rules is None:
                rules = by_op[op] = [r for r in self.rules if r.pattern.depends != SAME_KEY
                                     and (op in r.roots or ANY_OP in r.roots)]
            for r in rules:
                if not r.settled(ctx, nid):
                    out.append(nid)
                    break
        return out

    def rules_for(self, op: str, kind: str) -> list[Rewrite]:
        """For a root of op type ``op`` whose data input comes from ``kind``: the op type of an
        ai.onnx node of its scope, or a ``FROM_*``."""
        found = self._table.get((op, kind))
        if found is None:
            found = self._table[op, kind] = [r for r in self.rules
                                             if (op in r.roots or ANY_OP in r.roots)
                                             and (r.after is None or kind in r.after)]
        return found

    def plan_plain(self, ctx: RoundContext, latest_first: bool = True) -> list[tuple[int, list[Rewrite]]]:
        """The round's roots (``roots``) that some rewrite may fire on, each with those rewrites."""
        out: list[tuple[int, list[Rewrite]]] = []
        for nid in roots(ctx, self.root_ops, latest_first):
            if not ctx.is_standard(nid):
                continue
            found = self.rules_for(ctx.info(nid).op_type, input_kind(ctx, nid))
            if found:
                out.append((nid, found))
        return out

    def plan(self, ctx: RoundContext, latest_first: bool = True) -> list[tuple[int, list[Rewrite]]]:
        """``plan_plain`` with its lookups written out (``_fast.plan``): it visits every root of
        the model (every Squeeze/Unsqueeze, at least)."""
        return _fast.plan(self, ctx, roots(ctx, self.root_ops, latest_first))


def input_kind(ctx: RoundContext, nid: int) -> str:
    """What produces the data input of ``nid`` (``Pattern.after``): the op type of an ai.onnx
    node of its scope, or a ``FROM_*``."""
    names = ctx.inputs(nid)
    if not names:
        return FROM_NOTHING
    p = ctx.graph.scopes[ctx.sid(nid)].producer.get(names[0])
    if p is None:
        return FROM_OUTER_SCOPE
    if p < 0:
        return FROM_INITIALIZER if p == INITIALIZER else FROM_GRAPH_INPUT
    return ctx.info(p).op_type if ctx.is_standard(p) else FROM_CUSTOM


def roots(ctx: RoundContext, ops: Collection[str] = AXIS_OPS, latest_first: bool = True) -> list[int]:
    """The round's nodes of op types ``ops`` (ANY_OP: all), scope by scope, each scope from its
    last node back (or in file order). Malformed ones (a Squeeze/Unsqueeze without data input, a
    node without output) are left alone, and so is what a zero-trip Loop's scan outputs rest on
    (``ops.control.zero_trip_nodes``)."""
    graph = ctx.graph
    by_scope: dict[int, list[int]] = {}
    for nid in ctx.facts:
        info = graph.nodes[nid]
        if info.inputs and info.inputs[0] and info.outputs and info.outputs[0]:
            by_scope.setdefault(info.scope, []).append(nid)
    others = set(ops) - AXIS_OPS
    if others:
        every = ANY_OP in others
        for nid, info in enumerate(graph.nodes):
            op = info.op_type
            if op in AXIS_OPS or not (every or op in others):
                continue
            if info.outputs and info.outputs[0]:
                by_scope.setdefault(info.scope, []).append(nid)
    out: list[int] = []
    # what onnxruntime's static shapes of a zero-trip Loop's scan outputs rest on stays as it is
    frozen = zero_trip_nodes(graph) if len(graph.scopes) > 1 else frozenset()
    for sid in sorted(by_scope):
        scope = graph.scopes[sid]
        nids = by_scope[sid]
        if frozen:
            nids = [n for n in nids if n not in frozen]
        if scope.sorted_in_file:
            nids.sort(reverse=latest_first)  # node ids follow file order within a scope
        else:
            position = {n: k for k, n in enumerate(scope.order)}
            nids.sort(key=lambda n: position[n], reverse=latest_first)
        out.extend(nids)
    return out


def resolve_places(inference: Inference, places: Collection[Place]) -> set[int]:
    """The node ids of this round's index at ``places``. Squeeze/Unsqueeze nodes are found by
    their facts, which know their names without reading a proto; other nodes by their display
    name, read only when some place is not such a node."""
    if not places:
        return set()
    wanted = places if isinstance(places, (set, frozenset)) else set(places)
    found = {a.nid for a in inference.axis_nodes if (a.graph, a.node) in wanted}
    if len(found) < len(wanted):
        graph = inference.graph
        for nid, info in enumerate(graph.nodes):
            if info.op_type not in AXIS_OPS and (graph.scopes[info.scope].path, graph.display(nid)) in wanted:
                found.add(nid)
    return found


__all__ = ["Dispatch", "Place", "input_kind", "resolve_places", "roots"]
