"""Issue 16: fold-known-value on every op whose value inference knows (SF218), static-reshape-target
(SF211) and no-op-reshape (SF212).

Every rewritten model is run in onnxruntime against the original at bindings of each symbol to 0,
1, 2 and a larger value (``shapearith.check_model``, the differential fuzzer's oracle, which also
checks every value and dim inference states), and through ``check_rewrite`` (signature, node count,
idempotence). Near misses check that the rules stay put where they would be wrong.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

pytest.importorskip("onnxruntime")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))
import shapearith  # noqa: E402
from test_passes_support import Outcome, all_nodes, check_rewrite, optimize, parse  # noqa: E402
from test_passes_support import run as run_model  # noqa: E402

from shapeflow.drivers.linter import LintOptions, lint_file  # noqa: E402

SIZES = (0, 1, 2, 7)


@pytest.fixture(scope="module")
def runner(ort_runner) -> Iterator[shapearith.Runner]:
    yield ort_runner  # one onnxruntime worker for the session (tests/conftest.py)


def model(body: str, *, inputs: str, outputs: str, inits: str = "", opset: int = 17) -> str:
    ir = 8 if opset <= 18 else 10
    return (f'<ir_version: {ir}, opset_import: ["" : {opset}]>\n'
            f"g ({inputs}) => ({outputs})\n" + (f"<{inits}>\n" if inits else "") + "{\n" + body + "\n}\n")


def oracle(runner: shapearith.Runner, text: str, symbols: tuple[str, ...] = ("b", "s")) -> None:
    """The original and optimized models agree bit for bit in onnxruntime at every binding of the
    symbols to 0, 1, 2, 7 where the original runs, and inference's stated values hold there."""
    m = parse(text)
    onnx.checker.check_model(m)
    bindings = [dict(zip(symbols, vals)) for vals in itertools.product(SIZES, repeat=len(symbols))]
    stats = shapearith.check_model(m, bindings, runner)
    assert stats.bindings_run > stats.bindings_failed, "the model fails in onnxruntime everywhere"
    assert stats.optimize_changed == 1, "optimize changed nothing"
    if stats.findings:
        pytest.fail("\n".join(f.line() for f in stats.findings), pytrace=False)


def ops(out: Outcome) -> list[str]:
    return [n.op_type for n in all_nodes(out.after)]


def inits(out: Outcome) -> dict[str, list[int]]:
    return {t.name: numpy_helper.to_array(t).reshape(-1).tolist() for t in out.after.graph.initializer}


# -- fold-known-value on any op (SF218) ----------------------------------------------------------

ARITH = model("""
  sh = Shape(x)
  d = Gather <axis = 0> (sh, i2)
  m = Mul(d, two)
  q = Div(m, three)
  r = Mod(q, five)
  u = Unsqueeze(r, a0)
  f = Cast <to = 1> (u)
  y = Mul(x, f)
""", inputs="float[b, s, 64] x", outputs="float[b, s, 64] y",
    inits="int64 i2 = {2}, int64 two = {2}, int64 three = {3}, int64 five = {5}, int64[1] a0 = {0}")


def test_arithmetic_on_a_static_dim_folds_at_the_end_of_the_run(runner: shapearith.Runner) -> None:
    out = optimize(ARITH)
    # 64*2 = 128, 128/3 = 42, 42 % 5 = 2: the Unsqueeze is the constant [2] (the float Cast is not
    # folded) and folds once; the Shape, Gather, Mul, Div, Mod before it go with it
    assert out.fired["fold-known-value"] == 1
    assert inits(out)["u"] == [2]
    assert ops(out) == ["Cast", "Mul"]
    check_rewrite(out, values=(0, 1, 2, 7))
    oracle(runner, ARITH)


def test_computed_target_with_a_known_element(runner: shapearith.Runner) -> None:
    text = ARITH.replace("f = Cast <to = 1> (u)\n  y = Mul(x, f)", """b0 = Gather <axis = 0> (sh, i0)
  ub = Unsqueeze(b0, a0)
  t = Concat <axis = 0> (ub, m1, u)
  y = Reshape(x, t)""").replace("float[b, s, 64] y", "float[b, ?, 2] y").replace(
        "int64 i2 = {2}", "int64 i0 = {0}, int64[1] m1 = {-1}, int64 i2 = {2}")
    out = optimize(text)
    # the target [b, -1, 2] is [0, -1, 2]: its whole computation goes
    assert out.fired == {"static-reshape-target": 1, "dead-nodes": 9}
    assert ops(out) == ["Reshape"]
    check_rewrite(out, values=(1, 2, 7))
    oracle(runner, text)


