"""Running rewrites to a fixpoint: ``rewrite_model``, and ``run_passes`` for several in a row.

One round: index the model (``graph.build_graph``), infer it, run the rewrites on the round's roots
(``rounds.run_round``: every Squeeze/Unsqueeze of every scope, latest first, so the end of a chain
is rewritten as a whole before its start is rewritten alone, and the other roots the rewrites
name), sweep what they left dead (``sweep.sweep``), and write the node lists back once
(``Editor.finish``). Each rewrite removes a node or a Squeeze/Unsqueeze and none adds either, so the
rounds end; a round is O(N).

Two things keep the rounds after the first cheap. The inference of a round is carried over to the
next (``reinfer``: rewrites never change the value of a surviving tensor). And a round that
changed nothing a rewrite could see differently is the last one: the confirming round would find
nothing (``rounds.another_round``). ``full_inference=True`` does it the slow way, re-inferring
every round and always confirming; the tests check that both give the same bytes.

The engine judges nothing: the caller (``shapeflow.drivers.optimizer``, ``shapeflow.drivers.linter``) hands in the
rewrites to run (``shapeflow.rewrites``), its own index and inference for the first round, and the
nodes not to touch (those with error-level findings) as data; refusing a model with errors is the
driver's decision. What the engine itself requires of a model (a known format and opset, known
ops, safe external data: ``requires``) it checks before the first rewrite, whoever calls it.
``run_passes`` runs several fixpoints one after the other, as onnx-ir's PassManager does, and says
what changed.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Collection, Mapping, Sequence

from .._onnx import onnx
from ..assume import assumption_texts
from ..dims import Bound, Domain
from ..errors import LimitExceededError, timeout_as_configured
from ..graph import ModelGraph, build_graph
from ..inference import Inference, infer, shared_dim_names
from ..io import LoadedModel
from ..limits import DEFAULT_LIMITS, Limits
from .context import RoundContext
from .dispatch import Dispatch, Place, resolve_places
from .edit import Editor, NameRegistry
from .reinfer import carry_inference
from .report import OptimizeResult, count_ops, counts_after
from .requires import require_file, require_known_ops
from .rounds import RoundResult, another_round, keyed_collision, rewrote_function_bodies, run_round
from .spec import Rewrite
from .sweep import NAME as DEAD_NODES
from .sweep import sweep

Progress = Callable[[int, int], None]

# Every rewrite shrinks (nodes + Squeeze/Unsqueeze), so rounds are bounded by the model; this only
# turns a bug into an error instead of a hang.
MAX_ROUNDS = 1000


@dataclass
class _Run:
    """One fixpoint's settings and what it has done so far."""

    loaded: LoadedModel
    dispatch: Dispatch
    strict: bool
    limits: Limits
    progress: Progress | None
    started: float
    explain: bool
    full_inference: bool
    blocked: Collection[Place]
    names: NameRegistry
    assumptions: dict[str, Bound]
    aliases: dict[str, str]  # --assume a==b: b read as a
    premises: tuple[str, ...]  # the --assume statements, as reported
    domain: Domain  # all three, the value every round's inference starts from
    fired: dict[str, int] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    roots: list[tuple[str, str, str]] = field(default_factory=list)
    before: dict[str, int] = field(default_factory=dict)
    changed: bool = False
    rounds: int = 0

    def result(self, skipped: list[str], after: dict[str, int]) -> OptimizeResult:
        return OptimizeResult(self.loaded.proto, self.changed, self.fired, self.log, skipped, self.before, after,
                              self.rounds, self.notes, self.roots, self.assumptions, self.aliases, self.premises)


def rewrite_model(loaded: LoadedModel, rewrites: Sequence[Rewrite], *, graph: ModelGraph | None = None,
                  inference: Inference | None = None, blocked: Collection[Place] = (), strict: bool = False,
                  limits: Limits = DEFAULT_LIMITS, progress: Progress | None = None, explain: bool = True,
                  full_inference: bool = False, names: NameRegistry | None = None,
                  assumptions: Mapping[str, Bound] | None = None) -> OptimizeResult:
    """Rewrite ``loaded.proto`` in place with ``rewrites`` (instances, in priority order) until
    none fires.

    ``graph`` and ``inference`` are the caller's index and inference of ``loaded`` (its analysis):
    the first round uses them instead of building its own. Roots at ``blocked`` places are never
    rewritten. Raises ``ShapeflowError`` for a model the engine does not rewrite (``requires``) and
    for a limit; judging the model (refusing one with errors) is the caller's business.
    ``strict`` cancels Squeeze→Unsqueeze only over dims statically 1. ``explain=False`` leaves
    ``log`` empty (building one line per rewrite costs time on large models; ``notes`` and
    ``skipped`` are kept). ``full_inference`` re-infers the whole model every round instead of
    carrying the previous round's inference over (``reinfer``); the result is the same, only
    slower. ``names`` carries the generated names over from an earlier pass on the same model.
    ``assumptions`` (``--assume``; by default those of the given ``inference``) are the only
    ranges a rewrite may rely on beyond what the model proves.
    """
    if any(isinstance(r, str) for r in rewrites):
        raise TypeError("rewrite_model takes rewrite instances (shapeflow.rewrites.select names them)")
    require_file(loaded)
    ranges = dict(assumptions if assumptions is not None else inference.assumptions if inference is not None else {})
    aliases = dict(inference.aliases) if inference is not None else {}
    premises = inference.premises if inference is not None else tuple(assumption_texts(ranges))
    run = _Run(loaded, Dispatch(rewrites), strict, limits, progress, time.monotonic(), explain, full_inference,
               blocked, names or NameRegistry(), ranges, aliases, premises,
               Domain.from_premises(ranges, aliases, premises))
    # The index and inference allocate millions of small objects per round and free them all at
    # its end; the cyclic collector only adds super-linear time here (it is restored below).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _fixpoint(run, graph, inference)
    except LimitExceededError as exc:
        # each round's inference is given what is left of the budget: say the budget itself
        raise timeout_as_configured(exc, limits.timeout) from None
    finally:
        if gc_was_enabled:
            gc.enable()


