"""SF221 unsqueeze-into-reduce: Unsqueeze(Reduce(x, keepdims=0), a) is Reduce(x, keepdims=1) when
``a`` are the reduced axes.

Every rewritten model runs in onnxruntime against the original at every symbol bound to 0, 1, 2, 3
and 37 (``check_rewrite``: bit-identical outputs, same signature, idempotent); the near misses
check that the rewrite stays put where the axes differ, the reduction has other readers, or its
axes are not known.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from test_passes_support import SO, Outcome, check_rewrite, optimize

from shapeflow.rewrites.sf221_unsqueeze_into_reduce import REDUCE_OPS, UnsqueezeIntoReduce

NAME = UnsqueezeIntoReduce.name
BINDINGS = (0, 1, 2, 3, 37)


def model(body: str, *, inputs: str, outputs: str, inits: str = "", opset: int = 18) -> str:
    ir = 8 if opset <= 18 else 10
    return (f'<ir_version: {ir}, opset_import: ["" : {opset}]>\n'
            f"g ({inputs}) => ({outputs})\n" + (f"<{inits}>\n" if inits else "") + "{\n" + body + "\n}\n")


def fires(text: str, n: int = 1) -> Outcome:
    out = optimize(text)
    assert out.fired.get(NAME) == n, out.result.rewrites
    check_rewrite(out, values=BINDINGS)
    return out


def reductions(out: Outcome) -> list[onnx.NodeProto]:
    return [n for n in out.after.graph.node if n.op_type in REDUCE_OPS]


def keepdims(node: onnx.NodeProto) -> int:
    for a in node.attribute:
        if a.name == "keepdims":
            return a.i
    return 1


# -- where it fires -------------------------------------------------------------------------------

TENSORDOT = model("""
  sh = Shape(x)
  g = Gather <axis = 0> (sh, i01)
  p = ReduceProd <axes = [0], keepdims = 0> (g)
  u = Unsqueeze(p, a0)
  t = Concat <axis = 0> (u, c8)
  r = Reshape(x, t)
  y = Relu(r)
""", inputs="float[b, s, 8] x", outputs="float[?, 8] y",
    inits="int64[2] i01 = {0, 1}, int64[1] a0 = {0}, int64[1] c8 = {8}", opset=13)


def test_tf2onnx_tensordot_product_keeps_its_dim() -> None:
    # tf2onnx's Tensordot: Reshape(x, Concat(Unsqueeze(ReduceProd(Shape(x)[0:2], keepdims=0)), [8]))
    out = optimize(TENSORDOT, rules=["SF221"])
    assert out.fired == {NAME: 1}
    (red,) = reductions(out)
    assert red.op_type == "ReduceProd" and keepdims(red) == 1
    assert [a.ints for a in red.attribute if a.name == "axes"] == [[0]]
    assert out.count("Unsqueeze") == 0
    check_rewrite(out, values=BINDINGS)


@pytest.mark.parametrize("op", [op for op in REDUCE_OPS if not op.startswith("Arg")])
@pytest.mark.parametrize("opset", [13, 18])
def test_every_reduction_at_both_axes_forms(op: str, opset: int) -> None:
    # axes [-1] (normalised to 2) put back by Unsqueeze [2]; float data, so the kernel's summation
    # order shows in the bits if keepdims changed it
    by_input = opset >= (13 if op == "ReduceSum" else 18)
    call = f"{op} <keepdims = 0> (x, am1)" if by_input else f"{op} <axes = [-1], keepdims = 0> (x)"
    text = model(f"""
      r = {call}
      u = Unsqueeze(r, a2)
      y = Mul(u, x)
    """, inputs="float[b, s, 5] x", outputs="float[b, s, 5] y",
        inits="int64[1] am1 = {-1}, int64[1] a2 = {2}", opset=opset)
    out = optimize(text)
    assert out.fired[NAME] == 1
    (red,) = reductions(out)
    assert red.op_type == op and keepdims(red) == 1
    assert out.count("Unsqueeze") == 0
    check_rewrite(out, values=BINDINGS)


def test_several_axes_unsorted_and_negative_unsqueeze_axes() -> None:
    text = model("""
      r = ReduceSum <keepdims = 0> (x, ax)
      u = Unsqueeze(r, back)
      y = Add(u, x)
    """, inputs="float[b, s, 7] x", outputs="float[b, s, 7] y",
        inits="int64[2] ax = {2, 0}, int64[2] back = {-1, 0}")
    out = fires(text)
    assert out.count("Unsqueeze") == 0


def test_reduce_every_axis_and_a_graph_output() -> None:
    # no axes: every axis reduced to a scalar; the Unsqueeze's output is a graph output and keeps
    # its name, now written by the reduction (edited in place: it keeps its own name too)
    text = model("""
      r = ReduceMax <keepdims = 0> (x)
      y = Unsqueeze(r, all3)
    """, inputs="float[b, s, 3] x", outputs="float[1, 1, 1] y", inits="int64[3] all3 = {0, 1, 2}")
    out = optimize(text)
    assert out.fired == {NAME: 1}
    assert not out.after.graph.initializer  # the Unsqueeze's axes, read nowhere else, go too
    (red,) = out.after.graph.node
    assert red.op_type == "ReduceMax" and list(red.output) == ["y"] and keepdims(red) == 1
    check_rewrite(out, values=BINDINGS)


def test_argmax_with_select_last_index_and_integer_data() -> None:
    text = model("""
      r = ArgMax <axis = -1, keepdims = 0, select_last_index = 1> (x)
      u = Unsqueeze(r, a1)
      y = Add(u, one)
      m = ReduceMin <axes = [0], keepdims = 0> (i)
      n = Unsqueeze(m, a0)
      z = Mul(n, i)
    """, inputs="float[b, s] x, int32[b, s] i", outputs="int64[b, 1] y, int32[b, s] z",
        inits="int64[1] a1 = {1}, int64[1] a0 = {0}, int64 one = {1}", opset=17)
    out = optimize(text)
    assert out.fired[NAME] == 2
    arg = next(n for n in out.after.graph.node if n.op_type == "ArgMax")
    assert {a.name: a.i for a in arg.attribute} == {"axis": -1, "select_last_index": 1}
    check_rewrite(out, values=BINDINGS)
    # ties: with the data repeated, select_last_index decides (checked on a hand-made feed)
    x = np.tile(np.array([[1.0, 3.0, 3.0, -0.0, 0.0]], np.float32), (3, 1))
    i = np.array([[5, -7, 5, 0, 2**31 - 1]] * 3, np.int32)
    want = ort.InferenceSession(out.before.SerializeToString(), SO).run(None, {"x": x, "i": i})
    got = ort.InferenceSession(out.after.SerializeToString(), SO).run(None, {"x": x, "i": i})
    assert [a.tobytes() for a in want] == [b.tobytes() for b in got]


def test_old_opsets_with_attribute_axes() -> None:
    text = model("""
      r = ReduceSum <axes = [1], keepdims = 0> (x)
      u = Unsqueeze <axes = [1]> (r)
      y = Sub(x, u)
    """, inputs="float[b, s, 4] x", outputs="float[b, s, 4] y", opset=11)
    out = fires(text)
    (red,) = reductions(out)
    assert {a.name for a in red.attribute} == {"axes"}


# -- where it does not -----------------------------------------------------------------------------

BASE = """
  r = ReduceSum <keepdims = 0> (x, ax)
  u = Unsqueeze(r, back)
  y = Add(u, x)
