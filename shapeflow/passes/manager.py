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

The first round also runs the lint rules: a model with an error-level finding is refused, never
"repaired" on the way (``OptimizeRefused``, exit 1).
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Collection, Iterable, Mapping, NamedTuple, Sequence

from .._onnx import onnx
from ..analysis import analyze
from ..diagnostics import Diagnostic, Severity
from ..errors import EXIT_FINDINGS, LimitExceededError, ShapeflowError
from ..facts import AxisNode
from ..graph import INITIALIZER, ModelGraph, build_graph
from ..inference import Inference, infer
from ..io import LoadedModel, refuse_unsafe_external_data
from ..limits import DEFAULT_LIMITS, Limits
from ..opsets import MAX_KNOWN_OPSET, canonical_domain
from ..rules import LintContext, select_rules
from .base import (
    FROM_CUSTOM, FROM_GRAPH_INPUT, FROM_INITIALIZER, FROM_OUTER_SCOPE, Match, NoMatch, RewriteRule,
    RoundContext,
)
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
    """A rewrite a rule would make (what SF201-SF203 report). A named tuple: lint builds one per
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


class OptimizeRefused(ShapeflowError):
    """The model has error-level findings: optimizing would silently "repair" it (exit 1)."""

    exit_code = EXIT_FINDINGS

    def __init__(self, message: str, diagnostics: list[Diagnostic], **kw: object) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]
        self.diagnostics = diagnostics


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

    def rules_for(self, op: str, kind: str) -> list[RewriteRule]:
        """For a root of op type ``op`` whose data input comes from ``kind``: the op type of an
        ai.onnx node of its scope, or a ``FROM_*``."""
        found = self._table.get((op, kind))
        if found is None:
            found = self._table[op, kind] = [r for r in self.rules
                                             if op in r.roots and (r.after is None or kind in r.after)]
        return found

    def plan(self, ctx: RoundContext, latest_first: bool = True) -> list[tuple[int, list[RewriteRule]]]:
        """The round's roots (``_roots``) that some rule may fire on, each with those rules. One
        loop with its lookups written out: it visits every Squeeze/Unsqueeze of the model."""
        graph = ctx.graph
        nodes = graph.nodes
        producers = [scope.producer for scope in graph.scopes]
        table = self._table
        out: list[tuple[int, list[RewriteRule]]] = []
        for nid in _roots(ctx, latest_first):
            info = nodes[nid]
            if info.domain != "" or info.since_version is None:
                continue
            p = producers[info.scope].get(info.inputs[0])
            if p is None:
                kind = FROM_OUTER_SCOPE
            elif p < 0:
                kind = FROM_INITIALIZER if p == INITIALIZER else FROM_GRAPH_INPUT
            else:
                pinfo = nodes[p]
                kind = pinfo.op_type if pinfo.domain == "" and pinfo.since_version is not None else FROM_CUSTOM
            found = table.get((info.op_type, kind))
            if found is None:
                found = self.rules_for(info.op_type, kind)
            if found:
                out.append((nid, found))
        return out


def _error_nodes(graph: ModelGraph, inference: Inference,
                 reported: Mapping[str, Sequence[Diagnostic]] | None = None) -> set[int]:
    """Nodes with an error-level axis finding: never rewritten. ``reported`` holds the diagnostics
    that lint already has from some rules, by code: those rules are not run a second time."""
    rules = [r for r in select_rules() if r.severity == Severity.ERROR]
    known = reported or {}
    ctx: LintContext | None = None
    places: set[tuple[str, str]] = set()
    for rule in rules:
        found = known.get(rule.code)
        if found is None:
            ctx = ctx or LintContext(graph.path, graph, inference)
            found = list(rule.diagnostics(ctx))
        for d in found:
            if d.severity == Severity.ERROR:
                places.add((d.location.graph, d.location.node or ""))
    if not places:
        return set()
    where = {(a.graph, a.node): a.nid for a in inference.axis_nodes}
    return {where[p] for p in places if p in where}


def find_candidates(graph: ModelGraph, inference: Inference, *, strict: bool = False,
                    rules: Sequence[str] | None = None, codes: Collection[str] | None = None,
                    reported: Mapping[str, Sequence[Diagnostic]] | None = None) -> list[Candidate]:
    """What the rules would rewrite in this model, one candidate per root node (the rule that
    would fire first there), in scope and file order. Nodes with error-level findings are left
    out. Nothing is changed.

    ``codes`` keeps only the candidates of rules with those lint codes (rules after the last such
    rule on a root are not tried). ``reported`` is what lint has already found, by code (see
    ``_error_nodes``)."""
    ctx = RoundContext.build(graph, inference, strict)
    chosen = resolve_rules(rules)
    if codes is not None:
        chosen = chosen[:max((k + 1 for k, r in enumerate(chosen) if r.code in codes), default=0)]
    dispatch = _Dispatch(chosen)
    blocked = _error_nodes(graph, inference, reported)
    out: list[Candidate] = []
    facts = ctx.facts
    for nid, tried in dispatch.plan(ctx, latest_first=False):
        if nid in blocked:
            continue
        for rule in tried:
            r = rule.match(ctx, nid)
            if type(r) is Match:
                if codes is None or rule.code in codes:
                    message = r.text + (f" ({r.note})" if r.note else "")
                    out.append(Candidate(rule.name, rule.code, nid, message, facts.get(nid)))
                break
    ctx.release()
    return out


def _preflight(loaded: LoadedModel) -> None:
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


def _check_known_ops(graph: ModelGraph) -> None:
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
    written: set[int] = field(default_factory=set)


def _roots(ctx: RoundContext, latest_first: bool = True) -> list[int]:
    """The round's Squeeze/Unsqueeze nodes, scope by scope, each scope from its last node back
    (or in file order). Malformed ones (no data input or no output) are left alone."""
    graph = ctx.graph
    by_scope: dict[int, list[int]] = {}
    for nid in ctx.facts:
        info = graph.nodes[nid]
        if info.inputs and info.inputs[0] and info.outputs and info.outputs[0]:
            by_scope.setdefault(info.scope, []).append(nid)
    out: list[int] = []
    for sid in sorted(by_scope):
        scope = graph.scopes[sid]
        nids = by_scope[sid]
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


def _may_continue(ctx: RoundContext, edit: Editor) -> bool:
    """Whether a next round could rewrite anything, judged from what this round changed.

    Every rule is rooted at a Squeeze/Unsqueeze, and what its match looks at is the node itself,
    the tensors it reads and writes, their producers and readers, and runs of Squeeze/Unsqueeze
    through them. A Squeeze/Unsqueeze whose match could differ in the next round was edited, or
    reads or writes a tensor whose producer or readers changed (every such tensor got a reader
    count or a new producer in the editor). If no surviving one did, the next round would find
    what this round found not to fire: nothing. ``full_inference`` runs that round anyway, and
    the tests check that both ways give the same model."""
    dirty = edit.touched_tensors()
    deleted = edit.deleted
    modified = edit.modified
    nodes = ctx.graph.nodes
    for nid in ctx.facts:
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


def _counts_after(graph: ModelGraph, edit: Editor) -> dict[str, int]:
    """count_ops of the model a round wrote, from the round's index and the editor."""
    counts = {"nodes": len(graph.nodes) - len(edit.deleted) + edit.created, "Squeeze": 0, "Unsqueeze": 0}
    deleted = edit.deleted
    for nid, info in enumerate(graph.nodes):
        op = info.op_type
        if op in COUNTED_OPS and info.domain == "" and nid not in deleted:
            counts[op] += 1
    return counts


