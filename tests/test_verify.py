"""``shapeflow.drivers.verify``: the bit-exact onnxruntime comparison behind ``optimize --verify``."""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from shapeflow.errors import UsageError
from shapeflow.drivers.verify import DIFFERS, MISSING_ORT, NOT_VERIFIED, culprit, random_inputs, verify_models
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
    assert report.status == DIFFERS and report.exit_code == 1
    # the largest difference over both sizes compared (N=1, N=3), each with the same seed
    want = max(float(np.abs(np.maximum(x, 0) - 1 / (1 + np.exp(-x))).max())
               for x in (random_inputs(before, n, np.random.default_rng(0))["x"] for n in (1, 3)))
    assert report.max_abs_diff == pytest.approx(want, rel=1e-5) and "max abs diff" in report.summary()


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
    """Not "outputs differ": nothing was compared. Status, exit code 2 and onnxruntime's reason
    (without its status prefix and source location) say so."""
    text = """<ir_version: 8, opset_import: ["" : 13]>
    g (float[N, 3] x) => (float[7] y) <int64[1] seven = {7}>
    {
      y = Reshape(x, seven)
    }"""
    model = parse(text).SerializeToString()
    report = verify_models(model, model)
    assert report.status == NOT_VERIFIED and report.exit_code == 2 and not report.ok
    summary = report.summary()
    assert "runs at none of the sizes tried" in summary and "--dim" in summary
    assert "cannot be reshaped to the requested shape" in summary
    assert "[ONNXRuntimeError]" not in summary and "onnxruntime_src" not in summary
    assert report.to_json()["status"] == "not-verified" and report.to_json()["sizes"] == []


def test_original_failing_on_one_binding_is_skipped():
    text = """<ir_version: 8, opset_import: ["" : 13]>
    g (float[N, 3] x) => (float[3] y) <int64[1] ax = {0}>
    {
      y = Squeeze(x, ax)
    }"""
    model = parse(text).SerializeToString()
    report = verify_models(model, model)
    # N=1 is the only size this model runs at: the larger ones are skipped, with the reason
    assert report.ok and report.runs == ["N=1"] and report.skipped[0].startswith("N=3: ")
    assert "the only size" in report.summary()


def test_a_refused_size_is_tried_again_larger():
    """The first sizes (1 and 3) are refused (N*L must be a multiple of 4): doubled, they run, and
    two sizes are still compared."""
    text = """<ir_version: 8, opset_import: ["" : 13]>
    g (float[N, L] x) => (float[M, 4] y) <int64[2] target = {-1, 4}>
    {
      y = Reshape(x, target)
    }"""
    model = parse(text).SerializeToString()
    report = verify_models(model, model)
    assert report.ok and report.runs == ["N=2, L=2", "N=6, L=6"], report
    assert [s.split(":")[0] for s in report.skipped] == ["N=1, L=1", "N=3, L=3"]


KERNEL_5 = """<ir_version: 8, opset_import: ["" : 13]>
g (float[N, 1, L] x) => (float[N, 1, M] y) <float[1, 1, 5] w = {1, 2, 3, 4, 5}>
{
  y = Conv(x, w)
}"""


def test_sizes_follow_the_ranges_and_the_dims_given():
    model = parse(KERNEL_5).SerializeToString()
    # what inference proves (the first Conv's kernel: L >= 5) moves both sizes into range
    report = verify_models(model, model, ranges={"L": (5, None)})
    assert report.ok and report.runs == ["N=1, L=5", "N=3, L=7"] and not report.skipped
    # --dim pins a size; the other dims still take two values
    report = verify_models(model, model, fixed={"L": 9})
    assert report.ok and report.runs == ["N=1, L=9", "N=3, L=9"]


def test_verify_compares_semantics_not_weight_prepacking():
    """onnxruntime packs a MatMul's constant weight ahead of time and sums it in another order
    than a weight that comes through an Identity (one row at a time: batch 1, one token). Removing
    the Identity changes nothing the graph computes, and --verify must say so."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((64, 64)).astype(np.float32), "w")

    def model(identity: bool) -> bytes:
        nodes = [helper.make_node("Identity", ["w"], ["wi"])] if identity else []
        nodes.append(helper.make_node("MatMul", ["x", "wi" if identity else "w"], ["y"]))
        g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "S", 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", "S", 64])], [w])
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8).SerializeToString()

    report = verify_models(model(True), model(False))
    assert report.ok and report.runs == ["B=1, S=1", "B=3, S=3"], report.summary()


def test_culprit_bisects_the_rules_that_fired():
    """``culprit`` reruns optimize with a prefix of the rules: the first one that makes the
    output differ is named, alone or with the rules it needs before it."""
    before = parse(BASE)
    bad = parse(BASE.replace("y = Relu(x)", "y = Sigmoid(x)")).SerializeToString()
    inputs = random_inputs(before, 2, np.random.default_rng(0))
    fired = ["a", "b", "c", "d", "e"]
    tried: list[list[str]] = []

    def rerun_alone(rules):
        tried.append(list(rules))
        return bad if "d" in rules else before.SerializeToString()

    assert culprit(before.SerializeToString(), fired, rerun_alone, inputs) == "d"
    assert len(tried) < len(fired) + 2  # bisection, not one run per prefix

    def rerun_pair(rules):  # "d" breaks the model only after "b" ran
        return bad if "d" in rules and "b" in rules else None

    assert culprit(before.SerializeToString(), fired, rerun_pair, inputs) == "d (after a, b, c)"
    assert culprit(before.SerializeToString(), fired, lambda rules: None, inputs) is None


def test_random_inputs_follow_the_signature():
    feeds = random_inputs(parse(BASE), 4, np.random.default_rng(0))
    assert feeds["x"].shape == (4, 3) and feeds["x"].dtype == np.float32
    assert feeds["ids"].dtype == np.int64 and set(np.unique(feeds["ids"])) <= {0, 1}
    assert feeds["flag"].dtype == bool and feeds["flag"].shape == (2,)


def test_inputs_without_shape_cannot_be_made_up():
    model = parse(BASE)
    model.graph.input[0].type.tensor_type.ClearField("shape")
    report = verify_models(model.SerializeToString(), model)
    assert not report.ok and "no declared shape" in report.summary() and report.status == NOT_VERIFIED


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
    assert report.status == DIFFERS  # the rewrite broke it: not a model --verify could not run
