"""Every value optimize folds is the value onnxruntime computes (issue 21's cases).

One test per case. Each runs the model in onnxruntime (``shapearith.check_model``,
the differential fuzzer's oracle: every dim and value inference states is compared with the
runtime's, and ``optimize``'s outputs must be bit-identical to the original's) and, where the
issue names the runtime's answer, checks the optimized model gives that very answer.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx
import onnx.parser
import pytest
from onnx import TensorProto as TP
from onnx import helper

pytest.importorskip("onnxruntime")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))
import shapearith  # noqa: E402

from shapeflow.drivers import api  # noqa: E402
from shapeflow.graph import build_graph  # noqa: E402
from shapeflow.inference import infer, shared_dim_names  # noqa: E402
from shapeflow.io import load_model_bytes  # noqa: E402
from value_cases import model, optimized, outputs, stated  # noqa: E402
from shapeflow.drivers.verify import verify_models  # noqa: E402


@pytest.fixture(scope="module")
def runner(ort_runner) -> Iterator[shapearith.Runner]:
    yield ort_runner  # one onnxruntime worker for the session (tests/conftest.py)


def clean(runner: shapearith.Runner, m: onnx.ModelProto, bindings: Sequence[Mapping[str, int]] = ({"b": 2},),
          independent: Sequence[Mapping[str, int]] = ()) -> shapearith.Stats:
    stats = shapearith.check_model(m, bindings, runner, independent=independent)
    assert stats.bindings_run > stats.bindings_failed, "the model fails in onnxruntime everywhere"
    if stats.findings:
        pytest.fail("\n".join(f.line() for f in stats.findings), pytrace=False)
    return stats


X = {"x": np.zeros(2, np.float32)}


# -- integer Pow goes through double ------------------------------------------------------------

def test_int64_pow_is_onnxruntimes(runner: shapearith.Runner) -> None:
    """3**39 is not a double: onnxruntime's int64 Pow gives 4052555153018976256, so
    Pow(3, 39) - 4052555153018976250 is 6 (the exact power would make it 17)."""
    m = model("p = Pow(three, e)\n y = Sub(p, k)\n z = Add(x, zero)", inputs="float[b] x",
              outputs="int64 y, float[b] z",
              inits="int64 three = {3}, int64 e = {39}, int64 k = {4052555153018976250}, float zero = {0.0}")
    clean(runner, m)
    want = outputs(runner, m, X)[0]
    assert int(want) == 6
    assert int(outputs(runner, optimized(m), X)[0]) == int(want)
    assert stated(m, "p") is None  # not the exact power, and not a guess at the rounding


def test_int32_pow_overflow_is_unknown(runner: shapearith.Runner) -> None:
    """Pow(int32 3, 20) is -2147483648 in onnxruntime (3**20 does not fit: the double's
    conversion), not the wrapped exact power."""
    m = model("y = Pow(three, e)\n z = Add(x, zero)", inputs="float[b] x", outputs="int32 y, float[b] z",
              inits="int32 three = {3}, int32 e = {20}, float zero = {0.0}")
    clean(runner, m)
    want = outputs(runner, m, X)[0]
    assert int(want) == -(2**31)
    assert int(outputs(runner, optimized(m), X)[0]) == -(2**31)
    assert stated(m, "y") is None


def test_pow_that_doubles_hold_is_still_folded(runner: shapearith.Runner) -> None:
    m = model("p = Pow(three, e)\n s = Shape(x)\n y = Add(s, p)", inputs="float[b] x", outputs="int64[1] y",
              inits="int64 three = {3}, int64 e = {20}")
    clean(runner, m)
    assert stated(m, "p") == (3**20,)


# -- float32 Sum rounds after each addition -----------------------------------------------------

def test_float_sum_of_three_rounds_each_addition(runner: shapearith.Runner) -> None:
    """Sum(2**24, 1, 1) is 16777216 in float32 (2**24 + 1 rounds back to 2**24, twice), where
    the exact sum 16777218 is a float32 too."""
    m = model("s = Sum(a, one, one)\n y = Cast<to = 7>(s)\n z = Add(x, one)", inputs="float[b] x",
              outputs="int64 y, float[b] z", inits="float a = {16777216.0}, float one = {1.0}")
    clean(runner, m)
    want = outputs(runner, m, X)[0]
    assert int(want) == 16777216
    assert int(outputs(runner, optimized(m), X)[0]) == 16777216
    assert stated(m, "s") is None
    # where every partial sum is exact, it is stated
    m2 = model("s = Sum(a, one, one)\n y = Cast<to = 7>(s)\n z = Add(x, one)", inputs="float[b] x",
               outputs="int64 y, float[b] z", inits="float a = {16777212.0}, float one = {1.0}")
    clean(runner, m2)
    assert stated(m2, "s") == (16777214,)


# -- initializers in int32_data outside their type's range ---------------------------------------

@pytest.mark.parametrize(("dtype", "stored", "runtime"), [
    (TP.UINT8, 300, 44), (TP.INT8, 200, -56), (TP.BOOL, 2, 1), (TP.UINT16, -1, 65535), (TP.INT16, 40000, -25536),
])
def test_int32_data_is_read_through_the_element_type(runner: shapearith.Runner, dtype: int, stored: int,
                                                     runtime: int) -> None:
    """An initializer whose int32_data holds a number its type cannot: onnxruntime converts it
    (uint8 300 is 44); shapeflow used to read 300 and fold Cast(c) to it."""
    c = TP()
    c.name, c.data_type = "c", dtype
    c.int32_data.append(stored)
    g = helper.make_graph(
        [helper.make_node("Cast", ["c"], ["v"], to=TP.INT64), helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Add", ["s", "v"], ["y"])],
        "g", [helper.make_tensor_value_info("x", TP.FLOAT, ["b"])], [helper.make_tensor_value_info("y", TP.INT64, [1])],
        [c])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    clean(runner, m)
    got = outputs(runner, m, X)[0]
    assert int(got[0]) == 2 + runtime
    assert stated(m, "v") == (runtime,)
    assert int(outputs(runner, optimized(m), X)[0][0]) == 2 + runtime


# -- a Loop's iteration number is what onnxruntime feeds, not its declaration -----------------------

LOOP = """
  y, z = Loop(m, t) <body = b (int64[5] it, bool cin) => (bool cout, float[?] c, int64[?] s) {
      cout = Identity(cin)
      s = Shape(it)
      c = ConstantOfShape(s)
  }>
  w = Add(x, zero)
