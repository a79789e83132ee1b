"""The pipeline of one model: load -> graph -> shapes -> diagnostics.

``analyze`` is what ``infer`` and ``lint`` share; ``optimize`` starts from its result. It is the
lint driver's hub: it runs the judging rules, then asks the rewrite engine for its candidates
(what the SF2xx rules report), leaving out the nodes with error-level findings.
"""

from __future__ import annotations

import gc
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Collection, Iterator, Mapping, Sequence


from .._onnx import onnx
from ..diagnostics import Diagnostic, Severity
from ..errors import ShapeflowError
from ..dims import Bound, Domain, Shape, has_minmax, shape_to_json
from ..graph import ModelGraph, build_graph
from ..assume import alias_bindings, check_assumptions, check_proven, resolve_premises
from ..inference import Inference, Progress, declared_symbols, infer, shared_dim_names
from ..declared import Written, declared_unproven
from ..io import LoadedModel
from ..errors import LimitExceededError
from ..limits import DEFAULT_LIMITS, Limits, deadline
from ..opsets import opset_map
from ..rules import LintContext, Rule, select_rules
from ..rules.calls import at_call_sites
from ..rules.rewrites import CANDIDATES, CODES
from ..results import SCHEMA, AnalysisJSON, NodeJSON, TensorJSON
from .._version import __version__

if TYPE_CHECKING:
    import networkx as nx


@dataclass
class Analysis:
    loaded: LoadedModel
    graph: ModelGraph
    inference: Inference
    diagnostics: list[Diagnostic] = field(default_factory=list)
    _declared: dict[tuple[int, str], list[Written]] | None = field(default=None, repr=False)

    @property
    def path(self) -> str:
        return self.loaded.path

    @property
    def declared(self) -> dict[tuple[int, str], list[Written]]:
        """(scope id, tensor) -> the file's declaration of the tensor, where it states a dim that
        inference leaves unknown (``declared.declared_unproven``), read once: from the file as
        loaded when first asked (``infer -o`` asks before it writes its own declarations)."""
        found = self._declared
        if found is None:
            found = self._declared = declared_unproven(self.graph, self.inference)
        return found

    def __repr__(self) -> str:
        counts = {"error": 0, "warning": 0, "info": 0}
        for d in self.diagnostics:
            counts[d.severity.value] += 1
        def n(k: int, word: str) -> str:
            return f"{k:,} {word}" + ("" if k == 1 else "s")

        return (f"<Analysis {self.path!r}: {n(self.graph.node_count(), 'node')}, "
                f"{len(self.inference.axis_nodes):,} Squeeze/Unsqueeze, {n(counts['error'], 'error')}, "
                f"{n(counts['warning'], 'warning')}, {counts['info']:,} info>")

    def to_json(self) -> AnalysisJSON:
        """The ``infer --format json`` object of SPEC.md section 3."""
        out: AnalysisJSON = {
            "shapeflow_version": __version__,
            "schema": SCHEMA,
            "model": self.path,
            "opset": opset_map(self.loaded.proto.opset_import),
            "tensors": tensors_json(self),
            "nodes": nodes_json(self),
            "diagnostics": [d.to_json() for d in self.diagnostics],
        }
        # only an output that used assumptions carries them (SPEC.md section 6)
        if self.inference.premises:
            out["assumptions"] = list(self.inference.premises)
        return out

    def to_networkx(self) -> "nx.MultiDiGraph":
        """The model as a networkx MultiDiGraph with op types, tensors, shapes and findings on
        it (``shapeflow.drivers.netx``; built on each call, never by infer or lint)."""
        from .netx import to_networkx

        return to_networkx(self)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building large indexes.

    Indexing and inference allocate millions of small tuples and records that form no cycles; with
    the collector on, its repeated full passes over them cost more than the work itself.

    On the way out, what was built is filed in the oldest generation at once (``freeze`` moves
    every tracked object to the permanent generation, ``unfreeze`` moves them all to the oldest):
    otherwise the first young collection after the pause would traverse every object the pause
    let pile up, about a second on a 500k-node model."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.freeze()
            gc.unfreeze()
            gc.enable()


