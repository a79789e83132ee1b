"""Two nodes that compute the same values are one node (common subexpressions, SPEC.md section 4).

Termination: each rewrite deletes a node and adds none.
"""

from __future__ import annotations

from typing import NamedTuple

from .. import codes
from .._onnx import onnx
from .base import ANY_OP, Match, NoMatch, Result, RewriteRule, RoundContext, not_applicable
from .edit import Editor

# Ops whose two runs on the same inputs may differ (randomness), or whose value is state rather
# than a tensor (sequences and optionals: merging them is sound by ONNX's value semantics, but
# nothing the rule is for). Dropout is random in training mode; telling inference mode apart is
# not worth it.
NONDETERMINISTIC = frozenset({
    "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
    "Bernoulli", "Dropout",
})
_STATEFUL_PREFIXES = ("Sequence", "Optional")
_STATEFUL = frozenset({"SplitToSequence", "ConcatFromSequence"})

_TABLE = "merge-duplicates/buckets"
_ALONE = not_applicable("no other node of its scope has the same op and inputs")
_EXCLUDED = not_applicable("op not merged (random, stateful, subgraphs or not ai.onnx)")
_FIRST = not_applicable("the first of its duplicates (it survives)")

class DuplicatePlan(NamedTuple):
    survivor: int  # the earliest node computing the same values
    pairs: tuple[tuple[str, str], ...]  # (output of the root, output of the survivor) to rewire


def _excluded(ctx: RoundContext, nid: int) -> bool:
    info = ctx.graph.nodes[nid]
    op = info.op_type
    return (info.domain != "" or info.since_version is None or bool(info.subscopes)
            or op in NONDETERMINISTIC or op in _STATEFUL or op.startswith(_STATEFUL_PREFIXES)
            or not info.outputs)


def _buckets(ctx: RoundContext) -> dict[int, list[int]]:
    """Per round: node id -> the nodes of its scope with the same op and inputs, in the scope's
    topological order, for the nodes that have such company (a list shared by its members). One
    pass over the index per round, reading no proto; the few candidates are judged later."""
    found = ctx.cache.get(_TABLE)
    if found is None:
        nodes = ctx.graph.nodes
        table: dict[int, list[int]] = {}
        for scope in ctx.graph.scopes:
            first: dict[tuple[str, tuple[str, ...]], int] = {}
            groups: dict[int, list[int]] = {}
            for nid in scope.order:
                info = nodes[nid]
                key = (info.op_type, info.inputs)
                seen = first.setdefault(key, nid)
                if seen != nid:
                    group = groups.get(seen)
                    if group is None:
                        group = groups[seen] = [seen]
                    group.append(nid)
            for group in groups.values():
                for nid in group:
                    table[nid] = group
        ctx.cache[_TABLE] = found = table
    return found  # type: ignore[return-value]


def _identity(ctx: RoundContext, nid: int) -> bytes:
    """What, besides op and inputs, must be equal: which outputs exist (an op may compute
    differently, or the survivor lack an output that the root's readers need, with another set
    of outputs) and the attributes, serialized in name order (an attribute reference inside a
    function compares by the name it refers to, which is part of the serialized attribute)."""
    info = ctx.graph.nodes[nid]
    present = bytes([1 if o else 0 for o in info.outputs])
    if not info.has_attrs:
        return present
    return present + b"\x00" + _serialized(ctx.peek(nid))


def _serialized(node: "onnx.NodeProto") -> bytes:
    """The node's attributes, serialized in name order."""
    attrs = sorted(node.attribute, key=lambda a: a.name)
    return b"\x00".join([a.SerializeToString(deterministic=True) for a in attrs])


def _survivors(ctx: RoundContext, group: list[int]) -> dict[int, int]:
    """For each member of a group, the first member (in topological order) with the same
    outputs present and attributes; computed once per group and round."""
    cache_key = (_TABLE, group[0])
    found = ctx.cache.get(cache_key)
    if found is None:
        first: dict[bytes, int] = {}
        out: dict[int, int] = {}
        for nid in group:
            if not _excluded(ctx, nid):
                out[nid] = first.setdefault(_identity(ctx, nid), nid)
        ctx.cache[cache_key] = found = out
    return found  # type: ignore[return-value]


