"""Red-team attacks on "dims a kernel fixes" (``OpCall.same_dims``, ``Inference.equate``).

The claim: where onnxruntime runs the model, an op's kernel has checked the dims it equates, so
stating them changes no result. Each test builds a model and runs it in onnxruntime with its
*default* session options (``ORT_ENABLE_ALL``, what a user gets) and with ``ORT_DISABLE_ALL``, and
compares what shapeflow states, and what plain ``optimize`` writes, with what the runtime computes.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping

import numpy as np
import onnx
import onnx.parser
import pytest

ort = pytest.importorskip("onnxruntime")

from onnx import numpy_helper  # noqa: E402

from helpers import analyze_model  # noqa: E402
from shapeflow.dims import format_shape  # noqa: E402
from shapeflow.drivers import api  # noqa: E402

LEVELS = {"default": None, "all": "ORT_ENABLE_ALL", "none": "ORT_DISABLE_ALL"}


def _model(body: str, *, inputs: str, outputs: str, inits: Mapping[str, np.ndarray] = {},
           opset: int = 15) -> onnx.ModelProto:
    m = onnx.parser.parse_model(f'<ir_version: 8, opset_import: ["" : {opset}]>\n'
                                f"g ({inputs}) => ({outputs})\n{{\n{body}\n}}\n")
    m.graph.initializer.extend(numpy_helper.from_array(v, k) for k, v in inits.items())
    onnx.checker.check_model(m)
    return m


def _run(m: onnx.ModelProto, feeds: Mapping[str, np.ndarray], level: str | None) -> list[np.ndarray] | None:
    """The model's outputs in onnxruntime (None: it refuses them)."""
    so = ort.SessionOptions()
    if level is not None:
        so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    so.log_severity_level = 4
    try:
        sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
        return list(sess.run(None, dict(feeds)))
    except Exception:  # noqa: BLE001 (any refusal)
        return None


def _optimized(m: onnx.ModelProto) -> onnx.ModelProto:
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "m.onnx"), os.path.join(d, "o.onnx")
        onnx.save(m, src)
        return onnx.load(dst) if api.optimize(src, dst).changed else m


def _stated(m: onnx.ModelProto) -> dict[str, str]:
    a = analyze_model(m)
    return {k: format_shape(t.shape if t is not None else None) for k, t in a.inference.tensors[0].items()}


def _check(m: onnx.ModelProto, feeds_list: list[dict[str, np.ndarray]]) -> int:
    """Every main-graph tensor's stated dims against onnxruntime (every tensor exposed, at each
    level), and optimize's outputs against the original's bit for bit; the number of runs."""
    stated = analyze_model(m).inference.tensors[0]
    opt = _optimized(m)
    exposed = onnx.ModelProto()
    exposed.CopyFrom(m)
    names = [o.name for o in m.graph.output]
    for n in m.graph.node:
        for o in n.output:
            if o and o not in names:
                exposed.graph.output.append(onnx.ValueInfoProto(name=o))
                names.append(o)
    runs = 0
    for feeds in feeds_list:
        for level in LEVELS.values():
            # every tensor exposed (which keeps every node), then the model as it is (onnxruntime
            # may remove nodes from it): the dims stated for what each run shows
            for model_run, shown in ((exposed, names), (m, names[:len(m.graph.output)])):
                got = _run(model_run, feeds, level)
                for name, arr in zip(shown, got or []):
                    t = stated.get(name)
                    if t is None or t.shape is None:
                        continue
                    assert len(t.shape) == arr.ndim, (name, t.shape, arr.shape, level)
                    for k, d in enumerate(t.shape):
                        assert type(d) is not int or d == arr.shape[k], (name, t.shape, arr.shape, level)
            want = _run(m, feeds, level)
            if want is None:
                continue
            runs += 1
            have = _run(opt, feeds, level)
            assert have is not None, level
            for a, b in zip(want, have):
                assert (a.dtype, a.shape, a.tobytes()) == (b.dtype, b.shape, b.tobytes()), (level, a, b)
    return runs


