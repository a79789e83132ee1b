"""Wrong answers onnx's backend suite exposed (issue 22, point 6), each against its oracle.

* STFT-17: ``onesided`` defaults to 1 (onnxruntime gives ``frame_length // 2 + 1`` bins); the
  shapes are checked against onnxruntime at signal lengths 0, 1, 2, 3, around the frame length and
  large, and lint and optimize are checked on a model that onnxruntime runs.
* Add/Sub/Mul/Div/Pow/And/Or/Xor/Equal/Less/Greater before opset 7 broadcast the old way
  (``broadcast``/``axis``: B lines up with a run of A's dims) and PRelu-1/6 applies its slope per
  channel. onnxruntime has no kernel for any of them (it refuses such models: checked here), so
  the oracle is the spec of those versions, written out in ``legacy_shape``/``legacy_values``.
* Concat-1 without ``axis`` concatenates on axis 1 (the spec; onnxruntime has no Concat-1 kernel
  either, and onnx's reference evaluator refuses a missing axis).
* A model that imports only ``ai.onnx.ml`` (or only the training domain) is a valid model: onnx's
  full checker passes it and onnxruntime runs it, so it is no SF001.
"""

from __future__ import annotations

from pathlib import Path

import cli_process
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from helpers import analyze_model, bound, ort_session
from shapeflow.dims import substitute

T = TensorProto
BINDINGS = (0, 1, 2, 3, 4, 5, 15, 16, 17, 23, 24, 1000)


def _run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray] | None:
    try:
        return ort_session(model).run(None, feeds)
    except Exception:
        return None


# -- STFT ---------------------------------------------------------------------------------------------