"""


def test_loop_iteration_number_declared_5_is_1(runner: shapearith.Runner) -> None:
    """``ConstantOfShape(Shape(it))`` with ``it`` declared [5]: onnxruntime feeds ``it`` as [1]
    (any rank-1 declaration), so the Loop stacks [2, 1], which optimize must keep."""
    m = model(LOOP, inputs="float[b] x", outputs="float[?, ?] y, int64[?, ?] z, float[b] w",
              inits="int64 m = {2}, bool t = {1}, float zero = {0.0}")
    clean(runner, m)
    y = outputs(runner, m, X)[0]
    assert y.shape == (2, 1)
    assert outputs(runner, optimized(m), X)[0].shape == (2, 1)


def test_loop_condition_and_scan_inputs_keep_only_their_type() -> None:
    m = model("""
  y = Loop(m, t) <body = b (int64 it, bool[3] cin) => (bool cout, int64[?] s) {
      cout = Identity(cin)
      s = Shape(cin)
  }>
""", inputs="float[b] x", outputs="int64[?, ?] y", inits="int64 m = {2}, bool t = {1}")
    sub = infer(build_graph(load_model_bytes(m.SerializeToString(), "m.onnx")))
    body = next(t for t in sub.tensors[1:] if "cin" in t)
    assert body["cin"].shape is None and body["it"].shape == ()


# -- graph inputs that share a dim name -------------------------------------------------------------

SHARED = model("sx = Shape(x)\n sy = Shape(y)\n d = Sub(sy, sx)\n z = Add(x, y)",
               inputs="float[n] x, float[n] y", outputs="int64[1] d, float[n] z")


def test_shared_dim_name_is_not_folded(runner: shapearith.Runner) -> None:
    """x and y both declared [n], fed 1 and 3: onnxruntime runs it (Add broadcasts) and
    Shape(y) - Shape(x) is 2; optimize must not fold it to 0."""
    feeds = {"x": np.zeros(1, np.float32), "y": np.zeros(3, np.float32)}
    d = outputs(runner, SHARED, feeds)[0]
    assert d.tolist() == [2]
    assert outputs(runner, optimized(SHARED), feeds)[0].tolist() == [2]
    clean(runner, SHARED, [{"n": 2}], independent=[{"n": 1, "n@y": 3}, {"n": 3, "n@y": 1}])
    # lint and infer read the model by its contract: the same name is the same size
    assert stated(SHARED, "d") == (0,)
    assert stated(SHARED, "d", independent=True) != (0,)


def test_stated_shared_name_holds_the_rewrites_to_it(tmp_path: Path) -> None:
    """--assume n==n@y names y's symbol of its own: the user states the premise, so optimize folds
    d to 0 (and says so), and --verify then skips the runs that feed y a size of its own; without
    it, d stays computed. A name of neither kind is a usage error."""
    src = tmp_path / "m.onnx"
    onnx.save(SHARED, src)
    api.optimize(src, tmp_path / "p.onnx")
    assert any(n.op_type == "Sub" for n in onnx.load(tmp_path / "p.onnx").graph.node)
    premised = api.optimize(src, tmp_path / "o.onnx", assume=["n==n@y"])
    assert premised.premises == ("n==n@y",) and premised.aliases == {"n@y": "n"}
    folded = onnx.load(tmp_path / "o.onnx")
    assert not any(n.op_type == "Sub" for n in folded.graph.node)
    report = verify_models(SHARED.SerializeToString(), folded, aliases=premised.aliases)
    assert report.ok and not any("on y" in r for r in report.runs), report.summary()
    assert not verify_models(SHARED.SerializeToString(), folded).ok  # (the premise is what it rests on)
    with pytest.raises(Exception, match="n@z"):
        api.optimize(src, assume=["n==n@z"])


def test_independent_symbols_are_named_after_their_input() -> None:
    g = build_graph(load_model_bytes(SHARED.SerializeToString(), "m.onnx"))
    assert shared_dim_names(g) == {("y", "n"): "n@y"}
    t = infer(g, independent=True).tensors[0]
    assert str(t["sy"].value[0]) == "n@y" and str(t["sx"].value[0]) == "n"


def test_verify_binds_shared_names_independently() -> None:
    """A model folded on the premise (d = 0) passes a verify that binds one size per name; the
    independent bindings show it."""
    folded = onnx.ModelProto()
    folded.CopyFrom(SHARED)
    del folded.graph.node[:3]
    folded.graph.node.insert(0, helper.make_node("Constant", [], ["d"], value=helper.make_tensor("v", TP.INT64, [1], [0])))
    report = verify_models(SHARED.SerializeToString(), folded)
    assert not report.ok
    assert "'d'" in report.summary() and "n 3 on y" in report.summary()
    assert verify_models(SHARED.SerializeToString(), SHARED).ok


# -- a declared dim_param spelled like an expression ------------------------------------------------

def test_dim_param_spelled_like_an_expression_is_an_opaque_name(runner: shapearith.Runner) -> None:
    """x declared ["c + 1"] is a name, not the computed c + 1 of z = Concat(y[c], [1]): through
    onnx's own inference (ScatterElements has no shapeflow rule) the two used to meet, and
    Shape(out) - Shape(z) was stated (and folded) 0 where onnxruntime gives 2."""
    m = model("""
  z = Concat<axis = 0>(y, one)
  zi = Cast<to = 7>(z)
  zi0 = Mul(zi, zero)
  out = ScatterElements<axis = 0>(x, zi0, z)
  so = Shape(out)
  sz = Shape(z)
  d = Sub(so, sz)