# -- Conv: onnxruntime's NCHWc layout does not check the input channels --------------------------

def _conv_model() -> onnx.ModelProto:
    w = np.random.RandomState(0).rand(16, 16, 1, 1).astype(np.float32)
    return _model(" x = Reshape(data, s)\n y = Conv(x, w)\n c = Shape<start=1, end=2>(x)",
                  inputs="float[n] data, int64[4] s", outputs="float[?,?,?,?] y, int64[1] c", inits={"w": w})


def test_conv_with_a_constant_weight_fixes_no_input_channels() -> None:
    """With its default options (ORT_ENABLE_ALL) on an AVX2/AVX-512 CPU, onnxruntime rewrites a 2-D
    Conv whose weight is a constant into its blocked NCHWc form (ReorderInput pads the channels
    with zeros to the block): [1, 4, 2, 2] against a [16, 16, 1, 1] weight runs (ORT_DISABLE_ALL
    refuses it: ``C: 4 kernel channels: 16``). So Conv's channels are not fixed where the weight
    is constant: ``c = Shape(x)[1:2]`` is 4, not 16 (optimize folded it to 16)."""
    m = _conv_model()
    assert _stated(m)["x"] == "[?, ?, ?, ?]"
    feeds = [{"data": np.arange(16, dtype=np.float32), "s": np.array(s)}
             for s in ([1, 4, 2, 2], [1, 16, 1, 1], [2, 8, 1, 1], [0, 12, 3, 3], [1, 16, 0, 1])]
    assert _check(m, feeds) > 0


def test_conv_with_a_fed_weight_still_fixes_the_channels() -> None:
    """A weight computed from a graph input's values is no constant: every level checks it, and
    the channels are stated (x's from w's, here)."""
    m = _model(" x = Reshape(data, s)\n w = Relu(wi)\n y = Conv(x, w)\n c = Shape<start=1, end=2>(x)",
               inputs="float[n] data, int64[4] s, float[16, 16, 1, 1] wi",
               outputs="float[?,?,?,?] y, int64[1] c")
    assert _stated(m)["x"] == "[?, 16, ?, ?]"
    wi = np.random.RandomState(0).rand(16, 16, 1, 1).astype(np.float32)
    feeds = [{"data": np.arange(16, dtype=np.float32), "s": np.array(s), "wi": wi}
             for s in ([1, 4, 2, 2], [1, 16, 1, 1], [0, 16, 3, 3])]
    assert _check(m, feeds) > 0


def _w16() -> np.ndarray:
    return np.random.RandomState(0).rand(16, 16, 1, 1).astype(np.float32)


@pytest.mark.parametrize("case", ["overridable-ir3", "shape-of-static", "relu-of-initializer"])
def test_conv_weights_onnxruntime_folds_to_a_constant(case: str) -> None:
    """What onnxruntime folds to a constant before its NCHWc rewrite is a constant weight too: an
    initializer that is also an input before IR 4 (not overridable), an Expand to the Shape of a
    tensor whose dims are all static, an op on initializers only."""
    feeds: dict[str, np.ndarray] = {"d": np.arange(16, dtype=np.float32), "s": np.array([1, 4, 2, 2])}
    body = " x = Reshape(d, s)\n y = Conv(x, w)\n c = Shape<start=1, end=2>(x)"
    inputs, inits = "float[n] d, int64[4] s", {"w": _w16()}
    if case == "shape-of-static":
        body = " sh = Shape(z)\n w = Expand(one, sh)\n" + body
        inputs += ", float[16,16,1,1] z"
        inits = {"one": np.array(1.0, np.float32)}
        feeds["z"] = _w16()
    elif case == "relu-of-initializer":
        body = " w = Relu(w0)\n" + body
        inits = {"w0": _w16()}
    m = _model(body, inputs=inputs, outputs="float[?,?,?,?] y, int64[1] c", inits=inits)
    if case == "overridable-ir3":
        m.ir_version = 3
        m.graph.input.append(onnx.helper.make_tensor_value_info("w", onnx.TensorProto.FLOAT, [16, 16, 1, 1]))
    assert _stated(m)["x"] == "[?, ?, ?, ?]"
    assert _check(m, [feeds, {**feeds, "s": np.array([1, 16, 1, 1])}]) > 0


