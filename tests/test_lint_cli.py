"""``shapeflow lint`` and ``shapeflow rules`` from the command line: output formats against committed
goldens, every exit code, multi-file runs, parallel runs, and settings from pyproject.toml."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import onnx
import pytest
from onnx import parser

from lint_fixtures import FIXTURES
import shapeflow
from shapeflow.cli import main

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(REPO, "examples")
GOLDEN = os.path.join(REPO, "tests", "golden")

CLEAN = """
<ir_version: 8, opset_import: ["" : 13]>
clean (float[batch, 3] x) => (float[batch, 3] y)
{
    [relu] y = Relu (x)
}
"""

IN_IF = """
<ir_version: 8, opset_import: ["" : 13]>
in_if (bool cond, float[2, 3] x) => (float[?] y)
<int64[1] ax1 = {1}>
{
    [if_node] y = If (cond) <
        then_branch = then_g () => (float[?] t) { [then_sq] t = Squeeze (x, ax1) },
        else_branch = else_g () => (float[?] e) { [else_relu] e = Relu (x) }
    >
}
"""

# The golden run: four findings files, a clean one and an unreadable one, by relative path.
GOLDEN_FILES = ["axis_errors.onnx", "paddle.onnx", "conflicts.onnx", "in_if.onnx", "clean.onnx", "broken.onnx"]


def run(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A folder with the golden models, as the current directory (so paths print relative)."""
    shutil.copy(os.path.join(EXAMPLES, "axis_errors.onnx"), tmp_path / "axis_errors.onnx")
    shutil.copy(os.path.join(EXAMPLES, "paddle_squeeze.onnx"), tmp_path / "paddle.onnx")
    sf112 = next(f for f in FIXTURES if f.code == "SF112").model()
    (tmp_path / "conflicts.onnx").write_bytes(sf112.SerializeToString())
    (tmp_path / "in_if.onnx").write_bytes(parser.parse_model(IN_IF).SerializeToString())
    (tmp_path / "clean.onnx").write_bytes(parser.parse_model(CLEAN).SerializeToString())
    (tmp_path / "broken.onnx").write_bytes(b"this is not an ONNX model\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


# SHAPEFLOW_REGENERATE_GOLDENS=1 python -m pytest tests/test_lint_cli.py -k golden: rewrites the
# goldens from this tree's output (review the diff: a golden changes only on purpose).
REGENERATE = bool(os.environ.get("SHAPEFLOW_REGENERATE_GOLDENS"))


def golden(name: str, actual: str | None = None) -> str:
    path = os.path.join(GOLDEN, name)
    if REGENERATE and actual is not None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(actual)
    with open(path, encoding="utf-8") as f:
        return f.read()


def normalise_sarif(text: str) -> dict:
    """The log without what changes for other reasons: the version, the rule documentation
    (checked against the docstrings in test_sarif.py and by docs/rules.md), and the rules no result
    names (every rule is listed: adding one is no change of these files' findings)."""
    log = json.loads(text)
    driver = log["runs"][0]["tool"]["driver"]
    driver["version"] = "VERSION"
    named = {r["ruleId"] for run in log["runs"] for r in run.get("results", [])}
    driver["rules"] = [{"id": r["id"], "name": r["name"], "level": r["defaultConfiguration"]["level"]}
                       for r in driver["rules"] if r["id"] in named]
    for run in log["runs"]:
        for r in run.get("results", []):
            r.pop("ruleIndex", None)  # (an index into the full list)
    return log


# -- goldens -------------------------------------------------------------------------------------


def test_golden_text(workdir, capsys) -> None:
    code, out, err = run(capsys, "lint", *GOLDEN_FILES)
    assert code == 2  # broken.onnx is rejected; that outranks the findings (1)
    assert out == golden("lint.txt", out)
    assert err == golden("lint.stderr.txt", err)


def test_golden_json(workdir, capsys) -> None:
    code, out, _ = run(capsys, "lint", "--format", "json", *GOLDEN_FILES)
    assert code == 2
    doc = json.loads(out)
    assert doc["shapeflow_version"] == shapeflow.__version__ and doc["schema"] == 1
    doc["shapeflow_version"] = "VERSION"  # the golden does not change with each release
    assert doc == json.loads(golden("lint.json", json.dumps(doc, indent=2) + "\n"))


def test_golden_sarif(workdir, capsys) -> None:
    code, out, _ = run(capsys, "lint", "--format", "sarif", *GOLDEN_FILES)
    assert code == 2
    assert normalise_sarif(out) == json.loads(golden("lint.sarif", json.dumps(normalise_sarif(out), indent=2) + "\n"))


def test_golden_github(workdir, capsys) -> None:
    code, out, _ = run(capsys, "lint", "--format", "github", *GOLDEN_FILES)
    assert code == 2
    assert out == golden("lint.github.txt", out)


def test_json_matches_spec_shape(workdir, capsys) -> None:
    _, out, _ = run(capsys, "lint", "--format", "json", "axis_errors.onnx", "clean.onnx")
    data = json.loads(out)
    assert set(data) == {"shapeflow_version", "schema", "files", "diagnostics", "summary", "info_not_shown"}
    assert data["files"] == 2 and data["summary"] == {"error": 3, "warning": 1, "info": 0}
    assert data["info_not_shown"] == 0
    keys = {"code", "name", "severity", "file", "graph", "node", "op_type", "message", "hint", "fixable"}
    assert all(set(d) == keys for d in data["diagnostics"])


# -- exit codes ----------------------------------------------------------------------------------


def test_exit_0_and_quiet_when_clean(workdir, capsys) -> None:
    code, out, err = run(capsys, "lint", "clean.onnx")
    assert code == 0 and out == ""
    assert err == "1 file: 0 errors, 0 warnings, 0 info\n"
    code, out, err = run(capsys, "lint", "-q", "clean.onnx")
    assert (code, out, err) == (0, "", "")


def test_exit_1_on_error_findings(workdir, capsys) -> None:
    code, out, _ = run(capsys, "lint", "paddle.onnx")
    assert code == 1 and "SF104" in out


def test_exit_0_with_warnings_only(workdir, capsys) -> None:
    code, out, _ = run(capsys, "lint", "--select", "SF105", "axis_errors.onnx")
    assert code == 0 and "SF105" in out and "SF104" not in out


def test_exit_zero_turns_findings_into_0_but_not_rejections(workdir, capsys) -> None:
    assert run(capsys, "lint", "--exit-zero", "paddle.onnx")[0] == 0
    assert run(capsys, "lint", "--exit-zero", "paddle.onnx", "broken.onnx")[0] == 2


def test_exit_2_unreadable_and_other_files_still_linted(workdir, capsys) -> None:
    code, out, err = run(capsys, "lint", "broken.onnx", "paddle.onnx", "missing.onnx", "clean.onnx")
    assert code == 2
    lines = [line for line in out.splitlines() if not line.startswith(" ")]
    assert lines[0].startswith("broken.onnx: error SF001 model-unreadable: not an ONNX protobuf")
    assert lines[1].startswith("paddle.onnx: node 'squeeze_0' (Squeeze-13): error SF104")
    assert lines[2] == "missing.onnx: error SF001 model-unreadable: no such file"
    assert len(lines) == 3
    assert err.startswith("4 files (2 rejected): 3 errors")


@pytest.mark.parametrize("args", [
    ["--select", "SF999"],
    ["--ignore", "nonsense"],
    ["--severity", "SF104"],
    ["--severity", "SF104=fatal"],
    ["--format", "xml"],
    ["--jobs", "-1"],
])
def test_exit_2_usage_errors(workdir, capsys, args) -> None:
    code, out, err = run(capsys, "lint", *args, "clean.onnx")
    assert code == 2 and out == ""
    assert err.strip() and "Traceback" not in err


def test_exit_2_directory_and_limit(workdir, capsys) -> None:
    os.mkdir("models")
    code, out, err = run(capsys, "lint", "models")  # a directory with no model in it
    assert code == 2 and out == "" and err == "error: no model files found in models\n"
    code, out, _ = run(capsys, "lint", "--max-nodes", "2", "axis_errors.onnx")
    assert code == 2 and "SF006 limit-exceeded" in out and "--max-nodes" in out


def test_exit_3_internal_error_goes_on_with_other_files(workdir, capsys, monkeypatch) -> None:
    import shapeflow.drivers.linter as lint_module

    real = lint_module.analyze

    def broken(loaded, **kw):
        if loaded.path == "clean.onnx":
            raise RuntimeError("boom")
        return real(loaded, **kw)

    monkeypatch.setattr(lint_module, "analyze", broken)
    code, out, err = run(capsys, "lint", "clean.onnx", "paddle.onnx")
    assert code == 3
    assert "SF104" in out  # the other file was still linted
    assert "clean.onnx: internal error: RuntimeError: boom (please report it; run with --debug" in err
    assert "Traceback" not in err
    code, _, err = run(capsys, "--debug", "lint", "clean.onnx")
    assert code == 3 and "Traceback" in err


def test_exit_codes_of_the_real_entry_point(workdir) -> None:
    env = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
    for args, expected in ((["clean.onnx"], 0), (["paddle.onnx"], 1), (["broken.onnx", "clean.onnx"], 2)):
        proc = subprocess.run([sys.executable, "-m", "shapeflow", "lint", *args], capture_output=True, text=True,
                              env=env)
        assert proc.returncode == expected, proc.stderr
        assert "Traceback" not in proc.stderr


# -- several files, in parallel ------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["text", "json", "github"])
def test_parallel_output_is_identical_and_ordered(workdir, capsys, fmt) -> None:
    files = GOLDEN_FILES * 2
    serial = run(capsys, "lint", "--format", fmt, *files)
    parallel = run(capsys, "lint", "--format", fmt, "-j", "3", *files)
    assert serial == parallel


def test_no_files_is_a_usage_error(workdir, capsys) -> None:
    # a glob that matched nothing must not pass CI silently
    code, out, err = run(capsys, "lint")
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and "no model files given" in err


# -- select / ignore / severity and pyproject.toml ---------------------------------------------


def codes_in(out: str) -> set[str]:
    return {word for line in out.splitlines() for word in line.split() if word.startswith("SF") and word[2:].isdigit()}


def test_select_ignore_by_prefix_and_name(workdir, capsys) -> None:
    _, out, _ = run(capsys, "lint", "--select", "SF10", "--ignore", "duplicate-axes,SF105", "axis_errors.onnx")
    assert codes_in(out) == {"SF101", "SF104"}


def test_severity_on_command_line(workdir, capsys) -> None:
    code, out, _ = run(capsys, "lint", "--select", "SF105", "--severity", "SF105=error", "axis_errors.onnx")
    assert code == 1 and "error SF105" in out


def write_pyproject(folder, body: str) -> None:
    (folder / "pyproject.toml").write_text("[project]\nname = \"models\"\n\n[tool.shapeflow]\n" + body)


def test_pyproject_settings_and_command_line_wins(workdir, capsys) -> None:
    write_pyproject(workdir, 'select = ["SF105"]\nseverity = { SF105 = "error" }\n')
    code, out, _ = run(capsys, "lint", "axis_errors.onnx")
    assert code == 1 and codes_in(out) == {"SF105"} and "error SF105" in out
    code, out, _ = run(capsys, "lint", "--severity", "SF105=info", "--show-info", "axis_errors.onnx")
    assert code == 0 and "info SF105" in out
    code, out, _ = run(capsys, "lint", "--select", "SF104", "axis_errors.onnx")
    assert code == 1 and codes_in(out) == {"SF104"}
    code, out, _ = run(capsys, "lint", "--isolated", "axis_errors.onnx")
    assert codes_in(out) == {"SF101", "SF102", "SF104", "SF105"}


def test_pyproject_exit_zero_and_ignore(workdir, capsys) -> None:
    write_pyproject(workdir, 'ignore = ["SF1"]\nexit-zero = true\n')
    assert run(capsys, "lint", "paddle.onnx") == (0, "", "1 file: 0 errors, 0 warnings, 0 info\n")
    write_pyproject(workdir, "exit-zero = true\n")
    assert run(capsys, "lint", "paddle.onnx")[0] == 0
    assert run(capsys, "lint", "--no-exit-zero", "paddle.onnx")[0] == 1


def test_pyproject_found_in_a_parent_but_not_above_the_repository(workdir, capsys, monkeypatch) -> None:
    write_pyproject(workdir, 'select = ["SF105"]\n')
    sub = workdir / "repo" / "models"
    sub.mkdir(parents=True)
    shutil.copy("axis_errors.onnx", sub / "m.onnx")
    monkeypatch.chdir(sub)
    # outside a repository the search stops at the current directory: a config above the folder one
    # works in is not the project's (issue 20: a shapeflow.toml two folders up applied exit-zero)
    assert codes_in(run(capsys, "lint", "m.onnx")[1]) == {"SF101", "SF102", "SF104", "SF105"}
    monkeypatch.chdir(workdir)
    assert codes_in(run(capsys, "lint", "repo/models/m.onnx")[1]) == {"SF105"}  # walks up to the cwd
    (workdir / "repo" / ".git").mkdir()  # now repo/ is a repository: settings above it do not apply
    assert codes_in(run(capsys, "lint", "repo/models/m.onnx")[1]) == {"SF101", "SF102", "SF104", "SF105"}


@pytest.mark.parametrize("body, fragment", [
    ('selct = ["SF1"]\n', "unknown key 'selct'"),
    ('select = ["SF9"]\n', "names no rule"),
    ('severity = { SF104 = "fatal" }\n', "is not error, warning or info"),
    ("exit-zero = 1\n", "exit-zero must be true or false"),
    ("select = [\n", "invalid TOML"),
])
def test_pyproject_errors_exit_2(workdir, capsys, body, fragment) -> None:
    write_pyproject(workdir, body)
    code, out, err = run(capsys, "lint", "clean.onnx")
    assert code == 2 and out == "" and fragment in err and "pyproject.toml" in err


def test_config_option_names_a_file(workdir, capsys) -> None:
    other = workdir / "lint.toml"
    other.write_text('[tool.shapeflow]\nselect = ["SF101"]\n')
    _, out, _ = run(capsys, "lint", "--config", str(other), "axis_errors.onnx")
    assert codes_in(out) == {"SF101"}


# -- the repository boundary (pre-commit) --------------------------------------------------------


def test_symlink_out_of_the_repository_is_refused(tmp_path, capsys, monkeypatch) -> None:
    outside = tmp_path / "outside.onnx"
    shutil.copy(os.path.join(EXAMPLES, "paddle_squeeze.onnx"), outside)
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    os.symlink(outside, repo / "link.onnx")
    monkeypatch.chdir(repo)
    code, out, _ = run(capsys, "lint", "link.onnx")
    assert code == 2 and "symlink points outside the repository" in out
    code, out, _ = run(capsys, "lint", str(outside))  # named explicitly: the user's choice
    assert code == 1 and "SF104" in out


# -- --fix from the command line -----------------------------------------------------------------


def test_fix_diff_writes_nothing(workdir, capsys) -> None:
    before = (workdir / "paddle.onnx").read_bytes()
    code, out, err = run(capsys, "lint", "--fix", "--diff", "paddle.onnx")
    assert code == 1  # a file would change
    assert out.startswith("--- paddle.onnx (before)\n+++ paddle.onnx (after --fix)\n")
    assert "-   [squeeze_0] y = Squeeze (x, axes)" in out and "+   [squeeze_0] y = Squeeze (x, y_axes)" in out
    assert "--fix would fix 1 in 1 file" in err
    assert (workdir / "paddle.onnx").read_bytes() == before


def test_fix_writes_and_reports_what_is_left(workdir, capsys) -> None:
    code, out, err = run(capsys, "lint", "--fix", "paddle.onnx", "axis_errors.onnx")
    assert code == 1  # axis_errors keeps its SF101/SF102 errors, which have no fix
    assert "paddle.onnx" not in out and "SF101" in out
    # axis_errors' Squeeze has no axis left and its output is declared with rank 2: removing it
    # would break that output (SF112), so its SF104 stays, and the output says why (issue 10)
    assert "axis_errors.onnx: node 'sq_non_unit_node' (Squeeze-13): error SF104" in out
    assert "axis_errors.onnx: not fixed: squeeze-non-unit-dim: 'sq_non_unit_node'" in err
    assert "SF112" not in out
    assert "fixed 1 in 1 file" in err
    assert run(capsys, "lint", "paddle.onnx")[0] == 0
    model = onnx.load("paddle.onnx")
    onnx.checker.check_model(model, full_check=True)


# -- shapeflow rules -----------------------------------------------------------------------------


def test_rules_list_and_one_rule(capsys) -> None:
    code, out, _ = run(capsys, "rules")
    assert code == 0
    assert out.splitlines()[0].split() == ["code", "name", "severity", "fixable"]
    assert any(line.split()[:4] == ["SF104", "squeeze-non-unit-dim", "error", "yes"] for line in out.splitlines())
    code, out, _ = run(capsys, "rules", "SF104")
    assert code == 0 and out.startswith("SF104 squeeze-non-unit-dim (error, fixable)")
    assert "## Why is this bad?" in out and "Paddle" in out
    assert run(capsys, "rules", "squeeze-non-unit-dim")[1] == out
    code, _, err = run(capsys, "rules", "SF999")
    assert code == 2 and "unknown rule" in err


def test_rules_markdown_is_docs_file(capsys) -> None:
    code, out, _ = run(capsys, "rules", "--format", "markdown")
    with open(os.path.join(REPO, "docs", "rules.md"), encoding="utf-8") as f:
        assert code == 0 and out == f.read()


def test_docs_module_check_mode(tmp_path) -> None:
    from shapeflow.render.docs import main as docs_main

    target = tmp_path / "rules.md"
    assert docs_main(["-o", str(target)]) == 0
    assert docs_main(["--check", str(target)]) == 0
    target.write_text(target.read_text() + "edited\n")
    assert docs_main(["--check", str(target)]) == 1