""", inputs='float["c + 1"] x, float[c] y', outputs="int64[1] d", inits="float[1] one = {1.0}, int64 zero = {0}")
    feeds = {"x": np.zeros(3, np.float32), "y": np.zeros(0, np.float32)}
    assert outputs(runner, m, feeds)[0].tolist() == [2]
    assert outputs(runner, optimized(m), feeds)[0].tolist() == [2]
    clean(runner, m, [{"c": 0, "c + 1": 3}, {"c": 2, "c + 1": 3}, {"c": 2, "c + 1": 0}])
    t = infer(build_graph(load_model_bytes(m.SerializeToString(), "m.onnx"))).tensors[0]
    assert str(t["out"].shape[0]) == "c + 1" and str(t["z"].shape[0]) == "c + 1"
    assert t["d"].value != (0,)


def test_broadcast_of_independent_symbols_is_one_dim(runner: shapearith.Runner) -> None:
    """h = x + mask with x [b, 4] and mask [b, 1] (its own b at run time): h's first dim is the
    broadcast of the two, one symbol that Shape(h) reads back, so Reshape(h, [Shape(h)[0], -1])
    still becomes [0, -1], at every size of either input that onnxruntime accepts."""
    m = model("""
  h = Add(x, mask)
  s = Shape(h)
  i0 = Gather<axis = 0>(s, zero)
  u = Unsqueeze(i0, zeros)
  t = Concat<axis = 0>(u, minus)
  y = Reshape(h, t)
