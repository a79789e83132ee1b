"""A shape rule that raises is a bug: it is reported, never swallowed. Outside the tests the node's
outputs become unknown and a warning names the node and the exception (one line from the CLI);
under the test suite (``SHAPEFLOW_RAISE_RULE_CRASHES``, tests/conftest.py) the exception escapes,
so the test that met it fails."""

from __future__ import annotations

import warnings

import onnx
import pytest
from onnx import parser

from shapeflow.errors import RuleCrashWarning
from shapeflow.graph import build_graph
from shapeflow.inference import infer
from shapeflow.io import load_model_bytes
from shapeflow.ops import REGISTRY

MODEL = """
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x) => (float[?] y) {
    s = Shape (x)
    y = Neg (s)
}
"""


class _Boom(Exception):
    pass


@pytest.fixture
def crashing_neg(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(call: object) -> object:
        raise _Boom("the rule of Neg fell over")

    monkeypatch.setitem(REGISTRY._rules, ("", "Neg"), boom)


def _graph(model: onnx.ModelProto):  # type: ignore[no-untyped-def]
    return build_graph(load_model_bytes(model.SerializeToString(), "m.onnx"))


def test_outside_the_tests_a_crash_is_a_warning_and_unknown_outputs(crashing_neg: None,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SHAPEFLOW_RAISE_RULE_CRASHES")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        inference = infer(_graph(parser.parse_model(MODEL)))
    crashes = [w for w in seen if issubclass(w.category, RuleCrashWarning)]
    assert len(crashes) == 1
    text = str(crashes[0].message)
    assert "(Neg-13)" in text and "_Boom: the rule of Neg fell over" in text and "m.onnx" in text
    assert inference.lookup(0, "y") is None  # unknown, not wrong
    assert inference.lookup(0, "s") is not None  # the rest of the model is inferred


def test_under_the_tests_a_crash_fails(crashing_neg: None) -> None:
    with pytest.raises(_Boom):
        infer(_graph(parser.parse_model(MODEL)))


def test_the_cli_says_it_in_one_line(crashing_neg: None, monkeypatch: pytest.MonkeyPatch, tmp_path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    from shapeflow.cli import main

    monkeypatch.delenv("SHAPEFLOW_RAISE_RULE_CRASHES")
    path = tmp_path / "m.onnx"
    path.write_bytes(parser.parse_model(MODEL).SerializeToString())
    with pytest.raises(SystemExit) as exit_:
        main(["infer", str(path)])
    assert exit_.value.code == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "shape rule raised" in line]
    assert len(lines) == 1 and lines[0].startswith("shapeflow: warning: ") and "(a bug, please report it)" in lines[0]
