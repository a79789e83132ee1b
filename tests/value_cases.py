"""What the value tests share (test_value_attacks.py, test_folded_values_are_runtimes.py): a model
from onnx's text form, the runtime's outputs through the session's shapearith worker, what
inference states for a tensor's value, and the optimized model's outputs against the original's."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnx.parser

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))
import shapearith  # noqa: E402

from shapeflow.drivers import api  # noqa: E402
from shapeflow.graph import build_graph  # noqa: E402
from shapeflow.inference import infer  # noqa: E402
from shapeflow.io import load_model_bytes  # noqa: E402


def model(body: str, *, inputs: str, outputs: str, inits: str = "", opset: int = 17) -> onnx.ModelProto:
    text = (f'<ir_version: 8, opset_import: ["" : {opset}]>\ng ({inputs}) => ({outputs})\n'
            + (f"<{inits}>\n" if inits else "") + "{\n" + body + "\n}\n")
    m = onnx.parser.parse_model(text)
    onnx.checker.check_model(m)
    return m


def optimized(m: onnx.ModelProto) -> onnx.ModelProto:
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "m.onnx"), os.path.join(d, "o.onnx")
        onnx.save(m, src)
        result = api.optimize(src, dst)
        return onnx.load(dst) if result.changed else m


def outputs(runner: shapearith.Runner, m: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    status, res = runner.run(m.SerializeToString(), feeds, [o.name for o in m.graph.output])
    assert status == "ok", res
    return list(res)


def stated(m: onnx.ModelProto, name: str, **kw: Any) -> object:
    """What inference states for ``name``'s value (None: nothing known)."""
    t = infer(build_graph(load_model_bytes(m.SerializeToString(), "m.onnx")), **kw).tensors[0].get(name)
    if t is None or t.value is None or all(v is None for v in t.value):
        return None
    return t.value


def assert_same_outputs(runner: shapearith.Runner, m: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> None:
    want = outputs(runner, m, feeds)
    got = outputs(runner, optimized(m), feeds)
    for a, b in zip(want, got):
        assert (a.dtype, a.shape, a.tobytes()) == (b.dtype, b.shape, b.tobytes()), (a, b)
