"""`shapeflow infer` as a user runs it: a subprocess, its exit codes, its text and JSON."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import cli_process
import onnx
import pytest

from helpers import axes_node_model

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return cli_process.shapeflow(*args, cwd=cwd, timeout=120)


def test_version_and_help() -> None:
    r = run("--version")
    assert r.returncode == 0 and "shapeflow" in r.stdout
    for cmd in ("infer",):
        r = run(cmd, "--help")
        assert r.returncode == 0 and "Example" in r.stdout and "Exit codes" in r.stdout


def test_clean_model_exits_0_with_table_and_summary() -> None:
    r = run("infer", str(EXAMPLES / "attention.onnx"))
    assert r.returncode == 0, r.stderr
    assert "Unsqueeze-13" in r.stdout and "[batch, 1, 1, seq]" in r.stdout
    summary, *rest = r.stderr.splitlines()
    assert "0 errors" in summary
    # [batch*seq, ...] back to [batch, seq, ...]: at seq = 0 the copied dim is the input's, so the
    # dim is seq - 64*min(1, seq) + 64 (seq from seq = 1 on); either premise states it as seq
    assert rest == [f"{EXAMPLES / 'attention.onnx'}: hint: assuming {s}>=1 would state 10 dims more simply "
                    f"(--assume '{s}>=1')" for s in ("batch", "seq")]


def test_axis_errors_exit_1() -> None:
    r = run("infer", str(EXAMPLES / "axis_errors.onnx"))
    assert r.returncode == 1
    assert "error SF104 squeeze-non-unit-dim: axis 1 has dim 3, not 1" in r.stdout
    assert "\n    hint: " in r.stdout
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("content, message", [
    (b"", "empty file"),
    (b"version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 12\n", "git-lfs pointer"),
    (b"\x89PNG\r\n\x1a\n" + bytes(range(256)), "not an ONNX"),
])
def test_unreadable_exit_2_one_line(tmp_path: Path, content: bytes, message: str) -> None:
    p = tmp_path / "bad.onnx"
    p.write_bytes(content)
    r = run("infer", str(p))
    assert r.returncode == 2
    assert message in r.stderr and "SF001" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_missing_file_and_usage_error_exit_2(tmp_path: Path) -> None:
    r = run("infer", str(tmp_path / "nope.onnx"))
    assert r.returncode == 2 and "no such file" in r.stderr
    r = run("infer", str(EXAMPLES / "attention.onnx"), "--dim", "batch")
    assert r.returncode == 2 and "NAME=VALUE" in r.stderr
    r = run("infer", str(EXAMPLES / "attention.onnx"), "--format", "xml")
    assert r.returncode == 2


def test_graph_invalid_exit_2(tmp_path: Path) -> None:
    m = axes_node_model("Unsqueeze", [3], [0], 13)
    m.graph.node[0].input[0] = "GHOST"
    p = tmp_path / "m.onnx"
    p.write_bytes(m.SerializeToString())
    r = run("infer", str(p))
    assert r.returncode == 2
    assert "SF002" in r.stderr and "GHOST" in r.stderr and "'n0'" in r.stderr


def test_json_matches_spec_section_3() -> None:
    r = run("infer", str(EXAMPLES / "axis_errors.onnx"), "--format", "json")
    assert r.returncode == 1
    doc = json.loads(r.stdout)
    assert set(doc) == {"shapeflow_version", "schema", "model", "opset", "tensors", "nodes", "diagnostics"}
    assert doc["opset"] == {"": 13}
    assert {"name", "graph", "dtype", "shape"} == set(doc["tensors"][0])
    node = next(n for n in doc["nodes"] if n["name"] == "unsq_duplicate_node")
    assert set(node) == {"name", "graph", "op_type", "since_version", "input", "output", "axes",
                         "input_shape", "output_shape"}
    sym = next(n for n in doc["nodes"] if n["name"] == "sq_symbolic_node")
    assert sym["input_shape"] == ["batch", 1, 4] and sym["axes"] == [0]
    d = next(d for d in doc["diagnostics"] if d["code"] == "SF104")
    assert set(d) == {"code", "name", "severity", "file", "graph", "node", "op_type", "message", "hint", "fixable"}
    assert d["fixable"] is True and d["node"] == "sq_non_unit_node" and d["graph"] == "main"


def test_dim_binding_in_json() -> None:
    r = run("infer", str(EXAMPLES / "attention.onnx"), "--format", "json", "--dim", "batch=2")
    doc = json.loads(r.stdout)
    shapes = [t["shape"] for t in doc["tensors"] if t["name"] == "input_ids"]
    assert shapes == [[2, "seq"]]


def test_output_records_value_info_and_leaves_input(tmp_path: Path) -> None:
    src = EXAMPLES / "attention.onnx"
    before = src.read_bytes()
    out = tmp_path / "out.onnx"
    r = run("infer", str(src), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert src.read_bytes() == before
    m = onnx.load(str(out))
    vi = {v.name: v for v in m.graph.value_info}
    assert len(vi) > 50
    original = onnx.load(str(src))
    assert [n.SerializeToString() for n in m.graph.node] == [n.SerializeToString() for n in original.graph.node]
    onnx.checker.check_model(m)
    # the annotated model infers to the same shapes
    r2 = run("infer", str(out), "--format", "json")
    r1 = run("infer", str(src), "--format", "json")
    assert json.loads(r1.stdout)["nodes"] == [
        {**n} for n in json.loads(r2.stdout)["nodes"]]


def test_output_refuses_input_and_existing(tmp_path: Path) -> None:
    p = tmp_path / "m.onnx"
    p.write_bytes((EXAMPLES / "attention.onnx").read_bytes())
    r = run("infer", str(p), "-o", str(p))
    assert r.returncode == 2 and "--in-place" in r.stderr
    out = tmp_path / "o.onnx"
    out.write_bytes(b"keep")
    r = run("infer", str(p), "-o", str(out))
    assert r.returncode == 2 and "--force" in r.stderr and out.read_bytes() == b"keep"
    r = run("infer", str(p), "-o", str(out), "--force")
    assert r.returncode == 0 and out.read_bytes() != b"keep"
    assert sorted(os.listdir(tmp_path)) == ["m.onnx", "o.onnx"]


def test_all_lists_every_tensor() -> None:
    r = run("infer", str(EXAMPLES / "opset11_attribute_axes.onnx"), "--all")
    assert r.returncode == 0
    assert "tensor" in r.stdout.splitlines()[0] and "[batch, seq]" in r.stdout


@pytest.mark.parametrize("flag", [[], ["--all"]], ids=["nodes", "all-tensors"])
def test_names_with_control_characters_stay_in_their_row(tmp_path: Path, flag: list[str]) -> None:
    """Node and tensor names come from the model: a newline or a terminal escape in one is shown
    escaped, so each table row stays one line and nothing reaches the terminal raw."""
    from onnx import TensorProto, helper

    odd = "y\nz\x1b[31m"
    nodes = [helper.make_node("Unsqueeze", ["x"], [odd], name="evil\nnode", axes=[0]),
             helper.make_node("Relu", [odd], ["out"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)]), path)
    r = run("infer", str(path), *flag)
    assert r.returncode == 0, r.stderr
    assert "\x1b" not in r.stdout
    assert "evil\\nnode  Unsqueeze-11" in r.stdout
    if flag:
        assert "main   y\\nz\\x1b[31m  float32  [1, 2]" in r.stdout
