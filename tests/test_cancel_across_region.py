"""Issue 25, point 4: cancel-across-region (SF220): an Unsqueeze and a Squeeze of the same axes cancel
across the ops between them when each carries the unit axes through (elementwise ops with outside
operands that cannot broadcast against them, MatMul with a 2-D right operand, unary ops), and no
tensor of the region is read outside it. Rewritten models run in onnxruntime against the original
at bindings 0, 1, 2, 3 and a large one of each symbol (``shapearith.check_model``: outputs bit for
bit, every dim and value inference states), and through ``check_rewrite``; near misses stay put."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator
from pathlib import Path

import onnx
import pytest

pytest.importorskip("onnxruntime")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))
import shapearith  # noqa: E402
from test_fold_values import model, ops  # noqa: E402
from test_passes_support import check_rewrite, optimize, parse  # noqa: E402

from shapeflow.io import load_model_bytes  # noqa: E402
from shapeflow.passes import rewrite_model  # noqa: E402
from shapeflow.rewrites.sf220_cancel_across_region import CancelAcrossRegion  # noqa: E402

RULE = "cancel-across-region"
SIZES = (0, 1, 2, 3, 300)


@pytest.fixture(scope="module")
def runner(ort_runner) -> Iterator[shapearith.Runner]:
    yield ort_runner  # one onnxruntime worker for the session (tests/conftest.py)


def oracle(runner: shapearith.Runner, text: str, symbols: tuple[str, ...], sizes: tuple[int, ...] = SIZES) -> None:
    m = parse(text)
    onnx.checker.check_model(m)
    bindings = [dict(zip(symbols, vals)) for vals in itertools.product(sizes, repeat=len(symbols))]
    stats = shapearith.check_model(m, bindings, runner)
    assert stats.bindings_run > stats.bindings_failed, "the model fails in onnxruntime everywhere"
    assert stats.optimize_changed == 1, "optimize changed nothing"
    if stats.findings:
        pytest.fail("\n".join(f.line() for f in stats.findings), pytrace=False)


def only_this(text: str) -> dict[str, int]:
    loaded = load_model_bytes(parse(text).SerializeToString(), "m.onnx")
    return rewrite_model(loaded, [CancelAcrossRegion()]).rewrites


def floats(n: int, k: int = 7) -> str:
    return ", ".join(str((i * k % 13 - 6) / 4) for i in range(n))


INITS = (f"int64[1] a1 = {{1}}, int64[1] a0 = {{0}}, float[8, 16] w = {{{floats(128)}}}, "
         f"float[16] b = {{{floats(16, 5)}}}, float[16, 4] w2 = {{{floats(64, 3)}}}")
# paddle2onnx's linear layer on a 2-D input
PADDLE = model("""
  u = Unsqueeze(x, a1)
  m = MatMul(u, w)
  a = Add(m, b)
  i = Identity(a)
  s = Squeeze(i, a1)
  r = Relu(s)
  y = MatMul(r, w2)
""", inputs="float[n, 8] x", outputs="float[n, 4] y", opset=15, inits=INITS)


def test_paddle_linear(runner: shapearith.Runner) -> None:
    out = optimize(PADDLE)
    assert out.fired.get(RULE) == 1, out.fired
    assert ops(out) == ["MatMul", "Add", "Relu", "MatMul"]
    first = out.after.graph.node[0]
    assert list(first.input) == ["x", "w"]
    check_rewrite(out, values=SIZES)
    oracle(runner, PADDLE, ("n",))


def region(body: str, *, inputs: str = "float[n, 8] x", outputs: str = "float[n, 16] y",
           extra: str = "", opset: int = 15) -> str:
    return model(body, inputs=inputs, outputs=outputs, opset=opset, inits=INITS + extra)


MIXED = region("""
  u = Unsqueeze(x, a1)
  m = MatMul(u, w)
  t = Tanh(m)
  g = Sigmoid(m)
  p = Mul(t, g)
  c = Cast <to = 11> (p)
  q = Add(c, d)
  h = Cast <to = 1> (q)
  e = Sub(k, h)
  z = Max(e, b2)
  y = Squeeze(z, a1)
