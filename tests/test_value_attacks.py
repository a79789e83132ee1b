"""Red-team attacks on issue 21 ("every value optimize folds is the value onnxruntime computes").

Each test builds a model that onnxruntime runs, and compares what plain ``optimize`` writes (no
``--verify``) with the original, in onnxruntime, at inputs the runtime accepts; or what ``infer``
states with what the runtime computes. Goldens are onnxruntime's outputs.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import cli_process
import numpy as np
import onnx
import onnx.parser
import pytest

pytest.importorskip("onnxruntime")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))
import shapearith  # noqa: E402

from shapeflow.graph import build_graph  # noqa: E402
from shapeflow.inference import infer  # noqa: E402
from shapeflow.io import load_model_bytes  # noqa: E402
from value_cases import assert_same_outputs, model, outputs, stated  # noqa: E402


@pytest.fixture(scope="module")
def runner(ort_runner) -> Iterator[shapearith.Runner]:
    yield ort_runner  # one onnxruntime worker for the session (tests/conftest.py)


# -- the overflow cap: a dim past 2**24 is an ordinary input ----------------------------------------

# Div(Mul(n, k), k) == n and Mul(n, k) >= 0 hold while n * k fits in int64; inference states
# them (true) because it assumes every symbol is at most 2**24 (dims.OVERFLOW_CAP). onnxruntime
# accepts any dim: a tensor with a 0 dim has no elements whatever its other dims are, and a
# 1-D tensor of 2**24 + 1 bytes is 16 MB.
_WRAP = """
  s = Shape(x)
  n = Gather<axis=0>(s, at)
  m = Mul(n, k)
  d = Div(m, k)
  e = Equal(d, n)
  g = GreaterOrEqual(m, zero)
  ec = Cast<to=7>(e)
  gc = Cast<to=7>(g)
  y = Concat<axis=0>(ec, gc)
"""


@pytest.mark.xfail(strict=True, reason="dims.OVERFLOW_CAP: symbolic int64 values are stated on the premise "
                   "that every dim is at most 2**24, but onnxruntime accepts a [0, 2**61] input (no elements)")
def test_huge_dim_of_an_empty_tensor_wraps(runner: shapearith.Runner) -> None:
    m = model(_WRAP, inputs="uint8[z, n] x", outputs="int64[2] y",
              inits="int64 at = {1}, int64[1] k = {4}, int64[1] zero = {0}")
    feeds = {"x": np.empty((0, 2**61), np.uint8)}
    assert [int(v) for v in outputs(runner, m, feeds)[0]] == [0, 0]  # 4 * 2**61 wraps to INT64_MIN
    assert_same_outputs(runner, m, {"x": np.empty((0, 3), np.uint8)})
    assert stated(m, "y") is None
    assert_same_outputs(runner, m, feeds)


@pytest.mark.xfail(strict=True, reason="dims.OVERFLOW_CAP: a 1-D input of 2**24 + 1 elements (16 MB) is past "
                   "the premise, and (2**39 - 1) * n then wraps")
def test_dim_just_past_the_cap_wraps(runner: shapearith.Runner) -> None:
    m = model(_WRAP, inputs="uint8[n] x", outputs="int64[2] y",
              inits=f"int64 at = {{0}}, int64[1] k = {{{2**39 - 1}}}, int64[1] zero = {{0}}")
    feeds = {"x": np.zeros(2**24 + 1, np.uint8)}
    assert [int(v) for v in outputs(runner, m, feeds)[0]] == [0, 0]
    assert stated(m, "y") is None
    assert_same_outputs(runner, m, feeds)


# -- infer -o: a computed dim written with the text of an input's opaque dim name ------------------

def test_infer_o_never_writes_an_input_dim_name_for_another_dim(runner: shapearith.Runner, tmp_path: Path) -> None:
    """``x`` declares the opaque name ``"N + 1"``; ``z = Concat(y, [1])`` is the computed N + 1.
    Written as the same dim_param, onnxruntime takes them for one size: its planner reuses z's
    buffer for ``relu(x)``, and the annotated model fails where the original runs (x of 2, y of
    50). The computed dim must be left unknown (or named apart), the input's kept."""
    m = model("""
      z = Concat<axis=0>(y, one)
      w = Relu(z)
      w2 = Relu(w)
      v = Relu(x)
      v2 = Relu(v)
      s1 = ReduceSum<keepdims=0>(w2)
      s2 = ReduceSum<keepdims=0>(v2)
      u = Add(s1, s2)
    """, inputs='float["N + 1"] x, float[N] y', outputs="float u", inits="float[1] one = {1.0}")
    src, out = tmp_path / "m.onnx", tmp_path / "o.onnx"
    onnx.save(m, str(src))
    r = cli_process.shapeflow("infer", str(src), "-o", str(out), timeout=120)
    assert r.returncode == 0, r.stderr
    written = onnx.load(str(out))
    dims = {vi.name: [d.dim_param or d.dim_value for d in vi.type.tensor_type.shape.dim] for vi in written.graph.value_info}
    assert dims["v"] == ["N + 1"]  # x's own dim, by its name
    assert dims["z"] != ["N + 1"]
    for nx, ny in ((2, 50), (0, 3), (50, 2), (3, 2)):
        feeds = {"x": np.arange(nx, dtype=np.float32), "y": np.arange(ny, dtype=np.float32)}
        want = outputs(runner, m, feeds)
        assert [a.tobytes() for a in outputs(runner, written, feeds)] == [a.tobytes() for a in want]


# -- one input that repeats a dim name on two axes ---------------------------------------------------

def test_a_name_repeated_on_one_input_is_not_one_size_for_optimize(runner: shapearith.Runner) -> None:
    """``x: [N, N]``: onnxruntime runs it on a [2, 3] input, where dim 1 - dim 0 is 1. The
    shared-name premise (optimize relies only on what holds when each declaration of a name is
    fed its own size) covered two inputs that share a name, not one input that repeats it:
    optimize folded the difference to 0. infer and lint keep the ONNX contract."""
    m = model("""
      s = Shape(x)
      a = Gather<axis=0>(s, i0)
      b = Gather<axis=0>(s, i1)
      d = Sub(b, a)
      r = Abs(d)
    """, inputs="float[N, N] x", outputs="int64[1] r", inits="int64[1] i0 = {0}, int64[1] i1 = {1}")
    for shape in ((2, 3), (3, 1), (0, 2), (2, 2)):
        feeds = {"x": np.ones(shape, np.float32)}
        assert outputs(runner, m, feeds)[0].tolist() == [abs(shape[1] - shape[0])]
        assert_same_outputs(runner, m, feeds)
    assert stated(m, "r") == (0,)  # the contract: one name, one size
    g = build_graph(load_model_bytes(m.SerializeToString(), "m.onnx"))
    t = infer(g, independent=True).tensors[0]
    assert str(t["b"].value[0]) == "N@x:1"
    assert t["r"].value is None or type(t["r"].value[0]) is not int
