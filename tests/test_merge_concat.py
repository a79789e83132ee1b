"""Issue 16: merge-concat (SF214): a Concat read only by a Concat along the same axis is part of
it. Rewritten models run in onnxruntime against the original at bindings 0, 1, 2 and 7 of each
symbol (``shapearith.check_model``), and through ``check_rewrite``; near misses stay put."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))
import shapearith  # noqa: E402
from test_fold_values import model, oracle  # noqa: E402
from test_passes_support import check_rewrite, optimize  # noqa: E402


@pytest.fixture(scope="module")
def runner(ort_runner) -> Iterator[shapearith.Runner]:
    yield ort_runner  # one onnxruntime worker for the session (tests/conftest.py)


NESTED = model("""
  a = Neg(x)
  b = Abs(x)
  c = Neg(w)
  i = Concat <axis = 1> (b, c)
  o = Concat <axis = -1> (a, i, a)
  y = Neg(o)
""", inputs="int64[b, s] x, int64[b, 2] w", outputs="int64[b, ?] y")


def test_inner_concat_is_spliced(runner: shapearith.Runner) -> None:
    out = optimize(NESTED)
    assert out.fired.get("merge-concat") == 1, out.fired
    concat = [n for n in out.after.graph.node if n.op_type == "Concat"]
    assert len(concat) == 1 and list(concat[0].input) == ["a", "b", "c", "a"]
    check_rewrite(out, values=(0, 1, 2, 7))
    oracle(runner, NESTED)


def test_shape_vector_in_pieces(runner: shapearith.Runner) -> None:
    text = model("""
      sh = Shape(x)
      d2 = Slice(sh, two, three)
      d3 = Slice(sh, three, four)
      i = Concat <axis = 0> (d2, d3)
      o = Concat <axis = 0> (one, i)
      y = Reshape(x, o)
    """, inputs="float[b, 3, s, 4] x", outputs="float[?, ?, ?] y",
        inits="int64[1] two = {2}, int64[1] three = {3}, int64[1] four = {4}, int64[1] one = {-1}")
    out = optimize(text, rules=["merge-concat"])
    assert out.fired.get("merge-concat") == 1, out.fired
    check_rewrite(out, values=(1, 2, 7))
    oracle(runner, text)


def test_near_misses() -> None:
    other_axis = model("""
      i = Concat <axis = 0> (x, x)
      o = Concat <axis = 1> (i, i)
      y = Neg(o)
    """, inputs="int64[b, s] x", outputs="int64[?, ?] y")
    assert "merge-concat" not in optimize(other_axis).fired
    shared = model("""
      i = Concat <axis = 0> (x, x)
      o = Concat <axis = 0> (i, x)
      y = Add(o, o)
      z = Neg(i)
    """, inputs="int64[s] x", outputs="int64[?] y, int64[?] z")
    assert "merge-concat" not in optimize(shared).fired
    output = model("""
      i = Concat <axis = 0> (x, x)
      o = Concat <axis = 0> (i, x)
      y = Neg(o)
    """, inputs="int64[s] x", outputs="int64[?] y, int64[?] i")
    assert "merge-concat" not in optimize(output).fired


def test_axis_of_a_function_attribute_is_not_known() -> None:
    # ``axis = @ax`` reads 0 from the proto, but each call gives its own value: the two Concats
    # may concatenate along different axes (this call's axis 1 gives [4, 4]; onnxruntime refuses
    # Concat(i, a) there, [4, 2] beside [2, 2])
    text = """<ir_version: 8, opset_import: ["" : 17, "local" : 1]>
    g (int64[2, 2] x) => (int64[?, ?] y) {
      y = local.F <ax = 1> (x)
    }
    <domain: "local", opset_import: ["" : 17]>
    F <ax> (a) => (c) {
      i = Concat <axis = 0> (a, a)
      o = Concat <axis: int = @ax> (i, i)
      c = Neg(o)
    }"""
    assert "merge-concat" not in optimize(text).fired
