"""One round of the fixpoint, and whether another one is worth running.

A round visits its roots (``Dispatch.plan``), applies the first rewrite that matches at each when
none of the nodes it claims was claimed by an earlier rewrite of the round (:class:`Claims`), and
defers it to the next round otherwise.

Whether another round could rewrite anything is decided from what the round did and what the
rewrites declare (:func:`another_round`), never by asking them: a deferred match; a created node
of an op type some rewrite declares it creates for further work (``Rewrite.creates``); a root
whose neighbourhood changed, unless a stable guard of every rewrite rooted there fails
(``Rewrite.settled``); for rewrites whose matches depend only on a node's own op, inputs and
attributes (``SAME_KEY``), a modified or created node that now has another node's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from .._onnx import onnx
from ..graph import ModelGraph
from .context import AXIS_OPS, RoundContext
from .dispatch import Dispatch, roots
from .edit import Editor
from .match import Match, NoMatch


# What stands in the way of a match (``Claims.conflict``).
READS, WRITES = "reads", "writes"


class Claims:
    """The nodes the round's rewrites took: written, read, rewired, and reserved for the sweeps of
    deferred rewrites. ``deleted`` is the editor's set of the nodes deleted so far."""

    __slots__ = ("written", "read", "rewired", "reserved", "deleted")

    def __init__(self, deleted: set[int] | None = None) -> None:
        self.written: set[int] = set()
        self.read: set[int] = set()
        self.rewired: set[int] = set()
        self.reserved: set[int] = set()
        self.deleted: set[int] = deleted if deleted is not None else set()

    def conflict(self, m: Match[object]) -> str | None:
        """Whether ``m`` touches a node an earlier rewrite of the round wrote, writes one that an
        earlier rewrite relies on, or touches one a deferred rewrite will sweep. Two overlaps are
        allowed: renaming different inputs of one node, and rewiring a reader that an earlier
        rewrite deleted (nothing relied on it): every rewire renames a tensor's readers to a tensor
        of the same value (``Editor.replace_uses``), and the editor forwards the rename to the
        readers the earlier rewrite gave the tensor in its place (a no-op Reshape whose only
        reader began a cancelled pair is bypassed in the round that cancelled the pair). The
        answer says which claim of ``m`` stands in the way: ``"reads"`` when only what it reads
        was taken (what it matched on changed), ``"writes"`` otherwise."""
        written, read, rewired = self.written, self.read, self.rewired
        for group in (m.writes, m.sweeps):
            for n in group:
                if n in written or n in read or n in rewired:
                    return WRITES
        for n in m.rewires:
            if n in read or (n in written and n not in self.deleted):
                return WRITES
        reserved = self.reserved
        if reserved:
            for group in (m.writes, m.sweeps, m.rewires):
                for n in group:
                    if n in reserved:
                        return WRITES
        for n in m.reads:
            if n in written or n in rewired or n in reserved:
                return READS
        return None

    def take(self, m: Match[object]) -> None:
        self.written.update(m.writes)
        self.written.update(m.sweeps)
        self.read.update(m.reads)
        self.rewired.update(m.rewires)

    def reserve(self, m: Match[object]) -> None:
        """``m`` waits for the next round: what it will sweep then is left alone in this one (a
        no-op Reshape deferred here takes its whole target computation with it next round, which
        rewriting that computation now would only have wasted). Only for a match that waits for a
        node it would change: one whose reads were taken matched on what has changed, and may not
        fire at all (a fold whose readers were folded first is swept instead)."""
        self.reserved.update(m.sweeps)


@dataclass
class RoundResult:
    fired: dict[str, int] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: list[tuple[int, str]] = field(default_factory=list)  # (root, why a rule did not fire)
    deferred: list[int] = field(default_factory=list)  # roots left for the next round: a node was taken
    roots: list[tuple[str, str, str]] = field(default_factory=list)  # see OptimizeResult.roots
    written: set[int] = field(default_factory=set)


# Whether ``run_round`` skips a root that an earlier rewrite of the round wrote or sweeps without
# asking its rules (tests/test_fast_paths.py turns it off and compares the models). Every match
# claims its root (in ``writes``, ``sweeps``, ``reads`` or ``rewires``), so there each would conflict;
# such a root is not deferred, and the near misses said about it are dropped with it (``fixpoint``
# keeps none of a root the round wrote). On a chain a no-op Reshape sweeps its whole target
# computation first (roots are visited latest first): asking about those roots was a tenth of a round.
SKIP_TAKEN = True


