"""``lint --fix``: SF104's Paddle-style axis drop (checked by running the fixed models in
onnxruntime) and the SF201-SF203 rewrites through ``shapeflow.passes``."""

from __future__ import annotations

import os
import shutil
import subprocess

import cli_process
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import parser

from lint_fixtures import paddle_in_if
from model_builders import paddle_squeeze_cases
from shapeflow.drivers.linter import LintOptions, lint_file

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(REPO, "examples")


def run_ort(model: onnx.ModelProto | str, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    data = model.SerializeToString() if isinstance(model, onnx.ModelProto) else model
    session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def fix(path, **options):
    return lint_file(str(path), LintOptions(fix=True, **options))


def write(tmp_path, model: onnx.ModelProto, name: str = "m.onnx"):
    path = tmp_path / name
    path.write_bytes(model.SerializeToString())
    return path


def codes(result) -> set[str]:
    return {d.code for d in result.diagnostics}


# -- SF104 ---------------------------------------------------------------------------------------


def test_paddle_case_3_runs_and_gives_paddles_shape(tmp_path) -> None:
    """x: [1, 3, 1, 5], Squeeze(axes=[0, 2, 3]): Paddle keeps dim 3 and gives [3, 5]."""
    path = tmp_path / "paddle.onnx"
    shutil.copy(os.path.join(EXAMPLES, "paddle_squeeze.onnx"), path)
    x = np.arange(15, dtype=np.float32).reshape(1, 3, 1, 5)
    with pytest.raises(Exception, match="must be 1"):
        run_ort(str(path), {"x": x})
    result = fix(path)
    assert result.changed and result.fixed == 1 and result.exit_code == 0
    assert codes(result) == set()
    (y,) = run_ort(str(path), {"x": x})
    assert y.shape == (3, 5)
    assert np.array_equal(y, x.reshape(3, 5))  # what paddle.squeeze(x, [0, 2, 3]) returns
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    (node,) = model.graph.node
    axes = {t.name: onnx.numpy_helper.to_array(t).tolist() for t in model.graph.initializer}
    assert axes == {node.input[1]: [0, 2]}  # the old, now unread, initializer is gone
    assert node.name == "squeeze_0"


@pytest.mark.parametrize("name, model, expected", [c for c in paddle_squeeze_cases() if c[2] != "SF104"],
                         ids=[c[0] for c in paddle_squeeze_cases() if c[2] != "SF104"])
def test_valid_paddle_cases_are_left_alone(tmp_path, name, model, expected) -> None:
    path = write(tmp_path, model)
    before = path.read_bytes()
    result = fix(path)
    assert not result.changed and path.read_bytes() == before


def test_attribute_axes_below_opset_13(tmp_path) -> None:
    model = parser.parse_model("""
<ir_version: 7, opset_import: ["" : 11]>
g (float[1, 3, 1] x) => (float[3, 1] y)
{
    [sq] y = Squeeze <axes = [0, 1]> (x)
}
""")
    path = write(tmp_path, model)
    result = fix(path)
    assert result.changed and codes(result) == set()
    fixed = onnx.load(str(path))
    (node,) = fixed.graph.node
    assert [(a.name, list(a.ints)) for a in node.attribute] == [("axes", [0])]
    assert len(node.input) == 1 and len(fixed.graph.initializer) == 0
    x = np.arange(3, dtype=np.float32).reshape(1, 3, 1)
    assert run_ort(fixed, {"x": x})[0].shape == (3, 1)


def test_no_axis_left_removes_the_node_and_rewires_readers(tmp_path) -> None:
    model = parser.parse_model("""
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] x) => (float[2, 3] y)
<int64[1] ax1 = {1}>
{
    [sq] s = Squeeze (x, ax1)
    [relu] y = Relu (s)
}
""")
    path = write(tmp_path, model)
    result = fix(path)
    assert result.changed and codes(result) == set()
    fixed = onnx.load(str(path))
    assert [(n.name, list(n.input)) for n in fixed.graph.node] == [("relu", ["x"])]
    assert len(fixed.graph.initializer) == 0
    x = np.array([[-1, 2, -3], [4, -5, 6]], dtype=np.float32)
    assert np.array_equal(run_ort(fixed, {"x": x})[0], np.maximum(x, 0))


def test_no_axis_left_on_a_graph_output_becomes_identity(tmp_path) -> None:
    model = parser.parse_model("""
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] x) => (float[2, 3] y)
<int64[1] ax1 = {1}>
{
    [sq] y = Squeeze (x, ax1)
}
""")
    path = write(tmp_path, model)
    fix(path)
    fixed = onnx.load(str(path))
    assert [(n.name, n.op_type, list(n.input), list(n.output)) for n in fixed.graph.node] == \
        [("sq", "Identity", ["x"], ["y"])]
    assert [o.name for o in fixed.graph.output] == ["y"]  # interface unchanged
    x = np.ones((2, 3), np.float32)
    assert run_ort(fixed, {"x": x})[0].shape == (2, 3)


def test_output_read_by_a_subgraph_keeps_its_name(tmp_path) -> None:
    model = parser.parse_model("""
<ir_version: 8, opset_import: ["" : 13]>
g (bool cond, float[2, 3] x) => (float[2, 3] y)
<int64[1] ax1 = {1}>
{
    [sq] s = Squeeze (x, ax1)
    [if_node] y = If (cond) <
        then_branch = t () => (float[2, 3] a) { [then_relu] a = Relu (s) },
        else_branch = e () => (float[2, 3] b) { [else_neg] b = Neg (s) }
    >
}
""")
    path = write(tmp_path, model)
    fix(path)
    fixed = onnx.load(str(path))
    assert fixed.graph.node[0].op_type == "Identity" and fixed.graph.node[0].output[0] == "s"
    x = np.array([[-1, 2, -3], [4, -5, 6]], dtype=np.float32)
    assert np.array_equal(run_ort(fixed, {"cond": np.array(False), "x": x})[0], -x)


def test_shared_initializer_is_not_edited(tmp_path) -> None:
    model = parser.parse_model("""
<ir_version: 8, opset_import: ["" : 13]>
g (float[1, 3, 1, 5] x, float[1, 3, 1, 1] z) => (float[3, 5] y, float[3] w)
<int64[3] axes = {0, 2, 3}>
{
    [bad] y = Squeeze (x, axes)
    [good] w = Squeeze (z, axes)
}
""")
    path = write(tmp_path, model)
    result = fix(path)
    assert result.fixed == 1
    fixed = onnx.load(str(path))
    inits = {t.name: onnx.numpy_helper.to_array(t).tolist() for t in fixed.graph.initializer}
    assert inits["axes"] == [0, 2, 3]
    bad, good = fixed.graph.node
    assert good.input[1] == "axes" and inits[bad.input[1]] == [0, 2]
    y, w = run_ort(fixed, {"x": np.ones((1, 3, 1, 5), np.float32), "z": np.ones((1, 3, 1, 1), np.float32)})
    assert y.shape == (3, 5) and w.shape == (3,)


def test_inside_an_if_branch(tmp_path) -> None:
    path = write(tmp_path, paddle_in_if())
    result = fix(path)
    assert result.fixed == 1 and codes(result) == set()
    fixed = onnx.load(str(path))
    then_branch = fixed.graph.node[0].attribute[0].g
    # the Constant was read by the Squeeze alone: replaced, not left behind
    assert [n.op_type for n in then_branch.node] == ["Squeeze"]
    assert [t.name for t in then_branch.initializer] == [then_branch.node[0].input[1]]
    x = np.arange(15, dtype=np.float32).reshape(1, 3, 1, 5)
    for cond in (True, False):
        (y,) = run_ort(fixed, {"cond": np.array(cond), "x": x})
        assert y.shape == (3, 5)


def test_inside_a_model_local_function(tmp_path) -> None:
    model = parser.parse_model("""
<ir_version: 8, opset_import: ["" : 13, "local" : 1]>
g (float[3, 5] x) => (float[3, 5] y)
{
    [call] y = local.F (x)
}
<domain: "local", opset_import: ["" : 13]>
F (a) => (b)
{
    k = Constant <value = float[1, 3, 1, 5] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}> ()
    kax = Constant <value = int64[3] {0, 2, 3}> ()
    [f_sq] s = Squeeze (k, kax)
    [f_add] b = Add (a, s)
}
""")
    path = write(tmp_path, model)
    result = fix(path, select=("SF104",))
    assert result.fixed == 1 and codes(result) == set()
    fixed = onnx.load(str(path))
    ops = [n.op_type for n in fixed.functions[0].node]
    assert ops == ["Constant", "Constant", "Squeeze", "Add"]  # new axes first, the old Constant gone
    x = np.zeros((3, 5), np.float32)
    expected = np.arange(1, 16, dtype=np.float32).reshape(3, 5)
    (y,) = run_ort(fixed, {"x": x})
    assert np.array_equal(y, expected)
    if _have_passes():
        # with every rule shown, the fixed Squeeze of a constant is then folded (SF203)
        path = write(tmp_path, model, "all.onnx")
        fix(path, show_info=True)
        fixed = onnx.load(str(path))
        assert "Squeeze" not in [n.op_type for n in fixed.functions[0].node]
        assert np.array_equal(run_ort(fixed, {"x": x})[0], expected)


def test_fix_is_idempotent_and_atomic(tmp_path) -> None:
    path = tmp_path / "paddle.onnx"
    shutil.copy(os.path.join(EXAMPLES, "paddle_squeeze.onnx"), path)
    os.chmod(path, 0o640)
    inode = os.stat(path).st_ino
    fix(path)
    st = os.stat(path)
    assert st.st_ino != inode  # written beside and renamed into place, never truncated
    assert st.st_mode & 0o777 == 0o640
    once = path.read_bytes()
    result = fix(path)
    assert not result.changed and path.read_bytes() == once
    assert [p.name for p in tmp_path.iterdir()] == ["paddle.onnx"]  # no temp files left


def test_fix_respects_select(tmp_path) -> None:
    path = tmp_path / "paddle.onnx"
    shutil.copy(os.path.join(EXAMPLES, "paddle_squeeze.onnx"), path)
    before = path.read_bytes()
    result = fix(path, select=("SF105",))
    assert not result.changed and path.read_bytes() == before


def test_diff_writes_nothing(tmp_path) -> None:
    path = tmp_path / "paddle.onnx"
    shutil.copy(os.path.join(EXAMPLES, "paddle_squeeze.onnx"), path)
    before = path.read_bytes()
    result = fix(path, diff=True)
    assert result.changed and result.diff.startswith(f"--- {path} (before)")
    assert result.exit_code == 1
    assert path.read_bytes() == before


# -- SF201-SF203 through shapeflow.passes --------------------------------------------------------


def _have_passes() -> bool:
    try:
        from shapeflow.drivers.optimizer import optimize_model  # noqa: F401
        from shapeflow.passes import find_candidates  # noqa: F401
    except ImportError:
        return False
    return True


def _passes():
    if not _have_passes():
        pytest.skip("shapeflow.passes (find_candidates, optimize_model) not available yet")


def test_fix_applies_the_rewrites_and_keeps_outputs_bit_identical(tmp_path) -> None:
    _passes()
    path = tmp_path / "attention.onnx"
    shutil.copy(os.path.join(EXAMPLES, "attention.onnx"), path)
    original = onnx.load(str(path))
    before = lint_file(str(path))
    assert any(d.code.startswith("SF2") for d in before.diagnostics)
    result = fix(path, show_info=True)
    assert result.changed and not any(d.code.startswith("SF2") for d in result.diagnostics)
    fixed = onnx.load(str(path))

    def count(m):
        return sum(n.op_type in ("Squeeze", "Unsqueeze") for n in m.graph.node)

    assert count(fixed) < count(original)
    rng = np.random.default_rng(0)
    feeds = {"input_ids": rng.integers(0, 100, size=(2, 7), dtype=np.int64),
             "attention_mask": np.ones((2, 7), dtype=np.int64)}
    for a, b in zip(run_ort(original, feeds), run_ort(fixed, feeds)):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    again = fix(path, show_info=True)
    assert not again.changed


def test_rewrites_are_skipped_but_the_squeeze_fix_kept_when_errors_remain(tmp_path) -> None:
    """optimize refuses a model with error-level findings; lint --fix still writes the SF104 fix
    and says why the rewrites were not applied."""
    _passes()
    model = parser.parse_model("""
<ir_version: 8, opset_import: ["" : 13]>
g (float[1, 3, 1, 5] x, float[2, 3] z) => (float[3, 5] y, float[?, ?, ?] far, float[2, 3] pair_out)
<int64[3] axes = {0, 2, 3}, int64[1] ax3 = {3}, int64[1] ax1 = {1}>
{
    [bad_sq] y = Squeeze (x, axes)
    [far_unsq] far = Unsqueeze (z, ax3)
    [unsq_pair] p = Unsqueeze (z, ax1)
    [sq_pair] pair_out = Squeeze (p, ax1)
}
""")
    path = write(tmp_path, model)
    result = fix(path, show_info=True)
    assert result.changed and result.error is None
    assert codes(result) == {"SF101", "SF201"}  # SF104 fixed; the pair waits for the error to go
    assert result.notes and "refusing to optimize" in result.notes[0]
    fixed = onnx.load(str(path))
    assert [n.op_type for n in fixed.graph.node] == ["Squeeze", "Unsqueeze", "Unsqueeze", "Squeeze"]


# -- one engine: lint --fix never adds a finding, and agrees with optimize (issue 10) -------------

CORPUS = "/work/shared/corpus"  # the exporters' models of the project (skipped when absent)


def _finding_keys(result) -> set[tuple[str, str, str | None]]:
    return {(d.code, d.location.graph, d.location.node) for d in result.diagnostics}


def test_fix_on_axis_errors_introduces_no_new_finding(tmp_path) -> None:
    """The Squeeze of 'sq_non_unit' has no axis left once dim 3 is dropped, and its output is
    declared [?, ?]: an Identity would give [2, 3, 1] (a new SF112). The repair does not fire,
    says why, and nothing else changes."""
    path = tmp_path / "axis_errors.onnx"
    shutil.copy(os.path.join(EXAMPLES, "axis_errors.onnx"), path)
    before_bytes = path.read_bytes()
    before = lint_file(str(path))
    result = fix(path)
    assert _finding_keys(result) <= _finding_keys(before)
    assert not any(d.code == "SF112" for d in result.diagnostics)
    assert ("SF104", "main", "sq_non_unit_node") in _finding_keys(result)
    assert any("not fixed" in n and "sq_non_unit_node" in n and "rank 2" in n for n in result.notes)
    assert not result.changed and path.read_bytes() == before_bytes
    after = lint_file(str(path))
    assert _finding_keys(after) == _finding_keys(before)


def test_fix_that_would_add_an_error_is_not_applied(tmp_path) -> None:
    """Dropping dim 5 from the axes gives y the shape [3, 5], but y is declared [3, 1]: the fixed
    model would have an SF112 that the broken one has not (its Squeeze cannot run, so SF112 does
    not blame the declaration). The fix is dropped, nothing is written, and a note says why."""
    model = parser.parse_model("""
<ir_version: 8, opset_import: ["" : 13]>
g (float[1, 3, 1, 5] x) => (float[3, 1] y)
<int64[3] axes = {0, 2, 3}>
{
    [bad_sq] y = Squeeze (x, axes)
}
""")
    path = write(tmp_path, model)
    before = path.read_bytes()
    assert codes(lint_file(str(path))) == {"SF104"}
    result = fix(path)
    assert not result.changed and path.read_bytes() == before
    assert codes(result) == {"SF104"}
    assert any(n.startswith("fix not applied: it would introduce SF112") for n in result.notes)


def _agreement_models() -> list[str]:
    found = sorted(os.path.join(EXAMPLES, f) for f in os.listdir(EXAMPLES) if f.endswith(".onnx"))
    if os.path.isdir(CORPUS):
        found += sorted(os.path.join(CORPUS, f) for f in os.listdir(CORPUS) if f.endswith(".onnx"))
    return found


def _shapeflow(*args: str) -> "subprocess.CompletedProcess[str]":
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return cli_process.shapeflow(*args, env=env, timeout=600)


@pytest.mark.parametrize("model", _agreement_models(), ids=os.path.basename)
def test_lint_fix_leaves_nothing_for_optimize(tmp_path, model) -> None:
    """After ``lint --fix --show-info`` (every rewrite shown, so every one applied), ``optimize
    --check`` finds nothing to rewrite (exit 0), unless the model still has error-level findings,
    which optimize refuses (exit 1) and lint still reports."""
    path = tmp_path / os.path.basename(model)
    shutil.copy(model, path)
    fixed = _shapeflow("lint", "--fix", "--show-info", "--isolated", str(path))
    assert fixed.returncode in (0, 1), fixed.stderr
    check = _shapeflow("optimize", "--check", str(path))
    if fixed.returncode == 0:
        assert check.returncode == 0, check.stdout + check.stderr
        assert "nothing to rewrite" in check.stdout
    else:
        assert check.returncode == 1 and "refusing to optimize" in check.stderr, check.stdout + check.stderr
        assert not any(d.code.startswith("SF2") for d in lint_file(str(path)).diagnostics)


@pytest.mark.parametrize("name", ["attention.onnx", "opset11_attribute_axes.onnx"])
def test_fix_diff_shows_what_optimize_writes(tmp_path, name) -> None:
    """``lint --fix --show-info --diff`` is a preview of ``optimize``: its "after" side is
    optimize's output (weights summarised, rewritediff.summarized_text)."""
    from shapeflow.drivers.rewritediff import summarized_text

    src = os.path.join(EXAMPLES, name)
    path = tmp_path / name
    shutil.copy(src, path)
    result = fix(path, diff=True, show_info=True)
    assert result.changed
    out = tmp_path / "opt.onnx"
    opt = _shapeflow("optimize", str(path), "-o", str(out))
    assert opt.returncode == 0, opt.stderr
    after = summarized_text(onnx.load(str(out))).splitlines()
    added = [line[1:] for line in result.diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    removed = [line[1:] for line in result.diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    assert added and removed
    assert all(line in after for line in added)
    # and applying the fix writes exactly optimize's model
    fix(path, show_info=True)
    assert onnx.printer.to_text(onnx.load(str(path))) == onnx.printer.to_text(onnx.load(str(out)))


def test_new_error_of_an_unselected_rule_also_stops_the_fix(tmp_path) -> None:
    """``--select SF104`` does not hide the SF112 the fix would create: the verdict on a fix runs
    every error rule, and reports only the selected ones."""
    model = parser.parse_model("""
<ir_version: 8, opset_import: ["" : 13]>
g (float[1, 3, 1, 5] x) => (float[3, 1] y)
<int64[3] axes = {0, 2, 3}>
{
    [bad_sq] y = Squeeze (x, axes)
}
""")
    path = write(tmp_path, model)
    before = path.read_bytes()
    result = fix(path, select=("SF104",))
    assert not result.changed and path.read_bytes() == before
    assert codes(result) == {"SF104"}
    assert any("SF112" in n for n in result.notes)


def test_a_fixed_model_is_analysed_once_more(tmp_path, monkeypatch) -> None:
    """lint --fix: one analysis of the input, the engine on it (no re-analysis inside), one
    analysis of the result."""
    import shapeflow.drivers.analysis
    import shapeflow.drivers.linter

    calls: list[str] = []
    real = shapeflow.drivers.analysis.analyze

    def counting(loaded, **kw):
        calls.append(loaded.path)
        return real(loaded, **kw)

    monkeypatch.setattr(shapeflow.drivers.linter, "analyze", counting)
    monkeypatch.setattr(shapeflow.drivers.analysis, "analyze", counting)
    path = tmp_path / "attention.onnx"
    shutil.copy(os.path.join(EXAMPLES, "attention.onnx"), path)
    result = fix(path, show_info=True)
    assert result.changed and len(calls) == 2


def test_dims_bound_for_lint_do_not_reach_the_rewrites(tmp_path) -> None:
    """``--dim N=1`` makes the Squeeze's dim known for this lint, but the model runs with any N:
    the rewrites of --fix are those of optimize, which binds no dim."""
    model = parser.parse_model("""
<ir_version: 8, opset_import: ["" : 13]>
g (float[N, 3] x) => (int64[1] y)
<int64[1] ax0 = {0}, int64 i0 = {0}>
{
    s = Shape (x)
    d = Gather (s, i0)
    y = Unsqueeze (d, ax0)
}
""")
    path = write(tmp_path, model)
    bound = tmp_path / "bound.onnx"
    shutil.copy(path, bound)
    fix(bound, dims=(("N", 1),), show_info=True)
    out = tmp_path / "opt.onnx"
    assert _shapeflow("optimize", str(path), "-o", str(out)).returncode == 0
    assert onnx.printer.to_text(onnx.load(str(bound))) == onnx.printer.to_text(onnx.load(str(out)))
    assert [n.op_type for n in onnx.load(str(bound)).graph.node] == ["Shape", "Slice"]  # not the constant [1]
