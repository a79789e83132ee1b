"""Issue 25, point 1: squeeze-into-reshape (SF219): a Reshape reads the input of the Squeeze or
Unsqueeze before it when its target means the same for both (``allowzero`` exactly: a 0 of the
target copies the input's dim at its position, which the axes move). Rewritten models run in
onnxruntime against the original at bindings 0, 1, 2, 3 and a large one of each symbol
(``shapearith.check_model``: outputs bit for bit, and every dim and value inference states), and
through ``check_rewrite`` (signature, checker, node count, idempotence); near misses stay put."""

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
from test_fold_values import inits, model, ops  # noqa: E402
from test_passes_support import check_rewrite, optimize, parse  # noqa: E402

from shapeflow.io import load_model_bytes  # noqa: E402
from shapeflow.passes import rewrite_model  # noqa: E402
from shapeflow.rewrites.sf219_squeeze_into_reshape import SqueezeIntoReshape  # noqa: E402

RULE = "squeeze-into-reshape"
SIZES = (0, 1, 2, 3, 37)


@pytest.fixture(scope="module")
def runner(ort_runner) -> Iterator[shapearith.Runner]:
    yield ort_runner  # one onnxruntime worker for the session (tests/conftest.py)


def oracle(runner: shapearith.Runner, text: str, symbols: tuple[str, ...]) -> None:
    """Original and optimized agree bit for bit wherever the original runs, at every binding of
    ``symbols`` to SIZES; what inference states holds there."""
    m = parse(text)
    onnx.checker.check_model(m)
    bindings = [dict(zip(symbols, vals)) for vals in itertools.product(SIZES, repeat=len(symbols))]
    stats = shapearith.check_model(m, bindings, runner)
    assert stats.bindings_run > stats.bindings_failed, "the model fails in onnxruntime everywhere"
    assert stats.optimize_changed == 1, "optimize changed nothing"
    if stats.findings:
        pytest.fail("\n".join(f.line() for f in stats.findings), pytrace=False)


def only_this(text: str, *, strict: bool = False) -> dict[str, int]:
    """What this rewrite alone (and the sweep) does to ``text``."""
    loaded = load_model_bytes(parse(text).SerializeToString(), "m.onnx")
    return rewrite_model(loaded, [SqueezeIntoReshape()], strict=strict).rewrites


WEIGHTS = ", ".join(str((i * 7 % 13 - 6) / 4) for i in range(32))
# Keras EfficientNet's squeeze-excite block through tf2onnx
SE = model("""
  p = GlobalAveragePool(x)
  s = Squeeze(p, a23)
  r = Reshape(s, t)
  c = Conv(r, k)
  g = Sigmoid(c)
  y = Mul(x, g)
""", inputs="float[n, 8, h, h] x", outputs="float[n, 8, h, h] y", opset=15,
    inits=f"int64[2] a23 = {{2, 3}}, int64[4] t = {{-1, 8, 1, 1}}, "
          f"float[8, 8, 1, 1] k = {{{WEIGHTS}, {WEIGHTS}}}")


def test_squeeze_excite_loses_squeeze_and_reshape(runner: shapearith.Runner) -> None:
    out = optimize(SE)
    # the Reshape reads the pooled tensor; it then returns its input's shape and no-op-reshape
    # removes it
    assert out.fired.get(RULE) == 1 and out.fired.get("no-op-reshape") == 1, out.fired
    assert ops(out) == ["GlobalAveragePool", "Conv", "Sigmoid", "Mul"]
    check_rewrite(out, values=SIZES)
    oracle(runner, SE, ("n", "h"))


# tf2onnx's Conv1D: an Unsqueeze, then a Reshape whose 0 sits before the inserted axis
CONV1D = model("""
  u = Unsqueeze(w, a1)
  r = Reshape(u, t)
  y = Neg(r)
""", inputs="float[b, s, 1] w", outputs="float[b, 1, 1, s] y", opset=15,
    inits="int64[1] a1 = {-3}, int64[4] t = {0, 1, 1, -1}")


def test_a_zero_before_the_axes_stays(runner: shapearith.Runner) -> None:
    out = optimize(CONV1D)
    assert out.fired.get(RULE) == 1, out.fired
    assert ops(out) == ["Reshape", "Neg"]
    assert inits(out)["t"] == [0, 1, 1, -1]
    check_rewrite(out, values=SIZES)
    oracle(runner, CONV1D, ("b", "s"))