def _fixpoint(run: _Run, given_graph: ModelGraph | None, given_inference: Inference | None) -> OptimizeResult:
    carried: tuple[Inference, set[tuple[int, str]]] | None = None
    while True:
        run.rounds += 1
        remaining = run.limits.timeout - (time.monotonic() - run.started)
        if remaining <= 0:
            raise LimitExceededError("timeout", f"{run.limits.timeout:g} s", "--timeout", file=run.loaded.path)
        round_limits = replace(run.limits, timeout=remaining)
        if run.rounds == 1 and given_graph is not None and given_inference is not None:
            graph, inference = given_graph, given_inference  # the caller's analysis: not redone
            given_graph = given_inference = None
            if not inference.independent and shared_dim_names(graph):
                # Graph inputs share dim names: the rewrites rely only on what holds when each is
                # fed its own sizes, as onnxruntime allows (inference.infer, independent)
                inference = infer(graph, None, round_limits, run.progress, independent=True, domain=run.domain)
        else:
            graph = build_graph(run.loaded, round_limits)
            inference = infer(graph, None, round_limits, run.progress, independent=True, domain=run.domain) \
                if carried is None else carry_inference(graph, carried[0], carried[1])
        carried = None
        if run.rounds == 1:
            require_known_ops(graph)
            run.before = count_ops(graph)
        ctx = RoundContext.build(graph, inference, run.strict)
        # Node ids are the round's: blocked places are looked up again each round.
        blocked = resolve_places(inference, run.blocked) if run.blocked else None
        if blocked:
            ctx.blocked = blocked
        edit = Editor(ctx, run.names, explain=run.explain)
        # (rewrites decide dims in the domain inference proved them in: ctx.domain)
        result = run_round(ctx, edit, run.dispatch, run.explain, blocked)
        ctx.release()
        if not edit.changed:
            return run.result([t for _, t in result.skipped], count_ops(graph))
        last, whole = _finish_round(run, ctx, edit, result)
        if last:
            # Nothing a next round could match has changed: that round would find nothing.
            gone = edit.deleted | result.written
            return run.result([t for nid, t in result.skipped if nid not in gone], counts_after(graph, edit))
        if not run.full_inference and not whole:
            carried = (inference, edit.made)
        # Drop this round's index before building the next one: peak memory is one round's.
        # (Nothing here forms reference cycles, so this frees it without the cyclic collector.)
        del ctx, edit, graph, inference, result
        if run.rounds >= MAX_ROUNDS:
            raise AssertionError(f"optimize found no fixpoint after {MAX_ROUNDS} rounds")


def _finish_round(run: _Run, ctx: RoundContext, edit: Editor, result: RoundResult) -> tuple[bool, bool]:
    """Sweep, write back and account for a round that changed the model. Returns whether it is
    the last round, and whether the next one infers the whole model again (a model-local function's
    body was rewritten, or a fold revealed a value)."""
    dispatch = run.dispatch
    # (before the sweep, which only deletes: the judgement reads the index's protos)
    keyed = bool(dispatch.keyed) and keyed_collision(ctx, edit)
    sweep(edit)
    edit.finish()
    # A call of a model-local function is inferred from its body (inference.py): a body this
    # round rewrote (say, a failing pair cancelled) can make a caller's outputs known, which
    # carrying inference over would miss. Such a round is followed by a whole inference.
    bodies = rewrote_function_bodies(ctx.graph, edit, result.written)
    # A fold that gives a tensor a value inference did not know (``Rewrite.reveals``): what reads
    # it is inferred again, by a whole inference, in a next round.
    # A tensor given a new value (a region renamed around a cancelled pair or a round trip, a
    # repair): carried inference knows nothing of the region's new names, and a repaired tensor's
    # old facts are wrong; the next round infers the whole model.
    whole = (bodies or any(r.reveals and r.name in result.fired for r in dispatch.rules)
             or edit.revalued_any())
    last = not (run.full_inference or whole or keyed or another_round(ctx, edit, dispatch, result))
    run.changed = True
    for name, n in result.fired.items():
        run.fired[name] = run.fired.get(name, 0) + n
    run.roots.extend(result.roots)
    if edit.dead_count:
        run.fired[DEAD_NODES] = run.fired.get(DEAD_NODES, 0) + edit.dead_count
    if run.explain:
        scopes = ctx.graph.scopes
        run.log.extend(result.log)
        run.log.extend(f"{DEAD_NODES}: removed {shown}" for shown in edit.dead)
        run.log.extend(f"{DEAD_NODES}: removed initializer '{name}'" + ("" if sid == 0 else f" in {scopes[sid].path}")
                       for sid, name in edit.removed_initializers)
    run.notes.extend(result.notes)
    return last, whole


@dataclass(frozen=True)
class Pass:
    """One step of ``run_passes``: rewrites run to their fixpoint, with the places they must not
    touch."""

    name: str
    rules: tuple[Rewrite, ...]
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


__all__ = ["MAX_ROUNDS", "Pass", "PassesResult", "Progress", "rewrite_model", "run_passes"]
