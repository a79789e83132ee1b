"""The pipeline of one model: load -> graph -> shapes -> diagnostics.

``analyze`` is what ``infer`` and ``lint`` share; ``optimize`` starts from its result.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, Mapping, Sequence


from ._onnx import onnx
from .diagnostics import Diagnostic
from .dims import shape_to_json
from .graph import ModelGraph, build_graph
from .inference import Inference, Progress, infer
from .io import LoadedModel
from .limits import DEFAULT_LIMITS, Limits
from .opsets import opset_map
from .rules import LintContext, Rule, select_rules
from .rules.calls import at_call_sites
from .rules.rewrites import REPORTED


@dataclass
class Analysis:
    loaded: LoadedModel
    graph: ModelGraph
    inference: Inference
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def path(self) -> str:
        return self.loaded.path

    def to_json(self) -> dict[str, object]:
        """The ``infer --format json`` object of SPEC.md section 3."""
        return {
            "model": self.path,
            "opset": opset_map(self.loaded.proto.opset_import),
            "tensors": tensors_json(self),
            "nodes": nodes_json(self),
            "diagnostics": [d.to_json() for d in self.diagnostics],
        }


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
) -> Analysis:
    """Index, infer and lint one loaded model. Raises ``ShapeflowError`` for a model that cannot be
    understood (SF002, a limit).

    ``rules`` defaults to the structure and axis rules (SF0xx, SF1xx): what ``infer`` reports. The
    rewrite hints (SF2xx) need a search for rewrite candidates, which ``lint`` asks for explicitly.
    """
    with gc_paused():
        graph = build_graph(loaded, limits)
        inference = infer(graph, dims, limits, progress)
        result = Analysis(loaded, graph, inference)
        ctx = LintContext(loaded.path, graph, inference)
        diags: list[Diagnostic] = []
        reported: dict[str, list[Diagnostic]] = {}
        ctx.cache[REPORTED] = reported  # for the rewrite candidates (SF2xx) to build on
        for rule in rules if rules is not None else select_rules(ignore=["SF2"]):
            found = reported[rule.code] = list(rule.diagnostics(ctx))
            found.extend(at_call_sites(ctx, rule, found))
            diags.extend(found)
        # Sorted inside the pause: a sort key per diagnostic (hundreds of thousands of info
        # findings on a large model) is enough allocation to start a full collection otherwise.
        result.diagnostics = sorted(diags, key=Diagnostic.sort_key)
    return result


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


def tensors_json(a: Analysis) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for scope, table in zip(a.graph.scopes, a.inference.tensors):
        for name, t in table.items():
            out.append({
                "name": name,
                "graph": scope.path,
                "dtype": dtype_name(t.dtype) if t is not None else None,
                "shape": shape_to_json(t.shape) if t is not None else None,
            })
    return out


def nodes_json(a: Analysis) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
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
