"""Two nodes that compute the same values are one node (common subexpressions, SPEC.md section 4).

Termination: each rewrite deletes a node and adds none.
"""

from __future__ import annotations

from typing import NamedTuple

from .. import codes
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

_Key = tuple[int, str, tuple[str, ...], tuple[bool, ...]]


class DuplicatePlan(NamedTuple):
    survivor: int  # the earliest node computing the same values
    pairs: tuple[tuple[str, str], ...]  # (output of the root, output of the survivor) to rewire


def _key(ctx: RoundContext, nid: int) -> _Key | None:
    info = ctx.graph.nodes[nid]
    op = info.op_type
    if (info.domain != "" or info.since_version is None or info.subscopes or op in NONDETERMINISTIC
            or op in _STATEFUL or op.startswith(_STATEFUL_PREFIXES) or not info.outputs):
        return None
    # Which outputs exist is part of the key: an op may compute differently (or the survivor lack
    # an output the root's readers need) with a different set of outputs.
    return (info.scope, op, info.inputs, tuple([bool(o) for o in info.outputs]))


def _buckets(ctx: RoundContext) -> dict[_Key, list[int]]:
    """Per round: the nodes of each (scope, op, inputs, outputs present) with at least two members,
    each in its scope's topological order. One pass over the index; attributes are not read."""
    table = ctx.cache.get(_TABLE)
    if table is None:
        graph = ctx.graph
        found: dict[_Key, list[int]] = {}
        for scope in graph.scopes:
            for nid in scope.order:
                k = _key(ctx, nid)
                if k is not None:
                    found.setdefault(k, []).append(nid)
        table = {k: v for k, v in found.items() if len(v) >= 2}
        ctx.cache[_TABLE] = table
    return table  # type: ignore[return-value]


def _attributes(ctx: RoundContext, nid: int) -> bytes:
    """The node's attributes, serialized in name order (an attribute reference inside a function
    compares by the name it refers to, which is part of the serialized attribute)."""
    node = ctx.peek(nid)
    attrs = sorted(node.attribute, key=lambda a: a.name)
    return b"\x00".join(a.SerializeToString(deterministic=True) for a in attrs)


def _survivors(ctx: RoundContext, key: _Key, members: list[int]) -> dict[int, int]:
    """For each member of a bucket, the first member (in topological order) with the same
    attributes; computed once per bucket and round."""
    cache_key = (_TABLE, key)
    found = ctx.cache.get(cache_key)
    if found is None:
        first: dict[bytes, int] = {}
        out: dict[int, int] = {}
        for nid in members:
            out[nid] = first.setdefault(_attributes(ctx, nid), nid)
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
        info = ctx.graph.nodes[nid]
        k = _key(ctx, nid)
        if k is None:
            return _EXCLUDED
        members = _buckets(ctx).get(k)
        if members is None:
            return _ALONE
        survivor = _survivors(ctx, k, members)[nid]
        if survivor == nid:
            return _FIRST
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

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[DuplicatePlan]) -> None:
        sid = ctx.sid(m.nid)
        for z, y in m.payload.pairs:
            edit.replace_uses(sid, z, y)
        edit.delete_node(m.nid)
