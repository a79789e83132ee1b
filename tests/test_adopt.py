"""Adopting shapeflow in a repository (issue 12): config resolution like ruff's, in-model suppressions
and SF008, ``--add-ignore``, the baseline, directory discovery, the quiet gate and its formats."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import onnx
import pytest

from shapeflow.cli import main
from shapeflow.drivers.config import CommandLine, Settings, glob_match, load_config, parse_config, resolve
from shapeflow.errors import UsageError

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(REPO, "examples")
AXIS = os.path.join(EXAMPLES, "axis_errors.onnx")  # SF101, SF102, SF104 (errors), SF105 (warning); IR 8
ALL_AXIS = {"SF101", "SF102", "SF104", "SF105"}


def run(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def codes_in(out: str) -> set[str]:
    return {w for line in out.splitlines() for w in line.split() if w.startswith("SF") and w[2:].isdigit()}


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A repository root (``.git`` folder) holding axis_errors.onnx, as the current directory."""
    (tmp_path / ".git").mkdir()
    shutil.copy(AXIS, tmp_path / "m.onnx")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


# -- the precedence table ----------------------------------------------------------------------------

# (config body, command line, expected codes of axis_errors.onnx)
PRECEDENCE = [
    ("", [], ALL_AXIS),                                                           # defaults
    ('select = ["SF105"]', [], {"SF105"}),                                        # config select
    ('select = ["SF105"]\nextend-select = ["SF101"]', [], {"SF101", "SF105"}),    # + extend-select
    ('ignore = ["SF104"]', [], ALL_AXIS - {"SF104"}),                             # config ignore
    ('extend-ignore = ["SF10"]', [], set()),                                     # prefix
    ('ignore = ["SF104"]', ["--select", "SF104"], {"SF104"}),                     # CLI select beats config ignore
    ('ignore = ["SF104"]', ["--extend-select", "SF104"], ALL_AXIS),               # CLI extend-select too
    ('select = ["SF105"]', ["--select", "SF104"], {"SF104"}),                     # CLI select replaces
    ('select = ["SF105"]', ["--ignore", "SF105"], set()),                         # CLI ignore removes
    ("", ["--select", "SF1", "--ignore", "SF102", "--extend-ignore", "SF101"], {"SF104", "SF105"}),
    ('per-file-ignores = { "m.onnx" = ["SF104"] }', [], ALL_AXIS - {"SF104"}),    # per file
    ('per-file-ignores = { "other/*.onnx" = ["SF104"] }', [], ALL_AXIS),          # glob not matching
    ('per-file-ignores = { "m.onnx" = ["SF104"] }', ["--extend-select", "SF104"], ALL_AXIS),
    ('ignore = ["SF1"]', ["--isolated"], ALL_AXIS),                               # --isolated reads nothing
]


@pytest.mark.parametrize("body, args, expected", PRECEDENCE)
def test_precedence_table(repo, capsys, body, args, expected) -> None:
    write(repo / "pyproject.toml", "[tool.shapeflow]\n" + body + "\n")
    _, out, _ = run(capsys, "lint", "--show-info", *args, "m.onnx")
    assert codes_in(out) == expected


def test_severity_file_then_command_line(repo, capsys) -> None:
    write(repo / "pyproject.toml", '[tool.shapeflow]\nseverity = { SF105 = "error", SF1 = "warning" }\n')
    code, out, _ = run(capsys, "lint", "m.onnx")
    assert code == 1 and "error SF105" in out and "warning SF104" in out  # most specific selector wins
    code, out, _ = run(capsys, "lint", "--severity", "SF105=warning", "m.onnx")
    assert code == 0 and "warning SF105" in out


def test_shapeflow_toml_wins_over_pyproject_in_one_directory(repo, capsys) -> None:
    write(repo / "pyproject.toml", '[tool.shapeflow]\nselect = ["SF101"]\n')
    write(repo / "shapeflow.toml", 'select = ["SF102"]\n')
    assert codes_in(run(capsys, "lint", "m.onnx")[1]) == {"SF102"}


def test_nearest_config_to_each_model(repo, capsys) -> None:
    write(repo / "pyproject.toml", '[tool.shapeflow]\nselect = ["SF101"]\n')
    write(repo / "legacy" / "shapeflow.toml", 'select = ["SF104"]\n')
    shutil.copy(AXIS, repo / "legacy" / "old.onnx")
    code, out, _ = run(capsys, "lint", "--format", "concise", "m.onnx", "legacy/old.onnx")
    lines = out.splitlines()
    assert [line.split(": ")[0] for line in lines] == ["m.onnx", "legacy/old.onnx"]
    assert codes_in(lines[0]) == {"SF101"} and codes_in(lines[1]) == {"SF104"}


def test_config_option_needs_a_table(repo, capsys) -> None:
    write(repo / "alt.toml", "[something]\nx = 1\n")
    code, out, err = run(capsys, "lint", "--config", "alt.toml", "m.onnx")
    assert code == 2 and out == "" and "alt.toml" in err and "no [tool.shapeflow] table" in err
    assert len(err.splitlines()) == 1


def test_show_settings_names_the_file(repo, capsys) -> None:
    write(repo / "pyproject.toml", '[tool.shapeflow]\nignore = ["SF110"]\nassume = ["seq>=3"]\nbaseline = "b.json"\n')
    code, out, _ = run(capsys, "lint", "--show-settings", "m.onnx")
    assert code == 0
    assert f"source = {repo / 'pyproject.toml'}" in out
    assert 'ignore = ["SF110"]' in out and 'assume = ["seq>=3"]' in out
    assert "SF110" not in out.split("rules = ")[1].splitlines()[0]
    assert str(repo / "b.json") in out