def test_shape_of_a_static_tensor_and_constant_of_shape(runner: shapearith.Runner) -> None:
    text = model("""
      sh = Shape(w)
      c = ConstantOfShape <value = int64[1] {3}> (sh)
      e = Equal(c, three)
      n = Not(e)
      z = Where(n, c, sh)
      y = Add(x, z)
    """, inputs="int64[b, 2] x, float[2] w", outputs="int64[b, 2] y", inits="int64 three = {3}")
    out = optimize(text)
    # c = [3, 3], z = Where(not [3 == 3, 3 == 3], c, Shape(w) = [2]) = [2, 2]: one constant
    assert inits(out)["z"] == [2, 2]
    assert ops(out) == ["Add"]
    check_rewrite(out, values=(0, 1, 7))
    oracle(runner, text, ("b",))


def test_known_graph_output_becomes_a_constant_node(runner: shapearith.Runner) -> None:
    text = model("""
      sh = Shape(x)
      d = Gather <axis = 0> (sh, i1)
      y = Mul(d, two)
    """, inputs="float[b, 8] x", outputs="int64 y", inits="int64 i1 = {1}, int64 two = {2}")
    out = optimize(text)
    assert ops(out) == ["Constant"]
    assert numpy_helper.to_array(out.after.graph.node[0].attribute[0].t).tolist() == 16
    check_rewrite(out, values=(0, 1, 7))
    oracle(runner, text, ("b",))


def test_known_value_in_a_function_body_is_a_constant_node() -> None:
    text = """<ir_version: 8, opset_import: ["" : 17, "local" : 1]>
    g (float[b, 8] x) => (float[b, 8] y) {
      y = local.F(x)
    }
    <domain: "local", opset_import: ["" : 17]>
    F (a) => (c) {
      k = Constant <value = int64[1] {8}> ()
      j = Constant <value = int64[1] {2}> ()
      p = Mul(k, j)
      f = Cast <to = 1> (p)
      c = Mul(a, f)
    }"""
    out = optimize(text)
    body = out.after.functions[0].node
    # a function takes no initializers: the product is a Constant node, k and j go
    assert [n.op_type for n in body] == ["Constant", "Cast", "Mul"]
    assert body[0].output[0] == "p" and numpy_helper.to_array(body[0].attribute[0].t).tolist() == [16]
    check_rewrite(out, values=(0, 1, 3))


def test_near_misses_symbolic_float_large_overridable() -> None:
    symbolic = model("""
      sh = Shape(x)
      y = Mul(sh, two)
    """, inputs="float[b, 8] x", outputs="int64[2] y", inits="int64 two = {2}")
    assert "fold-known-value" not in optimize(symbolic).fired
    floats = model("""
      sh = Shape(x)
      f = Cast <to = 1> (sh)
      y = Add(f, f)
    """, inputs="float[3, 8] x", outputs="float[2] y")
    out = optimize(floats)
    # the Shape folds (int64), the float Cast and Add stay
    assert ops(out) == ["Cast", "Add"]
    large = model("""
      c = ConstantOfShape <value = int64[1] {1}> (s)
      y = Add(c, c)
    """, inputs="float[b] x", outputs="int64[100] y", inits="int64[1] s = {100}")
    assert "fold-known-value" not in optimize(large).fired
    # an initializer that is also a graph input may be replaced by the caller
    over = parse(model("""
      sh = Shape(x)
      y = Mul(sh, k)
    """, inputs="float[3, 8] x, int64 k", outputs="int64[2] y", inits="int64 k = {2}"))
    assert "fold-known-value" not in optimize(over).fired