def analyze(
    loaded: LoadedModel,
    *,
    dims: Mapping[str, int] | None = None,
    limits: Limits = DEFAULT_LIMITS,
    rules: Sequence[Rule] | None = None,
    progress: Progress | None = None,
    assumptions: Mapping[str, Bound] | None = None,
    only_known_symbols: bool = False,
) -> Analysis:
    """Index, infer and lint one loaded model. Raises ``ShapeflowError`` for a model that cannot be
    understood (SF002, a limit).

    ``rules`` defaults to the structure and axis rules (SF0xx, SF1xx): what ``infer`` reports. The
    rewrite hints (SF2xx) need a search for rewrite candidates, which ``lint`` asks for explicitly.
    ``assumptions`` (``--assume``) must name symbols of the model (UsageError otherwise), unless
    ``only_known_symbols``: then those naming none of its symbols are left out (lint over many
    models, each with its own symbols).
    """
    with gc_paused():
        graph = build_graph(loaded, limits)
        aliases: dict[str, str] = {}
        texts: list[str] = []
        if assumptions:
            # (the symbols optimize gives a shared name on later inputs, batch@mask, may be named:
            # ``--assume batch==batch@mask`` holds the rewrites to the shared name again)
            symbols = declared_symbols(graph) | set(shared_dim_names(graph).values())
            ranges, aliases, texts = resolve_premises(assumptions, symbols, only_known_symbols, loaded.path)
            dims = alias_bindings(dims, aliases, loaded.path)
            check_assumptions(ranges, symbols, dims, file=loaded.path)
            assumptions = ranges
        # The one domain of this model's results: the user's statements, as resolved for it
        domain = Domain.from_premises(assumptions or {}, aliases, tuple(texts))
        inference = infer(graph, dims, limits, progress, domain=domain)
        if assumptions:
            check_proven(assumptions, inference.ranges, file=loaded.path)
        if progress is not None:  # the next phase: the rules (and the rewrite search) judge
            progress(len(graph.nodes), len(graph.nodes))
        # (the rules judge dims in the domain inference proved them in: inference.domain)
        return _judge(loaded, graph, inference, rules)


# Premise hints (``infer``): at most this many candidates, and fewer on large models, so that
# candidates x nodes stays under the budget (each candidate is one more inference of the model).
HINT_CANDIDATES = 8
HINT_NODE_BUDGET = 400_000


def dim_weights(inference: Inference) -> dict[tuple[int, str], tuple[int | None, ...] | None]:
    """Each tensor's (scope id, name) dims as how hard they read: None for an unknown dim (or
    rank), else the expression's size (1 for an int)."""
    out: dict[tuple[int, str], tuple[int | None, ...] | None] = {}
    for sid, table in enumerate(inference.tensors):
        for name, t in table.items():
            shape = t.shape if t is not None else None
            out[(sid, name)] = None if shape is None else tuple(
                None if d is None else (1 if type(d) is int else d.size()) for d in shape)  # type: ignore[union-attr]
    return out


def _compare(base: Mapping[tuple[int, str], tuple[int | None, ...] | None],
             trial: Mapping[tuple[int, str], tuple[int | None, ...] | None]) -> tuple[int, int]:
    """(dims the trial states that base does not, dims both state that the trial states simpler)."""
    more = simpler = 0
    for key, t in trial.items():
        if t is None:
            continue
        b = base.get(key)
        if b is None or len(b) != len(t):
            more += sum(1 for w in t if w is not None)
            continue
        for wb, wt in zip(b, t):
            if wt is None:
                continue
            if wb is None:
                more += 1
            elif wt < wb:
                simpler += 1
    return more, simpler


def _worth_hinting(inference: Inference) -> bool:
    """Whether some dim is unknown or has a min/max: a scan over the distinct shapes (inference
    interns them: equal shapes are one object), cheap next to the inference."""
    seen: set[int] = set()
    for table in inference.tensors:
        for t in table.values():
            if t is None or t.shape is None:
                return True
            shape = t.shape
            if id(shape) in seen:
                continue
            seen.add(id(shape))
            for d in shape:
                if d is None or (type(d) is not int and has_minmax(d)):
                    return True
    return False


