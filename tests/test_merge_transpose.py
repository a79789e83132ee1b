"""Issue 25 point 5: merge-transpose (SF239): consecutive Transposes compose into one, or none when
the composition is the identity; an identity Transpose goes. Every rewritten model runs in
onnxruntime against the original with every symbol bound to 0, 1, 2, 3 and 33 (bit for bit,
``check_rewrite``); near misses stay put."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

pytest.importorskip("onnxruntime")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))
from test_fold_values import model  # noqa: E402
from test_passes_support import Outcome, check_rewrite, optimize, run  # noqa: E402

SIZES = (0, 1, 2, 3, 33)


def perms(out: Outcome) -> list[list[int]]:
    return [list(a.ints) for n in out.after.graph.node if n.op_type == "Transpose" for a in n.attribute
            if a.name == "perm"]


def test_pair_composes_into_one() -> None:
    # paddle2onnx's attention: [b, s, h, d] -> [b, h, s, d] -> [b, h, d, s]
    text = model("""
      t = Transpose <perm = [0, 2, 1, 3]> (x)
      u = Transpose <perm = [0, 1, 3, 2]> (t)
      y = Neg(u)
    """, inputs="float[b, s, 3, 4] x", outputs="float[b, 3, 4, s] y")
    out = optimize(text)
    assert out.fired == {"merge-transpose": 1}, out.fired
    assert out.ops() == ["Transpose", "Neg"] and perms(out) == [[0, 2, 3, 1]]
    check_rewrite(out, values=SIZES)


def test_chain_default_perm_and_identity() -> None:
    text = model("""
      t = Transpose <perm = [0, 2, 1, 3]> (x)
      u = Transpose <perm = [0, 2, 3, 1]> (t)
      v = Transpose <perm = [0, 1, 2, 3]> (u)
      w = Transpose (v)
      z = Transpose (w)
      y = Neg(z)
    """, inputs="int64[b, s, 3, 4] x", outputs="int64[?, ?, ?, ?] y")
    out = optimize(text)
    assert out.fired.get("merge-transpose") == 3, out.fired
    assert out.ops() == ["Transpose", "Neg"] and perms(out) == [[0, 1, 3, 2]]
    check_rewrite(out, values=SIZES)


def test_default_perm_inner_with_an_explicit_outer() -> None:
    # no perm reverses the axes: rank 3 from the input's type
    text = model("""
      t = Transpose (x)
      u = Transpose <perm = [2, 1, 0]> (t)
      y = Abs(u)
      a = Transpose <perm = [1, 0, 2]> (x)
      c = Transpose (a)
      z = Abs(c)
    """, inputs="float[b, s, 5] x", outputs="float[b, s, 5] y, float[?, ?, ?] z")
    out = optimize(text)
    assert out.fired == {"merge-transpose": 2, "dead-nodes": 1}, out.fired
    assert perms(out) == [[2, 0, 1]]
    check_rewrite(out, values=SIZES)


def test_identity_transpose_goes_on_every_type() -> None:
    text = model("""
      t = Transpose <perm = [0, 1, 2]> (x)
      y = Neg(t)
      s = Transpose (w)
      z = Not(s)
    """, inputs="float[b, s, 2] x, bool[b] w", outputs="float[b, s, 2] y, bool[b] z")
    out = optimize(text, rules=["merge-transpose"])
    assert out.fired == {"merge-transpose": 2}, out.fired
    assert out.ops() == ["Neg", "Not"]
    check_rewrite(out, values=SIZES)


def test_pair_to_a_graph_output() -> None:
    # the outer Transpose's output is a graph output: the composed Transpose keeps its name, and an
    # identity pair becomes an Identity that keeps it
    text = model("""
      t = Transpose <perm = [1, 0, 2]> (x)
      y = Transpose <perm = [0, 2, 1]> (t)
      a = Transpose <perm = [1, 0, 2]> (x)
      z = Transpose <perm = [1, 0, 2]> (a)
    """, inputs="float[b, s, 2] x", outputs="float[?, ?, ?] y, float[b, s, 2] z")
    out = optimize(text)
    assert out.fired == {"merge-transpose": 2}, out.fired
    assert sorted(out.ops()) == ["Identity", "Transpose"] and perms(out) == [[1, 2, 0]]
    assert {o for n in out.after.graph.node for o in n.output} == {"y", "z"}
    check_rewrite(out, values=SIZES)


def test_near_misses() -> None:
    # the inner Transpose has a second reader: composing would remove nothing
    shared = model("""
      t = Transpose <perm = [0, 2, 1]> (x)
      u = Transpose <perm = [1, 0, 2]> (t)
      y = Neg(u)
      z = Neg(t)
    """, inputs="float[b, s, 2] x", outputs="float[?, ?, ?] y, float[?, ?, ?] z")
    assert "merge-transpose" not in optimize(shared).fired
    # ... and is a graph output
    output = model("""
      t = Transpose <perm = [0, 2, 1]> (x)
      u = Transpose <perm = [1, 0, 2]> (t)
      y = Neg(u)
    """, inputs="float[b, s, 2] x", outputs="float[?, ?, ?] y, float[?, ?, ?] t")
    assert "merge-transpose" not in optimize(output).fired
    # an identity Transpose whose output is a graph output keeps it (an Identity removes nothing)
    kept = model("""
      y = Transpose <perm = [0, 1]> (x)
    """, inputs="float[b, s] x", outputs="float[b, s] y")
    assert optimize(kept).fired == {}
    # a default perm over an unknown rank
    unranked = parse_unranked()
    assert optimize(unranked).fired == {}


def parse_unranked() -> onnx.ModelProto:
    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, None)
    y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
    graph = onnx.helper.make_graph([onnx.helper.make_node("Transpose", ["x"], ["t"]),
                                    onnx.helper.make_node("Neg", ["t"], ["y"])], "g", [x], [y])
    return onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)], ir_version=8)


def test_identity_pair_with_a_second_reader_keeps_the_inner() -> None:
    text = model("""
      t = Transpose <perm = [0, 2, 1]> (x)
      u = Transpose <perm = [0, 2, 1]> (t)
      y = Neg(u)
      z = Abs(t)
    """, inputs="float[b, s, 2] x", outputs="float[b, s, 2] y, float[?, ?, ?] z")
    out = optimize(text)
    assert out.fired == {"merge-transpose": 1}, out.fired
    assert out.ops() == ["Transpose", "Neg", "Abs"]
    neg = out.after.graph.node[1]
    assert list(neg.input) == ["x"]
    check_rewrite(out, values=SIZES)
    feeds = {"x": np.arange(12, dtype=np.float32).reshape(2, 3, 2)}
    assert run(out.after, feeds)[0].tobytes() == (-feeds["x"]).tobytes()  # type: ignore[index]
