"""The whole-graph counters of benchmarks/graphstats.py (used by bench_optimize.py): needs onnx only."""

from __future__ import annotations

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))

import graphstats  # noqa: E402


def _model() -> onnx.ModelProto:
    """x float [batch, seq, 4]: a shape chain (5 shape-arithmetic nodes), float work, a TopK with one
    float and one int output, Constant/Identity, and an If whose branches hold one more shape node."""
    n = helper.make_node
    then_g = helper.make_graph([n("Shape", ["x"], ["ts"]), n("ReduceSum", ["ts"], ["tr"], keepdims=1)], "then", [],
                               [helper.make_tensor_value_info("tr", TensorProto.INT64, [1])])
    else_g = helper.make_graph([n("Neg", ["k"], ["er"])], "else", [],
                               [helper.make_tensor_value_info("er", TensorProto.INT64, [1])])
    nodes = [
        n("Shape", ["x"], ["s"]),  # arith 1
        n("Gather", ["s", "zero"], ["g"], axis=0),  # arith 2
        n("Unsqueeze", ["g", "axes0"], ["u"]),  # arith 3, S+U 1
        n("Constant", [], ["c"], value=helper.make_tensor("c", TensorProto.INT64, [2], [-1, 4])),  # not counted
        n("Identity", ["u"], ["uid"]),  # not counted
        n("Concat", ["uid", "c"], ["target"], axis=0),  # arith 4
        n("Reshape", ["x", "target"], ["y"]),  # float
        n("Relu", ["y"], ["r"]),  # float
        n("Squeeze", ["r", "axes0"], ["sq"]),  # float, S+U 2
        n("TopK", ["x", "k"], ["vals", "idx"], axis=-1),  # one float output: not counted
        n("Less", ["g", "k"], ["cond1"]),  # bool: arith 5
        n("Squeeze", ["cond1"], ["cond"]),  # bool: arith 6, S+U 3
        n("If", ["cond"], ["branch"], then_branch=then_g, else_branch=else_g),  # int64 out: arith 7
        n("Custom", ["x"], ["z"], domain="my.domain"),  # no type known: not counted
    ]
    # the If branch: Shape (arith 8), ReduceSum on int64 (arith 9), Neg on int64 (arith 10)
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 4])],
        [helper.make_tensor_value_info("sq", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("idx", TensorProto.INT64, None),
         helper.make_tensor_value_info("branch", TensorProto.INT64, None)],
        [helper.make_tensor("zero", TensorProto.INT64, [], [0]), helper.make_tensor("axes0", TensorProto.INT64, [1], [0]),
         helper.make_tensor("k", TensorProto.INT64, [1], [2])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("my.domain", 1)])


def test_counts_with_inferred_types() -> None:
    st = graphstats.graph_stats(_model())
    assert st.nodes == 14 + 3
    assert st.squeeze_unsqueeze == 3
    assert st.shape_arith == 10


def test_schema_fallback_without_inference() -> None:
    # Without inference, the types come from the stated graph outputs (If's "branch", ReduceSum's
    # "tr", Neg's "er": int64) and from single-type schemas (the two Shapes: int64, Less: bool);
    # Gather/Unsqueeze/Concat/Squeeze have generic outputs, so their types are unknown: 6.
    st = graphstats.graph_stats(_model(), infer=False)
    assert st.nodes == 17
    assert st.shape_arith == 6


def test_value_info_decides_over_schema() -> None:
    m = _model()
    # a stated type for Gather's output decides whether it counts
    m.graph.value_info.append(helper.make_tensor_value_info("g", TensorProto.FLOAT, None))
    assert graphstats.graph_stats(m, infer=False).shape_arith == 6
    m.graph.value_info[-1].type.tensor_type.elem_type = TensorProto.INT32
    assert graphstats.graph_stats(m, infer=False).shape_arith == 7
    # and a stated type beats the schema: Less's output stated float no longer counts
    m.graph.value_info.append(helper.make_tensor_value_info("cond1", TensorProto.FLOAT, None))
    assert graphstats.graph_stats(m, infer=False).shape_arith == 6


def test_signature_sees_symbolic_names_and_skips_initializers() -> None:
    m = _model()
    m.graph.input.append(helper.make_tensor_value_info("zero", TensorProto.INT64, []))  # an overridable initializer
    sig = graphstats.signature(m)
    assert sig[0] == ("in", "x", TensorProto.FLOAT, ("batch", "seq", 4))
    assert [s[1] for s in sig] == ["x", "sq", "idx", "branch"]
    renamed = _model()
    renamed.graph.input[0].type.tensor_type.shape.dim[1].dim_param = "len"
    assert graphstats.signature(renamed) != graphstats.signature(_model())


