"""Helpers shared by the optimize tests (no tests here).

Every rewritten model goes through :func:`check_rewrite`: onnxruntime runs the original and the
optimized model on the same random inputs, with every symbolic dim bound to 1 and to 3, and the
outputs must be bit-identical; the signature (names, dtypes, declared dims) must not change;
optimizing the output again must change nothing; the node count must not grow.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
import onnx.parser
import onnxruntime as ort
import pytest

from shapeflow.io import LoadedModel, load_model_bytes
from shapeflow.drivers.optimizer import optimize_model
from shapeflow.passes import OptimizeResult
from shapeflow.drivers.verify import random_inputs

SO = ort.SessionOptions()
SO.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
SO.log_severity_level = 4  # the original failing on a binding is expected, not worth a log line
QUIET = ort.RunOptions()
QUIET.log_severity_level = 4


def parse(text: str) -> onnx.ModelProto:
    return onnx.parser.parse_model(text)


def loaded_of(model: onnx.ModelProto | bytes, name: str = "m.onnx") -> LoadedModel:
    data = model if isinstance(model, bytes) else model.SerializeToString()
    return load_model_bytes(data, name)


@dataclass
class Outcome:
    result: OptimizeResult
    before: onnx.ModelProto
    after: onnx.ModelProto
    data: bytes  # the optimized model's bytes
    options: dict[str, object]

    def ops(self) -> list[str]:
        return [n.op_type for n in self.after.graph.node]

    def count(self, op: str) -> int:
        return sum(1 for n in all_nodes(self.after) if n.op_type == op)

    @property
    def fired(self) -> dict[str, int]:
        return self.result.rewrites


def all_nodes(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    """Every node of the model: main graph, nested bodies, functions."""
    out: list[onnx.NodeProto] = []
    stack: list[onnx.GraphProto | onnx.FunctionProto] = [model.graph, *model.functions]
    while stack:
        body = stack.pop()
        for n in body.node:
            out.append(n)
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    stack.append(a.g)
                elif a.type == onnx.AttributeProto.GRAPHS:
                    stack.extend(a.graphs)
    return out


def optimize(model: onnx.ModelProto | str, **kw: object) -> Outcome:
    if isinstance(model, str):
        model = parse(model)
    before = onnx.ModelProto()
    before.CopyFrom(model)
    loaded = loaded_of(model)
    result = optimize_model(loaded, **kw)  # type: ignore[arg-type]
    data = result.model.SerializeToString() if result.changed else loaded.raw
    return Outcome(result, before, onnx.ModelProto.FromString(data), data, dict(kw))


def signature(model: onnx.ModelProto) -> list[tuple[str, str, int, tuple[str, ...] | None]]:
    out = []
    for kind, vis in (("in", model.graph.input), ("out", model.graph.output)):
        for vi in vis:
            tt = vi.type.tensor_type
            dims = None
            if tt.HasField("shape"):
                dims = tuple(d.dim_param if d.WhichOneof("value") == "dim_param" else str(d.dim_value)
                             for d in tt.shape.dim)
            out.append((kind, vi.name, tt.elem_type, dims))
    return out


def run(model: onnx.ModelProto | bytes, feeds: dict[str, np.ndarray]) -> list[np.ndarray] | Exception:
    data = model if isinstance(model, bytes) else model.SerializeToString()
    try:
        sess = ort.InferenceSession(data, SO, providers=["CPUExecutionProvider"])
        return sess.run(None, feeds, QUIET)
    except Exception as exc:  # the original may fail on a binding (a squeezed dim that is not 1)
        return exc


def assert_bit_identical(before: onnx.ModelProto, after: onnx.ModelProto, values: tuple[int, ...] = (1, 3),
                         seed: int = 0, allow_fixed_failure: bool = True) -> int:
    """Outputs identical bit for bit wherever the original runs; returns how many bindings ran."""
    ran = 0
    for v in values:
        feeds = random_inputs(before, v, np.random.default_rng(seed))
        want = run(before, feeds)
        got = run(after, feeds)
        if isinstance(want, Exception):
            assert allow_fixed_failure, f"original fails at {v}: {want}"
            continue
        assert not isinstance(got, Exception), f"optimized model fails at {v}: {got}"
        assert len(want) == len(got)
        for a, b in zip(want, got):
            assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
            # string tensors are object arrays whose bytes are pointers: compare their values
            assert a.tolist() == b.tolist() if a.dtype == object else a.tobytes() == b.tobytes()
        ran += 1
    return ran


def check_rewrite(out: Outcome, *, values: tuple[int, ...] = (1, 3), must_run: bool = True,
                  full_check: bool = True) -> None:
    """The invariants every optimize output keeps."""
    assert signature(out.after) == signature(out.before)
    if full_check:
        onnx.checker.check_model(out.after, full_check=True)
    ran = assert_bit_identical(out.before, out.after, values)
    if must_run:
        assert ran > 0, "the original never ran: nothing was checked"
    assert len(all_nodes(out.after)) <= len(all_nodes(out.before))
    again = optimize_model(loaded_of(out.data), **out.options)  # type: ignore[arg-type]
    assert not again.changed, f"not idempotent: {again.rewrites} {again.log}"


def skip_without(module: str) -> None:
    pytest.importorskip(module)