def _run_round(ctx: RoundContext, edit: Editor, dispatch: _Dispatch, explain: bool = True) -> _Round:
    out = _Round()
    written = out.written
    read: set[int] = set()
    rewired: set[int] = set()
    for nid, tried in dispatch.plan(ctx):
        for rule in tried:
            r = rule.match(ctx, nid)
            if isinstance(r, NoMatch):
                if r.near:
                    out.skipped.append((nid, f"{rule.name}: {r.reason}"))
                continue
            if _conflicts(r, written, read, rewired):
                if nid not in written:  # (a root taken by an earlier rewrite has nothing left to do)
                    out.deferred.append(nid)
                break  # a node it needs was rewritten this round; the next round retries
            rule.apply(ctx, edit, r)
            written.update(r.writes)
            read.update(r.reads)
            rewired.update(r.rewires)
            out.fired[rule.name] = out.fired.get(rule.name, 0) + 1
            if explain or r.note:
                line = f"{rule.name}: {r.text}"
                if r.note:
                    line += f" ({r.note})"
                    out.notes.append(line)
                if explain:
                    out.log.append(line)
            break
    return out


def optimize_model(loaded: LoadedModel, *, rules: Sequence[str] | None = None, strict: bool = False,
                   limits: Limits = DEFAULT_LIMITS, progress: Progress | None = None,
                   explain: bool = True, full_inference: bool = False) -> OptimizeResult:
    """Rewrite ``loaded.proto`` in place until no rule fires.

    Raises ``OptimizeRefused`` (exit 1) for a model with error-level findings, and
    ``ShapeflowError`` (exit 2) for one that cannot be optimized safely (invalid graph, unknown
    operator, unsupported opset, unsafe external data, a limit). ``rules`` selects rules by name
    (all by default); ``strict`` cancels Squeeze→Unsqueeze only over dims statically 1.
    ``explain=False`` leaves ``log`` empty (building one line per rewrite costs time on large
    models; ``notes`` and ``skipped`` are kept). ``full_inference`` re-infers the whole model every
    round instead of carrying the previous round's inference over (``reinfer``); the result is the
    same, only slower.
    """
    dispatch = _Dispatch(resolve_rules(rules))
    _preflight(loaded)
    started = time.monotonic()
    # The index and inference allocate millions of small objects per round and free them all at
    # its end; the cyclic collector only adds super-linear time here (it is restored below).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _fixpoint(loaded, dispatch, strict, limits, progress, started, explain, full_inference)
    finally:
        if gc_was_enabled:
            gc.enable()