def test_feeds_follow_symbols_and_names() -> None:
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
              helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"]),
              helper.make_tensor_value_info("pixel", TensorProto.FLOAT, ["batch", 3, "other"])]
    g = helper.make_graph([], "g", inputs, [])
    f = graphstats.feeds(helper.make_model(g), {"batch": 2, "seq": 3}, seed=0, vocab=10)
    assert f["input_ids"].shape == (2, 3) and f["input_ids"].dtype == np.int64
    assert 1 <= f["input_ids"].min() and f["input_ids"].max() < 10
    assert (f["attention_mask"] == 1).all()
    assert f["pixel"].shape == (2, 3, 3) and f["pixel"].dtype == np.float32  # unknown symbol: the largest given


def test_bench_optimize_bars_name_the_failing_models() -> None:
    import bench_optimize as bo

    m1 = bo.Model("a", "a.onnx", "text", nodes=10, squeeze_unsqueeze=4, shape_arith=5)
    m2 = bo.Model("b", "b.onnx", "vision", nodes=10, squeeze_unsqueeze=4, shape_arith=5)

    def run(model: str, tool: str, su: int, arith: int, **kw: object) -> bo.Run:
        base: dict = {"nodes": 9, "exact": True, "signature_same": True}
        base.update(kw)
        return bo.Run(model, tool, "ok", 1.0, 1.0, 1, su, shape_arith=arith, **base)

    runs = [run("a", "shapeflow", 2, 3), run("a", "onnxsim", 1, 3), run("a", "onnxslim", 3, 1),
            run("b", "shapeflow", 0, 2, exact=False, exact_why="binding 1: y differs"),
            run("b", "onnxsim", 1, 1, signature_same=False), run("b", COMPOSED := "onnxsim+shapeflow", 2, 1)]
    report = bo.Report(models=[m1, m2], runs=runs)
    bo.judge(report)
    failing = {(f["model"], f["bar"]): f for f in report.failing}
    assert failing[("a", "S+U <= every bit-exact peer")]["gap"] == 1  # 2 vs onnxsim's 1
    assert ("a", "shape-arith <= onnxsim") not in failing  # onnxslim's 1 is not the bar: onnxsim's 3 is
    assert failing[("b", "shape-arith <= onnxsim")]["detail"] == "2 vs onnxsim 1 (signature changed)"
    assert failing[("b", "bit-exact")]["detail"] == "binding 1: y differs"
    assert ("b", "S+U <= every bit-exact peer") not in failing
    assert (("b", "onnxsim+shapeflow composes")) in failing  # S+U 1 -> 2 undoes onnxsim's work
    assert COMPOSED in bo.TOOLS
    md = bo.markdown(report, list(bo.TOOLS))
    assert "| a | text | 4 / 5 / 10 | 2 / 3 / 9 | 1 / 3 / 9 |" in md
    assert "0 / 2 / 9 !x" in md


def test_bench_optimize_bar_is_the_best_bit_exact_peer_and_names_the_leftovers() -> None:
    """Issue 25: a peer whose output onnxruntime shows not bit-exact sets no bar; a failing model
    lists the Squeeze/Unsqueeze contexts and shape-arithmetic ops shapeflow leaves beyond the peer."""
    import bench_optimize as bo

    m = bo.Model("t", "t.onnx", "tf2onnx", nodes=10, squeeze_unsqueeze=4, shape_arith=5)

    def run(tool: str, su: int, arith: int, **kw: object) -> bo.Run:
        base: dict = {"nodes": 9, "exact": True, "signature_same": True}
        base.update(kw)
        return bo.Run("t", tool, "ok", 1.0, 1.0, 1, su, shape_arith=arith, **base)

    runs = [run("shapeflow", 3, 4, su_context={"GlobalAveragePool > Squeeze > Reshape": 2, "x > Unsqueeze > y": 1},
                arith_ops={"ReduceProd": 2, "Shape": 2}),
            run("onnxsim", 1, 2, su_context={"x > Unsqueeze > y": 1}, arith_ops={"Shape": 2}),
            run("onnxslim", 0, 0, exact=False, exact_why="binding 0: y differs")]
    report = bo.Report(models=[m], runs=runs)
    bo.judge(report)
    failing = {f["bar"]: f for f in report.failing}
    assert failing["S+U <= every bit-exact peer"]["gap"] == 2  # onnxsim's 1, not onnxslim's inexact 0
    assert "onnxsim" in failing["S+U <= every bit-exact peer"]["detail"]
    md = bo.markdown(report, list(bo.TOOLS))
    assert "`GlobalAveragePool > Squeeze > Reshape` | 2 | tf2onnx: 1 |" in md
    assert "`ReduceProd` | 2 | tf2onnx: 1 |" in md
    assert "x > Unsqueeze > y" not in md.split("What shapeflow leaves")[1]  # onnxsim leaves it too
