"""Issue 16: identity-element (SF213): integer/bool arithmetic with its identity element is its
other input. Every rewritten model runs in onnxruntime against the original at bindings 0, 1, 2
and 7 of each symbol (``shapearith.check_model``), and through ``check_rewrite`` (signature, node
count, idempotence); near misses stay put."""

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


MASK = model("""
  ones = ConstantOfShape <value = bool[1] {1}> (one)
  c = Less(x, y0)
  m = And(ones, c)
  y = Not(m)
""", inputs="int64[b, s] x, int64[b, s] y0", outputs="bool[b, s] y", inits="int64[1] one = {1}")


def test_and_with_all_true_is_the_other_input(runner: shapearith.Runner) -> None:
    out = optimize(MASK)
    assert out.fired.get("identity-element") == 1
    assert ops(out) == ["Less", "Not"]
    check_rewrite(out, values=(0, 1, 2, 7))
    oracle(runner, MASK)


@pytest.mark.parametrize("op, unit, const_first", [
    ("Add", 0, True), ("Add", 0, False), ("Sub", 0, False), ("Mul", 1, True), ("Div", 1, False),
])
def test_integer_identity_elements(runner: shapearith.Runner, op: str, unit: int, const_first: bool) -> None:
    args = "k, x" if const_first else "x, k"
    text = model(f"""
      z = {op}({args})
      y = Neg(z)
    """, inputs="int64[b, s] x", outputs="int64[b, s] y", inits=f"int64[1, 1] k = {{{unit}}}")
    out = optimize(text)
    assert out.fired.get("identity-element") == 1, out.fired
    assert ops(out) == ["Neg"]
    check_rewrite(out, values=(0, 1, 2, 7))
    oracle(runner, text)


def test_near_misses() -> None:
    def fired(text: str) -> bool:
        return "identity-element" in optimize(text).fired

    # the constant on the left of a Sub or Div is no identity
    assert not fired(model("z = Sub(k, x)\n y = Neg(z)", inputs="int64[b] x", outputs="int64[b] y",
                           inits="int64[1] k = {0}"))
    # not the identity element
    assert not fired(model("z = Mul(x, k)\n y = Neg(z)", inputs="int64[b] x", outputs="int64[b] y",
                           inits="int64[1] k = {2}"))
    # floats: -0 + 0 is +0
    assert not fired(model("z = Add(x, k)\n y = Neg(z)", inputs="float[b] x", outputs="float[b] y",
                           inits="float[1] k = {0}"))
    # the constant broadcasts x to a larger shape
    assert not fired(model("z = Add(x, k)\n y = Neg(z)", inputs="int64[b] x", outputs="int64[3, b] y",
                           inits="int64[3, 1] k = {0, 0, 0}"))
    assert not fired(model("z = Add(x, k)\n y = Neg(z)", inputs="int64[b] x", outputs="int64[b] y",
                           inits="int64[3] k = {0, 0, 0}"))
    # the output is a graph output: keeping its name would need an Identity
    assert not fired(model("y = Add(x, k)", inputs="int64[b] x", outputs="int64[b] y", inits="int64[1] k = {0}"))
    # the constant is an initializer the caller may override
    assert not fired(model("z = Add(x, k)\n y = Neg(z)", inputs="int64[b] x, int64[1] k", outputs="int64[b] y",
                           inits="int64[1] k = {0}"))


def test_lint_reports_and_fix_applies(tmp_path: Path) -> None:
    import onnx

    path = tmp_path / "m.onnx"
    onnx.save(parse(MASK), str(path))
    result = lint_file(str(path), LintOptions(select=("SF213",)))
    assert [d.code for d in result.diagnostics] == ["SF213"]
    assert "identity element" in result.diagnostics[0].message
    fixed = lint_file(str(path), LintOptions(select=("SF213",), fix=True))
    assert fixed.diagnostics == [] or all(d.code != "SF213" for d in fixed.diagnostics)
    assert "And" not in [n.op_type for n in onnx.load(str(path)).graph.node]