class MergeDuplicates(RewriteRule):
    """Two nodes with the same op, attributes and inputs are one node.

    Exporters repeat shape computations: ``Shape(x) -> Gather(0) -> Unsqueeze -> Concat`` is
    emitted once per use, up to four identical copies per layer. A node of the same scope, domain
    (ai.onnx), op, inputs (the same names, in order), outputs present and attributes as an earlier
    one computes the same values: it goes, and its readers read the earlier node's outputs. Chains
    of duplicates collapse over rounds (once two Shape nodes are one, their Gathers are duplicates).
    The earliest node (in topological order) survives, so the result is deterministic.

    Does not fire for random or stateful ops (RandomNormal..., Multinomial, Bernoulli, Dropout,
    Sequence/Optional ops), nodes with subgraphs, other domains and model-local functions, or when
    the later node's output must keep its name (a graph output, or read by name in a subgraph).
    """

    name = "merge-duplicates"
    code = codes.COMMON_SUBEXPRESSION.code
    roots = (ANY_OP,)

    def match(self, ctx: RoundContext, nid: int) -> Result:
        group = _buckets(ctx).get(nid)
        if group is None:
            return _ALONE
        survivor = _survivors(ctx, group).get(nid)
        if survivor is None:
            return _EXCLUDED
        if survivor == nid:
            return _FIRST
        info = ctx.graph.nodes[nid]
        sid = info.scope
        outputs = ctx.outputs(sid)
        kept = ctx.graph.nodes[survivor].outputs
        pairs: list[tuple[str, str]] = []
        rewires: list[int] = []
        for z, y in zip(info.outputs, kept):
            if not z:
                continue
            if z in outputs or not ctx.direct_readers_only(sid, z):
                return NoMatch(f"{ctx.display(nid)} duplicates {ctx.display(survivor)}, but '{z}' must "
                               "keep its name (graph output or read by a subgraph)")
            pairs.append((z, y))
            for r in ctx.readers(sid, z):
                if r not in rewires:
                    rewires.append(r)
        message = lambda: f"{ctx.display(nid)} duplicates {ctx.display(survivor)}"  # noqa: E731
        return Match(nid, (nid,), (survivor,), message, "", DuplicatePlan(survivor, tuple(pairs)),
                     tuple(rewires))

    judges_rounds = True

    def may_continue(self, ctx: RoundContext, edit: Editor) -> bool:
        """A next round finds a new duplicate only among the nodes whose inputs this round changed
        and the nodes it created (deleting nodes makes no two nodes equal): whether one of them now
        has the op, inputs and attributes of another live node. Asked before ``Editor.finish``
        (the sweep only deletes), while the index's protos are where it found them."""
        nodes = ctx.graph.nodes
        deleted = edit.deleted
        changed: dict[tuple[int, str, tuple[str, ...]], list[bytes]] = {}
        fresh = [(nodes[nid].scope, ctx.proto(nid)) for nid in edit.modified if nid not in deleted]
        fresh += edit.new_nodes()
        for sid, node in fresh:
            key = (sid, node.op_type, tuple(node.input))
            attrs = _serialized(node)
            seen = changed.setdefault(key, [])
            if attrs in seen:
                return True
            seen.append(attrs)
        modified = edit.modified
        scopes = ctx.graph.scopes
        for (sid, op, inputs), seen in changed.items():
            # An unchanged node with these inputs reads the first one (or, without inputs, is
            # one of the scope's nodes)
            others = scopes[sid].consumers.get(inputs[0], ()) if inputs and inputs[0] else scopes[sid].nodes
            for nid in others:
                info = nodes[nid]
                if (info.op_type != op or info.inputs != inputs or info.scope != sid or nid in deleted
                        or nid in modified):
                    continue
                if (_serialized(info.peek()) if info.has_attrs else b"") in seen:
                    return True
        return False

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[DuplicatePlan]) -> None:
        sid = ctx.sid(m.nid)
        for z, y in m.payload.pairs:
            edit.replace_uses(sid, z, y)
        edit.delete_node(m.nid)