"""


def quiet(text: str, why: str = "") -> None:
    out = optimize(text, rules=["SF221"])
    assert NAME not in out.fired, out.result.rewrites
    if why:
        assert any(why in s for s in out.result.skipped), out.result.skipped


def test_other_positions_stay() -> None:
    # reduced [1], put back at [0]: a transposed result, not keepdims
    quiet(model(BASE, inputs="float[b, s, 4] x", outputs="float[?, ?, ?] y",
                inits="int64[1] ax = {1}, int64[1] back = {0}"), "inserts [0]")
    # reduced [0, 1], put back only [1]
    quiet(model(BASE.replace("y = Add(u, x)", "y = Identity(u)"), inputs="float[b, s, 4] x",
                outputs="float[?, ?] y", inits="int64[2] ax = {0, 1}, int64[1] back = {1}"), "inserts [1]")


def test_keepdims_1_other_readers_and_graph_outputs_stay() -> None:
    inits = "int64[1] ax = {1}, int64[1] back = {1}"
    # keepdims=1 (the default): the Unsqueeze adds a second 1-dim
    quiet(model(BASE.replace("<keepdims = 0> ", "").replace("y = Add(u, x)", "y = Identity(u)"),
                inputs="float[b, s, 4] x", outputs="float[?, ?, ?, ?] y", inits=inits))
    # the reduction's output has another reader
    quiet(model(BASE + "  z = Neg(r)", inputs="float[b, s, 4] x", outputs="float[?, ?, ?] y, float[?, ?] z",
                inits=inits), "other readers")
    # ... or is a graph output
    quiet(model(BASE, inputs="float[b, s, 4] x", outputs="float[?, ?, ?] y, float[?, ?] r", inits=inits),
          "other readers")


def test_unknown_or_empty_axes_stay() -> None:
    # axes read at run time
    quiet(model(BASE, inputs="float[b, s, 4] x, int64[1] ax", outputs="float[?, ?, ?] y",
                inits="int64[1] back = {1}"), "not known")
    # noop_with_empty_axes=1 and no axes: nothing is reduced, the Unsqueeze really adds a dim
    text = model("""
      r = ReduceSum <keepdims = 0, noop_with_empty_axes = 1> (x)
      u = Unsqueeze(r, back)
      y = Identity(u)
    """, inputs="float[b, s, 4] x", outputs="float[?, ?, ?, ?] y", inits="int64[1] back = {1}")
    quiet(text)
    # an axes initializer that is also a graph input may be overridden
    over = model(BASE, inputs="float[b, s, 4] x, int64[1] ax", outputs="float[?, ?, ?] y",
                 inits="int64[1] ax = {1}, int64[1] back = {1}")
    quiet(over)
