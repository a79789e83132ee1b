"""``shapeflow diff A B``: signatures and shared tensors' inferred shapes."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import cli_process
import onnx
import onnx.parser
import pytest

import shapeflow
from shapeflow.drivers.modeldiff import CHANGED, REFINED, SAME, compare_shape

from test_netx import CORPUS_MODELS

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return cli_process.shapeflow(*args, cwd=ROOT, timeout=300)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    onnx.save(onnx.parser.parse_model(text), path)
    return path


# y = Unsqueeze(x, axes); the axes and the declared dims vary between the tests
def unsqueeze_model(axes: int = 0, y_decl: str = "float[1, batch, 3] y", x_decl: str = "float[batch, 3] x",
                    extra_input: str = "") -> str:
    return f"""
    <ir_version: 8, opset_import: ["" : 13]>
    g ({x_decl}{extra_input}) => ({y_decl}) <int64[1] ax = {{{axes}}}> {{
        t = Relu(x)
        y = Unsqueeze(t, ax)
    }}"""


@pytest.mark.parametrize("shape_a, shape_b, verdict", [
    ([2, "batch"], [2, "batch"], SAME),
    ([2, "batch"], [2, "seq"], CHANGED),
    ([2, "batch"], [3, "batch"], CHANGED),
    ([2, "batch"], [2, "batch", 1], CHANGED),
    ([2, None], [2, 5], REFINED),
    ([None, "batch"], [2, None], REFINED),
    ([None, 3], [2, 4], CHANGED),  # a known dim differs, whatever else is unknown
    (None, [2, 3], REFINED),
    ([2, 3], None, REFINED),
    (None, None, SAME),
    ([], [], SAME),
])
def test_compare_shape(shape_a: list | None, shape_b: list | None, verdict: str) -> None:
    assert compare_shape(shape_a, shape_b) == verdict
    assert compare_shape(shape_b, shape_a) == verdict


OPTIMIZABLE = [EXAMPLES / "attention.onnx", EXAMPLES / "opset11_attribute_axes.onnx", *CORPUS_MODELS]


@pytest.mark.parametrize("path", OPTIMIZABLE, ids=lambda p: p.name)
def test_model_and_its_optimize_output_have_the_same_interface(path: Path, tmp_path: Path) -> None:
    out = tmp_path / "opt.onnx"
    report = shapeflow.optimize(path, out)
    assert report.changed  # there was something to rewrite, so the comparison means something
    r = run("diff", str(path), str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "signature: same" in r.stdout and ", 0 changed," in r.stdout
    d = shapeflow.diff(path, out)
    assert d.same_signature and not d.changed and d.exit_code == 0
    assert d.shared > 0 and d.only_a > 0  # rewritten tensors are gone, the rest is shared
    model = onnx.load(path)
    assert [p.name for p in d.inputs[1]] == [i.name for i in model.graph.input]


# (the tests of the signature and shapes pass --no-validate after their first run: onnx's checker and
# onnxruntime judge each model the same way every time; test_a_model_that_no_longer_loads... is theirs)
def test_changed_output_dim_is_caught(tmp_path: Path) -> None:
    a = write(tmp_path, "a.onnx", unsqueeze_model(0))
    b = write(tmp_path, "b.onnx", unsqueeze_model(1, y_decl="float[batch, 1, 3] y"))
    r = run("diff", str(a), str(b))
    assert r.returncode == 1, r.stderr
    assert "output 'y': shape [1, batch, 3] -> [batch, 1, 3]" in r.stdout
    assert "changed: 'y': float32 [1, batch, 3] -> float32 [batch, 1, 3]" in r.stdout
    doc = json.loads(run("diff", "--no-validate", str(a), str(b), "--format", "json").stdout)
    assert doc["exit_code"] == 1 and doc["signature"]["same"] is False
    assert doc["signature"]["differences"] == [
        {"kind": "output", "name": "y", "change": "shape", "a": [1, "batch", 3], "b": ["batch", 1, 3]}]
    assert doc["shapes"]["changed"] == [{"graph": "main", "tensor": "y", "a": {"dtype": "float32", "shape": [1, "batch", 3]},
                                         "b": {"dtype": "float32", "shape": ["batch", 1, 3]}}]
    # each part alone: the signature differs, and so does the shape of y
    assert run("diff", "--no-validate", str(a), str(b), "--signature-only").returncode == 1
    assert run("diff", "--no-validate", str(a), str(b), "--shapes-only").returncode == 1


def test_inferred_change_with_the_same_signature(tmp_path: Path) -> None:
    # the declared output shape is unknown in both: only inference sees the change
    a = write(tmp_path, "a.onnx", unsqueeze_model(0, y_decl="float y"))
    b = write(tmp_path, "b.onnx", unsqueeze_model(2, y_decl="float y"))
    assert run("diff", "--no-validate", str(a), str(b), "--signature-only").returncode == 0
    r = run("diff", "--no-validate", str(a), str(b), "--shapes-only")
    assert r.returncode == 1 and "'y': float32 [1, batch, 3] -> float32 [batch, 3, 1]" in r.stdout
    assert "signature" not in r.stdout
    doc = json.loads(run("diff", "--no-validate", str(a), str(b), "--shapes-only", "--format", "json").stdout)
    assert "signature" not in doc and [c["tensor"] for c in doc["shapes"]["changed"]] == ["y"]


def test_signature_changes_added_removed_moved_dtype(tmp_path: Path) -> None:
    a = write(tmp_path, "a.onnx", unsqueeze_model(0, extra_input=", float[2] w, int64[3] k"))
    b = write(tmp_path, "b.onnx", unsqueeze_model(0, x_decl="float[batch, 3] x",
                                                  extra_input=", int64[3] k, int32[2] w, float[2] v"))
    d = shapeflow.diff(a, b)
    changes = {(c.kind, c.name, c.change) for c in d.signature}
    assert changes == {("input", "v", "added"), ("input", "w", "moved"), ("input", "k", "moved"),
                       ("input", "w", "dtype")}
    assert d.exit_code == 1
    assert [(c.tensor, c.a_dtype, c.b_dtype) for c in d.changed] == [("w", "float32", "int32")]
    # moving inputs changes no tensor: without w's dtype change, the shapes agree
    c = write(tmp_path, "c.onnx", unsqueeze_model(0, extra_input=", int64[3] k, float[2] w"))
    assert run("diff", "--no-validate", str(a), str(c), "--shapes-only").returncode == 0
    r = run("diff", "--no-validate", str(a), str(c), "--signature-only")
    assert r.returncode == 1 and "input 'w': position 1 -> 2" in r.stdout


def test_symbol_renamed_is_a_change(tmp_path: Path) -> None:
    a = write(tmp_path, "a.onnx", unsqueeze_model(0, y_decl="float y"))
    b = write(tmp_path, "b.onnx", unsqueeze_model(0, y_decl="float y", x_decl="float[N, 3] x"))
    d = shapeflow.diff(a, b)
    assert [(c.name, c.change) for c in d.signature] == [("x", "shape")]
    assert sorted(c.tensor for c in d.changed) == ["t", "x", "y"]
    # binding the symbols to one value in both makes them agree
    assert shapeflow.diff(a, b, dims={"batch": 2, "N": 2}, signature=False).exit_code == 0


def test_known_on_one_side_only_is_not_a_change(tmp_path: Path) -> None:
    a = write(tmp_path, "a.onnx", unsqueeze_model(0, x_decl="float[batch, 3] x", y_decl="float y"))
    b = write(tmp_path, "b.onnx", unsqueeze_model(0, x_decl="float[batch, ?] x", y_decl="float y"))
    r = run("diff", "--no-validate", str(a), str(b), "--shapes-only")
    assert r.returncode == 0, r.stdout
    assert "0 changed, 3 known on one side only" in r.stdout
    assert "known on one side: 'y': float32 [1, batch, 3] -> float32 [1, batch, ?]" in r.stdout


def test_usage_and_rejected_input(tmp_path: Path) -> None:
    good = EXAMPLES / "attention.onnx"
    r = run("diff", str(good), str(good), "--shapes-only", "--signature-only")
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model at all")
    for args in ([str(good), str(bad)], [str(tmp_path / "missing.onnx"), str(good)], [str(good)]):
        r = run("diff", *args)
        assert r.returncode == 2 and r.stdout == "" and "Traceback" not in r.stderr, r.stderr
    r = run("diff", str(good), str(bad), "--format", "json")
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [r.stderr.strip()] and "bad.onnx" in r.stderr


def test_same_file_is_the_same(tmp_path: Path) -> None:
    r = run("diff", str(EXAMPLES / "axis_errors.onnx"), str(EXAMPLES / "axis_errors.onnx"))
    assert r.returncode == 0 and "signature: same (3 inputs, 6 outputs)" in r.stdout
    assert "same signature, 0 of" in r.stderr


def test_help_lists_diff_with_examples_and_exit_codes() -> None:
    r = run("--help")
    assert r.returncode == 0 and "diff" in r.stdout
    r = run("diff", "--help")
    assert r.returncode == 0 and "Examples" in r.stdout and "Exit codes" in r.stdout
    assert "--shapes-only" in r.stdout and "--signature-only" in r.stdout


RELU = """
<ir_version: 8, opset_import: ["" : 13]>
g (float[batch, 3] x) => (float[batch, 3] y) {
    y = Relu{attrs}(x)
}"""


def test_a_model_that_no_longer_loads_is_a_difference(tmp_path: Path) -> None:
    """An attribute Relu does not have: every signature and every inferred shape as before, but
    onnx's checker and onnxruntime both refuse B. That is a difference (exit 1), named in text
    and JSON; A against itself is the same."""
    a = write(tmp_path, "a.onnx", RELU.replace("{attrs}", ""))
    b = write(tmp_path, "b.onnx", RELU.replace("{attrs}", " <bogus: int = 1>"))
    r = run("diff", str(a), str(b))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "0 changed" in r.stdout and "signature: same" in r.stdout  # what diff saw before
    assert "B no longer passes onnx's checker: " in r.stdout and "bogus" in r.stdout
    if importlib.util.find_spec("onnxruntime") is not None:
        assert "B no longer loads in onnxruntime: " in r.stdout
    assert "validity differs" in r.stderr
    doc = json.loads(run("diff", str(a), str(b), "--format", "json").stdout)
    assert doc["exit_code"] == 1 and doc["validity"]["a"] == {"checker": None, "onnxruntime": None}
    assert doc["validity"]["b"]["checker"] and doc["validity"]["differences"]
    # the other way round, A is the one that fails
    assert "A fails onnx's checker (B does not)" in run("diff", str(b), str(a)).stdout
    # --no-validate compares what it compared before
    r = run("diff", str(a), str(b), "--no-validate")
    assert r.returncode == 0 and "validity" not in r.stdout
    assert shapeflow.diff(a, b).exit_code == 1 and shapeflow.diff(a, b, validate=False).exit_code == 0


def test_a_check_both_models_fail_is_not_a_difference(tmp_path: Path) -> None:
    """A custom operator: onnx's checker accepts it, onnxruntime has no kernel for it, in A and
    in B alike. Reported, not a difference."""
    pytest.importorskip("onnxruntime")
    text = """
    <ir_version: 8, opset_import: ["" : 13, "com.example" : 1]>
    g (float[batch, 3] x) => (float[batch, 3] y) {
        y = com.example.Frobnicate(x)
    }"""
    a = write(tmp_path, "a.onnx", text)
    b = write(tmp_path, "b.onnx", text)
    r = run("diff", str(a), str(b))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "validity: both pass onnx's checker" in r.stdout
    assert "both fail to load in onnxruntime (not a difference)" in r.stdout
