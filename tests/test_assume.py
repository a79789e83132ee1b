"""``--assume``: opt-in ranges of symbols, used by inference and optimize, always reported."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import cli_process
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
    return cli_process.shapeflow(*args, cwd=ROOT)


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


# -- the premises peers make silently (issue 22, point 4): '*>=1' and 'a==b' ----------------------

# tf2onnx-style: every dim named on its own; a mask against the sequence, and a computed 2*seq as
# a Reshape target over another input's dim (at seq = 0 it would copy b)
TWO_NAMES = onnx.parser.parse_model("""
<ir_version: 8, opset_import: ["" : 17]>
g (float[seq, 4] x, float[mlen] m, float[b, 4] w) => (float[a] z, float[c, d] y)
  <int64[1] two = {2}, int64[1] m1 = {-1}, int64[1] zero = {0}, int64[1] one = {1}>
{
  sh = Shape (x)
  s = Slice (sh, zero, one)
  s2 = Mul (s, two)
  t = Concat <axis: int = 0> (s2, m1)
  y = Reshape (w, t)
  col = Slice (x, zero, one, one)
  flat = Squeeze (col, one)
  z = Add (flat, m)
}
""")


@pytest.mark.parametrize(
    ("texts", "ranges", "same"),
    [
        (["*>=1"], {"*": (1, None)}, ()),
        (["a==b"], {}, (("a", "b"),)),
        (["a==b", "b == c", "a==b", "seq>=2"], {"seq": (2, None)}, (("a", "b"), ("b", "c"))),
    ],
)
def test_parse_premises(texts: list[str], ranges: dict, same: tuple) -> None:
    p = parse_assumptions(texts)
    assert dict(p) == ranges and p.same == same
    assert parse_assumptions(p.texts()) == p  # the reported text reads back as the same premises


@pytest.mark.parametrize("text", ["a==*", "*==a", "a==", "a===b"])
def test_parse_rejects_bad_premises(text: str) -> None:
    with pytest.raises(UsageError):
        parse_assumptions([text])


def test_every_dim_at_least_one_states_more_and_is_reported(tmp_path: Path) -> None:
    plain = analyze_model(TWO_NAMES)
    # 2*seq, or b where seq = 0 (the 0 copies w's dim): exact, if not pretty
    assert str(plain.inference.shape_of("y")[0]) == "-b*min(1, seq) + b + 2*seq"
    assert plain.inference.shape_of("z") == (None,)
    every = analyze_model(TWO_NAMES, assume=("*>=1",))
    assert str(every.inference.shape_of("y")[0]) == "2*seq"
    assert [str(d) for d in every.inference.shape_of("z")] == ["max(mlen, seq)"]
    assert every.inference.premises == ("*>=1",)
    assert every.to_json()["assumptions"] == ["*>=1"]
    path = tmp_path / "m.onnx"
    onnx.save(TWO_NAMES, path)
    r = run("infer", str(path), "--assume", "*>=1")
    assert r.returncode == 0, r.stderr
    assert "assuming *>=1" in r.stderr


def test_two_names_of_one_dim(tmp_path: Path) -> None:
    """mlen==seq: the mask's dim is the sequence's; reported as written, JSON too."""
    same = analyze_model(TWO_NAMES, assume=("seq==mlen",))
    assert [str(d) for d in same.inference.shape_of("z")] == ["seq"]
    assert [str(d) for d in same.inference.shape_of("m")] == ["seq"]
    assert same.inference.premises == ("seq==mlen",)
    path = tmp_path / "m.onnx"
    onnx.save(TWO_NAMES, path)
    r = run("infer", str(path), "--format", "json", "--assume", "seq==mlen")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["assumptions"] == ["seq==mlen"]
    r = run("infer", str(path), "--assume", "seq==nope")
    assert r.returncode == 2 and "'nope', which is not a symbol of the model" in r.stderr
    r = run("infer", str(path), "--assume", "seq==mlen", "--dim", "seq=3", "--dim", "mlen=4")
    assert r.returncode == 2 and "contradicts" in r.stderr


def test_premises_in_the_config_and_in_lint(tmp_path: Path) -> None:
    """`assume` in [tool.shapeflow] holds both forms; lint reports them per file."""
    path = tmp_path / "m.onnx"
    onnx.save(TWO_NAMES, path)
    (tmp_path / "pyproject.toml").write_text('[tool.shapeflow]\nassume = ["*>=1", "seq==mlen"]\n')
    r = run("infer", str(path), "--format", "json", "--config", str(tmp_path / "pyproject.toml"))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["assumptions"] == ["*>=1", "seq==mlen"]
    assert next(t for t in doc["tensors"] if t["name"] == "z")["shape"] == ["seq"]
    r = run("lint", str(path), "--format", "json", "--assume", "*>=1", "--assume", "seq==mlen")
    assert r.returncode in (0, 1), r.stderr
    assert json.loads(r.stdout)["assumptions"] == ["*>=1", "seq==mlen"]
    r = run("lint", str(path), "--assume", "nope==seq")
    assert r.returncode == 2 and "nope" in r.stderr


def test_optimize_reports_premises(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    src = tmp_path / "m.onnx"
    onnx.save(TWO_NAMES, src)
    r = run("optimize", str(src), "-o", str(tmp_path / "o.onnx"), "--format", "json", "--verify",
            "--assume", "*>=1", "--assume", "seq==mlen")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["assumptions"] == ["*>=1", "seq==mlen"] and doc["verified"] is not False
    r = run("optimize", str(src), "-o", str(tmp_path / "o2.onnx"), "--assume", "seq==mlen")
    assert "assuming seq==mlen: rewrites may rely on it" in r.stdout + r.stderr


def test_infer_hints_the_premise_that_would_decide(tmp_path: Path) -> None:
    """Once per symbol, only when it would state more, with how many; none under the premise."""
    path = tmp_path / "m.onnx"
    onnx.save(TWO_NAMES, path)
    r = run("infer", str(path))
    assert r.returncode == 0, r.stderr
    hints = [line.split(": hint: ")[1] for line in r.stderr.splitlines() if ": hint: " in line]
    assert "assuming seq>=1 would state 1 dim more simply (--assume 'seq>=1')" in hints, hints
    assert not any("mlen>=1" in h for h in hints)  # alone it decides nothing
    assert "assuming *>=1 would state 1 more dim and 1 dim more simply (--assume '*>=1')" in hints, hints
    # the mask against the sequence: two names a broadcast leaves unknown
    assert any("assuming mlen==seq would state 1 more dim (--assume 'mlen==seq')" in h for h in hints), hints
    r = run("infer", str(path), "--assume", "*>=1")
    assert ": hint: " not in r.stderr
    r = run("infer", str(path), "-q")
    assert ": hint: " not in r.stderr


def test_diff_takes_premises_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(TWO_NAMES, path)
    r = run("diff", str(path), str(path), "--format", "json", "--assume", "*>=1", "--assume", "seq==mlen")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["assumptions"] == ["*>=1", "seq==mlen"]
    r = run("diff", str(path), str(path), "--assume", "seq>=1")
    assert r.returncode == 0 and "assuming seq>=1" in r.stdout
    r = run("diff", str(path), str(path), "--assume", "nope>=1")
    assert r.returncode == 2 and "symbol of neither model" in r.stderr