def run_round(ctx: RoundContext, edit: Editor, dispatch: Dispatch, explain: bool = True,
              blocked: set[int] | None = None) -> RoundResult:
    """Apply the round's rewrites through ``edit`` (the sweep and the write-back come after)."""
    out = RoundResult()
    claims = Claims(edit.deleted)
    out.written = claims.written
    facts = ctx.facts
    taken = claims.written if SKIP_TAKEN else ()
    for nid, tried in dispatch.plan(ctx):
        if blocked and nid in blocked:
            continue
        if nid in taken:
            continue  # (see SKIP_TAKEN)
        for rule in tried:
            r = rule.match(ctx, nid)
            if type(r) is NoMatch:
                if r.near:
                    out.skipped.append((nid, f"{rule.name}: {r.reason}"))
                continue
            m: Match[object] = r  # type: ignore[assignment]
            conflict = claims.conflict(m)
            if conflict is not None:
                if nid not in claims.written:  # (a root taken by an earlier rewrite has nothing left to do)
                    out.deferred.append(nid)
                    if conflict == WRITES:
                        claims.reserve(m)
                break  # a node it needs was rewritten this round; the next round retries
            rule.apply(ctx, edit, m)
            claims.take(m)
            out.fired[rule.name] = out.fired.get(rule.name, 0) + 1
            fact = facts.get(nid)
            if fact is not None:  # (a Squeeze/Unsqueeze: its place is in its facts, no proto to read)
                out.roots.append((rule.code.code if rule.code is not None else "", fact.graph, fact.node))
            if explain or m.note:
                line = f"{rule.name}: {m.text}"
                if m.note:
                    line += f" ({m.note})"
                    out.notes.append(line)
                if explain:
                    out.log.append(line)
            break
    return out


# -- whether another round is worth running ----------------------------------------------------------

def another_round(ctx: RoundContext, edit: Editor, dispatch: Dispatch, result: RoundResult) -> bool:
    """Whether a next round could rewrite anything at a root whose match depends on its
    neighbourhood, judged from what this round did (after the sweep and ``Editor.finish``). The
    caller adds ``keyed_collision`` (asked before the sweep) and a rewritten function body (whose
    callers are inferred anew)."""
    if any(n not in edit.deleted for n in result.deferred):
        return True  # a match that waited for a node another rewrite took
    ops = dispatch.neighbourhood_ops
    workable = frozenset(op for r in dispatch.rules for op in r.creates) & ops
    if workable and any(domain in ("", "ai.onnx") and op in workable for domain, op in edit.created_ops()):
        return True  # a node no round has matched yet (a fan-out merge turns a Squeeze into an Unsqueeze)
    if not ops:
        return False
    if ops <= AXIS_OPS:
        return neighbourhood_changed(ctx, edit)
    return neighbourhood_changed(ctx, edit, roots(ctx, ops), dispatch)


def neighbourhood_changed(ctx: RoundContext, edit: Editor, candidates: Iterable[int] | None = None,
                          dispatch: Dispatch | None = None) -> bool:
    """Whether a surviving root's match could differ in the next round.

    What a match looks at is its root node, the tensors the root reads and writes, their producers
    and readers, and runs of nodes through them (values and shapes of surviving tensors never
    change: ``reinfer``). A root whose match could differ in the next round was edited, or reads or
    writes a tensor whose producer or readers changed (every such tensor got a reader count or a
    new producer in the editor). If no surviving root did, the next round would find what this
    round found not to fire: nothing. ``candidates`` are the roots to look at (by default the
    round's Squeeze/Unsqueeze); with ``dispatch``, a changed root counts only when some rewrite
    rooted there is not settled (``Dispatch.unsettled``; a round that gave a tensor a new value
    is followed by a whole inference and a next round whatever this says: ``fixpoint``).
    ``full_inference`` runs that round anyway, and the tests check that both ways give the same
    model."""
    touched = edit.touched
    deleted = edit.deleted
    modified = edit.modified
    nodes = ctx.graph.nodes
    for nid in (ctx.facts if candidates is None else candidates):
        if nid in deleted:
            continue
        changed = nid in modified
        if not changed:
            info = nodes[nid]
            sid = info.scope
            for name in info.inputs:
                if name and touched(sid, name):
                    changed = True
                    break
            else:
                for name in info.outputs:
                    if name and touched(sid, name):
                        changed = True
                        break
        if changed and (dispatch is None or dispatch.unsettled(ctx, [nid])):
            return True
    return False


# Initializers up to this many elements count as the same input when their contents are equal
# (shape and index constants: exporters write a new ``[0]`` or ``[-1, 32]`` for each use); larger
# ones (weights) only under the same name.
MAX_COMPARED_ELEMS = 64
_SAME_CONSTANTS = "rounds/same-constants"
_SAME_CONSTANTS_OF = "rounds/same-constants-of"


def same_constants(ctx: RoundContext, sid: int) -> dict[str, str]:
    """The small initializers of scope ``sid`` that hold the same values as an earlier one (same
    element type, dims and stored bytes: +0 and -0, or two NaN payloads, differ), each mapped to
    the first one's name; once per round and scope (protobuf only: no numpy, no onnx import). Initializers that are also graph inputs (a caller may
    override them), external and string tensors are left out."""
    key = (_SAME_CONSTANTS, sid)
    found = ctx.cache.get(key)
    if found is not None:
        return found  # type: ignore[return-value]
    out: dict[str, str] = {}
    scope = ctx.graph.scopes[sid]
    if scope.kind == "graph" and len(scope.initializers) > 1:
        overridable = ctx.overridable
        first: dict[bytes, str] = {}
        blank = onnx.TensorProto()
        for name, t in scope.initializers.items():
            n = 1
            for d in t.dims:
                n *= d
            if (n > MAX_COMPARED_ELEMS or t.name != name or t.data_type == onnx.TensorProto.STRING
                    or t.data_location == onnx.TensorProto.EXTERNAL or (sid, name) in overridable):
                continue
            # The tensor as stored, without its name: the same type, dims and data field, bit for
            # bit (a float field serializes its IEEE bits: +0.0 and -0.0 differ). Equal values
            # stored in two ways (raw_data and int64_data) count as different: only a merge missed.
            blank.CopyFrom(t)
            blank.ClearField("name")
            seen = first.setdefault(blank.SerializeToString(deterministic=True), name)
            if seen != name:
                out[name] = seen
    ctx.cache[key] = out
    return out


