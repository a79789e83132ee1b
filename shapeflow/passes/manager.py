"""Running the rewrite rules to a fixpoint, and listing what they would do.

One round: index the model (``graph.build_graph``), infer it, visit every Squeeze/Unsqueeze of
every scope (latest first, so the end of a chain is rewritten as a whole before its start is
rewritten alone), apply the first rule that matches when none of the nodes it touches was touched
by an earlier rewrite of the round, then sweep what the rewrites left dead and write the node
lists back once. Each rewrite removes a node or a Squeeze/Unsqueeze and none adds either, so the
rounds end; a round is O(N).

Two things keep the rounds after the first cheap. The inference of a round is carried over to the
next (``reinfer``: rewrites never change the value of a surviving tensor). And a round that
changed nothing a rule could see differently is the last one: the confirming round would find
nothing (``_may_continue``). ``full_inference=True`` does it the slow way, re-inferring every round
and always confirming; the tests check that both give the same bytes.

The engine judges nothing: the caller (``shapeflow.optimizer``, ``shapeflow.linter``) hands in its
own index and inference for the first round, and the nodes not to touch (those with error-level
findings) as data; refusing a model with errors is the driver's decision. ``run_passes`` runs
several such passes one after the other, as onnx-ir's PassManager does, and says what changed.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Collection, Iterable, Mapping, NamedTuple, Sequence

from .._onnx import onnx
from .._version import __version__
from ..assume import assumption_texts
from ..dims import Bound
from ..results import SCHEMA, OptimizeJSON
from ..errors import LimitExceededError, ShapeflowError, timeout_as_configured
from ..facts import AxisNode
from ..graph import INITIALIZER, ModelGraph, build_graph
from ..inference import Inference, infer, shared_dim_names
from ..io import LoadedModel, refuse_unsafe_external_data
from ..limits import DEFAULT_LIMITS, Limits, deadline
from ..opsets import MAX_KNOWN_OPSET, canonical_domain
from ..ops.control import zero_trip_nodes
from .base import (
    ANY_OP,
    AXIS_OPS,
    FROM_CUSTOM,
    FROM_GRAPH_INPUT,
    FROM_INITIALIZER,
    FROM_NOTHING,
    FROM_OUTER_SCOPE,
    Match,
    NoMatch,
    RewriteRule,
    RoundContext,
)
from . import _fast
from .dead_nodes import NAME as DEAD_NODES
from .edit import Editor, NameRegistry
from .registry import resolve_rules
from .reinfer import carry_inference

Progress = Callable[[int, int], None]

COUNTED_OPS = ("Squeeze", "Unsqueeze")
# Every rewrite shrinks (nodes + Squeeze/Unsqueeze), so rounds are bounded by the model; this only
# turns a bug into an error instead of a hang.
MAX_ROUNDS = 1000


class Candidate(NamedTuple):
    """A rewrite a rule would make (what the SF2xx rules report). A named tuple: lint builds one per
    finding, and it is several times cheaper to build than a frozen dataclass."""

    rule: str
    code: str | None
    nid: int  # root node id in the graph index
    message: str
    fact: AxisNode | None = None  # the root's axis facts (its name and location, for reports)


@dataclass
class OptimizeResult:
    model: onnx.ModelProto  # the loaded proto, edited in place
    changed: bool
    rewrites: dict[str, int]  # rule name -> times it fired (and dead-nodes -> nodes swept)
    log: list[str]  # one line per rewrite, with node names
    skipped: list[str]  # why rules did not fire on near misses, as of the final round
    before: dict[str, int]  # {"nodes", "Squeeze", "Unsqueeze"}
    after: dict[str, int]
    rounds: int = 0
    notes: list[str] = field(default_factory=list)  # rewrites that remove a run-time failure
    # (code, graph path, node) of the roots that rules with ``record_roots`` rewrote (the repairs of
    # ``lint --fix``: the driver learns which findings went without judging the model again)
    roots: list[tuple[str, str, str]] = field(default_factory=list)
    assumptions: Mapping[str, Bound] = field(default_factory=dict)  # --assume, in force throughout
    aliases: Mapping[str, str] = field(default_factory=dict)  # --assume a==b: b read as a
    premises: tuple[str, ...] = ()  # the --assume statements, as reported

    def to_json(self) -> OptimizeJSON:
        b, a = self.before, self.after
        return {"shapeflow_version": __version__, "schema": SCHEMA, "changed": self.changed,
                "before": {"nodes": b.get("nodes", 0), "Squeeze": b.get("Squeeze", 0), "Unsqueeze": b.get("Unsqueeze", 0)},
                "after": {"nodes": a.get("nodes", 0), "Squeeze": a.get("Squeeze", 0), "Unsqueeze": a.get("Unsqueeze", 0)},
                "rewrites": dict(self.rewrites), "rounds": self.rounds}


# Where a node is, as findings name it: (graph path, node display id). Blocked nodes come as these,
# because node ids are those of one round's index and the caller's findings know only names.
Place = tuple[str, str]


def count_ops(graph: ModelGraph) -> dict[str, int]:
    """Node count (every scope) and ai.onnx Squeeze/Unsqueeze counts."""
    counts = {"nodes": len(graph.nodes), "Squeeze": 0, "Unsqueeze": 0}
    for info in graph.nodes:
        op = info.op_type  # from the index: fetching every NodeProto would cost memory
        if op in COUNTED_OPS and info.domain == "":
            counts[op] += 1
    return counts


class _Dispatch:
    """The rules to try on a root, in priority order, by the root's op type and what produces its
    data input (``RewriteRule.after``): most roots end no pattern, and asking every rule about
    them was most of the time of a round."""

    def __init__(self, rules: Sequence[RewriteRule]) -> None:
        self.rules = list(rules)
        self._table: dict[tuple[str, str], list[RewriteRule]] = {}
        # The op types some rule is rooted at (ANY_OP: every node); when they are only
        # Squeeze/Unsqueeze, a round visits the nodes with axis facts and nothing else.
        self.root_ops: frozenset[str] = frozenset(op for r in self.rules for op in r.roots)
        # Rules that judge the next round themselves; the roots of the others are judged by
        # ``_may_continue``.
        self.judges = [r for r in self.rules if r.judges_rounds]
        self.judged_ops: frozenset[str] = frozenset(op for r in self.rules if not r.judges_rounds for op in r.roots)

    def unsettled(self, ctx: RoundContext, roots: list[int]) -> list[int]:
        """The ``roots`` some rule may still fire on in a later round (``may_fire_later``): only
        their neighbourhoods decide whether another round is worth running."""
        by_op: dict[str, list[RewriteRule]] = {}
        nodes = ctx.graph.nodes
        out = []
        for nid in roots:
            op = nodes[nid].op_type
            rules = by_op.get(op)
            if rules is None:
                rules = by_op[op] = [r for r in self.rules if not r.judges_rounds
                                     and (op in r.roots or ANY_OP in r.roots)]
            for r in rules:
                if r.may_fire_later(ctx, nid):
                    out.append(nid)
                    break
        return out

    def rules_for(self, op: str, kind: str) -> list[RewriteRule]:
        """For a root of op type ``op`` whose data input comes from ``kind``: the op type of an
        ai.onnx node of its scope, or a ``FROM_*``."""
        found = self._table.get((op, kind))
        if found is None:
            found = self._table[op, kind] = [r for r in self.rules
                                             if (op in r.roots or ANY_OP in r.roots)
                                             and (r.after is None or kind in r.after)]
        return found

    def plan_plain(self, ctx: RoundContext, latest_first: bool = True) -> list[tuple[int, list[RewriteRule]]]:
        """The round's roots (``_roots``) that some rule may fire on, each with those rules."""
        out: list[tuple[int, list[RewriteRule]]] = []
        for nid in _roots(ctx, self.root_ops, latest_first):
            if not ctx.is_standard(nid):
                continue
            found = self.rules_for(ctx.info(nid).op_type, input_kind(ctx, nid))
            if found:
                out.append((nid, found))
        return out

    def plan(self, ctx: RoundContext, latest_first: bool = True) -> list[tuple[int, list[RewriteRule]]]:
        """``plan_plain`` with its lookups written out (``_fast.plan``): it visits every root of
        the model (every Squeeze/Unsqueeze, at least)."""
        return _fast.plan(self, ctx, _roots(ctx, self.root_ops, latest_first))


