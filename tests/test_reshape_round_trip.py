"""Issue 16: reshape-round-trip (SF215): two Reshapes that undo each other around an elementwise
region go. Rewritten models run in onnxruntime against the original at bindings 0, 1, 2 and 7 of
each symbol (``shapearith.check_model``), and through ``check_rewrite`` (signature, node count,
idempotence); near misses stay put."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))
import shapearith  # noqa: E402
from test_fold_values import model, oracle, ops  # noqa: E402
from test_passes_support import check_rewrite, optimize, parse  # noqa: E402

from shapeflow.drivers.linter import LintOptions, lint_file  # noqa: E402


@pytest.fixture(scope="module")
def runner(ort_runner) -> Iterator[shapearith.Runner]:
    yield ort_runner  # one onnxruntime worker for the session (tests/conftest.py)


RULE = "reshape-round-trip"
INITS = ("float[4, 4] w = {1, 2, 3, 4, 5, 6, 7, 8, -1, -2, -3, -4, 0.5, 0.25, 2, 3}, "
         "int64[2] flat = {-1, 4}, int64[1] four = {4}, int64[1] zero = {0}, int64[1] one = {1}, "
         "float c1 = {0.5}, float c2 = {3}, float[1] c3 = {0.044715}, float c4 = {0.797885}, "
         "float c5 = {1}")


def mlp(region: str, *, outputs: str = "float[?, 4] y", extra_inits: str = "",
        inputs: str = "float[b, s, 4] inp", tail: str = "y = MatMul(view_13, w)") -> str:
    """dynamo's GPT-2 MLP: Gemm on [b*s, 4], a view to [b, s, 4] (allowzero=1, target computed
    from the input's shape), an elementwise ``region`` from ``view_12`` to ``act``, a view back."""
    return model(f"""
      x2 = Reshape(inp, flat)
      addmm = MatMul(x2, w)
      sh = Shape(inp)
      b0 = Gather(sh, zero)
      s0 = Gather(sh, one)
      tgt = Concat <axis = 0> (b0, s0, four)
      view_12 = Reshape <allowzero = 1> (addmm, tgt)
{region}
      view_13 = Reshape(act, flat)
      {tail}
    """, inputs=inputs, outputs=outputs, inits=INITS + extra_inits)


GELU = """
      mul_160 = Mul(view_12, c1)
      pow_1 = Pow(view_12, c2)
      mul_167 = Mul(pow_1, c3)
      add_220 = Add(view_12, mul_167)
      mul_174 = Mul(add_220, c4)
      t = Tanh(mul_174)
      add_233 = Add(t, c5)
      act = Mul(mul_160, add_233)
"""
GPT2 = mlp(GELU)


def test_gpt2_gelu_round_trip(runner: shapearith.Runner) -> None:
    out = optimize(GPT2)
    assert out.fired.get(RULE) == 1, out.fired
    after = ops(out)
    # the view and the view back are gone (only the input's flattening Reshape stays), with the
    # Shape/Gather/Concat target
    assert after.count("Reshape") == 1 and "Concat" not in after and "Shape" not in after, after
    # the GELU reads addmm; its last node produces view_13 (the region's tensors change shape:
    # they take new names)
    by_out = {n.output[0]: n for n in out.after.graph.node}
    assert [n.op_type for n in out.after.graph.node if "addmm" in n.input] == ["Mul", "Pow", "Add"]
    assert by_out["view_13"].op_type == "Mul" and "mul_160" not in by_out and "act" not in by_out
    assert list(by_out["y"].input) == ["view_13", "w"]
    check_rewrite(out, values=(0, 1, 2, 7))
    oracle(runner, GPT2)


def test_empty_region_and_unary_chain(runner: shapearith.Runner) -> None:
    chain = mlp("      a = Erf(view_12)\n      b2 = Cast <to = 10> (a)\n      c = Sigmoid(b2)\n"
                "      act = Cast <to = 1> (c)\n")
    out = optimize(chain)
    assert out.fired.get(RULE) == 1, out.fired
    check_rewrite(out, values=(0, 1, 2, 7))
    oracle(runner, chain)


def test_constant_nodes_and_a_tensor_read_twice(runner: shapearith.Runner) -> None:
    text = mlp("""
      k = Constant <value = float {2.5}> ()
      k1 = Constant <value = float[1] {-1}> ()
      a = Mul(view_12, k)
      b2 = Max(a, k1)
      act = Add(b2, a)
""")
    out = optimize(text)
    assert out.fired.get(RULE) == 1, out.fired
    check_rewrite(out, values=(0, 1, 2, 7))
    oracle(runner, text)
    # a Constant node of four elements (it broadcasts along the last axis)
    assert not fired(mlp("      k = Constant <value = float[4] {1, 2, 3, 4}> ()\n      act = Mul(view_12, k)\n"))