def premise_hints(a: Analysis, limit: int = HINT_CANDIDATES) -> list[tuple[str, int, int]]:
    """The premises that would state more dims, or state dims more simply, with how many:
    ``("seq>=1", 46, 3)``. Only when some dim is unknown or has a min/max (``seq - 64*min(1, seq) +
    64``, which is ``seq`` from seq = 1 on); each candidate (``x>=1`` for an input symbol not already >= 1, once
    per symbol; ``*>=1``; ``a==b`` for two input symbols a broadcast leaves unknown) is an
    inference of the model under it, so their number is bounded (``limit``, and
    ``HINT_NODE_BUDGET`` over the model's size). A premise that contradicts a fact the model
    proves, or a run past the time limit, is left out."""
    inference = a.inference
    # (the budget first: a model too large for one more inference needs no scan of its tensors)
    limit = min(limit, HINT_NODE_BUDGET // max(len(a.graph.nodes), 1))
    if limit < 1 or not _worth_hinting(inference):
        return []
    base = dim_weights(inference)
    symbols = [s for s in _input_symbol_order(a.graph) if s not in inference.bindings
               and s not in inference.aliases]
    weak = [s for s in symbols if (inference.ranges.get(s, (None, None))[0] or 0) < 1]
    # (text, extra ranges, extra aliases): each symbol >= 1, all of them, then pairs of input
    # symbols that meet in a broadcast whose dim stays unknown (tf2onnx's b1 against b2)
    pairs = _unknown_broadcast_pairs(a, set(symbols))[:max(limit // 2 - 1, 0)] if limit > 1 else []
    singles = weak[:max(limit - len(pairs) - (1 if len(weak) > 1 else 0), 0)]
    candidates: list[tuple[str, list[str], dict[str, str]]] = [(f"{s}>=1", [s], {}) for s in singles]
    if len(weak) > 1 and limit > len(singles) + len(pairs):
        candidates.append(("*>=1", weak, {}))
    candidates += [(f"{x}=={y}", [], {y: x}) for x, y in pairs]
    out: list[tuple[str, int, int]] = []
    best_single = 0
    # all the candidates together get the model's time limit once over
    trial_limits = replace(inference.limits, timeout=inference.limits.timeout / max(len(candidates), 1))
    for text, names, alias in candidates:
        ranges = dict(inference.assumptions)
        for n in names:
            lo, hi = ranges.get(n, (None, None))
            ranges[n] = (max(lo or 0, 1), hi)
        aliases = {**inference.aliases, **alias}
        if alias:
            (y, x), = alias.items()
            if y in ranges:  # b's range goes to a, which b now reads as
                lo, hi = ranges.pop(y)
                ranges[x] = (max(lo or 0, ranges.get(x, (0, None))[0] or 0), hi)
        try:
            trial = infer(a.graph, inference.bindings, trial_limits, None, ranges, aliases)
        except ShapeflowError:
            break
        if any(lo is not None and hi is not None and lo > hi for lo, hi in trial.ranges.values()):
            continue
        more, simpler = _compare(base, dim_weights(trial))
        if (more or simpler) and (text != "*>=1" or more + simpler > best_single):
            out.append((text, more, simpler))
            if len(names) == 1:
                best_single = max(best_single, more + simpler)
    return out


_BROADCASTS = frozenset({"Add", "Sub", "Mul", "Div", "Pow", "Mod", "Max", "Min", "Where", "Equal", "Less",
                         "Greater", "And", "Or", "Sum", "Mean", "PRelu"})


def _unknown_broadcast_pairs(a: Analysis, symbols: set[str]) -> list[tuple[str, str]]:
    """Pairs of input symbols that meet in a broadcast of the main graph whose dim is left unknown,
    most frequent first: where ``a==b`` would decide it."""
    from ..dims import plain_symbol

    seen: dict[tuple[str, str], int] = {}
    g, table = a.graph, a.inference.tensors[0]
    for nid in g.scopes[0].order:
        info = g.nodes[nid]
        if info.op_type not in _BROADCASTS or info.domain != "" or not info.outputs:
            continue
        out = table.get(info.outputs[0])
        if out is None or out.shape is None or None not in out.shape:
            continue
        shapes: list[Shape] = []
        for n in info.inputs:
            t = table.get(n) if n else None
            shapes.append(t.shape if t is not None else None)
        rank = len(out.shape)
        for k, d in enumerate(out.shape):
            if d is not None:
                continue
            names: set[str] = set()
            for s in shapes:
                j = k - (rank - len(s)) if s is not None else -1
                if s is not None and 0 <= j < len(s):
                    sym = plain_symbol(s[j])
                    if sym is not None and sym in symbols:
                        names.add(sym)
            if len(names) == 2:
                x, y = sorted(names)
                seen[(x, y)] = seen.get((x, y), 0) + 1
    return [p for p, _ in sorted(seen.items(), key=lambda kv: -kv[1])]


def _input_symbol_order(graph: ModelGraph) -> list[str]:
    """The symbols of the main graph's inputs, in the order they are declared."""
    seen: dict[str, None] = {}
    body = graph.scopes[0].proto
    inits = graph.scopes[0].initializers
    for vi in getattr(body, "input", ()):
        if vi.name in inits or vi.type.WhichOneof("value") != "tensor_type":
            continue
        for d in vi.type.tensor_type.shape.dim:
            if d.WhichOneof("value") == "dim_param" and d.dim_param:
                seen.setdefault(d.dim_param, None)
    return list(seen)


def _judge(loaded: LoadedModel, graph: ModelGraph, inference: Inference,
           rules: Sequence[Rule] | None) -> Analysis:
    result = Analysis(loaded, graph, inference)
    ctx = LintContext(loaded.path, graph, inference)
    diags: list[Diagnostic] = []
    reported: dict[str, list[Diagnostic]] = {}
    chosen = rules if rules is not None else select_rules(ignore=["SF2"])
    limits = inference.limits
    at = deadline(limits)  # each rule walks the model once: the time limit holds to within one of them
    for rule in chosen:
        if time.monotonic() > at:
            raise LimitExceededError("timeout", f"{limits.timeout:g} s", "--timeout", file=loaded.path)
        if rule.code in CODES and CANDIDATES not in ctx.cache:  # (the SF2xx rules come last)
            wanted = frozenset(r.code for r in chosen if r.code in CODES)
            ctx.cache[CANDIDATES] = rewrite_candidates(ctx, reported, wanted)
        found = reported[rule.code] = list(rule.diagnostics(ctx))
        found.extend(at_call_sites(ctx, rule, found))
        diags.extend(found)
    # Sorted inside the pause: a sort key per diagnostic (hundreds of thousands of info
    # findings on a large model) is enough allocation to start a full collection otherwise.
    result.diagnostics = sorted(diags, key=Diagnostic.sort_key)
    # the rules' shortcut is not needed any more (rules asked later read the nodes again): its
    # memory goes back before the report is rendered (10 MB on a 500k-node model)
    inference.memo_keys = {}
    return result


def error_findings(ctx: LintContext, reported: Mapping[str, Sequence[Diagnostic]]) -> list[Diagnostic]:
    """Every error-level finding of the model, whatever rules the user selected: ``reported`` holds
    the findings a run has, by code; an error rule not among them runs here, for its verdict only
    (a model with errors is refused by ``optimize``, and its broken nodes are never rewritten)."""
    out: list[Diagnostic] = []
    for rule in select_rules():
        if rule.severity != Severity.ERROR:
            continue
        found = reported.get(rule.code)
        if found is None:
            found = list(rule.diagnostics(ctx))
            found.extend(at_call_sites(ctx, rule, found))
        out.extend(d for d in found if d.severity == Severity.ERROR)
    return out


def rewrite_candidates(ctx: LintContext, reported: Mapping[str, Sequence[Diagnostic]],
                       codes: Collection[str] = CODES) -> list[object]:
    """The rewrite engine's candidates of ``codes`` (SF2xx), leaving out the nodes with
    error-level findings (``error_findings``)."""
    from ..passes import find_candidates  # here: ``infer`` never needs the engine
    from ..rewrites import select

    places = {(d.location.graph, d.location.node or "") for d in error_findings(ctx, reported)}
    return list(find_candidates(ctx.graph, ctx.inference, select(), codes=codes, blocked=places))


# numpy's names of the element types every model uses (a test checks them against onnx.helper),
# so that printing a shape table needs neither numpy nor onnx.helper
_DTYPE_NAMES = {
    1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 9: "bool",
    10: "float16", 11: "float64", 12: "uint32", 13: "uint64", 14: "complex64", 15: "complex128",
    16: "bfloat16",
}


def dtype_name(dtype: int) -> str | None:
    """``float32``, ``int64``, ...: numpy's names, which users know; None when unknown."""
    if not dtype:
        return None
    name = _DTYPE_NAMES.get(dtype)
    if name is not None:
        return name
    try:
        name = onnx.helper.tensor_dtype_to_np_dtype(dtype).name
    except Exception:
        name = ""
    if not name or name == "object":
        try:
            return str(onnx.TensorProto.DataType.Name(dtype)).lower()
        except ValueError:  # a number no onnx release defines (the file is input, too)
            return f"dtype {dtype}"
    return name


def tensors_json(a: Analysis) -> list[TensorJSON]:
    out: list[TensorJSON] = []
    declared = a.declared
    for scope, table in zip(a.graph.scopes, a.inference.tensors):
        for name, t in table.items():
            entry: TensorJSON = {
                "name": name,
                "graph": scope.path,
                "dtype": dtype_name(t.dtype) if t is not None else None,
                "shape": shape_to_json(t.shape) if t is not None else None,
            }
            written = declared.get((scope.id, name)) if declared else None
            if written is not None:  # the declaration, where it states what inference does not prove
                entry["declared_shape"] = list(written)
            out.append(entry)
    return out


def nodes_json(a: Analysis) -> list[NodeJSON]:
    out: list[NodeJSON] = []
    for n in a.inference.axis_nodes:
        out.append({
            "name": n.node,
            "graph": n.graph,
            "op_type": n.op_type,
            "since_version": n.since_version,
            "input": n.input,
            "output": n.output,
            "axes": list(n.normalized) if n.normalized is not None else None,
            "input_shape": shape_to_json(n.input_shape),
            "output_shape": shape_to_json(n.output_shape),
        })
    return out
