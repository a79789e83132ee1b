"""Unsound results the shape-arithmetic fuzzer found (fuzz/shapearith.py), each checked against
onnxruntime at small bindings: a stated dim must be the runtime's, or unknown."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.parser
import pytest

from shapeflow.dims import substitute

from helpers import analyze_model

ort = pytest.importorskip("onnxruntime")


def _runtime_shape(model: onnx.ModelProto, name: str, seq: int) -> list[int] | None:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 4
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    try:
        out = sess.run([name], {"x": np.zeros((seq,), np.float32)})[0]
    except Exception:
        return None  # the model fails at this binding: nothing to agree with
    return list(out.shape)


@pytest.mark.parametrize("allowzero", [0, 1])
def test_reshape_target_computed_as_minus_one(allowzero: int) -> None:
    """A computed target of ``seq - 3`` is -1 at seq = 2, which onnxruntime reads as "infer this
    dim" (seed 1900182360 found it through Sub/Slice/Where). Stating ``seq - 3`` was wrong."""
    model = onnx.parser.parse_model(f"""
<ir_version: 8, opset_import: ["" : 14]>
g (float[seq] x) => (float[?] y) <int64[1] three = {{3}}>
{{
  s = Shape (x)
  t = Sub (s, three)
  y = Reshape <allowzero: int = {allowzero}> (x, t)
}}
""")
    a = analyze_model(model)
    (d,) = a.inference.shape_of("y")  # type: ignore[misc]
    ran = 0
    for seq in (0, 1, 2, 3, 4, 5, 9):
        real = _runtime_shape(model, "y", seq)
        if real is None:
            continue
        ran += 1
        if d is not None:
            assert substitute(d, {"seq": seq}) == real[0], (seq, d, real)
    assert ran >= 1


def test_symbolic_value_that_leaves_int64_is_not_stated() -> None:
    """(batch*seq)**4 wraps in int64 at batch = seq = 300 (seed 605365385 found 256*(batch*(past +
    seq))**4): symbolic arithmetic is exact, so such a value is unknown, while 64*batch*seq stays."""
    model = onnx.parser.parse_model("""
<ir_version: 8, opset_import: ["" : 14]>
g (float[batch, seq] x) => (int64 y, int64 z) <int64 k = {64}>
{
  s = Size (x)
  s2 = Mul (s, s)
  y = Mul (s2, s2)
  z = Mul (s, k)
}
""")
    a = analyze_model(model)
    table = a.inference.tensors[0]
    assert table["y"].value is None
    assert str(table["z"].value[0]) == "64*batch*seq"
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    y, z = sess.run(None, {"x": np.zeros((300, 300), np.float32)})
    assert int(y) != (300 * 300) ** 4  # the runtime wraps: stating the exact value would be wrong
    assert substitute(table["z"].value[0], {"batch": 300, "seq": 300}) == int(z)