""", inputs="float[b, 4] x, float[b, 1] mask", outputs="float[?, ?] y",
              inits="int64 zero = {0}, int64[1] zeros = {0}, int64[1] minus = {-1}")
    t = infer(build_graph(load_model_bytes(m.SerializeToString(), "m.onnx")), independent=True).tensors[0]
    assert str(t["h"].shape[0]) == "bcast(b, b@mask)" and t["s"].value[0] == t["h"].shape[0]
    stats = clean(runner, m, [{"b": 0}, {"b": 1}, {"b": 3}],
                  independent=[{"b": 1, "b@mask": 3}, {"b": 3, "b@mask": 1}, {"b": 0, "b@mask": 1}])
    assert stats.optimize_changed == 1
    assert [n.op_type for n in optimized(m).graph.node] == ["Add", "Reshape"]


def test_float_range_adds_and_rounds_element_by_element(runner: shapearith.Runner) -> None:
    """onnxruntime builds a float Range by adding delta to the previous element, rounded to the
    type: float32 Range(2**24, 2**24 + 8, 1) is eight times 2**24 (found by the value table's
    oracle); the length is worked out in double (Range(-2**60, 3, 2**59) has 2 elements)."""
    m = model("r = Range(a, b, one)\n y = Cast<to = 7>(r)\n q = Range(c, three, d)\n n = Shape(q)\n z = Add(x, one)",
              inputs="float[b] x", outputs="int64[?] y, int64[1] n, float[b] z",
              inits="float a = {16777216.0}, float b = {16777224.0}, float one = {1.0}, double c = {-1152921504606846976.0},"
                    " double three = {3.0}, double d = {576460752303423488.0}")
    clean(runner, m)
    y, n = outputs(runner, m, X)[:2]
    assert y.tolist() == [16777216] * 8 and n.tolist() == [2]
    o = outputs(runner, optimized(m), X)
    assert o[0].tolist() == y.tolist() and o[1].tolist() == [2]


# found by shapearith (seed 454364292090269), an independent binding seq=300 beside seq@x2=1
PLANNER = """
<
   ir_version: 7,
   opset_import: [\"\" : 15],
   producer_name: \"shapearith\"
>
shapearith_454364292090269 (float[seq] x0, float[1,2,past] x1, float[seq] x2) => (int64[?] sha_14, float[?] res_16, float[?] til_33, float[?] neg_41, int64[?] cas_44, int64[?] sha_1)
   <int64[2] c2 =  {48,48}, int64[1] c7 =  {1}, int64[1] c15 =  {-1}, int64[1] c18 =  {-1}, int64[1] c19 =  {9223372036854775807}, int64[2] c21 =  {-3,-3}, int64 c25 =  {-1}, int64[1] c31 =  {0}, int64[1] c35 =  {-1}, float[1] c37 =  {-0.5}>
{
   sha_1 = Shape <start: int = -2> (x1)
   les_3 = Less (sha_1, c2)
   whe_4 = Where (les_3, sha_1, c2)
   abs_5 = Abs (whe_4)
   con_6 = ConstantOfShape <value: tensor = float[1] {-2.5}> (abs_5)
   max_8 = Max (abs_5, c7)
   mod_9 = Mod <fmod: int = 1> (abs_5, max_8)
   sha_10 = Shape (x0)
   res_11 = Reshape <allowzero: int = 1> (x0, sha_10)
   res_12 = Reshape (res_11, sha_10)
   neg_13 = Neg (res_12)
   sha_14 = Shape (x0)
   res_16 = Reshape (x0, c15)
   sha_17 = Shape (con_6)
   sli_20 = Slice (sha_17, c18, c19)
   les_22 = Less (mod_9, c21)
   whe_23 = Where (les_22, sli_20, mod_9)
   sha_24 = Shape (neg_13)
   gat_26 = Gather <axis: int = 0> (sha_24, c25)
   c27 = Constant <value: tensor = int64 c27 {3}> ()
   les_28 = Less (gat_26, c27)
   whe_29 = Where (les_28, gat_26, c27)
   abs_30 = Abs (whe_29)
   uns_32 = Unsqueeze (abs_30, c31)
   til_33 = Tile (neg_13, uns_32)
   sha_34 = Shape (x2)
   res_36 = Reshape (x2, c35)
   max_38 = Max (res_36, c37)
   neg_39 = Neg (max_38)
   res_40 = Reshape (neg_39, sha_34)
   neg_41 = Neg (res_40)
   cas_42 = Cast <to: int = 2> (whe_23)
   abs_43 = Abs (cas_42)
   cas_44 = Cast <to: int = 7> (abs_43)
}
"""


def test_onnxruntime_planner_holding_the_optimized_model_to_shared_names(runner: shapearith.Runner) -> None:
    """x0 and x2 are both declared [seq]. The original runs with 300 and 1 elements; once the
    Reshapes of x2 to its own shape are gone, onnxruntime's memory planner shares a buffer between
    tensors it infers as [seq] and refuses those sizes ("Shape mismatch attempting to re-use
    buffer"): a refusal by the runtime, not a changed value. The oracle and --verify count it
    apart; every value still matches where both run."""
    m = onnx.parser.parse_model(PLANNER)
    feeds = {"x0": np.ones(300, np.float32), "x1": np.ones((1, 2, 300), np.float32), "x2": np.ones(1, np.float32)}
    assert outputs(runner, m, feeds)
    status, res = runner.run(optimized(m).SerializeToString(), feeds, [o.name for o in m.graph.output])
    assert status != "ok" and shapearith.SHARED_NAME_REFUSAL in str(res)
    stats = clean(runner, m, [{"seq": 2, "past": 2}], independent=[{"seq": 300, "past": 300, "seq@x2": 1}])
    assert stats.optimize_refused_by_runtime == 1
    report = verify_models(m.SerializeToString(), optimized(m), values=(300, 1))
    assert report.ok and any("holds the optimized model to the shared names" in s for s in report.skipped)
