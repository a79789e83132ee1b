"""The Python API under the commands' names."""

from __future__ import annotations

import shutil
from pathlib import Path

import onnx
import pytest

import shapeflow

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_infer_api() -> None:
    result = shapeflow.infer(EXAMPLES / "axis_errors.onnx")
    assert sorted(d.code for d in result.diagnostics) == ["SF101", "SF102", "SF104", "SF105"]
    # with batch bound to 1 the Squeeze of the batch dim is fine: SF105 goes away
    bound = shapeflow.infer(EXAMPLES / "axis_errors.onnx", dims={"batch": 1})
    assert sorted(d.code for d in bound.diagnostics) == ["SF101", "SF102", "SF104"]
    sym = next(n for n in bound.inference.axis_nodes if n.node == "sq_symbolic_node")
    assert sym.input_shape == (1, 1, 4)


def test_lint_api_one_result_per_path(tmp_path: Path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"")
    results = shapeflow.lint([EXAMPLES / "axis_errors.onnx", bad, EXAMPLES / "attention.onnx"], select=["SF1"])
    assert [r.exit_code for r in results] == [1, 2, 0]
    assert {d.code for d in results[1].diagnostics} == {"SF001"}


def test_optimize_api_writes_and_reports(tmp_path: Path) -> None:
    src = tmp_path / "m.onnx"
    shutil.copy(EXAMPLES / "attention.onnx", src)
    out = tmp_path / "out.onnx"
    report = shapeflow.optimize(src, out)
    assert report.changed and report.after["Unsqueeze"] < report.before["Unsqueeze"]
    onnx.checker.check_model(onnx.load(str(out)))
    again = shapeflow.optimize(out, tmp_path / "again.onnx")
    assert not again.changed
    assert (tmp_path / "again.onnx").read_bytes() == out.read_bytes()


def test_optimize_api_refuses_errors() -> None:
    with pytest.raises(shapeflow.ShapeflowError) as exc:
        shapeflow.optimize(EXAMPLES / "axis_errors.onnx")
    assert exc.value.exit_code == 1