def test_a_zero_that_would_move_is_spelled_out(runner: shapearith.Runner) -> None:
    # u is [1, 2, 3, n]; target 0 at 0 and 1 copy u's 1 and 2, which x has at 0 and 1 no longer
    text = model("""
      u = Unsqueeze(x, a0)
      r = Reshape(u, t)
      y = Neg(r)
    """, inputs="float[2, 3, n] x", outputs="float[1, 2, ?] y", opset=15,
        inits="int64[1] a0 = {0}, int64[3] t = {0, 0, -1}")
    out = optimize(text)
    assert out.fired.get(RULE) == 1, out.fired
    reshape = next(n for n in out.after.graph.node if n.op_type == "Reshape")
    assert reshape.input[0] == "x" and inits(out)[reshape.input[1]] == [1, 2, -1]
    check_rewrite(out, values=SIZES)
    oracle(runner, text, ("n",))


def test_allowzero_1_reads_the_target_as_it_is(runner: shapearith.Runner) -> None:
    # with allowzero=1 a 0 is an empty dim, never a copy: any target means the same
    text = model("""
      s = Squeeze(x, a1)
      r = Reshape <allowzero = 1> (s, t)
      y = Neg(r)
    """, inputs="float[n, 1, 6] x", outputs="float[?, 2, 3] y", opset=18,
        inits="int64[1] a1 = {1}, int64[3] t = {-1, 2, 3}")
    out = optimize(text)
    assert out.fired.get(RULE) == 1, out.fired
    assert ops(out) == ["Reshape", "Neg"]
    check_rewrite(out, values=SIZES)
    oracle(runner, text, ("n",))
    # the same 0 that would move under allowzero=0 is fine under allowzero=1 (an empty dim either way)
    zero = model("""
      s = Squeeze(x, a1)
      r = Reshape <allowzero = 1> (s, t)
      y = Neg(r)
    """, inputs="float[n, 1, m] x", outputs="float[?, ?] y", opset=18,
        inits="int64[1] a1 = {1}, int64[2] t = {-1, 0}")
    assert only_this(zero) == {RULE: 1, "dead-nodes": 1}


MOVING_ZERO = model("""
  s = Squeeze(x, a1)
  r = Reshape(s, t)
  y = Neg(r)
""", inputs="float[n, 1, m] x", outputs="float[n, m] y", opset=15,
    inits="int64[1] a1 = {1}, int64[2] t = {0, 0}")


def test_near_misses() -> None:
    # a 0 at position 1 copies s's m; x has 1 there (m is symbolic: no constant says it)
    assert only_this(MOVING_ZERO) == {}
    # ... but the 0 at position 0 alone is before the squeezed axis
    assert only_this(MOVING_ZERO.replace("{0, 0}", "{0, -1}")) == {RULE: 1, "dead-nodes": 1}
    # a second reader of the Squeeze's output
    second = MOVING_ZERO.replace("{0, 0}", "{0, -1}").replace(
        "y = Neg(r)", "y = Neg(r)\n  z = Abs(s)").replace("float[n, m] y", "float[n, m] y, float[n, m] z")
    assert only_this(second) == {}
    # the Squeeze's output is a graph output
    assert only_this(MOVING_ZERO.replace("{0, 0}", "{0, -1}").replace(
        "float[n, m] y", "float[n, m] y, float[n, m] s")) == {}
    # a target computed at run time (unknown values) under allowzero=0
    computed = model("""
      s = Squeeze(x, a1)
      r = Reshape(s, t)
      y = Neg(r)
    """, inputs="float[n, 1, m] x, int64[2] t", outputs="float[?, ?] y", opset=15, inits="int64[1] a1 = {1}")
    assert only_this(computed) == {}
    # ... fires under allowzero=1, whatever the target holds
    assert only_this(computed.replace("Reshape(s, t)", "Reshape <allowzero = 1> (s, t)")) == {RULE: 1, "dead-nodes": 1}


def test_symbolic_squeezed_dim_fires_with_a_note_but_not_under_strict(runner: shapearith.Runner) -> None:
    text = model("""
      s = Squeeze(x, a1)
      r = Reshape(s, t)
      y = Neg(r)
    """, inputs="float[n, k, 4] x", outputs="float[?, 2] y", opset=15,
        inits="int64[1] a1 = {1}, int64[2] t = {-1, 2}")
    out = optimize(text)
    assert out.fired.get(RULE) == 1, out.fired
    assert any("run-time failure" in line for line in out.result.notes), out.result.notes
    # k = 1: outputs agree (elsewhere the original fails, which the rewrite may remove)
    oracle(runner, text.replace("float[n, k, 4] x", "float[n, 1, 4] x"), ("n",))
    assert only_this(text, strict=True) == {}


def test_unsqueeze_then_reshape_in_opset_11_attribute_axes(runner: shapearith.Runner) -> None:
    text = model("""
      u = Unsqueeze <axes = [2]> (x)
      r = Reshape(u, t)
      y = Neg(r)
    """, inputs="float[n, 3] x", outputs="float[?, 3] y", opset=11, inits="int64[2] t = {0, -1}")
    out = optimize(text)
    assert out.fired.get(RULE) == 1, out.fired
    check_rewrite(out, values=SIZES)
    oracle(runner, text, ("n",))