def same_constants_of(ctx: RoundContext, sid: int) -> dict[str, list[str]]:
    """``same_constants`` turned around: each first initializer's name mapped to the later ones equal
    to it, in the order ``same_constants`` lists them. Once per round and scope: scanning the whole
    map for each changed node was quadratic on a model of many equal constants."""
    key = (_SAME_CONSTANTS_OF, sid)
    found = ctx.cache.get(key)
    if found is not None:
        return found  # type: ignore[return-value]
    out: dict[str, list[str]] = {}
    for name, first in same_constants(ctx, sid).items():
        out.setdefault(first, []).append(name)
    ctx.cache[key] = out
    return out


def _canonical(inputs: tuple[str, ...], canon: dict[str, str]) -> tuple[str, ...]:
    if not canon or canon.keys().isdisjoint(inputs):
        return inputs
    return tuple([canon.get(n, n) for n in inputs])


def keyed_collision(ctx: RoundContext, edit: Editor) -> bool:
    """For rewrites whose match depends only on a node's own op, inputs and attributes
    (``SAME_KEY``: duplicates): whether a node this round modified or created now has the op,
    inputs and attributes of another live node (deleting nodes makes no two nodes equal). Asked
    before the sweep, while the index's protos are where the round found them (the sweep only
    deletes)."""
    nodes = ctx.graph.nodes
    deleted = edit.deleted
    fresh = [(nodes[nid].scope, ctx.proto(nid)) for nid in edit.modified if nid not in deleted]
    fresh += edit.new_nodes()
    # the changed nodes by op and inputs; their attributes are serialized only when another node
    # has the same op and inputs (almost never: most of a round's edits rewire a single input)
    members: dict[tuple[int, str, tuple[str, ...]], list[onnx.NodeProto]] = {}
    for sid, node in fresh:
        key = (sid, node.op_type, _canonical(tuple(node.input), same_constants(ctx, sid)))
        found = members.get(key)
        if found is None:
            members[key] = [node]
        else:
            found.append(node)
    changed: dict[tuple[int, str, tuple[str, ...]], list[bytes] | None] = {}
    for key, group in members.items():
        if len(group) == 1:
            changed[key] = None  # (serialized when an unchanged node shares its key)
            continue
        seen: list[bytes] = []
        for node in group:
            attrs = serialized_attributes(node)
            if attrs in seen:
                return True
            seen.append(attrs)
        changed[key] = seen
    modified = edit.modified
    scopes = ctx.graph.scopes
    for (sid, op, inputs), known in changed.items():
        # An unchanged node with these inputs reads the first one, or a constant equal to it (or,
        # without inputs, is one of the scope's nodes)
        canon = same_constants(ctx, sid)
        consumers = scopes[sid].consumers
        if inputs and inputs[0]:
            others = list(consumers.get(inputs[0], ()))
            for name in same_constants_of(ctx, sid).get(inputs[0], ()):
                others += consumers.get(name, ())
        else:
            others = scopes[sid].nodes
        for nid in others:
            info = nodes[nid]
            if (info.op_type != op or _canonical(info.inputs, canon) != inputs or info.scope != sid
                    or nid in deleted or nid in modified):
                continue
            if known is None:
                known = [serialized_attributes(members[sid, op, inputs][0])]
            if (serialized_attributes(info.peek()) if info.has_attrs else b"") in known:
                return True
    return False


def serialized_attributes(node: object) -> bytes:
    """A node's attributes, serialized in name order (``node`` is a NodeProto)."""
    attrs = sorted(node.attribute, key=lambda a: a.name)  # type: ignore[attr-defined]
    return b"\x00".join([a.SerializeToString(deterministic=True) for a in attrs])


def rewrote_function_bodies(graph: ModelGraph, edit: Editor, written: Iterable[int]) -> bool:
    """Whether this round changed a node inside a model-local function that the model calls: a
    call is inferred from its body, so the callers' outputs may change (``reinfer`` cannot carry
    them over)."""
    if not graph.functions:
        return False
    touched = {graph.nodes[n].scope for n in (*edit.deleted, *written)} | {sid for sid, _ in edit.made}
    return any(graph.in_function(sid) for sid in touched)


__all__ = [
    "SKIP_TAKEN", "Claims", "RoundResult", "another_round", "keyed_collision", "neighbourhood_changed", "rewrote_function_bodies",
    "run_round", "same_constants", "serialized_attributes",
]
