"""The pipeline of one model: load -> graph -> shapes -> diagnostics.

``analyze`` is what ``infer`` and ``lint`` share; ``optimize`` starts from its result. It is the
lint driver's hub: it runs the judging rules, then asks the rewrite engine for its candidates
(what the SF2xx rules report), leaving out the nodes with error-level findings.
"""

from __future__ import annotations

import gc
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Collection, Iterator, Mapping, Sequence


from ._onnx import onnx
from .diagnostics import Diagnostic, Severity
from .dims import Bound, shape_to_json
from .graph import ModelGraph, build_graph
from .assume import assumption_texts, check_assumptions, check_proven
from .inference import Inference, Progress, declared_symbols, infer
from .declared import Written, declared_unproven
from .io import LoadedModel
from .errors import LimitExceededError
from .limits import DEFAULT_LIMITS, Limits, deadline
from .opsets import opset_map
from .rules import LintContext, Rule, select_rules
from .rules.calls import at_call_sites
from .rules.rewrites import CANDIDATES, CODES
from .results import SCHEMA, AnalysisJSON, NodeJSON, TensorJSON
from ._version import __version__

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
        if self.inference.assumptions:
            out["assumptions"] = assumption_texts(self.inference.assumptions)
        return out

    def to_networkx(self) -> "nx.MultiDiGraph":
        """The model as a networkx MultiDiGraph with op types, tensors, shapes and findings on
        it (``shapeflow.netx``; built on each call, never by infer or lint)."""
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
        if assumptions:
            symbols = declared_symbols(graph)
            if only_known_symbols:
                assumptions = {k: v for k, v in assumptions.items() if k in symbols}
            check_assumptions(assumptions, symbols, dims, file=loaded.path)
        inference = infer(graph, dims, limits, progress, assumptions)
        if assumptions:
            check_proven(assumptions, inference.ranges, file=loaded.path)
        if progress is not None:  # the next phase: the rules (and the rewrite search) judge
            progress(len(graph.nodes), len(graph.nodes))
        with inference.domain():  # the rules judge dims in the domain inference proved them in
            return _judge(loaded, graph, inference, rules)


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
    from .passes import find_candidates  # here: ``infer`` never needs the engine

    places = {(d.location.graph, d.location.node or "") for d in error_findings(ctx, reported)}
    return list(find_candidates(ctx.graph, ctx.inference, codes=codes, blocked=places))


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
            return onnx.TensorProto.DataType.Name(dtype).lower()
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