def input_kind(ctx: RoundContext, nid: int) -> str:
    """What produces the data input of ``nid`` (``RewriteRule.after``): the op type of an ai.onnx
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


def find_candidates(graph: ModelGraph, inference: Inference, *, strict: bool = False,
                    rules: Sequence[str] | None = None, codes: Collection[str] | None = None,
                    blocked: Collection[Place] = ()) -> list[Candidate]:
    """What the rules would rewrite in this model, one candidate per root node (the rule that
    would fire first there), in scope and file order. Nothing is changed.

    ``codes`` keeps only the candidates of rules with those lint codes (rules after the last such
    rule on a root are not tried). Roots at ``blocked`` places (the caller's nodes with
    error-level findings) are left out."""
    ctx = RoundContext.build(graph, inference, strict)
    ctx.claims = False
    chosen = resolve_rules(rules)
    if codes is not None:
        chosen = chosen[:max((k + 1 for k, r in enumerate(chosen) if r.code in codes), default=0)]
    dispatch = _Dispatch(chosen)
    blocked_ids = resolve_places(inference, blocked)
    out: list[Candidate] = []
    facts = ctx.facts
    # A plan entry per root (every node, with a rule rooted at ANY_OP): on a large model the
    # cyclic collector would walk the whole index again and again (as in ``rewrite_model``).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    # the file's --timeout holds here too: a rule's match may cost more than a node's worth (lint's
    # rules phase checks the clock only between rules, and this search is one of them)
    limits = inference.limits
    at = deadline(limits)
    try:
        for k, (nid, tried) in enumerate(dispatch.plan(ctx, latest_first=False)):
            if not k & 0xFF and time.monotonic() > at:
                raise LimitExceededError("timeout", f"{limits.timeout:g} s", "--timeout", file=graph.path)
            if nid in blocked_ids:
                continue
            for rule in tried:
                r = rule.match(ctx, nid)
                if type(r) is Match:
                    if codes is None or rule.code in codes:
                        message = r.text + (f" ({r.note})" if r.note else "")
                        out.append(Candidate(rule.name, rule.code, nid, message, facts.get(nid)))
                    break
    finally:
        if gc_was_enabled:
            gc.enable()
    ctx.release()
    return out


def preflight(loaded: LoadedModel) -> None:
    """What ``optimize`` refuses before looking at a node (RELIABILITY.md rows 11 and 37)."""
    model = loaded.proto
    if model.ir_version > onnx.IR_VERSION:
        raise ShapeflowError(f"IR version {model.ir_version} is newer than this onnx knows ({onnx.IR_VERSION}); "
                             "refusing to rewrite a model whose format is not verified", file=loaded.path)
    for imp in list(model.opset_import) + [o for f in model.functions for o in f.opset_import]:
        if canonical_domain(imp.domain) == "" and imp.version > MAX_KNOWN_OPSET:
            raise ShapeflowError(f"ai.onnx opset {imp.version} is newer than this onnx knows "
                                 f"({MAX_KNOWN_OPSET}); refusing to rewrite ops of unverified semantics",
                                 file=loaded.path)
    # The check walks every tensor of the model; skip it when the bytes prove that no tensor is
    # external. Not by looking for b"location": an external tensor *without* that key is the
    # worst case (its location is empty). A tensor is external only through data_location
    # (TensorProto field 14, varint) = EXTERNAL (1): its tag is 0x70, or starts 0xf0 when a
    # hostile file pads the varint, and its value starts 0x01 or 0x81. A file with none of
    # those byte pairs (most files without weights in them) has no external tensor.
    raw = loaded.raw
    if raw and b"\xf0" not in raw and b"\x70\x01" not in raw and b"\x70\x81" not in raw:
        return
    refuse_unsafe_external_data(loaded)


def check_known_ops(graph: ModelGraph) -> None:
    """An unknown op in ai.onnx (a typo such as ``Sqeeze``) has unknown semantics: refuse (row 14)."""
    for nid, info in enumerate(graph.nodes):
        if info.domain != "" or info.since_version is not None:
            continue
        node = info.peek()
        if (node.domain, node.op_type) not in graph.functions:
            version = graph.scopes[info.scope].opsets.get("")
            what = f"operator '{node.op_type}'" if node.op_type else "empty op_type"
            raise ShapeflowError(f"unknown {what} in ai.onnx opset {version}",
                                 file=graph.path, node=graph.display(nid))


@dataclass
class _Round:
    fired: dict[str, int] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: list[tuple[int, str]] = field(default_factory=list)  # (root, why a rule did not fire)
    deferred: list[int] = field(default_factory=list)  # roots left for the next round: a node was taken
    roots: list[tuple[str, str, str]] = field(default_factory=list)  # see OptimizeResult.roots
    written: set[int] = field(default_factory=set)


def _roots(ctx: RoundContext, ops: Collection[str] = AXIS_OPS, latest_first: bool = True) -> list[int]:
    """The round's nodes of op types ``ops`` (ANY_OP: all), scope by scope, each scope from its
    last node back (or in file order). Malformed ones (a Squeeze/Unsqueeze without data input, a
    node without output) are left alone."""
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


def _conflicts(m: Match, written: set[int], read: set[int], rewired: set[int]) -> bool:
    """Whether ``m`` touches a node that an earlier rewrite of the round wrote, or writes one that
    an earlier rewrite relies on. Renaming different inputs of one node is the one overlap allowed."""
    for n in m.writes:
        if n in written or n in read or n in rewired:
            return True
    for n in m.reads:
        if n in written or n in rewired:
            return True
    for n in m.rewires:
        if n in written or n in read:
            return True
    return False


def _reserved(m: Match, reserved: set[int]) -> bool:
    """Whether ``m`` touches a node that a deferred rewrite of the round will write."""
    for group in (m.writes, m.reads, m.rewires):
        for n in group:
            if n in reserved:
                return True
    return False


def _may_continue(ctx: RoundContext, edit: Editor, roots: Iterable[int] | None = None) -> bool:
    """Whether a next round could rewrite anything, judged from what this round changed.

    What a rule's match looks at is its root node, the tensors the root reads and writes, their
    producers and readers, and runs of nodes through them (values and shapes of surviving
    tensors never change: ``reinfer``). A root whose match could differ in the next round was
    edited, or reads or writes a tensor whose producer or readers changed (every such tensor got
    a reader count or a new producer in the editor). If no surviving root did, the next round
    would find what this round found not to fire: nothing. ``roots`` are the round's roots (by
    default its Squeeze/Unsqueeze). ``full_inference`` runs that round anyway, and the tests
    check that both ways give the same model."""
    dirty = edit.touched_tensors()
    deleted = edit.deleted
    modified = edit.modified
    nodes = ctx.graph.nodes
    for nid in (ctx.facts if roots is None else roots):
        if nid in deleted:
            continue
        if nid in modified:
            return True
        info = nodes[nid]
        sid = info.scope
        for name in info.inputs:
            if name and (sid, name) in dirty:
                return True
        for name in info.outputs:
            if name and (sid, name) in dirty:
                return True
    return False


def _created_roots(edit: Editor, ops: frozenset[str]) -> bool:
    """Whether the round created a Squeeze/Unsqueeze some rule is rooted at (a fan-out merge turns
    a Squeeze reader into an Unsqueeze): no round has matched it yet. The other nodes rewrites
    create need no round of their own: Shape/Slice of a symbolic dim (shape-slice: no value to
    fold; duplicates among them are merge-duplicates' to judge), Constants in functions, and
    Identities keeping a graph output's name, on which no rule fires."""
    for domain, op in edit.created_ops():
        if domain in ("", "ai.onnx") and op in AXIS_OPS and op in ops:
            return True
    return False


def _counts_after(graph: ModelGraph, edit: Editor) -> dict[str, int]:
    """count_ops of the model a round wrote, from the round's index and the editor."""
    counts = {"nodes": len(graph.nodes) - len(edit.deleted) + edit.created, "Squeeze": 0, "Unsqueeze": 0}
    deleted = edit.deleted
    for nid, info in enumerate(graph.nodes):
        op = info.op_type
        if op in COUNTED_OPS and info.domain == "" and nid not in deleted:
            counts[op] += 1
    for domain, op in edit.created_ops():
        if op in COUNTED_OPS and domain == "":
            counts[op] += 1
    return counts


def _run_round(ctx: RoundContext, edit: Editor, dispatch: _Dispatch, explain: bool = True,
               blocked: set[int] | None = None) -> _Round:
    out = _Round()
    written = out.written
    read: set[int] = set()
    rewired: set[int] = set()
    reserved: set[int] = set()  # the nodes deferred rewrites will write
    facts = ctx.facts
    for nid, tried in dispatch.plan(ctx):
        if blocked and nid in blocked:
            continue
        for rule in tried:
            r = rule.match(ctx, nid)
            if isinstance(r, NoMatch):
                if r.near:
                    out.skipped.append((nid, f"{rule.name}: {r.reason}"))
                continue
            if _conflicts(r, written, read, rewired) or (reserved and _reserved(r, reserved)):
                if nid not in written:  # (a root taken by an earlier rewrite has nothing left to do)
                    out.deferred.append(nid)
                    # What it will sweep next round is left alone in this one: a no-op Reshape
                    # deferred here takes its whole target computation with it next round, which
                    # rewriting that computation now would only have wasted. Only the nodes that
                    # feed nothing else (``reserves``): reserving a chain rule's nodes would defer
                    # the next pair of a long chain too, one pair a round.
                    if rule.reserves:
                        reserved.update(n for n in r.writes if n != nid)
                break  # a node it needs was rewritten this round; the next round retries
            rule.apply(ctx, edit, r)
            written.update(r.writes)
            read.update(r.reads)
            rewired.update(r.rewires)
            out.fired[rule.name] = out.fired.get(rule.name, 0) + 1
            if rule.record_roots:
                fact = facts.get(nid)
                if fact is not None:
                    out.roots.append((rule.code or "", fact.graph, fact.node))
            if explain or r.note:
                line = f"{rule.name}: {r.text}"
                if r.note:
                    line += f" ({r.note})"
                    out.notes.append(line)
                if explain:
                    out.log.append(line)
            break
    return out


def rewrite_model(loaded: LoadedModel, rules: Sequence[RewriteRule] | Sequence[str] | None = None, *,
                  graph: ModelGraph | None = None, inference: Inference | None = None,
                  blocked: Collection[Place] = (), strict: bool = False, limits: Limits = DEFAULT_LIMITS,
                  progress: Progress | None = None, explain: bool = True,
                  full_inference: bool = False, names: NameRegistry | None = None,
                  assumptions: Mapping[str, Bound] | None = None) -> OptimizeResult:
    """Rewrite ``loaded.proto`` in place with ``rules`` (instances, or names for
    ``resolve_rules``; all the optimize rules by default) until none fires.

    ``graph`` and ``inference`` are the caller's index and inference of ``loaded`` (its analysis):
    the first round uses them instead of building its own. Roots at ``blocked`` places are never
    rewritten. Judging the model (refusing one with errors) is the caller's business; this raises
    ``ShapeflowError`` only for a limit. ``strict`` cancels Squeeze→Unsqueeze only over dims
    statically 1. ``explain=False`` leaves ``log`` empty (building one line per rewrite costs time
    on large models; ``notes`` and ``skipped`` are kept). ``full_inference`` re-infers the whole
    model every round instead of carrying the previous round's inference over (``reinfer``); the
    result is the same, only slower. ``names`` carries the generated names over from an
    earlier pass on the same model. ``assumptions`` (``--assume``; by default those of the given
    ``inference``) are the only ranges a rewrite may rely on beyond what the model proves.
    """
    chosen: list[RewriteRule] = []
    names_given: list[str] = []
    for r in rules if rules is not None else ():
        if isinstance(r, str):
            names_given.append(r)
        else:
            chosen.append(r)
    if names_given and chosen:
        raise TypeError("rewrite_model takes rule names or rule instances, not both")
    if rules is None or names_given:
        chosen = resolve_rules(names_given if rules is not None else None)
    dispatch = _Dispatch(chosen)
    started = time.monotonic()
    # The index and inference allocate millions of small objects per round and free them all at
    # its end; the cyclic collector only adds super-linear time here (it is restored below).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        ranges = dict(assumptions if assumptions is not None
                      else inference.assumptions if inference is not None else {})
        aliases = dict(inference.aliases) if inference is not None else {}
        premises = inference.premises if inference is not None else tuple(assumption_texts(ranges))
        result = _fixpoint(loaded, dispatch, strict, limits, progress, started, explain, full_inference,
                           graph, inference, blocked, names or NameRegistry(), ranges, aliases)
        result.aliases, result.premises = aliases, premises
        return result
    except LimitExceededError as exc:
        # each round's inference is given what is left of the budget: say the budget itself
        raise timeout_as_configured(exc, limits.timeout) from None
    finally:
        if gc_was_enabled:
            gc.enable()