def fired(text: str) -> bool:
    return RULE in optimize(text).fired


def test_near_misses() -> None:
    # a region tensor read outside the region
    assert not fired(mlp(GELU, outputs="float[?, 4] y, float[b, s, 4] t"))
    assert not fired(mlp(GELU, outputs="float[?, 4] y, float[?, ?, 4] z",
                         tail="y = MatMul(view_13, w)\n      z = Neg(t)"))
    # R1's output read outside the region
    assert not fired(mlp(GELU, outputs="float[?, 4] y, float[?, ?, 4] z",
                         tail="y = MatMul(view_13, w)\n      z = Neg(view_12)"))
    # a constant with more than one element (it broadcasts along the last axis)
    assert not fired(mlp("      act = Mul(view_12, v4)\n", extra_inits=", float[4] v4 = {1, 2, 3, 4}"))
    # a non-elementwise op in the region
    assert not fired(mlp("      act = Softmax <axis = -1> (view_12)\n"))
    assert not fired(mlp("      act = MatMul(view_12, w)\n"))
    # ... deeper in the region
    assert not fired(mlp("      a = Neg(view_12)\n      b2 = Softmax <axis = -1> (a)\n      act = Abs(b2)\n"))
    # the second Reshape does not give back x's shape
    assert not fired(mlp("      act = Neg(view_12)\n", extra_inits=", int64[2] flat2 = {-1, 2}",
                         tail="y = Neg(view_13)", outputs="float[?, 2] y").replace(
        "view_13 = Reshape(act, flat)", "view_13 = Reshape(act, flat2)"))
    # the region reads a graph input of another shape (broadcast)
    assert not fired(mlp("      act = Add(view_12, k)\n", inputs="float[b, s, 4] inp, float[1] k"))
    # the constant is an initializer the caller may override
    assert not fired(mlp("      act = Add(view_12, k)\n", inputs="float[b, s, 4] inp, float[1] k",
                         extra_inits=", float[1] k = {1}"))


def test_rank_changing_constant_is_refused() -> None:
    # x has rank 0: a [1] constant would make the region's tensors rank 1
    text = model("""
      v = Reshape(x, one)
      a = Add(v, c)
      r = Reshape(a, empty)
      y = Neg(r)
    """, inputs="float x", outputs="float y",
        inits="int64[1] one = {1}, int64[0] empty = {}, float[1] c = {2}")
    assert not fired(text)


def test_lint_reports_and_fix_applies(tmp_path: Path) -> None:
    import onnx

    path = tmp_path / "m.onnx"
    onnx.save(parse(GPT2), str(path))
    result = lint_file(str(path), LintOptions(select=("SF215",)))
    assert [d.code for d in result.diagnostics] == ["SF215"]
    assert "undo each other" in result.diagnostics[0].message
    fixed = lint_file(str(path), LintOptions(select=("SF215",), fix=True))
    assert all(d.code != "SF215" for d in fixed.diagnostics)
    assert [n.op_type for n in onnx.load(str(path)).graph.node].count("Reshape") == 1


def test_unknown_dim_through_the_element_count(runner: shapearith.Runner) -> None:
    # inference cannot tell the broadcast dim of Add(inp, k) (b or kb): x is [?, 4]; R1 runs only
    # when x holds b*s*4 elements, so its unknown dim is b*s, R2's dim there
    text = mlp(GELU, inputs="float[b, s, 4] inp, float[kb, s, 4] k").replace(
        "x2 = Reshape(inp, flat)", "a = Add(inp, k)\n      x2 = Reshape(a, flat)")
    out = optimize(text)
    assert out.fired.get(RULE) == 1, out.fired
    oracle(runner, text, symbols=("b", "s", "kb"))


def test_stale_value_info_of_the_region_goes() -> None:
    import onnx

    m = parse(GPT2)
    for name in ("mul_160", "t", "act"):
        m.graph.value_info.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, ["b", "s", 4]))
    out = optimize(m)
    assert out.fired.get(RULE) == 1, out.fired
    assert not {vi.name for vi in out.after.graph.value_info} & {"mul_160", "t", "act"}
    check_rewrite(out, values=(0, 1, 2, 7))