def test_lint_reports_one_sf218_per_run_and_fix_applies(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    path.write_bytes(parse(ARITH).SerializeToString())
    result = lint_file(str(path), LintOptions())
    found = [d for d in result.diagnostics if d.code == "SF218"]
    assert len(found) == 1 and "[2]" in found[0].message
    fixed = lint_file(str(path), LintOptions(fix=True, show_info=True))
    assert "SF218" not in {d.code for d in fixed.diagnostics}
    after = onnx.load(str(path))
    assert [n.op_type for n in after.graph.node] == ["Cast", "Mul"]


# -- static-reshape-target (SF211) ---------------------------------------------------------------

HEADS = model("""
  sh = Shape(x)
  g0 = Gather <axis = 0> (sh, i0)
  g1 = Gather <axis = 0> (sh, i1)
  u0 = Unsqueeze(g0, a0)
  u1 = Unsqueeze(g1, a0)
  t = Concat <axis = 0> (u0, u1, c12, c64)
  y = Reshape(x, t)
""", inputs="float[b, s, 768] x", outputs="float[b, s, 12, 64] y",
    inits="int64 i0 = {0}, int64 i1 = {1}, int64[1] a0 = {0}, int64[1] c12 = {12}, int64[1] c64 = {64}")


def test_computed_target_of_own_dims_becomes_zeros(runner: shapearith.Runner) -> None:
    out = optimize(HEADS)
    assert out.fired["static-reshape-target"] == 1
    assert ops(out) == ["Reshape"]
    target = out.after.graph.node[0].input[1]
    assert inits(out)[target] == [0, 0, 12, 64]
    check_rewrite(out, values=(0, 1, 2, 7))
    oracle(runner, HEADS)


MERGE = """
  sh = Shape(x)
  g0 = Gather <axis = 0> (sh, i0)
  g1 = Gather <axis = 0> (sh, i1)
  n = Mul(g0, g1)
  un = Unsqueeze(n, a0)
  t = Concat <axis = 0> (un, c64)
  y = Reshape(x, t)
"""
MERGE_INITS = "int64 i0 = {0}, int64 i1 = {1}, int64[1] a0 = {0}, int64[1] c64 = {64}"


def test_allowzero_1_target_of_own_dims_drops_allowzero(runner: shapearith.Runner) -> None:
    # torch's dynamo exporter writes allowzero=1: [b, s, 12, 64] has no 0 and no -1, and its
    # symbolic elements are the input's dims, which the constant's 0s copy once allowzero is 0
    text = HEADS.replace("y = Reshape(x, t)", "y = Reshape <allowzero = 1> (x, t)")
    out = optimize(text)
    assert out.fired["static-reshape-target"] == 1
    (node,) = out.after.graph.node
    assert inits(out)[node.input[1]] == [0, 0, 12, 64] and not node.attribute
    check_rewrite(out, values=(0, 1, 2, 7))
    oracle(runner, text)
    # a -1 beside them stays computed: under allowzero=1 a -1 beside a 0 dim is 1, under 0 an error
    minus = text.replace("int64[1] c12 = {12}", "int64[1] c12 = {-1}").replace("float[b, s, 12, 64] y",
                                                                           "float[?, ?, ?, ?] y")
    assert "static-reshape-target" not in optimize(minus).fired
    # unless b and s are >= 1 (assumed here): then no element beside the -1 is ever 0
    out = optimize(minus, assumptions={"b": (1, None), "s": (1, None)})
    assert out.fired["static-reshape-target"] == 1
    (node,) = out.after.graph.node
    assert inits(out)[node.input[1]] == [0, 0, -1, 64] and not node.attribute
    check_rewrite(out, values=(1, 2, 7))


def test_product_of_dims_becomes_minus_one_only_where_proven_nonzero(runner: shapearith.Runner) -> None:
    # [b*s, 64] from [b, s, 64] under --strict: b*s may be 0, where the computed 0 copies dim 0 (b)
    # and fails in onnxruntime at b=3, s=0 while -1 would give [0, 64]: no -1, nothing else to do
    plain = model(MERGE, inputs="float[b, s, 64] x", outputs="float[?, 64] y", inits=MERGE_INITS)
    out = optimize(plain, strict=True)
    assert "static-reshape-target" not in out.fired
    assert any("may be 0" in s for s in out.result.skipped)
    # a second Reshape with -1 beside b and s proves b, s >= 1 wherever the model runs: -1 is right
    proven = model(MERGE + """
      u0 = Unsqueeze(g0, a0)
      u1 = Unsqueeze(g1, a0)
      t2 = Concat <axis = 0> (u0, u1, m1)
      z = Reshape(x, t2)
    """, inputs="float[b, s, 64] x", outputs="float[?, 64] y, float[b, s, 64] z",
        inits=MERGE_INITS + ", int64[1] m1 = {-1}")
    out = optimize(proven, strict=True)
    assert out.fired["static-reshape-target"] == 2
    targets = {n.output[0]: inits(out)[n.input[1]] for n in out.after.graph.node if n.op_type == "Reshape"}
    assert targets == {"y": [-1, 64], "z": [0, 0, -1]}
    check_rewrite(out, values=(1, 2, 7))
    oracle(runner, proven)


def test_product_of_dims_that_may_be_0_becomes_minus_one_by_default(runner: shapearith.Runner) -> None:
    # Without --strict the -1 is written even where b*s may be 0: there the computed target's 0
    # copies b, which runs only when b is 0 too (then -1 gives 0 as well); where b is not 0 the
    # original fails (b=3, s=0) and the -1 gives [0, 64]: a failure removed, nothing changed where
    # the original runs (tf2onnx's Tensordot computes Reshape [batch * seq, 16] so)
    plain = model(MERGE, inputs="float[b, s, 64] x", outputs="float[?, 64] y", inits=MERGE_INITS)
    out = optimize(plain)
    assert out.fired["static-reshape-target"] == 1
    assert ops(out) == ["Reshape"]
    assert inits(out)[out.after.graph.node[0].input[1]] == [-1, 64]
    check_rewrite(out, values=(0, 1, 2, 7))
    oracle(runner, plain)
    feeds = {"x": np.zeros((3, 0, 64), np.float32)}
    assert isinstance(run_model(out.before, feeds), Exception)
    assert run_model(out.after, feeds)[0].shape == (0, 64)
    # [p*q, 64] of [b, s, 64], p and q another input's dims: the model runs only where p*q is b*s
    # (or p*q is 0 and b is b*s), and there the -1 gives the same; --strict wants the product
    # proven to be the element count
    other = model(MERGE.replace("sh = Shape(x)", "sh = Shape(w)"), inputs="float[b, s, 64] x, float[p, q] w",
                  outputs="float[?, 64] y", inits=MERGE_INITS)
    out = optimize(other)
    assert out.fired["static-reshape-target"] == 1
    assert inits(out)[out.after.graph.node[0].input[1]] == [-1, 64]
    for b, s, p, q in ((2, 3, 3, 2), (2, 3, 6, 1), (0, 5, 0, 4), (1, 1, 1, 1), (3, 0, 0, 7), (2, 3, 2, 2)):
        feeds = {"x": np.arange(b * s * 64, dtype=np.float32).reshape(b, s, 64),
                 "w": np.zeros((p, q), np.float32)}
        want, got = run_model(out.before, feeds), run_model(out.after, feeds)
        if isinstance(want, Exception):
            assert p * q != b * s or b * s == 0  # (2, 3, 2, 2): 4 rows of 64 from 6
            continue
        assert want[0].tobytes() == got[0].tobytes() and want[0].shape == got[0].shape
    out = optimize(other, strict=True)
    assert "static-reshape-target" not in out.fired
    assert any("may be 0" in s for s in out.result.skipped)
    out = optimize(other, strict=True, assumptions={"p": (1, None), "q": (1, None)})
    assert "static-reshape-target" not in out.fired
    assert any("not the input's element count" in s for s in out.result.skipped)
    # and the element left must be the only one not a positive integer: [b*s, 0] stays too
    zero = plain.replace("int64[1] c64 = {64}", "int64[1] c64 = {0}").replace("float[?, 64] y", "float[?, ?] y")
    assert "static-reshape-target" not in optimize(zero).fired


def test_unknown_element_beside_positive_integers_becomes_minus_one() -> None:
    # tf2onnx's STFT frames: Reshape(Range(0, n, 1), [n, 1]), n a value inference does not know
    # (here a graph input). Wherever the model runs, the output has the input's element count, so
    # dim 0 is that count over 1: [-1, 1] says the same. At n = -2 the original fails (a target
    # element below -1) and the -1 runs: a failure removed, which --strict does not allow.
    text = model("""
      r = Range(zero, n, one)
      u = Unsqueeze(n, a0)
      t = Concat <axis = 0> (u, c1)
      y = Reshape(r, t)
    """, inputs="int64 n", outputs="int64[?, 1] y",
        inits="int64 zero = {0}, int64 one = {1}, int64[1] a0 = {0}, int64[1] c1 = {1}")
    out = optimize(text)
    assert out.fired["static-reshape-target"] == 1
    assert ops(out) == ["Range", "Reshape"]
    assert inits(out)[out.after.graph.node[1].input[1]] == [-1, 1]
    assert any("removes a run-time failure" in line for line in out.result.log)
    for n in (-1, 0, 1, 2, 3, 37):
        feeds = {"n": np.array(n, np.int64)}
        want, got = run_model(out.before, feeds), run_model(out.after, feeds)
        assert not isinstance(want, Exception)
        assert want[0].tobytes() == got[0].tobytes() and want[0].shape == got[0].shape == (max(n, 0), 1)
    feeds = {"n": np.array(-2, np.int64)}
    assert isinstance(run_model(out.before, feeds), Exception)
    assert run_model(out.after, feeds)[0].shape == (0, 1)
    out = optimize(text, strict=True)
    assert "static-reshape-target" not in out.fired
    assert any("is unknown" in s for s in out.result.skipped)
    # two unknown elements, or one beside a 0 or a -1: no constant says it
    two = text.replace("t = Concat <axis = 0> (u, c1)", "t = Concat <axis = 0> (u, u)").replace("int64[?, 1] y",
                                                                                            "int64[?, ?] y")
    assert "static-reshape-target" not in optimize(two).fired
    for c in ("0", "-1"):
        other = text.replace("int64[1] c1 = {1}", f"int64[1] c1 = {{{c}}}").replace("int64[?, 1] y", "int64[?, ?] y")
        assert "static-reshape-target" not in optimize(other).fired


def test_static_reshape_target_near_misses() -> None:
    # allowzero=1 with a 0 in the target: the 0 means an empty dim, no constant says that
    az = HEADS.replace("y = Reshape(x, t)", "y = Reshape <allowzero = 1> (x, t)").replace(
        "int64[1] c12 = {12}", "int64[1] c12 = {0}").replace("float[b, s, 12, 64] y", "float[?, ?, ?, ?] y")
    assert "static-reshape-target" not in optimize(az).fired
    # a constant target is left alone (termination)
    const = model("y = Reshape(x, t)", inputs="float[b, s, 768] x", outputs="float[b, s, 12, 64] y",
                  inits="int64[4] t = {0, 0, 12, 64}")
    assert not optimize(const).result.changed
    # two symbolic elements that are not the input's dims there
    two = HEADS.replace("t = Concat <axis = 0> (u0, u1, c12, c64)", "t = Concat <axis = 0> (u1, u0, c12, c64)")
    out = optimize(two)
    assert "static-reshape-target" not in out.fired
    # a target read at run time from a graph input
    free = model("y = Reshape(x, t)", inputs="float[b, 4] x, int64[2] t", outputs="float[?, ?] y")
    assert not optimize(free).result.changed


# -- no-op-reshape (SF212) -----------------------------------------------------------------------

def test_expand_to_own_shape_goes(runner: shapearith.Runner) -> None:
    text = model("""
      sh = Shape(x)
      e = Expand(x, sh)
      f = Expand(e, ones)
      y = Relu(f)
    """, inputs="float[b, s, 4] x", outputs="float[b, s, 4] y", inits="int64[2] ones = {1, 4}")
    out = optimize(text)
    assert out.fired["no-op-reshape"] == 2
    assert ops(out) == ["Relu"]
    check_rewrite(out, values=(0, 1, 2, 7))
    oracle(runner, text)


def test_reshape_to_own_dims_goes(runner: shapearith.Runner) -> None:
    out = optimize(HEADS.replace("float[b, s, 768] x", "float[b, s, 12, 64] x")
                   .replace("y = Reshape(x, t)", "r = Reshape(x, t)\n  y = Relu(r)"))
    # the computed target becomes [0, 0, 12, 64] and that Reshape returns its input
    assert out.fired["no-op-reshape"] == 1
    assert ops(out) == ["Relu"]
    check_rewrite(out, values=(0, 1, 2, 7))
    text = model("""
      r = Reshape(x, t)
      y = Relu(r)
    """, inputs="float[b, 3, 4] x", outputs="float[b, 3, 4] y", inits="int64[3] t = {-1, 3, 4}")
    out = optimize(text)
    assert ops(out) == ["Relu"]
    oracle(runner, text, ("b",))


def test_no_op_near_misses() -> None:
    # Expand of a 1-dim to b is a broadcast, not the identity
    grow = model("""
      e = Expand(x, t)
      y = Relu(e)
    """, inputs="float[1, 4] x, int64[2] t", outputs="float[?, 4] y")
    assert "no-op-reshape" not in optimize(grow).fired
    wide = model("""
      e = Expand(x, t)
      y = Relu(e)
    """, inputs="float[b, 4] x", outputs="float[?, ?, 4] y", inits="int64[3] t = {1, 1, 4}")
    assert "no-op-reshape" not in optimize(wide).fired  # the rank grows
    # -1 beside a symbolic dim: at b = 0 onnxruntime refuses it, the input would not
    minus = model("""
      r = Reshape(x, t)
      y = Relu(r)
    """, inputs="float[b, 4] x", outputs="float[b, 4] y", inits="int64[2] t = {0, -1}")
    assert "no-op-reshape" not in optimize(minus).fired
    # allowzero=1: a 0 is an empty dim
    az = model("""
      r = Reshape <allowzero = 1> (x, t)
      y = Relu(r)
    """, inputs="float[b, 4] x", outputs="float[?, 4] y", inits="int64[2] t = {0, 4}")
    assert "no-op-reshape" not in optimize(az).fired
    # the output is a graph output: keeping its name needs an Identity, which removes nothing
    out_name = model("y = Expand(x, t)", inputs="float[b, 4] x", outputs="float[b, 4] y",
                     inits="int64[1] t = {4}")
    assert not optimize(out_name).result.changed


def test_lint_reports_sf211_and_sf212_and_fix_applies(tmp_path: Path) -> None:
    text = HEADS.replace("y = Reshape(x, t)", "r = Reshape(x, t)\n  sh2 = Shape(r)\n  e = Expand(r, sh2)\n"
                         "  y = Relu(e)")
    path = tmp_path / "m.onnx"
    path.write_bytes(parse(text).SerializeToString())
    result = lint_file(str(path), LintOptions())
    codes = [d.code for d in result.diagnostics]
    assert codes.count("SF211") == 1 and codes.count("SF212") == 1
    fixed = lint_file(str(path), LintOptions(fix=True, show_info=True))
    assert not {"SF211", "SF212"} & {d.code for d in fixed.diagnostics}
    after = onnx.load(str(path))
    assert [n.op_type for n in after.graph.node] == ["Reshape", "Relu"]
    x = np.random.default_rng(0).standard_normal((2, 3, 768)).astype(np.float32)
    import onnxruntime as ort

    want = ort.InferenceSession(parse(text).SerializeToString()).run(None, {"x": x})[0]
    got = ort.InferenceSession(after.SerializeToString()).run(None, {"x": x})[0]
    assert want.tobytes() == got.tobytes()


def test_allowzero_minus_one_beside_an_empty_dim_is_unknown(runner: shapearith.Runner) -> None:
    """Found by the fuzzer's own-shape pattern: with allowzero=1, onnxruntime makes a -1 beside a
    0 dim a 1 ([1, batch, seq] -> [1, -1, seq] at batch = seq = 0 gives [1, 1, 0]); inference
    stated batch there."""
    text = model("""
      sh = Shape(x)
      g0 = Gather <axis = 0> (sh, i0)
      u0 = Unsqueeze(g0, a0)
      g2 = Gather <axis = 0> (sh, i2)
      u2 = Unsqueeze(g2, a0)
      t = Concat <axis = 0> (u0, m1, u2)
      y = Reshape <allowzero = 1> (x, t)
    """, inputs="float[1, b, s] x", outputs="float[?, ?, ?] y", opset=18,
        inits="int64 i0 = {0}, int64 i2 = {2}, int64[1] a0 = {0}, int64[1] m1 = {-1}")
    oracle(runner, text)