def stft_model(onesided: int | None, *, frame: int, step: int, window: bool, channels: int,
               length: int | str = "L", with_shape: bool = False) -> onnx.ModelProto:
    sig = helper.make_tensor_value_info("sig", T.FLOAT, [1, length, channels])
    inits = [helper.make_tensor("step", T.INT64, [], [step])]
    inputs = ["sig", "step"]
    if window:
        inits.append(helper.make_tensor("win", T.FLOAT, [frame], list(np.hanning(frame).astype(float))))
        inputs.append("win")
    else:
        inits.append(helper.make_tensor("fl", T.INT64, [], [frame]))
        inputs += ["", "fl"]
    kw = {} if onesided is None else {"onesided": onesided}
    nodes = [helper.make_node("STFT", inputs, ["y"], name="stft", **kw)]
    outputs = [helper.make_tensor_value_info("y", T.FLOAT, None)]
    if with_shape:
        nodes.append(helper.make_node("Shape", ["y"], ["s"], name="shape"))
        outputs.append(helper.make_tensor_value_info("s", T.INT64, None))
    g = helper.make_graph(nodes, "g", [sig], outputs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


STFT_CASES = [(o, f, s, w, c) for o in (None, 0, 1) for f, s in ((16, 8), (7, 3), (4, 4))
              for w in (False, True) for c in (1, 2)]


@pytest.mark.parametrize("onesided, frame, step, window, channels", STFT_CASES)
def test_stft_shape_matches_onnxruntime(onesided: int | None, frame: int, step: int, window: bool,
                                        channels: int) -> None:
    model = stft_model(onesided, frame=frame, step=step, window=window, channels=channels)
    y = analyze_model(model).inference.shape_of("y")
    assert y is not None and len(y) == 4
    bins = frame // 2 + 1 if onesided in (None, 1) else frame
    assert y[2] == bins and y[3] == 2  # the frequency bins hold whatever the length
    compared = 0
    for n in BINDINGS:
        out = _run(model, {"sig": np.ones((1, n, channels), np.float32)})
        if out is None:
            continue
        compared += 1
        assert bound(y, {"L": n}) == list(out[0].shape), (n, y)
    assert compared >= 5


def test_stft_lint_and_optimize_agree_with_onnxruntime(tmp_path: Path) -> None:
    """The model of the issue: a correct declaration is no SF112, and optimize folds
    Shape(STFT(...)) to the shape onnxruntime computes."""
    model = stft_model(None, frame=16, step=8, window=False, channels=1, length=64, with_shape=True)
    model.graph.output[0].CopyFrom(helper.make_tensor_value_info("y", T.FLOAT, [1, 7, 9, 2]))
    a = analyze_model(model)
    assert not [d for d in a.diagnostics if d.code == "SF112"]
    src, out = tmp_path / "stft.onnx", tmp_path / "opt.onnx"
    onnx.save(model, src)
    proc = cli_process.shapeflow("optimize", str(src), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    feeds = {"sig": np.random.default_rng(0).standard_normal((1, 64, 1)).astype(np.float32)}
    before, after = _run(model, feeds), _run(onnx.load(out), feeds)
    assert before is not None and after is not None
    assert before[1].tolist() == [1, 7, 9, 2] == after[1].tolist()


# -- legacy broadcasting (opset <= 6) ------------------------------------------------------------------

LEGACY_OPS = ("Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Less", "Greater")


def legacy_shape(a: tuple[int, ...], b: tuple[int, ...], broadcast: int, axis: int | None,
                 per_channel: bool = False) -> tuple[int, ...] | None:
    """The output shape of the spec of Add-1/6 (and PRelu-1/6 with ``per_channel``): A's, when B
    is allowed (None otherwise)."""
    if per_channel:
        return a  # any slope shape the kernel accepts: the output is X's
    if not broadcast:
        return a if a == b else None
    if int(np.prod(b)) == 1 and len(b) <= len(a):
        return a
    start = len(a) - len(b) if axis is None else axis
    if start < 0 or start + len(b) > len(a) or tuple(a[start:start + len(b)]) != b:
        return None
    return a


def legacy_values(op: str, a: np.ndarray, b: np.ndarray, axis: int | None) -> np.ndarray:
    """The spec's legacy broadcast: B placed at A's dims ``axis`` .. (suffix by default)."""
    if b.size == 1:
        bb = np.full(a.shape, b.reshape(-1)[0])
    else:
        start = a.ndim - b.ndim if axis is None else axis
        bb = np.broadcast_to(b.reshape((1,) * start + b.shape + (1,) * (a.ndim - start - b.ndim)), a.shape)
    fns = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Equal": np.equal, "Less": np.less,
           "Greater": np.greater}
    return fns[op](a, bb)


def _binary(op: str, opset: int, a_shape: list, b_shape: list, **kw: int) -> onnx.ModelProto:
    dtype = T.BOOL if op in ("And", "Or", "Xor") else T.FLOAT
    a = helper.make_tensor_value_info("a", dtype, a_shape)
    b = helper.make_tensor_value_info("b", dtype, b_shape)
    node = helper.make_node(op, ["a", "b"], ["y"], name="n", **kw)
    g = helper.make_graph([node], "g", [a, b], [helper.make_tensor_value_info("y", T.BOOL if op in (
        "And", "Or", "Xor", "Equal", "Less", "Greater") else dtype, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=3)


# (A's dims as symbols, B's shape, attributes): the spec's own examples, with A symbolic
LEGACY_FORMS = [
    ([], {}),  # no broadcast: B is A
    ([5], {"broadcast": 1}),
    ([4, 5], {"broadcast": 1}),
    ([3, 4], {"broadcast": 1, "axis": 1}),
    ([2], {"broadcast": 1, "axis": 0}),
    ([1, 1], {"broadcast": 1}),
    ([], {"broadcast": 1}),  # a scalar B
]


@pytest.mark.parametrize("op", LEGACY_OPS)
@pytest.mark.parametrize("b_shape, attrs", LEGACY_FORMS)
def test_legacy_broadcast_shape_at_every_binding(op: str, b_shape: list[int], attrs: dict[str, int]) -> None:
    opset = 6 if op in ("Add", "Sub", "Mul", "Div") else 1
    names = ["n", "c", "h", "w"]
    model = _binary(op, opset, names, list(b_shape) if attrs or b_shape else names, **attrs)
    y = analyze_model(model).inference.shape_of("y")
    assert y is not None
    for v in (0, 1, 2, 3, 1000):
        for k in range(4):  # one symbol at v, the others at the spec example's dims
            dims = [2, 3, 4, 5]
            dims[k] = v
            env = dict(zip(names, dims))
            b = tuple(b_shape) if attrs or b_shape else tuple(dims)
            want = legacy_shape(tuple(dims), b, attrs.get("broadcast", 0), attrs.get("axis"))
            if want is None:
                continue  # a binding at which the model is invalid: nothing to state
            got = bound(y, env)
            assert len(got) == len(want) and all(g is None or g == w for g, w in zip(got, want)), (env, got, want)


def test_legacy_broadcast_states_no_numpy_broadcast() -> None:
    """The regression: numpy broadcasting put B's 3 on A's last dim; the spec puts it on axis 0.
    Every dim of A survives, and A's dim 0 is 3 wherever the model is valid."""
    for op in ("Add", "Mul"):
        y = analyze_model(_binary(op, 6, ["n", "c"], [3], broadcast=1, axis=0)).inference.shape_of("y")
        assert [str(d) for d in y] == ["3", "c"]  # type: ignore[union-attr]
        assert bound(y, {"c": 1}) == [3, 1]


def test_legacy_prelu_is_per_channel() -> None:
    for opset in (1, 6):
        y = analyze_model(_binary("PRelu", opset, ["n", "c", "h", "w"], [3])).inference.shape_of("y")
        assert [str(d) for d in y] == ["n", "c", "h", "w"]  # type: ignore[union-attr]
    # from opset 7, unidirectional broadcasting: the slope [3] lines up with the last dim
    y = analyze_model(_binary("PRelu", 9, ["n", "c", "h", "w"], [3])).inference.shape_of("y")
    assert [str(d) for d in y] == ["n", "c", "h", "3"]  # type: ignore[union-attr]


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Equal", "Less", "Greater"])
@pytest.mark.parametrize("b_shape, axis", [((3,), 1), ((3, 4), 1), ((4,), None), ((2,), 0), ((1,), None)])
def test_legacy_broadcast_values(op: str, b_shape: tuple[int, ...], axis: int | None) -> None:
    """Shape values through the legacy broadcast, against the spec's placement of B."""
    rng = np.random.default_rng(7)
    a = rng.integers(-5, 6, size=(2, 3, 4)).astype(np.int64)
    b = rng.integers(-5, 6, size=b_shape).astype(np.int64)
    kw = {"broadcast": 1} if axis is None else {"broadcast": 1, "axis": axis}
    node = helper.make_node(op, ["a", "b"], ["y"], **kw)
    g = helper.make_graph([node], "g", [], [helper.make_tensor_value_info("y", T.INT64, None)],
                          [numpy_helper.from_array(a, "a"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 6 if op in ("Add", "Sub", "Mul") else 1)],
                              ir_version=3)
    t = analyze_model(model).inference.lookup(0, "y")
    assert t is not None and t.shape == (2, 3, 4)
    want = legacy_values(op, a, b, axis).astype(np.int64).reshape(-1).tolist()
    assert t.value is not None and list(t.value) == want


def test_onnxruntime_has_no_legacy_kernels() -> None:
    """Why the spec is the oracle: onnxruntime refuses every one of these versions."""
    for op, opset in (("Add", 6), ("Mul", 1), ("Pow", 1), ("PRelu", 6)):
        model = _binary(op, opset, [2, 3], [3], broadcast=1) if op != "PRelu" else _binary(op, opset, [2, 3], [3])
        with pytest.raises(Exception, match="NOT_IMPLEMENTED"):
            ort_session(model)


# -- Concat-1 -------------------------------------------------------------------------------------------

def test_concat_1_without_axis_is_axis_1() -> None:
    x = helper.make_tensor_value_info("x", T.FLOAT, ["a", "b"])
    z = helper.make_tensor_value_info("z", T.FLOAT, ["a", "c"])
    node = helper.make_node("Concat", ["x", "z"], ["y"])
    g = helper.make_graph([node], "g", [x, z], [helper.make_tensor_value_info("y", T.FLOAT, None)])
    y = analyze_model(helper.make_model(g, opset_imports=[helper.make_opsetid("", 1)], ir_version=3)
                      ).inference.shape_of("y")
    assert y is not None
    for v in (0, 1, 2, 3, 1000):
        for env in ({"a": v, "b": 2, "c": 3}, {"a": 2, "b": v, "c": 3}, {"a": 2, "b": 3, "c": v}):
            want = np.concatenate([np.zeros((env["a"], env["b"])), np.zeros((env["a"], env["c"]))], axis=1).shape
            assert bound(y, env) == list(want)
    # opset 4 made axis required; with it, the axis written is the one used
    g4 = helper.make_graph([helper.make_node("Concat", ["x", "z"], ["y"], axis=1)], "g", [x, z],
                           [helper.make_tensor_value_info("y", T.FLOAT, None)])
    y4 = analyze_model(helper.make_model(g4, opset_imports=[helper.make_opsetid("", 4)])).inference.shape_of("y")
    assert [str(d) for d in y4] == [str(d) for d in y]  # type: ignore[union-attr]
    assert substitute(y[1], {"b": 2, "c": 3}) == 5


# -- models without ai.onnx -----------------------------------------------------------------------------

def _ml_only() -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", T.FLOAT, ["N", 3])
    nodes = [helper.make_node("Normalizer", ["x"], ["y"], domain="ai.onnx.ml", norm="L2", name="norm"),
             helper.make_node("Binarizer", ["y"], ["z"], domain="ai.onnx.ml", threshold=0.5, name="bin")]
    g = helper.make_graph(nodes, "g", [x], [helper.make_tensor_value_info("z", T.FLOAT, ["N", 3])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("ai.onnx.ml", 3)], ir_version=8)


def _training_only() -> onnx.ModelProto:
    names = ["r", "t", "x", "g", "h"]
    inputs = [helper.make_tensor_value_info(n, T.FLOAT if n != "t" else T.INT64, [] if n in "rt" else [3])
              for n in names]
    node = helper.make_node("Adagrad", names, ["x_new", "h_new"], domain="ai.onnx.preview.training",
                            norm_coefficient=0.001, epsilon=1e-5, decay_factor=0.1)
    g = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("x_new", T.FLOAT, [3]),
                                                 helper.make_tensor_value_info("h_new", T.FLOAT, [3])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("ai.onnx.preview.training", 1)], ir_version=8)


@pytest.mark.parametrize("make", [_ml_only, _training_only], ids=["ml", "training"])
def test_model_without_ai_onnx_import_is_readable(make, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    model = make()
    onnx.checker.check_model(model, full_check=True)
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    proc = cli_process.shapeflow("lint", str(path), "--format", "json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert '"SF001"' not in proc.stdout


def test_ml_only_model_runs_in_onnxruntime() -> None:
    out = ort_session(_ml_only()).run(None, {"x": np.ones((2, 3), np.float32)})
    assert out[0].shape == (2, 3)


def test_ai_onnx_node_without_its_import_is_still_sf001(tmp_path: Path) -> None:
    """onnx's checker refuses an ai.onnx node when the model imports no ai.onnx opset."""
    model = _ml_only()
    model.graph.node.append(helper.make_node("Relu", ["z"], ["w"], name="r"))
    model.graph.output[0].name = "w"
    with pytest.raises(onnx.checker.ValidationError):
        onnx.checker.check_model(model, full_check=True)
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    proc = cli_process.shapeflow("lint", str(path))
    assert proc.returncode == 2 and "SF001" in proc.stdout + proc.stderr