@dataclass(frozen=True)
class Pass:
    """One step of ``run_passes``: rewrite rules run to their fixpoint, with the places they must
    not touch."""

    name: str
    rules: tuple[RewriteRule, ...]
    blocked: frozenset[Place] = frozenset()


@dataclass
class PassesResult:
    """What ``run_passes`` did: the model (edited in place), whether it changed, and each pass's
    own result, in order."""

    model: onnx.ModelProto
    changed: bool
    results: list[tuple[str, OptimizeResult]]

    @property
    def rewrites(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for _, r in self.results:
            for name, n in r.rewrites.items():
                total[name] = total.get(name, 0) + n
        return total


def run_passes(loaded: LoadedModel, passes: Sequence[Pass], *, graph: ModelGraph | None = None,
               inference: Inference | None = None, limits: Limits = DEFAULT_LIMITS,
               explain: bool = True) -> PassesResult:
    """Run ``passes`` in order on ``loaded.proto`` (edited in place). The first pass starts from the
    caller's ``graph`` and ``inference``; a pass after one that changed the model indexes it anew."""
    results: list[tuple[str, OptimizeResult]] = []
    changed = False
    names = NameRegistry()  # one for the model: a later pass must not reuse a name an earlier one made
    for p in passes:
        r = rewrite_model(loaded, p.rules, graph=graph, inference=inference, blocked=p.blocked,
                          limits=limits, explain=explain, names=names)
        results.append((p.name, r))
        if r.changed:
            changed = True
            graph = inference = None
    return PassesResult(loaded.proto, changed, results)


def _rewrote_function_bodies(graph: ModelGraph, edit: Editor, written: Iterable[int]) -> bool:
    """Whether this round changed a node inside a model-local function that the model calls."""
    if not graph.functions:
        return False
    touched = {graph.nodes[n].scope for n in (*edit.deleted, *written)} | {sid for sid, _ in edit.made}
    return any(graph.in_function(sid) for sid in touched)


def _fixpoint(loaded: LoadedModel, dispatch: _Dispatch, strict: bool, limits: Limits,
              progress: Progress | None, started: float, explain: bool, full_inference: bool,
              given_graph: ModelGraph | None, given_inference: Inference | None,
              blocked_places: Collection[Place], names: NameRegistry,
              assumptions: dict[str, Bound], aliases: dict[str, str]) -> OptimizeResult:
    fired: dict[str, int] = {}
    log: list[str] = []
    notes: list[str] = []
    roots: list[tuple[str, str, str]] = []
    before: dict[str, int] = {}
    changed = False
    rounds = 0
    carried: tuple[Inference, set[tuple[int, str]]] | None = None
    while True:
        rounds += 1
        remaining = limits.timeout - (time.monotonic() - started)
        if remaining <= 0:
            raise LimitExceededError("timeout", f"{limits.timeout:g} s", "--timeout", file=loaded.path)
        round_limits = replace(limits, timeout=remaining)
        if rounds == 1 and given_graph is not None and given_inference is not None:
            graph, inference = given_graph, given_inference  # the caller's analysis: not redone
            given_graph = given_inference = None
            if not inference.independent and shared_dim_names(graph):
                # Graph inputs share dim names: the rewrites rely only on what holds when each is
                # fed its own sizes, as onnxruntime allows (inference.infer, independent)
                inference = infer(graph, None, round_limits, progress, assumptions, aliases, independent=True)
        elif rounds == 1 or carried is None:
            graph = build_graph(loaded, round_limits)
            inference = infer(graph, None, round_limits, progress, assumptions, aliases, independent=True)
        else:
            graph = build_graph(loaded, round_limits)
            inference = carry_inference(graph, carried[0], carried[1])
        carried = None
        if rounds == 1:
            before = count_ops(graph)
        # Node ids are the round's: blocked places are looked up again each round.
        blocked = resolve_places(inference, blocked_places) if blocked_places else None
        ctx = RoundContext.build(graph, inference, strict)
        if blocked:
            ctx.blocked = blocked
        edit = Editor(ctx, names, explain=explain)
        with inference.domain():  # rewrites decide dims in the domain inference proved them in
            result = _run_round(ctx, edit, dispatch, explain, blocked)
        ctx.release()
        if not edit.changed:
            after = count_ops(graph)
            return OptimizeResult(loaded.proto, changed, fired, log, [t for _, t in result.skipped],
                                  before, after, rounds, notes, roots, assumptions)
        # (before the sweep, which only deletes: a rule's judgement reads the index's protos)
        judged = any(r.may_continue(ctx, edit) for r in dispatch.judges)
        edit.finish()
        # A deferred root that the sweep removed has nothing left to do either.
        deferred = [n for n in result.deferred if n not in edit.deleted]
        # A call of a model-local function is inferred from its body (inference.py): a body this
        # round rewrote (say, a failing pair cancelled) can make a caller's outputs known, which
        # carrying inference over would miss. Such a round is followed by a whole inference.
        bodies = _rewrote_function_bodies(graph, edit, result.written)
        ops = dispatch.judged_ops
        roots_seen = [] if not ops else None if ops <= AXIS_OPS else dispatch.unsettled(ctx, _roots(ctx, ops))
        last = (not full_inference and not bodies and not deferred
                and not _created_roots(edit, ops)
                and not _may_continue(ctx, edit, roots_seen)
                and not judged)
        changed = True
        for name, n in result.fired.items():
            fired[name] = fired.get(name, 0) + n
        roots.extend(result.roots)
        if edit.dead_count:
            fired[DEAD_NODES] = fired.get(DEAD_NODES, 0) + edit.dead_count
        if explain:
            log.extend(result.log)
            log.extend(f"{DEAD_NODES}: removed {shown}" for shown in edit.dead)
            log.extend(f"{DEAD_NODES}: removed initializer '{name}'"
                       + ("" if sid == 0 else f" in {graph.scopes[sid].path}")
                       for sid, name in edit.removed_initializers)
        notes.extend(result.notes)
        if last:
            # Nothing a next round could match has changed: that round would find nothing.
            gone = edit.deleted | result.written
            skipped = [t for nid, t in result.skipped if nid not in gone]
            return OptimizeResult(loaded.proto, changed, fired, log, skipped, before,
                                  _counts_after(graph, edit), rounds, notes, roots, assumptions)
        if not full_inference and not bodies:
            carried = (inference, edit.made)
        # Drop this round's index before building the next one: peak memory is one round's.
        # (Nothing here forms reference cycles, so this frees it without the cyclic collector.)
        del ctx, edit, graph, inference, result
        if rounds >= MAX_ROUNDS:
            raise AssertionError(f"optimize found no fixpoint after {MAX_ROUNDS} rounds")
