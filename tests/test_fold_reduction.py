"""Issue 25 point 2: fold-reduction (SF238): an integer ReduceProd/ReduceSum/ReduceMin/ReduceMax of
a value known before run time is a constant, and the Cast/Unsqueeze/Concat after it fold too
(tf2onnx's Einsum lowering). The folded values are checked against onnxruntime running the
original node over edge values (empty reductions, the types' extremes, keepdims, axes as attribute
and as input, noop_with_empty_axes); the chains run at every symbol bound to 0, 1, 2, 3 and 33."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

pytest.importorskip("onnxruntime")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))
from test_fold_values import model  # noqa: E402
from test_passes_support import check_rewrite, optimize, run  # noqa: E402

from shapeflow.rewrites.sf238_fold_reduction import AXES_INPUT_SINCE, KERNEL_TYPES  # noqa: E402

SIZES = (0, 1, 2, 3, 33)
NP = {TensorProto.INT8: np.int8, TensorProto.UINT8: np.uint8, TensorProto.INT32: np.int32,
      TensorProto.INT64: np.int64}


def reduce_model(op: str, opset: int, x: np.ndarray, dtype: int, axes: list[int] | None,
                 keepdims: int | None, noop: int | None) -> onnx.ModelProto:
    """``y = Neg?(op(c))`` where ``c`` is an initializer: y is the reduction, a graph output read
    through an Identity so the fold makes an initializer."""
    attrs: dict[str, object] = {}
    inputs = ["c"]
    inits = [numpy_helper.from_array(x, "c")]
    if keepdims is not None:
        attrs["keepdims"] = keepdims
    if opset >= AXES_INPUT_SINCE[op]:
        if noop is not None:
            attrs["noop_with_empty_axes"] = noop
        if axes is not None:
            inputs.append("a")
            inits.append(numpy_helper.from_array(np.array(axes, dtype=np.int64), "a"))
    elif axes is not None:
        attrs["axes"] = axes
    nodes = [helper.make_node(op, inputs, ["r"], **attrs), helper.make_node("Identity", ["r"], ["y"]),
             helper.make_node("Add", ["x", "x"], ["z"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b"])],
                              [helper.make_tensor_value_info("y", dtype, None),
                               helper.make_tensor_value_info("z", TensorProto.FLOAT, ["b"])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def edge_inputs(dtype: int) -> list[np.ndarray]:
    t = NP[dtype]
    lo, hi = int(np.iinfo(t).min), int(np.iinfo(t).max)
    small = [0, 1, 2, 3, -1, -7] if lo < 0 else [0, 1, 2, 3, 7, 5]
    return [
        np.array(small, dtype=t).reshape(2, 3),
        np.array([lo, hi, 1, 0, hi, lo], dtype=t).reshape(3, 2, 1),
        np.zeros((2, 0, 3), dtype=t),
        np.array(5, dtype=t),
        np.array([46341, 46341] if hi >= 46341 else [hi, hi], dtype=t),  # a product beyond int32
        np.array([2**53 + 1] if hi > 2**53 else [hi], dtype=t),  # beyond what a double holds
    ]


def axes_choices(rank: int) -> list[list[int] | None]:
    out: list[list[int] | None] = [None, []]
    for k in range(rank):
        out.append([k])
        out.append([k - rank])
    if rank >= 2:
        out.append([0, rank - 1])
    return out


@pytest.mark.parametrize("op", sorted(KERNEL_TYPES))
def test_folded_values_are_onnxruntime_s(op: str) -> None:
    folded = 0
    seen: set[bytes] = set()
    for dtype in sorted(KERNEL_TYPES[op]):
        for x in edge_inputs(dtype):
            for opset, axes, keepdims, noop in itertools.product(
                    (13, 18), axes_choices(x.ndim), (None, 0, 1), (None, 1)):
                if axes == [] and opset < AXES_INPUT_SINCE[op]:
                    continue  # an empty axes attribute is not folded (and not what exporters write)
                m = reduce_model(op, opset, x, dtype, axes, keepdims, noop)
                if m.SerializeToString() in seen:
                    continue  # (noop_with_empty_axes is no attribute before axes became an input)
                seen.add(m.SerializeToString())
                want = run(m, {"x": np.ones(2, np.float32)})
                if isinstance(want, Exception):
                    continue
                out = optimize(m)
                if "fold-reduction" in out.fired:
                    folded += 1
                    assert op not in [n.op_type for n in out.after.graph.node]
                got = run(out.after, {"x": np.ones(2, np.float32)})
                assert not isinstance(got, Exception), got
                for a, b in zip(want, got):
                    assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), (
                        op, dtype, x, opset, axes, keepdims, noop, a, b)
    assert folded > 100


def test_saturating_sums_and_products_are_not_folded() -> None:
    # onnxruntime gives 2**31 - 1 for 46341 * 46341 in int32 and 2**53 for int64 2**53 + 1: left alone
    for op, x in (("ReduceProd", np.array([46341, 46341], np.int32)),
                  ("ReduceSum", np.array([2**53 + 1], np.int64)),
                  ("ReduceSum", np.array([2**31 - 1, 1, -1], np.int32))):
        m = reduce_model(op, 13, x, TensorProto.INT32 if x.dtype == np.int32 else TensorProto.INT64, None, 0, None)
        assert "fold-reduction" not in optimize(m).fired


EINSUM = model("""
  sh = Shape(w)
  g = Gather <axis = 0> (sh, i34)
  p = ReduceProd <keepdims = 1> (g)
  c = Cast <to = 7> (p)
  t = Concat <axis = 0> (minus1, c)
  r = Reshape(x, t)
  y = MatMul(r, m)
