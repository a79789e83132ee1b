"""SF207 merge-duplicates: two nodes that compute the same values are one node."""

from __future__ import annotations

from typing import Any, NamedTuple

from ..codes import INFO, Code
from ..passes.context import ANY_OP, RoundContext
from ..passes.edit import Editor
from ..passes.match import Match, NoMatch, Result, not_applicable
from ..passes.pattern import SAME_KEY, Bound, Guard, Op
from ..passes.rounds import same_constants, serialized_attributes
from ..passes.spec import Rewrite

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
    """Per round: node id -> the nodes of its scope with the same op and inputs (a small constant
    input counted by its content), in the scope's topological order, for the nodes that have such
    company (a list shared by its members). One pass over the index per round, reading no node
    proto; the few candidates are judged later."""
    found = ctx.cache.get(_TABLE)
    if found is None:
        nodes = ctx.graph.nodes
        table: dict[int, list[int]] = {}
        for scope in ctx.graph.scopes:
            first: dict[tuple[str, tuple[str, ...]], int] = {}
            groups: dict[int, list[int]] = {}
            canon = same_constants(ctx, scope.id)
            renamed = canon.keys()
            for nid in scope.order:
                info = nodes[nid]
                inputs = info.inputs
                if canon and not renamed.isdisjoint(inputs):
                    inputs = tuple([canon.get(n, n) for n in inputs])
                key = (info.op_type, inputs)
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
    return present + b"\x00" + serialized_attributes(ctx.peek(nid))


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


class _HasTwin(Guard):
    """Another node of the root's scope has the same op and inputs (one lookup in a table built
    once per round: almost every node has none)."""

    def check(self, ctx: RoundContext, nid: int) -> NoMatch | None:
        return None if nid in _buckets(ctx) else _ALONE


class Duplicates(Op):
    """Every standard node with a twin (same op, same inputs) in its scope. What a later round's
    match depends on is the node's own op, inputs and attributes (``SAME_KEY``): only a node a
    round modifies or creates can become a new duplicate."""

    depends = SAME_KEY

    def __init__(self) -> None:
        super().__init__(ANY_OP, guards=(_HasTwin(),))


class MergeDuplicates(Rewrite):
    """Two nodes with the same op, attributes and inputs are one node.

    ## What it does
    Reports a node of the same scope, domain (ai.onnx), op, inputs (the same tensors, in order, an
    initializer of at most 64 elements counting as the same as an earlier one with the same
    element type, dims and bytes), outputs present and attributes as an earlier one: it computes
    the same values, so
    ``shapeflow optimize`` deletes it and lets its readers read the earlier node's outputs. Chains
    of duplicates collapse over rounds (once two Shape nodes are one, their Gathers are
    duplicates). The earliest node (in topological order) survives, so the result is
    deterministic.

    ## Why is this bad?
    It is not wrong, but the same values are computed twice. Exporters repeat whole shape
    computations (``Shape -> Gather -> Unsqueeze -> Concat``, once per use, up to four identical
    copies per layer), which keeps the graph large and hides that the shapes are the same.

    ## Example
    ``a = Shape(x)`` and later ``b = Shape(x)``: ``b``'s readers can read ``a``. So can those of
    ``Slice(s, starts_1, ends_1)`` read ``Slice(s, starts_0, ends_0)`` when ``starts_1`` and
    ``starts_0`` are both the initializer ``[0]``, ``ends_1`` and ``ends_0`` both ``[2]`` (jax2onnx
    writes new ones for each Dense layer).

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` merges them. Each
    rewrite deletes a node and adds none.

    ## When it does not fire
    For random or stateful ops (RandomNormal..., Multinomial, Bernoulli, Dropout, Sequence/Optional
    ops), nodes with subgraphs, other domains and model-local functions, or when the later node's
    output must keep its name (a graph output, or read by name in a subgraph). Constants count as
    the same only as initializers of the node's own graph, not when they are also graph inputs
    (a caller may override them), external, strings or over 64 elements.
    """

    code = Code("SF207", "merge-duplicates", INFO, fixable=True)
    aliases = ("common-subexpression",)
    order = 910
    pattern = Duplicates()

    def check(self, ctx: RoundContext, b: Bound) -> Result:
        nid = b.root
        group = _buckets(ctx)[nid]
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
        return Match(nid, reads=(survivor,), rewires=tuple(rewires), message=message,
                     payload=DuplicatePlan(survivor, tuple(pairs)))

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[Any]) -> None:
        sid = ctx.sid(m.nid)
        for z, y in m.payload.pairs:
            edit.replace_uses(sid, z, y)
        edit.delete_node(m.nid)
