"""``--assume``: opt-in ranges of symbols, used by inference and optimize, always reported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnx.parser
import pytest

from shapeflow.assume import assumption_texts, parse_assumptions
from shapeflow.errors import UsageError

from helpers import analyze_model

ROOT = Path(__file__).resolve().parent.parent

# x[-3:] on seq, then the length read back as a shape value
LAST_THREE = onnx.parser.parse_model("""
<ir_version: 8, opset_import: ["" : 17]>
g (float[seq] x) => (float[n] y, int64[1] len)
  <int64[1] s = {-3}, int64[1] e = {9223372036854775807}>
{
  y = Slice (x, s, e)
  len = Shape (y)
}
""")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "shapeflow", *args], capture_output=True, text=True, cwd=ROOT)


@pytest.mark.parametrize(
    ("texts", "ranges"),
    [
        (["seq>=3"], {"seq": (3, None)}),
        (["seq>2"], {"seq": (3, None)}),
        (["seq<=4096", "seq>=1"], {"seq": (1, 4096)}),
        (["1<=seq<8"], {"seq": (1, 7)}),
        (["seq==4"], {"seq": (4, 4)}),
    ],
)
def test_parse(texts: list[str], ranges: dict) -> None:
    assert parse_assumptions(texts) == ranges
    again = parse_assumptions(assumption_texts(ranges))
    assert again == ranges  # the reported text reads back as the same ranges


@pytest.mark.parametrize("text", ["seq=3", "seq>=", ">=3", "seq >= x", "3<=seq"])
def test_parse_rejects_what_is_not_a_range(text: str) -> None:
    with pytest.raises(UsageError):
        parse_assumptions([text])


def test_inference_states_more_only_under_the_assumption() -> None:
    plain = analyze_model(LAST_THREE)
    assert str(plain.inference.shape_of("y")[0]) == "min(3, seq)"
    assert plain.inference.tensors[0]["len"].value == plain.inference.shape_of("y")
    assumed = analyze_model(LAST_THREE, assume=("seq>=3",))
    assert assumed.inference.shape_of("y") == (3,)
    assert assumed.inference.tensors[0]["len"].value == (3,)


def test_cli_reports_the_assumption_in_text_and_json(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(LAST_THREE, path)
    r = run("infer", str(path), "--all", "--assume", "seq>=3")
    assert r.returncode == 0, r.stderr
    assert "assuming seq>=3" in r.stderr
    r = run("infer", str(path), "--format", "json", "--assume", "seq>=3")
    doc = json.loads(r.stdout)
    assert doc["assumptions"] == ["seq>=3"]
    assert next(t for t in doc["tensors"] if t["name"] == "y")["shape"] == [3]
    r = run("infer", str(path), "--format", "json")
    doc = json.loads(r.stdout)
    assert "assumptions" not in doc  # only an output that used one says so
    assert next(t for t in doc["tensors"] if t["name"] == "y")["shape"] == ["min(3, seq)"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--assume", "batch>=1"], "'batch', which is not a symbol of the model"),
        (["--assume", "seq<=-1"], "never negative"),
        (["--assume", "seq>=5", "--assume", "seq<=2"], "empty range"),
        (["--assume", "seq>=5", "--dim", "seq=2"], "contradicts --dim seq=2"),
    ],
)
def test_bad_assumptions_are_usage_errors(tmp_path: Path, args: list[str], needle: str) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(LAST_THREE, path)
    r = run("infer", str(path), *args)
    assert r.returncode == 2
    assert needle in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_optimize_relies_on_an_assumption_only_when_given(tmp_path: Path) -> None:
    """The folded length is 3 only under seq>=3: without the assumption it stays computed, with it
    the model is folded, reported, and verified only at bindings inside the range."""
    pytest.importorskip("onnxruntime")
    model = onnx.parser.parse_model("""
<ir_version: 8, opset_import: ["" : 17]>
g (float[seq] x) => (float[a, b] y)
  <int64[1] s = {-3}, int64[1] e = {9223372036854775807}, int64[1] one = {1}, int64[1] zero = {0}>
{
  t = Slice (x, s, e)
  n = Shape (t)
  k = Squeeze (n, zero)
  u = Unsqueeze (k, zero)
  shape = Concat <axis: int = 0> (one, u)
  y = Reshape (t, shape)
}
""")
    src = tmp_path / "m.onnx"
    onnx.save(model, src)
    r = run("optimize", str(src), "-o", str(tmp_path / "plain.onnx"), "--format", "json", "--verify")
    plain = json.loads(r.stdout)
    assert r.returncode == 0, r.stderr
    assert "assumptions" not in plain and "fold-known-value" not in plain["rewrites"]
    r = run("optimize", str(src), "-o", str(tmp_path / "assumed.onnx"), "--format", "json", "--verify",
            "--assume", "seq>=3")
    assumed = json.loads(r.stdout)
    assert r.returncode == 0, r.stderr
    assert assumed["assumptions"] == ["seq>=3"] and assumed["verified"] is True
    assert assumed["rewrites"].get("fold-known-value", 0) >= 1
    # the assumed model is right inside the range and only there
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 4
    before = ort.InferenceSession(src.read_bytes(), so)
    after = ort.InferenceSession((tmp_path / "assumed.onnx").read_bytes(), so)
    for seq in (3, 4, 9):
        x = np.arange(seq, dtype=np.float32)
        assert before.run(None, {"x": x})[0].tobytes() == after.run(None, {"x": x})[0].tobytes()
    x = np.arange(2, dtype=np.float32)
    with pytest.raises(Exception):
        after.run(None, {"x": x})  # outside the assumption the folded shape [1, 3] is wrong


def test_lint_judges_dims_under_the_assumption() -> None:
    """A Squeeze of batch is SF105 (fails unless batch is 1) by default, SF104 (always fails)
    under batch>=2, and stays SF105 under batch>=1."""
    model = onnx.parser.parse_model("""
<ir_version: 8, opset_import: ["" : 13]>
g (float[batch, 4] x) => (float[4] y) <int64[1] zero = {0}>
{
  y = Squeeze (x, zero)
}
""")
    codes = lambda *assume: sorted(d.code for d in analyze_model(model, assume=assume).diagnostics)  # noqa: E731
    assert codes() == ["SF105"]
    assert codes("batch>=1") == ["SF105"]
    assert codes("batch>=2") == ["SF104"]


def test_infer_output_under_an_assumption_says_so(tmp_path: Path) -> None:
    """`infer -o` writes dims that hold only under --assume: stderr says so (the model file gains
    no metadata key, RELIABILITY.md section 2.10)."""
    src = tmp_path / "m.onnx"
    onnx.save(LAST_THREE, src)
    r = run("infer", str(src), "-o", str(tmp_path / "out.onnx"), "--assume", "seq>=3")
    assert r.returncode == 0, r.stderr
    assert "hold only where seq>=3" in r.stderr
    r = run("infer", str(src), "-o", str(tmp_path / "plain.onnx"))
    assert "hold only where" not in r.stderr