def test_assume_is_passed_through(tmp_path) -> None:
    # issue 9 wires its meaning; here it is accepted, validated as strings and resolved
    s = parse_config({"assume": ["seq>=3", "batch>=1"]}, str(tmp_path / "pyproject.toml"))
    assert s.assume == ("seq>=3", "batch>=1")
    assert resolve(s, CommandLine(), str(tmp_path / "m.onnx")).assume == ("seq>=3", "batch>=1")
    with pytest.raises(UsageError, match="assume must be a list of strings"):
        parse_config({"assume": [3]}, "p.toml")


@pytest.mark.parametrize("rel, pattern, expected", [
    ("legacy/a/b.onnx", "legacy/**/*.onnx", True),
    ("legacy/b.onnx", "legacy/**/*.onnx", True),
    ("new/b.onnx", "legacy/**/*.onnx", False),
    ("a/third_party/x.onnx", "third_party", True),
    ("m.onnx", "*.onnx", True),
    ("models/m.onnx", "models", True),
    ("models2/m.onnx", "models", False),
])
def test_globs(rel, pattern, expected) -> None:
    assert glob_match(rel, pattern) is expected


def test_load_config_defaults_without_file(tmp_path) -> None:
    (tmp_path / ".git").mkdir()
    assert load_config(start=str(tmp_path)) == Settings()


# -- suppressions in the model ----------------------------------------------------------------------

def marked(path, *, node_meta: dict[str, str] | None = None, doc: dict[str, str] | None = None,
           model_meta: str | None = None, ir: int | None = None) -> None:
    m = onnx.load(AXIS)
    if ir is not None:
        m.ir_version = ir
    for n in m.graph.node:
        if node_meta and n.name in node_meta:
            e = n.metadata_props.add()
            e.key, e.value = "shapeflow.ignore", node_meta[n.name]
        if doc and n.name in doc:
            n.doc_string = doc[n.name]
    if model_meta is not None:
        e = m.metadata_props.add()
        e.key, e.value = "shapeflow.ignore", model_meta
    onnx.save(m, str(path))


def test_node_metadata_suppresses_listed_codes_on_that_node(repo, capsys) -> None:
    marked(repo / "m.onnx", node_meta={"sq_non_unit_node": "SF104", "unsq_duplicate_node": "SF10"}, ir=10)
    code, out, _ = run(capsys, "lint", "--show-info", "m.onnx")
    assert codes_in(out) == {"SF101", "SF105"}
    assert code == 1  # SF101 is still an error


def test_doc_string_marker_and_model_wide_marker(repo, capsys) -> None:
    marked(repo / "m.onnx", doc={"sq_symbolic_node": "exported by X; shapeflow: ignore[SF105]"}, model_meta="SF101,SF102")
    code, out, _ = run(capsys, "lint", "--show-info", "m.onnx")
    assert codes_in(out) == {"SF104"}
    marked(repo / "m.onnx", model_meta="SF1")
    code, out, err = run(capsys, "lint", "m.onnx")
    assert (code, out) == (0, "")


def test_unused_suppression_is_sf008_info(repo, capsys) -> None:
    marked(repo / "m.onnx", node_meta={"relu_node": "SF104", "sq_non_unit_node": "SF104,SF9"}, ir=10)
    code, out, err = run(capsys, "lint", "m.onnx")
    assert "SF008" not in out and "info not shown" in err  # info: counted, not printed
    _, out, _ = run(capsys, "lint", "--show-info", "--select", "SF104,SF008", "m.onnx")
    lines = sorted(line for line in out.splitlines() if "SF008" in line)
    assert len(lines) == 2
    assert "node 'relu_node'" in lines[0] and "suppression 'SF104' on node 'relu_node' suppresses nothing" in lines[0]
    assert "node 'sq_non_unit_node'" in lines[1] and "'SF9'" in lines[1] and "names no rule" in lines[1]
    # a marker for a rule that did not run is not judged
    _, out, _ = run(capsys, "lint", "--show-info", "--select", "SF101,SF008", "m.onnx")
    assert "SF008" in codes_in(out) and "relu_node" not in out


# -- --add-ignore --------------------------------------------------------------------------------------

def fields_except_markers(m: onnx.ModelProto) -> bytes:
    m = onnx.ModelProto.FromString(m.SerializeToString())
    for n in m.graph.node:
        for k in reversed(range(len(n.metadata_props))):
            if n.metadata_props[k].key == "shapeflow.ignore":
                del n.metadata_props[k]
        if "shapeflow: ignore[" in n.doc_string:  # (assigning to an unset field would set it)
            rest = re.sub(r" ?shapeflow: ignore\[[^\]]*\]", "", n.doc_string)
            if rest:
                n.doc_string = rest
            else:
                n.ClearField("doc_string")
    for k in reversed(range(len(m.metadata_props))):
        if m.metadata_props[k].key == "shapeflow.ignore":
            del m.metadata_props[k]
    return m.SerializeToString()