""", inputs="float[b, s, 4, 8] x", outputs="float[?, 2] y",
    inits="float[1, 1, 32, 4, 8] w, int64[2] i34 = {3, 4}, int64[1] minus1 = {-1}, float[32, 2] m")


def test_einsum_lowering_target_folds() -> None:
    text = EINSUM.replace("float[1, 1, 32, 4, 8] w", "float[1, 1, 32, 4, 8] w = {" + ", ".join(["0.5"] * 1024) + "}")
    text = text.replace("float[32, 2] m", "float[32, 2] m = {" + ", ".join(str(k % 7 - 3) for k in range(64)) + "}")
    out = optimize(text)
    # inference evaluates integer reductions of known values, so fold-known-value may take it first
    assert out.fired.get("fold-reduction", 0) + out.fired.get("fold-known-value", 0) >= 1, out.fired
    assert out.ops() == ["Reshape", "MatMul"], out.ops()
    target = [t for t in out.after.graph.initializer if t.name == out.after.graph.node[0].input[1]][0]
    assert numpy_helper.to_array(target).tolist() == [-1, 32]
    check_rewrite(out, values=SIZES)
    # the round after the fold infers the whole model again: what --full-inference does every round
    assert optimize(text, full_inference=True).data == out.data


def test_near_misses() -> None:
    symbolic = model("""
      sh = Shape(x)
      g = Gather <axis = 0> (sh, i01)
      p = ReduceProd <keepdims = 1> (g)
      y = Reshape(x, p)
    """, inputs="float[b, s] x", outputs="float[?] y", inits="int64[2] i01 = {0, 1}")
    assert "fold-reduction" not in optimize(symbolic).fired
    floats = model("""
      p = ReduceSum <keepdims = 0> (c)
      y = Add(x, p)
    """, inputs="float[b] x", outputs="float[b] y", inits="float[3] c = {1.0, 2.0, 3.0}")
    assert "fold-reduction" not in optimize(floats).fired
    computed_axes = model("""
      sh = Shape(x)
      a = Slice(sh, z1, o1)
      p = ReduceMax <keepdims = 0> (c, a)
      y = Add(x, p)
    """, inputs="int64[b] x", outputs="int64[?] y", inits="int64[3] c = {1, 2, 3}, int64[1] z1 = {0}, "
        "int64[1] o1 = {1}", opset=18)
    assert "fold-reduction" not in optimize(computed_axes).fired
    # an initializer that is also a graph input may be overridden at run time
    c = helper.make_tensor_value_info("c", TensorProto.INT64, [3])
    m = reduce_model("ReduceMax", 13, np.array([1, 2, 3], np.int64), TensorProto.INT64, None, 0, None)
    m.graph.input.append(c)
    assert "fold-reduction" not in optimize(m).fired


def test_graph_output_becomes_a_constant_node() -> None:
    # the reduction is a graph output: it keeps its name as a Constant node's output
    text = model("""
      sh = Shape(w)
      y = ReduceMax <keepdims = 0> (sh)
      z = ReduceMin <keepdims = 1> (sh)
      o = Add(x, x)
    """, inputs="float[b] x", outputs="int64 y, int64[1] z, float[b] o", inits="float[2, 5, 3] w")
    text = text.replace("float[2, 5, 3] w", "float[2, 5, 3] w = {" + ", ".join(["1.0"] * 30) + "}")
    out = optimize(text)
    assert out.fired.get("fold-reduction", 0) + out.fired.get("fold-known-value", 0) >= 1, out.fired
    assert sorted(out.ops()) == ["Add", "Constant", "Constant"]
    values = {n.output[0]: numpy_helper.to_array(n.attribute[0].t).tolist() for n in out.after.graph.node
              if n.op_type == "Constant"}
    assert values == {"y": 5, "z": [2]}
    check_rewrite(out, values=SIZES)