""", extra=", double d = {0.25}, float[1, 16] b2 = {" + floats(16, 3) + "}, float[1] k = {2}")


def test_unary_binary_casts_and_leading_ones(runner: shapearith.Runner) -> None:
    # both operands of Mul come from the region; scalar, [1] and [1, 16] operands broadcast clear
    # of the unit axis; the Squeeze's output is the graph output (its name stays)
    out = optimize(MIXED)
    assert out.fired.get(RULE) == 1, out.fired
    assert "Squeeze" not in ops(out) and "Unsqueeze" not in ops(out)
    assert out.after.graph.node[-1].output[0] == "y"
    check_rewrite(out, values=SIZES)
    oracle(runner, MIXED, ("n",))


def test_several_axes_and_batched_matmul(runner: shapearith.Runner) -> None:
    text = region("""
      u = Unsqueeze(x, a02)
      m = MatMul(u, w)
      a = Add(m, b)
      y = Squeeze(a, a02)
    """, inputs="float[s, t, 8] x", outputs="float[s, t, 16] y", extra=", int64[2] a02 = {0, 2}")
    out = optimize(text)
    assert out.fired.get(RULE) == 1, out.fired
    assert ops(out) == ["MatMul", "Add"]
    check_rewrite(out, values=(0, 1, 2, 3, 37))
    oracle(runner, text, ("s", "t"), (0, 1, 2, 3, 37))


def test_opset_11_attribute_axes_and_a_one_dim_input(runner: shapearith.Runner) -> None:
    # x is 1-D: MatMul of [1, 8] by [8, 16] is MatMul of [8] by [8, 16], bit for bit
    text = region("""
      u = Unsqueeze <axes = [0]> (x)
      m = MatMul(u, w)
      r = Relu(m)
      y = Squeeze <axes = [0]> (r)
    """, inputs="float[8] x", outputs="float[16] y", opset=11)
    out = optimize(text)
    assert out.fired.get(RULE) == 1, out.fired
    check_rewrite(out, values=(1,))


def test_a_last_unit_axis_and_pow_max_min(runner: shapearith.Runner) -> None:
    # onnxruntime computes Pow/Max/Min beside a one-element operand another way (bit-different)
    # when the last dim is 1: with the unit axis last they stay; Add, Mul, Tanh go
    body = """
      u = Unsqueeze(x, a2)
      p = {op}(u, k)
      y = Squeeze(p, a2)
    """
    extra = ", int64[1] a2 = {2}, float k = {3}"
    for op in ("Pow", "Max", "Min"):
        assert only_this(region(body.format(op=op), outputs="float[n, 8] y", extra=extra)) == {}, op
    text = region(body.format(op="Add").replace("y = Squeeze(p, a2)", "t = Tanh(p)\n      y = Squeeze(t, a2)"),
                  outputs="float[n, 8] y", extra=extra)
    assert only_this(text) == {RULE: 1}
    oracle(runner, text, ("n",))
    # with the unit axis elsewhere, Pow is exact
    inner = region(body.format(op="Pow").replace("a2", "a1"), outputs="float[n, 8] y", extra=extra)
    assert only_this(inner) == {RULE: 1}
    oracle(runner, inner, ("n",))


def test_near_misses() -> None:
    assert only_this(PADDLE) == {RULE: 1}  # (the reference: each case below changes one thing)
    # a second reader of a region tensor
    assert only_this(PADDLE.replace("y = MatMul(r, w2)", "y = MatMul(r, w2)\n  o = Neg(m)")
                     .replace("float[n, 4] y", "float[n, 4] y, float[n, 1, 16] o")) == {}
    # a region tensor is a graph output
    assert only_this(PADDLE.replace("float[n, 4] y", "float[n, 4] y, float[n, 1, 16] a")) == {}
    # the Unsqueeze's output read elsewhere
    assert only_this(PADDLE.replace("y = MatMul(r, w2)", "y = MatMul(r, w2)\n  o = Neg(u)")
                     .replace("float[n, 4] y", "float[n, 4] y, float[n, 1, 8] o")) == {}
    # a MatMul with a 3-D right operand broadcasts over the unit axis
    assert only_this(region("""
      u = Unsqueeze(x, a1)
      m = MatMul(u, w3)
      y = Squeeze(m, a1)
    """, extra=f", float[1, 8, 16] w3 = {{{floats(128)}}}")) == {}
    # a MatMul whose right operand is the region ([1, 1] by [1, 1]; without the axis, a dot product)
    assert only_this(region("""
      u = Unsqueeze(x, a0)
      t = Relu(u)
      m = MatMul(t, u)
      y = Squeeze(m, a0)
    """, inputs="float[1] x", outputs="float[1] y")) == {}
    # the unit axis is MatMul's last (contracted) axis
    assert only_this(region("""
      u = Unsqueeze(x, a2)
      m = MatMul(u, w11)
      y = Squeeze(m, a2)
    """, outputs="float[n, 8] y", extra=", int64[1] a2 = {2}, float[1, 1] w11 = {3}")) == {}
    # a broadcast that adds rank once the axis is gone ([n, 16] + [1, 1, 16] is [1, n, 16])
    assert only_this(region("""
      u = Unsqueeze(x, a1)
      m = MatMul(u, w)
      a = Add(m, b3)
      y = Squeeze(a, a1)
    """, extra=f", float[1, 1, 16] b3 = {{{floats(16)}}}")) == {}
    # ... with two unit axes: [s, 16] + [1, 1, 16] is [1, s, 16]
    assert only_this(region("""
      u = Unsqueeze(x, a02)
      m = MatMul(u, w)
      a = Add(m, b3)
      y = Squeeze(a, a02)
    """, inputs="float[s, 8] x", outputs="float[s, 16] y",
        extra=f", int64[2] a02 = {{0, 2}}, float[1, 1, 16] b3 = {{{floats(16)}}}")) == {}
    # an operand that meets the unit axis with a dim not statically 1 ([n, 1, 16] + [k, 16])
    assert only_this(region("""
      u = Unsqueeze(x, a1)
      m = MatMul(u, w)
      a = Add(m, v)
      y = Squeeze(a, a1)
    """, inputs="float[n, 8] x, float[k, 16] v")) == {}
    # an operand that meets the unit axis with a dim that is not 1 ([n, 1, 16] + [3, 1, 16])
    assert only_this(region("""
      u = Unsqueeze(x, a1)
      m = MatMul(u, w)
      a = Add(m, b3)
      y = Squeeze(a, a1)
    """, inputs="float[3, 8] x", outputs="float[3, 16] y", extra=f", float[3, 1, 16] b3 = {{{floats(48)}}}")) == {}
    # other axes: the Squeeze removes what the Unsqueeze did not insert
    assert only_this(region("""
      u = Unsqueeze(x, a0)
      m = MatMul(u, w)
      y = Squeeze(m, a1)
    """, inputs="float[1, 8] x", outputs="float[1, 16] y")) == {}
    # an op that does not carry the axis (Softmax reads along an axis)
    assert only_this(region("""
      u = Unsqueeze(x, a1)
      m = Softmax <axis = 0> (u)
      y = Squeeze(m, a1)
    """, outputs="float[n, 8] y")) == {}
    # the bias is an initializer that is also a graph input: a caller may pass one of another rank
    overridable = PADDLE.replace("float[n, 8] x)", "float[n, 8] x, float[16] b)")
    assert "float[16] b)" in overridable and only_this(overridable) == {}
    # a region operand of full rank from outside (a graph input with its own 1 there)
    assert only_this(region("""
      u = Unsqueeze(x, a1)
      m = Add(u, v)
      y = Squeeze(m, a1)
    """, inputs="float[n, 8] x, float[n, 1, 8] v", outputs="float[n, 8] y")) == {}


def test_new_names_never_collide_with_existing_ones() -> None:
    # a graph input already named as the region's renamed tensor would be ("m/squeeze")
    text = PADDLE.replace("y = MatMul(r, w2)", 'y0 = MatMul(r, w2)\n  y = Add(y0, "m/squeeze")') \
        .replace("float[n, 8] x)", 'float[n, 8] x, float[4] "m/squeeze")')
    out = optimize(text)
    assert out.fired.get(RULE) == 1, out.fired
    check_rewrite(out, values=(0, 1, 2))