@pytest.mark.parametrize("ir, where", [(10, "metadata"), (8, "doc_string")])
def test_add_ignore_round_trip(repo, capsys, ir, where) -> None:
    m = onnx.load(AXIS)
    m.ir_version = ir
    m.doc_string = "model doc"
    m.graph.node[0].doc_string = "kept"
    e = m.metadata_props.add()
    e.key, e.value = "author", "someone"
    onnx.save(m, str(repo / "m.onnx"))
    before = (repo / "m.onnx").read_bytes()
    code, out, err = run(capsys, "lint", "--add-ignore", "m.onnx")
    assert code == 0 and out == "" and "added 4 suppression markers to 1 file" in err
    after_bytes = (repo / "m.onnx").read_bytes()
    after = onnx.ModelProto.FromString(after_bytes)
    assert after_bytes != before
    # nothing but the markers changed, byte for byte
    assert fields_except_markers(after) == onnx.ModelProto.FromString(before).SerializeToString()
    node = next(n for n in after.graph.node if n.name == "sq_non_unit_node")
    if where == "metadata":
        assert [(p.key, p.value) for p in node.metadata_props] == [("shapeflow.ignore", "SF104")]
    else:
        assert node.doc_string == "kept shapeflow: ignore[SF104]" and len(node.metadata_props) == 0
    # the gate is now quiet, and nothing is left for SF008 to report
    code, out, err = run(capsys, "lint", "--show-info", "m.onnx")
    assert (code, out) == (0, "")
    # a second run adds nothing and writes nothing
    stat = os.stat(repo / "m.onnx")
    code, _, err = run(capsys, "lint", "--add-ignore", "m.onnx")
    assert code == 0 and "added 0 suppression markers" in err
    assert os.stat(repo / "m.onnx").st_mtime_ns == stat.st_mtime_ns


def test_add_ignore_refused_with_fix(repo, capsys) -> None:
    code, out, err = run(capsys, "lint", "--add-ignore", "--fix", "m.onnx")
    assert code == 2 and "cannot be combined" in err


# -- the baseline ----------------------------------------------------------------------------------------

def test_baseline_round_trip(repo, capsys) -> None:
    code, out, err = run(capsys, "lint", "--write-baseline", "baseline.json", "m.onnx")
    assert code == 0 and out == "" and "recorded 4 findings" in err
    doc = json.loads((repo / "baseline.json").read_text())
    assert doc["schema"] == 1 and "shapeflow_version" in doc
    assert {(e["file"], e["code"], e["node"]) for e in doc["entries"]} == {
        ("m.onnx", "SF101", "unsq_out_of_range_node"), ("m.onnx", "SF102", "unsq_duplicate_node"),
        ("m.onnx", "SF104", "sq_non_unit_node"), ("m.onnx", "SF105", "sq_symbolic_node")}
    code, out, err = run(capsys, "lint", "--baseline", "baseline.json", "m.onnx")
    assert (code, out) == (0, "") and "4 in the baseline" in err

    # an unrelated edit (a node inserted before the others) keeps the baseline valid; a new finding shows
    m = onnx.load(AXIS)
    new = onnx.helper.make_node("Squeeze", ["x_new", "ax_new"], ["y_new"], name="new_bad")
    m.graph.node.insert(0, new)
    m.graph.input.append(onnx.helper.make_tensor_value_info("x_new", onnx.TensorProto.FLOAT, [2, 3]))
    m.graph.initializer.append(onnx.helper.make_tensor("ax_new", onnx.TensorProto.INT64, [1], [1]))
    m.graph.output.append(onnx.helper.make_tensor_value_info("y_new", onnx.TensorProto.FLOAT, None))
    onnx.save(m, str(repo / "m.onnx"))
    code, out, _ = run(capsys, "lint", "--baseline", "baseline.json", "m.onnx")
    assert code == 1 and codes_in(out) == {"SF104"} and "new_bad" in out and "sq_non_unit_node" not in out

    # a fixed finding leaves the baseline without error
    shutil.copy(os.path.join(EXAMPLES, "opset11_attribute_axes.onnx"), repo / "m.onnx")
    code, out, _ = run(capsys, "lint", "--baseline", "baseline.json", "m.onnx")
    assert (code, out) == (0, "")


def test_baseline_from_config_relative_to_the_config(repo, capsys, monkeypatch) -> None:
    assert run(capsys, "lint", "--write-baseline", "b.json", "m.onnx")[0] == 0
    write(repo / "pyproject.toml", '[tool.shapeflow]\nbaseline = "b.json"\n')
    (repo / "sub").mkdir()
    monkeypatch.chdir(repo / "sub")  # keys are relative to the repository, not the current directory
    assert run(capsys, "lint", "../m.onnx")[:2] == (0, "")


def test_baseline_fingerprint_is_not_the_node_index(repo, capsys) -> None:
    # unnamed nodes: the fingerprint uses op and outputs, so reordering does not matter
    m = onnx.load(AXIS)
    for n in m.graph.node:
        n.name = ""
    onnx.save(m, str(repo / "m.onnx"))
    assert run(capsys, "lint", "--write-baseline", "b.json", "m.onnx")[0] == 0
    nodes = list(m.graph.node)
    del m.graph.node[:]
    m.graph.node.extend([*reversed(nodes[:4]), *nodes[4:]])  # the four findings' nodes, each at a new index
    onnx.save(m, str(repo / "m.onnx"))
    assert run(capsys, "lint", "--baseline", "b.json", "m.onnx")[:2] == (0, "")


def test_missing_baseline_is_a_usage_error(repo, capsys) -> None:
    code, out, err = run(capsys, "lint", "--baseline", "nope.json", "m.onnx")
    assert code == 2 and out == "" and "nope.json" in err and "--write-baseline" in err


# -- files ----------------------------------------------------------------------------------------------