def _rewrote_function_bodies(graph: ModelGraph, edit: Editor, written: Iterable[int]) -> bool:
    """Whether this round changed a node inside a model-local function that the model calls."""
    if not graph.functions:
        return False
    touched = {graph.nodes[n].scope for n in (*edit.deleted, *written)} | {sid for sid, _ in edit.made}
    return any(graph.in_function(sid) for sid in touched)


def _fixpoint(loaded: LoadedModel, dispatch: _Dispatch, strict: bool, limits: Limits,
              progress: Progress | None, started: float, explain: bool, full_inference: bool) -> OptimizeResult:
    names = NameRegistry()
    fired: dict[str, int] = {}
    log: list[str] = []
    notes: list[str] = []
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
        if rounds == 1:
            # Only error-level findings refuse a model, and no rule raises a finding above its
            # default severity: the warning and info rules need not run (SF201-SF203 would only run
            # the rewrite rules a second time).
            judges = [r for r in select_rules() if r.severity == Severity.ERROR]
            analysis = analyze(loaded, limits=round_limits, rules=judges, progress=progress)
            _check_known_ops(analysis.graph)  # exit 2 for optimize, before the lint verdict (exit 1)
            errors = [d for d in analysis.diagnostics if d.severity == Severity.ERROR]
            if errors:
                raise OptimizeRefused(
                    f"refusing to optimize: {len(errors)} error-level finding"
                    f"{'' if len(errors) == 1 else 's'} (fix the model first)", errors, file=loaded.path)
            graph, inference = analysis.graph, analysis.inference
            del analysis
            before = count_ops(graph)
        else:
            graph = build_graph(loaded, round_limits)
            if carried is None:
                inference = infer(graph, None, round_limits, progress)
            else:
                inference = carry_inference(graph, carried[0], carried[1])
            carried = None
        ctx = RoundContext.build(graph, inference, strict)
        edit = Editor(ctx, names, explain=explain)
        result = _run_round(ctx, edit, dispatch, explain)
        ctx.release()
        if not edit.changed:
            after = count_ops(graph)
            return OptimizeResult(loaded.proto, changed, fired, log, [t for _, t in result.skipped],
                                  before, after, rounds, notes)
        edit.finish()
        # A deferred root that the sweep removed has nothing left to do either.
        deferred = [n for n in result.deferred if n not in edit.deleted]
        # A call of a model-local function is inferred from its body (inference.py): a body this
        # round rewrote (say, a failing pair cancelled) can make a caller's outputs known, which
        # carrying inference over would miss. Such a round is followed by a whole inference.
        bodies = _rewrote_function_bodies(graph, edit, result.written)
        last = not full_inference and not bodies and not deferred and not _may_continue(ctx, edit)
        changed = True
        for name, n in result.fired.items():
            fired[name] = fired.get(name, 0) + n
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
                                  _counts_after(graph, edit), rounds, notes)
        if not full_inference and not bodies:
            carried = (inference, edit.made)
        # Drop this round's index before building the next one: peak memory is one round's.
        # (Nothing here forms reference cycles, so this frees it without the cyclic collector.)
        del ctx, edit, graph, inference, result
        if rounds >= MAX_ROUNDS:
            raise AssertionError(f"optimize found no fixpoint after {MAX_ROUNDS} rounds")