def test_output_name_kept(runner: shapearith.Runner) -> None:
    # R2's output is a graph output: the region's last node produces it
    text = mlp(GELU, outputs="float[?, 4] y, float[?, 4] view_13")
    out = optimize(text)
    assert out.fired.get(RULE) == 1, out.fired
    check_rewrite(out, values=(0, 1, 2, 7))
    oracle(runner, text)
    # ... but with no region R2's readers would read x: the name would go
    assert not fired(mlp("", outputs="float[?, 4] y, float[?, 4] view_13").replace(
        "Reshape(act, flat)", "Reshape(view_12, flat)"))


def test_later_rounds_see_the_new_shapes(runner: shapearith.Runner) -> None:
    # found by shapearith (seed 891932320793152): a Reshape of R2's output, and one of a region
    # tensor kept by its old name, were judged next round against the region's old [48] shape
    text = model("""
      flat = Reshape(x, m1)
      m = Max(flat, c)
      g = Sigmoid(m)
      a = Add(g, m)
      sh = Shape(x)
      back = Reshape(a, sh)
      again = Reshape(back, m1)
      y = Pad(again, pads)
      z = Shape(back)
    """, inputs="float[b, 3, 4] x", outputs="float[?] y, int64[3] z",
        inits="int64[1] m1 = {-1}, float c = {2}, int64[2] pads = {0, 4}")
    out = optimize(text)
    assert out.fired.get(RULE) == 1, out.fired
    check_rewrite(out, values=(0, 1, 2, 7))
    oracle(runner, text)


def test_carried_and_full_inference_agree() -> None:
    # the region's tensors change names, so the inference carried to the next round (which keeps
    # what it knew about every surviving name) gives the model a full inference gives
    for text in (GPT2, mlp(GELU, outputs="float[?, 4] y, float[?, 4] view_13")):
        a, b = optimize(text), optimize(text, full_inference=True)
        assert a.data == b.data and a.fired == b.fired


def test_new_names_never_collide_with_existing_ones() -> None:
    # a graph input already named as the region's renamed tensor would be: the rewrite picks another
    # name (the editor collects existing names ending in /unreshaped)
    text = GPT2.replace("y = MatMul(view_13, w)", 'y0 = MatMul(view_13, w)\n      y = Add(y0, "mul_160/unreshaped")') \
        .replace("float[b, s, 4] inp", 'float[b, s, 4] inp, float[4] "mul_160/unreshaped"')
    out = optimize(text)
    assert out.fired.get(RULE) == 1, out.fired
    check_rewrite(out, values=(0, 1, 2))


def test_pow_max_min_beside_a_last_dim_of_1_stay(runner: shapearith.Runner) -> None:
    """Found by shapearith (seed 454364292090575): onnxruntime computes Pow(t, c) of a
    one-element c as x*x*x, or Max(0, t) one way, when t's last dim is not 1, and by another path,
    bit-different (powf; -0.0 and NaN), when it is 1; so removing the Reshapes around them on an
    [n, n, 1] tensor changed bits. The runtime's own outputs show the two paths."""
    import numpy as np
    import onnx.parser

    x = np.random.default_rng(1).standard_normal(36 * 36).astype(np.float32) * 3
    x[:3] = [-0.0, np.nan, 0.0]
    results = {}
    for shape in ("1296", "36, 36, 1"):
        for op in ("Pow(x, c3)", "Max(c0, x)"):
            m = onnx.parser.parse_model(
                f'<ir_version: 8, opset_import: ["" : 17]>\ng (float[{shape}] x) => (float[?] y)\n'
                f"<float c3 = {{3.0}}, float c0 = {{0.0}}, int64[1] m1 = {{-1}}>\n"
                f"{{\n p = {op}\n y = Reshape(p, m1)\n}}")
            status, res = runner.run(m.SerializeToString(), {"x": x.reshape([int(v) for v in shape.split(",")])}, ["y"])
            assert status == "ok", res
            results[(shape, op)] = res[0].tobytes()
    assert results[("1296", "Pow(x, c3)")] != results[("36, 36, 1", "Pow(x, c3)")]
    assert results[("1296", "Max(c0, x)")] != results[("36, 36, 1", "Max(c0, x)")]
    for region in ("p = Pow(flat, c3)\n      act = Neg(p)", "p = Max(c0, flat)\n      act = Neg(p)"):
        text = model(f"""
      flat = Reshape(x, m1)
      {region}
      sh = Shape(x)
      y = Reshape(act, sh)
    """, inputs="float[b, b, 1] x", outputs="float[b, b, 1] y",
            inits="int64[1] m1 = {-1}, float c3 = {3.0}, float c0 = {0.0}")
        assert not fired(text)
        # a last dim that is never 1 (4, or 12*b flattened) is fine
        assert fired(text.replace("float[b, b, 1] x", "float[b, b, 4] x").replace("float[b, b, 1] y", "float[b, b, 4] y"))