def test_directories_are_searched_with_exclude(repo, capsys) -> None:
    for rel in ("a/x.onnx", "a/b/y.onnx", "third_party/z.onnx", ".venv/v.onnx"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(os.path.join(EXAMPLES, "paddle_squeeze.onnx"), repo / rel)
    (repo / "a" / "notes.txt").write_text("not a model")
    write(repo / "pyproject.toml", '[tool.shapeflow]\nexclude = ["third_party"]\n')
    code, out, err = run(capsys, "lint", "--format", "concise", ".")
    files = [line.split(": ")[0] for line in out.splitlines()]
    assert files == ["a/b/y.onnx", "a/x.onnx", "m.onnx", "m.onnx", "m.onnx", "m.onnx"] or \
        sorted(set(files)) == ["a/b/y.onnx", "a/x.onnx", "m.onnx"]
    assert "3 files" in err


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_gitignore_is_honoured_in_a_repository(tmp_path, capsys, monkeypatch) -> None:
    env_keep = {k: os.environ.get(k) for k in ("GIT_DIR", "GIT_INDEX_FILE")}
    for k in env_keep:
        monkeypatch.delenv(k, raising=False)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for rel in ("models/keep.onnx", "models/generated/skip.onnx"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(os.path.join(EXAMPLES, "paddle_squeeze.onnx"), tmp_path / rel)
    (tmp_path / ".gitignore").write_text("generated/\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "lint", "--format", "concise", "models")
    assert {line.split(": ")[0] for line in out.splitlines()} == {"models/keep.onnx"}
    # a file named explicitly is linted even when ignored (pre-commit passes exact names)
    code, out, err = run(capsys, "lint", "--format", "concise", "models/generated/skip.onnx")
    assert "models/generated/skip.onnx" in out


# -- the quiet gate -------------------------------------------------------------------------------------

def test_info_is_counted_not_printed(capsys) -> None:
    """Every format reports errors and warnings; info findings are counted, and listed only with
    --show-info (or for the codes a --select names). Nothing is fixable with --fix unless shown."""
    attention = os.path.join(EXAMPLES, "attention.onnx")
    _, out, _ = run(capsys, "lint", "--format", "json", "--show-info", attention)
    n = len(json.loads(out)["diagnostics"])
    assert n > 0 and all(d["severity"] == "info" for d in json.loads(out)["diagnostics"])
    code, out, _ = run(capsys, "lint", "--format", "json", attention)
    doc = json.loads(out)
    assert code == 0 and doc["diagnostics"] == [] and doc["summary"]["info"] == n and doc["info_not_shown"] == n
    code, out, err = run(capsys, "lint", attention)
    assert code == 0 and out == ""
    assert err == f"1 file: 0 errors, 0 warnings, {n} info not shown; --show-info\n"
    _, out, err = run(capsys, "lint", "--show-info", attention)
    assert len([line for line in out.splitlines() if " info SF2" in line]) == n
    assert err == f"1 file: 0 errors, 0 warnings, {n} info ({n} fixable with --fix)\n"


def test_statistics_and_concise(capsys) -> None:
    code, out, _ = run(capsys, "lint", "--statistics", EXAMPLES)
    lines = out.splitlines()
    counts = {line.split()[1]: int(line.split()[0]) for line in lines}  # every finding, info included
    _, js, _ = run(capsys, "lint", "--format", "json", "--show-info", EXAMPLES)
    diags = json.loads(js)["diagnostics"]
    assert counts == {c: sum(1 for d in diags if d["code"] == c) for c in {d["code"] for d in diags}}
    most = max(counts.values())
    assert code == 1 and int(lines[0].split()[0]) == most  # the most frequent code first
    _, out, _ = run(capsys, "lint", "--format", "concise", AXIS)
    assert out.splitlines()[0] == (f"{AXIS}: main/sq_non_unit_node: SF104 axis 1 has dim 3, not 1: ONNX Squeeze "
                                   "raises (Paddle's squeeze would keep the dim)")


def test_graph_order_not_name_order(tmp_path, capsys) -> None:
    # n10 before n9 by string order; the file order is n9, n10
    text = """
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2, 3] x) => (float[?] a, float[?] b)
    <int64[1] ax = {1}>
    {
        [n9] a = Squeeze (x, ax)
        [n10] b = Squeeze (x, ax)
    }
    """
    from onnx import parser

    (tmp_path / "g.onnx").write_bytes(parser.parse_model(text).SerializeToString())
    _, out, _ = run(capsys, "lint", "--format", "concise", str(tmp_path / "g.onnx"))
    assert [line.split(": ")[1] for line in out.splitlines()] == ["main/n9", "main/n10"]


def test_ignoring_a_rejection_code_is_refused(capsys) -> None:
    code, out, err = run(capsys, "lint", "--ignore", "SF001", AXIS)
    assert code == 2 and "cannot be ignored" in err and len(err.splitlines()) == 1


def test_debug_after_the_subcommand(capsys) -> None:
    code, _, _ = run(capsys, "lint", "--debug", AXIS)
    assert code == 1


# -- optimize on many files --------------------------------------------------------------------------

def test_optimize_check_and_in_place_take_many_files(tmp_path, capsys) -> None:
    a, b = tmp_path / "a.onnx", tmp_path / "sub" / "b.onnx"
    b.parent.mkdir()
    shutil.copy(os.path.join(EXAMPLES, "attention.onnx"), a)
    shutil.copy(os.path.join(EXAMPLES, "opset11_attribute_axes.onnx"), b)
    before = {p: p.read_bytes() for p in (a, b)}
    code, out, err = run(capsys, "optimize", "--check", str(a), str(b))
    assert code == 1 and out.count("--check: the model would change") == 2
    assert {p: p.read_bytes() for p in (a, b)} == before  # --check writes nothing
    code, out, err = run(capsys, "optimize", "--in-place", str(tmp_path))  # a directory
    assert code == 0 and "(written)" in err and err.count("\n") == 2
    assert all(p.read_bytes() != before[p] for p in (a, b))
    code, out, err = run(capsys, "optimize", "--check", "-q", str(a), str(b))
    assert (code, err) == (0, "")


def test_optimize_many_files_go_on_after_a_rejected_one(tmp_path, capsys) -> None:
    (tmp_path / "bad.onnx").write_bytes(b"not a model")
    shutil.copy(os.path.join(EXAMPLES, "attention.onnx"), tmp_path / "good.onnx")
    code, out, err = run(capsys, "optimize", "--check", str(tmp_path / "bad.onnx"), str(tmp_path / "good.onnx"))
    assert code == 2 and "bad.onnx" in err and "good.onnx" in out


def test_optimize_refuses_what_cannot_apply(tmp_path, capsys) -> None:
    shutil.copy(os.path.join(EXAMPLES, "attention.onnx"), tmp_path / "a.onnx")
    shutil.copy(os.path.join(EXAMPLES, "attention.onnx"), tmp_path / "b.onnx")
    code, _, err = run(capsys, "optimize", "--check", "--rules", "dead-nodes", str(tmp_path / "a.onnx"))
    assert code == 2 and "always removed" in err
    code, _, err = run(capsys, "optimize", "-o", str(tmp_path / "o.onnx"), str(tmp_path / "a.onnx"),
                       str(tmp_path / "b.onnx"))
    assert code == 2 and "-o OUTPUT takes one model" in err


# -- SARIF and GitHub paths ----------------------------------------------------------------------------

def test_sarif_and_github_paths_are_relative_to_the_repository(repo, capsys, monkeypatch) -> None:
    (repo / "models").mkdir()
    shutil.move(str(repo / "m.onnx"), repo / "models" / "m.onnx")
    (repo / "sub").mkdir()
    monkeypatch.chdir(repo / "sub")
    _, out, _ = run(capsys, "lint", "--format", "sarif", "../models/m.onnx")
    log = json.loads(out)
    run0 = log["runs"][0]
    assert run0["originalUriBaseIds"] == {"SRCROOT": {"uri": repo.as_uri() + "/"}}
    locs = {json.dumps(r["locations"][0]["physicalLocation"]["artifactLocation"]) for r in run0["results"]}
    assert locs == {json.dumps({"uri": "models/m.onnx", "uriBaseId": "SRCROOT"})}
    driver = run0["tool"]["driver"]
    assert driver["informationUri"].startswith("https://")
    rule = next(r for r in driver["rules"] if r["id"] == "SF104")
    assert rule["helpUri"].endswith("docs/rules.md#sf104-squeeze-non-unit-dim")
    _, out, _ = run(capsys, "lint", "--format", "github", "../models/m.onnx")
    assert all(line.split(" ", 1)[1].startswith("file=models/m.onnx,") for line in out.splitlines())


# -- progress: on a terminal only -------------------------------------------------------------------------

def stderr_of(args: list[str], terminal: bool) -> bytes:
    import pty
    import sys

    env = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
    if not terminal:
        return subprocess.run([sys.executable, "-m", "shapeflow", *args], capture_output=True, env=env).stderr
    master, slave = pty.openpty()
    subprocess.run([sys.executable, "-m", "shapeflow", *args], stdout=subprocess.DEVNULL, stderr=slave, env=env)
    os.close(slave)
    data = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the terminal closed
            break
        if not chunk:
            break
        data += chunk
    os.close(master)
    return data


def test_progress_on_a_terminal_and_nothing_on_a_pipe(tmp_path) -> None:
    shutil.copy(os.path.join(EXAMPLES, "attention.onnx"), tmp_path / "a.onnx")
    on_tty = stderr_of(["lint", EXAMPLES], terminal=True)
    assert b"linting 1/4: " in on_tty and b"linting 4/4: " in on_tty
    assert b"linting" not in stderr_of(["lint", EXAMPLES], terminal=False)
    on_tty = stderr_of(["optimize", str(tmp_path / "a.onnx"), "-o", str(tmp_path / "b.onnx")], terminal=True)
    assert b"writing " in on_tty
    assert b"writing" not in stderr_of(["optimize", str(tmp_path / "a.onnx"), "-o", str(tmp_path / "c.onnx")],
                                       terminal=False)


def test_lint_progress_names_the_phase_of_a_large_model(tmp_path) -> None:
    from model_builders import squeeze_unsqueeze_chain

    onnx.save(squeeze_unsqueeze_chain(30_000), str(tmp_path / "big.onnx"))
    # --no-cache: a result from the cache (an earlier run) has no inference to show
    on_tty = stderr_of(["lint", "--no-cache", str(tmp_path / "big.onnx"), os.path.join(EXAMPLES, "attention.onnx")],
                       terminal=True)
    assert b"linting 1/2: " in on_tty and b"big.onnx: inferring " in on_tty and b"/30,000 nodes" in on_tty
    assert b"big.onnx: checking rules" in on_tty  # the phase after inference has its name too


# -- packaging ---------------------------------------------------------------------------------------------

def test_version_constant_matches_pyproject_and_urls() -> None:
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    from shapeflow._version import PROJECT_URL, __version__

    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    assert project["version"] == __version__
    assert project["urls"]["Homepage"] == PROJECT_URL


def test_version_names_onnx(capsys) -> None:
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out == f"shapeflow, version {__import__('shapeflow').__version__} (onnx {onnx.__version__})\n"


def test_dim_naming_no_symbol_warns(capsys) -> None:
    code, out, err = run(capsys, "infer", "--dim", "nosuch=3", "--dim", "batch=1", AXIS)
    assert code == 1  # the findings, as without the typo
    assert "warning: --dim nosuch: the model has no symbolic dim named 'nosuch'" in err
    assert "--dim batch" not in err


def test_optimize_json_with_many_files_is_json_lines(tmp_path, capsys) -> None:
    for name in ("a.onnx", "b.onnx"):
        shutil.copy(os.path.join(EXAMPLES, "attention.onnx"), tmp_path / name)
    code, out, _ = run(capsys, "optimize", "--check", "--format", "json", str(tmp_path))
    docs = [json.loads(line) for line in out.splitlines()]
    assert code == 1 and [os.path.basename(d["model"]) for d in docs] == ["a.onnx", "b.onnx"]
    assert all(d["schema"] == 1 and d["after"]["Squeeze"] == 0 for d in docs)


def test_api_reads_the_config_unless_isolated(repo) -> None:
    import shapeflow

    write(repo / "pyproject.toml", '[tool.shapeflow]\nignore = ["SF104"]\nseverity = { SF105 = "error" }\n')
    (lint_result,) = shapeflow.lint("m.onnx")
    assert {d.code for d in lint_result.diagnostics} == ALL_AXIS - {"SF104"}
    analysis = shapeflow.infer("m.onnx")
    assert {d.code for d in analysis.diagnostics} == ALL_AXIS - {"SF104"}
    assert next(d for d in analysis.diagnostics if d.code == "SF105").severity.value == "error"
    assert {d.code for d in shapeflow.infer("m.onnx", isolated=True).diagnostics} == ALL_AXIS
    (lint_result,) = shapeflow.lint(["m.onnx"], isolated=True, select=[])
    assert {d.code for d in lint_result.diagnostics} >= ALL_AXIS
    write(repo / "other.toml", '[tool.shapeflow]\nselect = ["SF101"]\n')
    (lint_result,) = shapeflow.lint("m.onnx", config=repo / "other.toml")
    assert {d.code for d in lint_result.diagnostics} == {"SF101"}
    with pytest.raises(shapeflow.ShapeflowError, match="no model files"):
        shapeflow.lint([])


def test_fix_leaves_a_suppressed_finding_alone(tmp_path, capsys) -> None:
    """`lint --fix` acts on what the user sees: a node whose SF104 is suppressed in the model keeps
    its Squeeze; the same model without the marker is repaired."""
    import onnx.parser

    text = """
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2, 3, 1] x) => (float[?, ?] y) <int64[2] ax = {1, 2}>
    {
        [sq] y = Squeeze (x, ax)
    }
    """
    for marked in (True, False):
        m = onnx.parser.parse_model(text)
        if marked:
            m.graph.node[0].doc_string = "shapeflow: ignore[SF104]"
        path = tmp_path / f"m{int(marked)}.onnx"
        onnx.save(m, path)
        before = path.read_bytes()
        code, _, _ = run(capsys, "lint", "--fix", str(path))  # (--isolated would ignore the marker)
        after = onnx.load(path)
        if marked:
            assert path.read_bytes() == before and code == 0  # suppressed: nothing to fix, nothing shown
        else:
            assert path.read_bytes() != before
            sq = [n for n in after.graph.node if n.op_type == "Squeeze"]
            axes = [list(onnx.numpy_helper.to_array(t)) for t in after.graph.initializer if sq and t.name == sq[0].input[1]]
            assert axes == [[2]]  # axis 1 (dim 3) dropped, Paddle's result


# -- issue 23: adoption, round 2 -------------------------------------------------------------------

ATTENTION = os.path.join(EXAMPLES, "attention.onnx")  # info findings only (SF2xx): nothing to report


def test_force_exclude_applies_exclude_to_named_files(repo, capsys) -> None:
    """pre-commit names every file; --force-exclude skips those the config excludes (and the
    default excluded folders), as ``lint .`` does. Named files are linted without it; a run whose
    named files are all excluded passes (exit 0), one that names no model at all does not."""
    for rel in ("third_party/z.onnx", "build/b.onnx", "models/a.onnx"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(os.path.join(EXAMPLES, "paddle_squeeze.onnx"), repo / rel)
    write(repo / "pyproject.toml", '[tool.shapeflow]\nexclude = ["third_party"]\n')
    named = ["third_party/z.onnx", "build/b.onnx", "models/a.onnx"]
    code, out, err = run(capsys, "lint", "--format", "concise", *named)
    assert code == 1 and {line.split(": ")[0] for line in out.splitlines()} == set(named)
    code, out, err = run(capsys, "lint", "--format", "concise", "--force-exclude", *named)
    assert code == 1 and {line.split(": ")[0] for line in out.splitlines()} == {"models/a.onnx"}
    assert "1 file:" in err
    # the same files as `lint .` (m.onnx is the fixture's)
    _, dot, _ = run(capsys, "lint", "--format", "concise", ".")
    assert {line.split(": ")[0] for line in dot.splitlines()} == {"models/a.onnx", "m.onnx"}
    code, out, err = run(capsys, "lint", "--force-exclude", "third_party/z.onnx", "build/b.onnx")
    # the settings' exclude leaves what onnxruntime refuses (nothing here) to check; the default
    # folders (build) are the tool's and drop the file
    assert (code, out) == (0, "") and "1 more file, excluded by pyproject.toml" in err
    code, out, err = run(capsys, "lint", "--force-exclude", "build/b.onnx")
    assert (code, out) == (0, "") and "every model file named is excluded" in err
    code, _, err = run(capsys, "lint", "--force-exclude", "nothing_here.txt", "--isolated")
    assert code == 2  # not a model, not excluded: reported as before
    # optimize --check (the other hook) too
    code, out, err = run(capsys, "optimize", "--check", "--force-exclude", "third_party/z.onnx")
    assert code == 0 and "every model file named is excluded" in err


def _sarif(out: str) -> dict:
    return json.loads(out)["runs"][0]


def test_machine_formats_report_what_text_reports(capsys) -> None:
    """json, jsonl, sarif and github list errors and warnings; info findings only with
    --show-info or when a --select (or extend-select) names their codes."""
    for fmt in ("json", "jsonl", "sarif", "github"):
        code, out, _ = run(capsys, "lint", "--format", fmt, ATTENTION)
        assert code == 0
        if fmt == "json":
            assert json.loads(out)["diagnostics"] == []
        elif fmt == "jsonl":
            assert json.loads(out)["diagnostics"] == []
        elif fmt == "sarif":
            assert _sarif(out)["results"] == []
        else:
            assert out == ""
    _, out, _ = run(capsys, "lint", "--format", "json", "--show-info", ATTENTION)
    every = json.loads(out)["diagnostics"]
    assert len(every) > 10 and {d["code"] for d in every} > {"SF216", "SF208"}
    # a code the command line names is reported; the others stay counted only
    _, out, _ = run(capsys, "lint", "--format", "sarif", "--extend-select", "SF216", ATTENTION)
    assert {r["ruleId"] for r in _sarif(out)["results"]} == {"SF216"}
    _, out, _ = run(capsys, "lint", "--format", "json", "--select", "SF2", ATTENTION)
    doc = json.loads(out)
    assert len(doc["diagnostics"]) == len(every) and doc["info_not_shown"] == 0
    _, out, _ = run(capsys, "lint", "--format", "github", "--extend-select", "SF208", ATTENTION)
    assert out and all(line.startswith("::notice ") and "SF208" in line for line in out.splitlines())
    # and the text format follows the same rule
    _, out, _ = run(capsys, "lint", "--extend-select", "no-op-cast", ATTENTION)
    assert codes_in(out) == {"SF208"}


def test_config_select_names_info_codes_too(repo, capsys) -> None:
    shutil.copy(ATTENTION, repo / "m.onnx")
    write(repo / "pyproject.toml", '[tool.shapeflow]\nextend-select = ["SF204"]\n')
    _, out, _ = run(capsys, "lint", "--format", "json", "m.onnx")
    assert {d["code"] for d in json.loads(out)["diagnostics"]} == {"SF204"}


def test_sarif_stays_within_code_scanning_limits() -> None:
    """More findings than GitHub keeps (5,000 a run): the errors first, then the warnings, then
    info, each group in its order; the log says it was cut (a warning notification, the run's
    properties). Long messages are cut by bytes as well (an upload over 10 MB is refused)."""
    from shapeflow.diagnostics import Diagnostic, Location, Severity
    from shapeflow.render.sarif import MAX_RESULT_BYTES, MAX_RESULTS, sarif_log

    def finding(k: int, severity: Severity, message: str = "m") -> Diagnostic:
        code = {Severity.ERROR: "SF104", Severity.WARNING: "SF105", Severity.INFO: "SF201"}[severity]
        return Diagnostic(code, "x", severity, "m.onnx", f"{message} {k}", location=Location("main", f"n{k}"))

    diags = [finding(k, Severity.INFO) for k in range(MAX_RESULTS)]
    diags.insert(10, finding(-1, Severity.ERROR))
    diags.append(finding(-2, Severity.WARNING))
    run_ = sarif_log(diags, version="0")["runs"][0]
    results = run_["results"]
    assert len(results) == MAX_RESULTS
    levels = [r["level"] for r in results]
    assert levels.count("error") == 1 and levels.count("warning") == 1 and levels[10] == "error"  # order kept
    assert run_["properties"] == {"resultsTruncated": True, "resultsTotal": MAX_RESULTS + 2}
    notes = run_["invocations"][0]["toolExecutionNotifications"]
    assert notes[-1]["level"] == "warning" and f"{MAX_RESULTS:,} of {MAX_RESULTS + 2:,}" in notes[-1]["message"]["text"]
    # within the limits nothing changes: no properties, no notification
    small = sarif_log(diags[:50], version="0")["runs"][0]
    assert len(small["results"]) == 50 and "properties" not in small
    assert "toolExecutionNotifications" not in small["invocations"][0]
    # long node names: the bytes bound the results too
    long = [finding(k, Severity.ERROR, "x" * 20_000) for k in range(1000)]
    out = sarif_log(long, version="0")["runs"][0]
    assert 0 < len(out["results"]) < 1000 and len(json.dumps(out["results"])) <= MAX_RESULT_BYTES
    assert out["properties"]["resultsTotal"] == 1000


def test_baseline_is_errors_and_warnings_one_line_each(repo, capsys) -> None:
    """Info findings are never recorded (they fail nothing); each entry is one line, sorted, so
    a new or fixed finding is a one-line change; the file gets the user's umask, not 0600."""
    shutil.copy(ATTENTION, repo / "info_only.onnx")
    code, _, err = run(capsys, "lint", "--write-baseline", "b.json", "m.onnx", "info_only.onnx")
    assert code == 0 and "recorded 4 findings" in err
    text = (repo / "b.json").read_text()
    lines = text.splitlines()
    entries = [json.loads(line.strip().rstrip(",")) for line in lines if line.strip().startswith('{"file"')]
    assert len(entries) == 4 and all(e["code"] != "SF216" and e["file"] == "m.onnx" for e in entries)
    assert entries == sorted(entries, key=lambda e: (e["file"], e["code"], e["graph"], e["node"] or "",
                                                     e["fingerprint"]))
    assert json.loads(text)["entries"] == entries and len(lines) == 4 + 6
    assert oct(os.stat(repo / "b.json").st_mode & 0o777) == oct(0o666 & ~_umask())
    for mask in (0o022, 0o002):
        old = os.umask(mask)
        try:
            assert run(capsys, "lint", "--write-baseline", f"b{mask}.json", "m.onnx")[0] == 0
        finally:
            os.umask(old)
        assert os.stat(repo / f"b{mask}.json").st_mode & 0o777 == 0o666 & ~mask
    # an older baseline that lists info findings still loads
    code, out, err = run(capsys, "lint", "--baseline", "b.json", "m.onnx", "info_only.onnx")
    assert (code, out) == (0, "") and "4 in the baseline" in err


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_fix_applies_only_what_it_reports(tmp_path, capsys) -> None:
    """A model with no error and no warning is left as it is by --fix (every rewrite is info, not
    shown); an info code shown or named is applied, and only that one; a severity raised to warning
    makes a rewrite reported, hence applied."""
    import onnx as _onnx

    path = tmp_path / "m.onnx"
    shutil.copy(ATTENTION, path)
    before = path.read_bytes()
    code, out, err = run(capsys, "lint", "--fix", "--isolated", str(path))
    assert code == 0 and path.read_bytes() == before and "fixed 0 in 0 files" in err
    def casts(m) -> int:
        return sum(n.op_type == "Cast" for n in m.graph.node)

    original = _onnx.load(str(path))
    code, _, err = run(capsys, "lint", "--fix", "--isolated", "--extend-select", "SF208", str(path))
    after = _onnx.load(str(path))
    assert code == 0 and casts(after) == casts(original) - 1 and "fixed 1 in 1 file" in err
    _, out, _ = run(capsys, "lint", "--format", "json", "--show-info", "--isolated", str(path))
    left = {d["code"] for d in json.loads(out)["diagnostics"]}
    assert "SF208" not in left and {"SF216", "SF202", "SF210"} <= left  # the other rewrites were not applied
    shutil.copy(ATTENTION, path)
    code, _, err = run(capsys, "lint", "--fix", "--isolated", "--severity", "SF216=warning", str(path))
    assert path.read_bytes() != before and "fixed" in err


def test_fix_leaves_a_baselined_finding_alone(repo, capsys) -> None:
    """The baseline's findings are not reported, so --fix does not touch them; a new one is fixed."""
    paddle = os.path.join(EXAMPLES, "paddle_squeeze.onnx")
    shutil.copy(paddle, repo / "old.onnx")
    assert run(capsys, "lint", "--write-baseline", "b.json", "old.onnx")[0] == 0
    write(repo / "pyproject.toml", '[tool.shapeflow]\nbaseline = "b.json"\n')
    shutil.copy(paddle, repo / "new.onnx")
    before = (repo / "old.onnx").read_bytes()
    code, out, err = run(capsys, "lint", "--fix", "old.onnx", "new.onnx")
    assert code == 0 and "fixed 1 in 1 file" in err
    assert (repo / "old.onnx").read_bytes() == before and (repo / "new.onnx").read_bytes() != before


def test_fix_diff_summarises_weights(tmp_path, capsys) -> None:
    """lint --fix --diff and optimize --diff name each initializer (dtype, dims, digest) and never
    print its values: the diff of a model is far smaller than its weights."""
    path = tmp_path / "m.onnx"
    shutil.copy(ATTENTION, path)
    code, out, _ = run(capsys, "lint", "--fix", "--diff", "--show-info", str(path))
    assert code == 1 and out.startswith("--- ")
    weights = sum(len(t.raw_data) for t in onnx.load(str(path)).graph.initializer)
    assert len(out) < weights / 4
    assert re.search(r'float\[128,64\] "wte\.weight" = \["sha256": "[0-9a-f]{16}", "bytes": "32768"\]', out)
    # a line per initializer: the diff names the small ones that went away, and nothing else
    removed = [line for line in out.splitlines() if re.match(r"-\s+int64\[1\] axes_\d =", line)]
    assert removed == ["-      int64[1] axes_1 =  {1},", "-      int64[1] axes_2 =  {2},", "-      int64[1] axes_0 =  {0},"]
    code, out, _ = run(capsys, "optimize", "--dry-run", "--diff", str(path))
    inits = [line.strip() for line in out.splitlines() if line.strip().startswith("initializer ")]
    assert inits and all(re.search(r"^initializer \w+ \S+ \[[^]]*\]( = \[[^]]*\])? sha256:[0-9a-f]{16}$", line)
                         for line in inits), inits
