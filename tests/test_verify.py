"""``shapeflow.verify``: the bit-exact onnxruntime comparison behind ``optimize --verify``."""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from shapeflow.errors import UsageError
from shapeflow.verify import MISSING_ORT, random_inputs, verify_models
from test_passes_support import parse

BASE = """<ir_version: 8, opset_import: ["" : 13]>
g (float[N, 3] x, int64[N] ids, bool[2] flag) => (float[N, 3] y, int64[N] k)
{
  y = Relu(x)
  k = Identity(ids)
}"""


def test_identical_models_verify():
    model = parse(BASE).SerializeToString()
    report = verify_models(model, model)
    # x and ids share N: onnxruntime takes them of different sizes too, so those run as well
    assert report.ok and report.runs == ["N=1", "N=3", "N=1 (N 3 on ids)", "N=3 (N 1 on ids)"]
    assert "bit-identical" in report.summary()


def test_a_different_output_is_a_mismatch():
    before = parse(BASE)
    after = parse(BASE.replace("y = Relu(x)", "y = Sigmoid(x)"))
    report = verify_models(before.SerializeToString(), after)
    assert not report.ok and "'y'" in report.summary()


def test_a_dtype_or_shape_change_is_a_mismatch():
    before = parse(BASE)
    after = parse(BASE.replace("k = Identity(ids)", "k = Identity(ids)\n  unused = Identity(ids)"))
    assert verify_models(before.SerializeToString(), after).ok
    wider = parse(BASE.replace("int64[N] k)", "int64[1, N] k) <int64[1] ax = {0}>").replace(
        "k = Identity(ids)", "k = Unsqueeze(ids, ax)"))
    report = verify_models(before.SerializeToString(), wider)
    assert not report.ok and "'k'" in report.summary()


def test_optimized_failing_where_original_runs():
    before = parse(BASE)
    after = parse(BASE.replace("k = Identity(ids)", "k = Squeeze(ids, one)").replace(
        "int64[N] k)", "int64[N] k) <int64[1] one = {0}>"))
    report = verify_models(before.SerializeToString(), after)
    assert not report.ok and "fails where the original runs" in report.summary()


def test_original_failing_everywhere_verifies_nothing():
    text = """<ir_version: 8, opset_import: ["" : 13]>
    g (float[N, 3] x) => (float[7] y) <int64[1] seven = {7}>
    {
      y = Reshape(x, seven)
    }"""
    model = parse(text).SerializeToString()
    report = verify_models(model, model)
    assert not report.ok and "nothing was verified" in report.summary()


def test_original_failing_on_one_binding_is_skipped():
    text = """<ir_version: 8, opset_import: ["" : 13]>
    g (float[N, 3] x) => (float[3] y) <int64[1] ax = {0}>
    {
      y = Squeeze(x, ax)
    }"""
    model = parse(text).SerializeToString()
    report = verify_models(model, model)
    assert report.ok and report.runs[0] == "N=1" and "skipped" in report.runs[1]


def test_random_inputs_follow_the_signature():
    feeds = random_inputs(parse(BASE), 4, np.random.default_rng(0))
    assert feeds["x"].shape == (4, 3) and feeds["x"].dtype == np.float32
    assert feeds["ids"].dtype == np.int64 and set(np.unique(feeds["ids"])) <= {0, 1}
    assert feeds["flag"].dtype == bool and feeds["flag"].shape == (2,)


def test_inputs_without_shape_cannot_be_made_up():
    model = parse(BASE)
    model.graph.input[0].type.tensor_type.ClearField("shape")
    report = verify_models(model.SerializeToString(), model)
    assert not report.ok and "no declared shape" in report.summary()


def test_external_data_is_read_from_the_model_directory(tmp_path):
    w = numpy_helper.from_array(np.arange(3, dtype=np.float32), "w")
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])], initializer=[w])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.save(model, str(tmp_path / "m.onnx"), save_as_external_data=True, location="m.data", size_threshold=0)
    data = (tmp_path / "m.onnx").read_bytes()
    assert verify_models(data, data, directory=str(tmp_path)).ok


def test_missing_onnxruntime_is_a_usage_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    model = parse(BASE).SerializeToString()
    with pytest.raises(UsageError) as info:
        verify_models(model, model)
    assert info.value.message == MISSING_ORT and info.value.exit_code == 2


def test_unloadable_optimized_model():
    model = parse(BASE)
    broken = onnx.ModelProto()
    broken.CopyFrom(model)
    broken.graph.node[0].op_type = "NoSuchOp"
    report = verify_models(model.SerializeToString(), broken)
    assert not report.ok and "cannot load the optimized model" in report.summary()