# -- a node onnxruntime removes: its output read only by a Shape it folds ------------------------

def _only_shape_read(op: str) -> onnx.ModelProto:
    """``s`` has a dim nothing computes (a graph input's value); the node reading it is read only by
    a Shape of static dims, which onnxruntime (ORT_ENABLE_BASIC and up, the default) folds to a
    constant, and then removes the node and never runs it: through a Relu, or beside an Identity
    nothing reads (which it drops first)."""
    tail = " r = Identity(t)\n y = Shape(t)" if op.endswith("+identity") else " r = Relu(t)\n y = Shape(r)"
    if op.startswith("BatchNormalization"):
        body = " s = Expand(one, n)\n t = BatchNormalization(x, s, s, s, s)\n" + tail
        inputs, out = "float[2,3,4] x, int64[1] n", "int64[3] y"
    else:
        body = " s = Slice(big, zero, n, zero)\n t = MatMul(x, s)\n" + tail
        inputs, out = "float[2,3] x, int64[1] n", "int64[2] y"
    m = _model(body + "\n ss = Shape(s)", inputs=inputs, outputs=f"{out}, int64[{1 if op.startswith('B') else 2}] ss",
               inits={"one": np.array(1.0, np.float32), "zero": np.array([0]), "big": np.ones((9, 5), np.float32)})
    if op == "MatMul":  # onnx's inference leaves t [2, ?] (a Slice to a computed end): as an exporter declares it
        m.graph.value_info.append(onnx.helper.make_tensor_value_info("t", onnx.TensorProto.FLOAT, [2, 5]))
    return m


@pytest.mark.parametrize("op", ["BatchNormalization", "MatMul", "BatchNormalization+identity"])
def test_a_node_read_only_by_a_folded_shape_fixes_nothing(op: str) -> None:
    """At n = 2 onnxruntime's default session runs the model (the BatchNormalization or MatMul is
    gone) and ``ss`` is [2]: stating ``s`` as [3] made optimize fold ``ss`` to [3]."""
    m = _only_shape_read(op)
    x = np.ones((2, 3, 4) if op.startswith("BatchNormalization") else (2, 3), np.float32)
    ran = _run(m, {"x": x, "n": np.array([2])}, None)
    assert ran is not None and ran[1].tolist()[0] == 2  # what onnxruntime computes at its defaults
    assert _stated(m)["s"] == ("[?, 5]" if op == "MatMul" else "[?]")
    assert _check(m, [{"x": x, "n": np.array([v])} for v in (0, 1, 2, 3, 4)]) > 0


def test_a_node_whose_value_reaches_an_output_fixes_its_inputs() -> None:
    """The scale is [3] where the BatchNormalization's value reaches a graph output (through a
    Relu and beside a Shape); not where nothing reads it (onnxruntime 1.32 runs it, but drops
    readers it sees as no-ops first, so that is not relied on)."""
    base = " s = Expand(one, n)\n t = BatchNormalization(x, s, s, s, s)\n r = Relu(t)\n y = Shape(t)"
    one = {"one": np.array(1.0, np.float32)}
    feeds = [{"x": np.ones((2, 3, 4), np.float32), "n": np.array([v])} for v in (0, 1, 2, 3, 4)]
    m = _model(base, inputs="float[2,3,4] x, int64[1] n", outputs="int64[3] y, float[?,?,?] r", inits=one)
    assert _stated(m)["s"] == "[3]"
    assert _check(m, feeds) > 0
    dead = _model(base, inputs="float[2,3,4] x, int64[1] n", outputs="int64[3] y", inits=one)
    assert _stated(dead)["s"] == "[?]"
