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


@pytest.mark.parametrize("node", ["Where (c, f, x)", "Add (x, f4)", "Where (c, x, f)"])
def test_known_values_whose_shapes_do_not_broadcast_are_no_crash(node: str) -> None:
    """Known input values of shapes that do not broadcast ([4] against [2] and [3, 2]): the rule
    doubts the node (onnxruntime refuses it: SF015) and leaves the value unknown; it used to raise
    numpy's broadcast error (found by the red team of the memo keys)."""
    from shapeflow.drivers.analysis import analyze

    model = parser.parse_model(f"""
<ir_version: 8, opset_import: ["" : 17]>
g (float[3, 2] x) => (float[?] y) <int64[2] idx = {{0, 1}}, float[2] f = {{1.0, 2.0}}> {{
    t = Concat <axis = 0> (idx, idx)
    c = Cast <to = 9> (t)
    f4 = Cast <to = 1> (t)
    y = {node}
}}
""")
    a = analyze(load_model_bytes(model.SerializeToString(), "m"))  # (a rule crash raises in the tests)
    assert any(d.code == "SF015" and "Incompatible dimensions" in d.message for d in a.diagnostics), \
        [d.to_json() for d in a.diagnostics]
    assert a.inference.tensors[0]["y"] is None or a.inference.tensors[0]["y"].value is None
