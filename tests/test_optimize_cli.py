"""``shapeflow optimize`` on the command line: outputs, exit codes, what is (never) written."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from shapeflow.cli import main
from test_passes_support import parse

PAIR = """<ir_version: 8, opset_import: ["" : 13]>
g (float[N, 3] x) => (float[N, 3] y) <int64[1] ax = {0}>
{
  [unsq] t = Unsqueeze(x, ax)
  [sq] z = Squeeze(t, ax)
  [relu] y = Relu(z)
}"""

CLEAN = """<ir_version: 8, opset_import: ["" : 13]>
g (float[N, 3] x) => (float[N, 3] y)
{
  y = Relu(x)
}"""

SYMBOLIC = """<ir_version: 8, opset_import: ["" : 13]>
g (float[N, 3] x) => (float[N, 3] y) <int64[1] ax = {0}>
{
  [sq] t = Squeeze(x, ax)
  [unsq] z = Unsqueeze(t, ax)
  y = Relu(z)
}"""


def write(path, text: str) -> str:  # type: ignore[no-untyped-def]
    path.write_bytes(parse(text).SerializeToString())
    return str(path)


def cli(args: list[str], capsys) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as info:
        main(args)
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def listing(d) -> list[str]:  # type: ignore[no-untyped-def]
    return sorted(os.listdir(d))


def test_writes_the_optimized_model_and_reports(tmp_path, capsys):
    src = write(tmp_path / "m.onnx", PAIR)
    code, out, err = cli(["optimize", src, "-o", str(tmp_path / "o.onnx")], capsys)
    assert code == 0
    assert "Squeeze" in out and "cancel-unsqueeze-squeeze 1" in out
    assert err.count("\n") == 1 and "written" in err  # one summary line, no progress off a terminal
    model = onnx.load(str(tmp_path / "o.onnx"))
    assert [n.op_type for n in model.graph.node] == ["Relu"]


def test_output_is_required(tmp_path, capsys):
    src = write(tmp_path / "m.onnx", PAIR)
    code, _, err = cli(["optimize", src], capsys)
    assert code == 2 and "-o OUTPUT is required" in err


def test_refuses_to_overwrite_input(tmp_path, capsys):
    src = write(tmp_path / "m.onnx", PAIR)
    before = (tmp_path / "m.onnx").read_bytes()
    code, _, err = cli(["optimize", src, "-o", src], capsys)
    assert code == 2 and "--in-place" in err
    os.link(src, tmp_path / "hard.onnx")
    code, _, err = cli(["optimize", src, "-o", str(tmp_path / "hard.onnx"), "--force"], capsys)
    assert code == 2
    assert (tmp_path / "m.onnx").read_bytes() == before


def test_existing_output_needs_force(tmp_path, capsys):
    src = write(tmp_path / "m.onnx", PAIR)
    (tmp_path / "o.onnx").write_bytes(b"keep")
    code, _, err = cli(["optimize", src, "-o", str(tmp_path / "o.onnx")], capsys)
    assert code == 2 and "--force" in err
    assert (tmp_path / "o.onnx").read_bytes() == b"keep"
    code, _, _ = cli(["optimize", src, "-o", str(tmp_path / "o.onnx"), "--force"], capsys)
    assert code == 0 and (tmp_path / "o.onnx").read_bytes() != b"keep"


def test_in_place(tmp_path, capsys):
    src = write(tmp_path / "m.onnx", PAIR)
    code, _, _ = cli(["optimize", src, "--in-place"], capsys)
    assert code == 0
    assert [n.op_type for n in onnx.load(src).graph.node] == ["Relu"]
    assert listing(tmp_path) == ["m.onnx"]  # no temp file left
    # nothing left to do: the file is not even rewritten
    st = os.stat(src)
    code, _, _ = cli(["optimize", src, "--in-place"], capsys)
    assert code == 0
    st2 = os.stat(src)
    assert (st.st_ino, st.st_mtime_ns) == (st2.st_ino, st2.st_mtime_ns)


def test_check_and_dry_run_write_nothing(tmp_path, capsys):
    src = write(tmp_path / "m.onnx", PAIR)
    before = (tmp_path / "m.onnx").read_bytes()
    code, out, _ = cli(["optimize", src, "--check"], capsys)
    assert code == 1 and "would change" in out
    code, _, _ = cli(["optimize", src, "--dry-run", "-o", str(tmp_path / "o.onnx")], capsys)
    assert code == 0
    assert listing(tmp_path) == ["m.onnx"] and (tmp_path / "m.onnx").read_bytes() == before
    clean = write(tmp_path / "clean.onnx", CLEAN)
    code, _, _ = cli(["optimize", clean, "--check"], capsys)
    assert code == 0


def test_json_report(tmp_path, capsys):
    src = write(tmp_path / "m.onnx", PAIR)
    code, out, _ = cli(["optimize", src, "-o", str(tmp_path / "o.onnx"), "--format", "json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert set(doc) == {"shapeflow_version", "schema", "model", "output", "before", "after", "rewrites", "verified"}
    assert doc["before"] == {"nodes": 3, "Squeeze": 1, "Unsqueeze": 1}
    assert doc["after"] == {"nodes": 1, "Squeeze": 0, "Unsqueeze": 0}
    assert doc["rewrites"] == {"cancel-unsqueeze-squeeze": 1}
    assert doc["verified"] is None and doc["output"] == str(tmp_path / "o.onnx")


def test_verbose_lists_rewrites_and_reasons(tmp_path, capsys):
    src = write(tmp_path / "m.onnx", SYMBOLIC)
    _, out, _ = cli(["optimize", src, "--dry-run", "-v"], capsys)
    assert "'sq'" in out and "'unsq'" in out and "run-time failure" in out
    _, out, _ = cli(["optimize", src, "--dry-run", "-vv", "--strict"], capsys)
    assert "not fired:" in out and "--strict" in out
    _, out, _ = cli(["optimize", src, "--dry-run", "-vv", "--strict", "--format", "json"], capsys)
    doc = json.loads(out)
    assert doc["rewrites"] == {} and any("--strict" in s for s in doc["skipped"])


def test_rules_option(tmp_path, capsys):
    src = write(tmp_path / "m.onnx", PAIR)
    code, out, _ = cli(["optimize", src, "--dry-run", "--rules", "merge-unsqueeze,fold_constant"], capsys)
    assert code == 0 and "nothing to rewrite" in out
    code, _, err = cli(["optimize", src, "--dry-run", "--rules", "nope"], capsys)
    assert code == 2 and "unknown rule" in err


def test_verify_passes_and_is_reported(tmp_path, capsys):
    src = write(tmp_path / "m.onnx", SYMBOLIC)
    code, out, _ = cli(["optimize", src, "-o", str(tmp_path / "o.onnx"), "--verify"], capsys)
    assert code == 0 and "bit-identical" in out
    code, out, _ = cli(["optimize", src, "--dry-run", "--verify", "--format", "json"], capsys)
    assert json.loads(out)["verified"] is True


def test_verify_mismatch_exits_1_and_writes_nothing(tmp_path, capsys, monkeypatch):
    import shapeflow.cli.optimize_cmd as cmd

    real = cmd.optimize_model

    def broken(loaded, **kw):  # type: ignore[no-untyped-def]
        result = real(loaded, **kw)
        for n in result.model.graph.node:
            if n.op_type == "Relu":
                n.op_type = "Sigmoid"  # a wrong rewrite
        return result

    monkeypatch.setattr(cmd, "optimize_model", broken)
    src = write(tmp_path / "m.onnx", PAIR)
    code, out, _ = cli(["optimize", src, "-o", str(tmp_path / "o.onnx"), "--verify"], capsys)
    assert code == 1 and "verify FAILED: outputs differ" in out and "'y'" in out and "max abs diff" in out
    assert listing(tmp_path) == ["m.onnx"]


CHAIN_AND_IDENTITY = """<ir_version: 8, opset_import: ["" : 13]>
g (float[N, 3] x) => (float[N, 3] y) <int64[1] ax = {0}>
{
  [unsq] t = Unsqueeze(x, ax)
  [sq] z = Squeeze(t, ax)
  [ident] i = Identity(z)
  [relu] y = Relu(i)
}"""


def test_verify_names_the_rewrite_responsible(tmp_path, capsys, monkeypatch):
    """A difference names its size, the largest difference and the rule whose rewrites made it
    (found by optimizing again with fewer rules): in text and in JSON, exit 1."""
    import shapeflow.cli.optimize_cmd as cmd

    real = cmd.optimize_model

    def broken(loaded, **kw):  # type: ignore[no-untyped-def]
        result = real(loaded, **kw)
        if kw.get("rules") is None or "identity-node" in kw["rules"]:
            for n in result.model.graph.node:
                if n.op_type == "Relu":
                    n.op_type = "Sigmoid"  # identity-node is wrong in this world
        return result

    monkeypatch.setattr(cmd, "optimize_model", broken)
    src = write(tmp_path / "m.onnx", CHAIN_AND_IDENTITY)
    code, out, _ = cli(["optimize", src, "--dry-run", "--verify"], capsys)
    assert code == 1 and "rewrite responsible: identity-node" in out and "N=1: output 'y' differ" in out
    code, out, _ = cli(["optimize", src, "--dry-run", "--verify", "--format", "json"], capsys)
    doc = json.loads(out)
    assert code == 1 and doc["verified"] is False
    v = doc["verify"]
    assert v["status"] == "differs" and v["rewrite"] == "identity-node" and v["sizes"] == []
    assert 0 < v["max_abs_diff"] < 1  # relu against sigmoid


NEEDS_SEVEN = """<ir_version: 8, opset_import: ["" : 13]>
g (float[N, 3] x) => (float[7] y) <int64[1] seven = {7}, int64[1] ax = {0}>
{
  u = Unsqueeze(x, ax)
  s = Squeeze(u, ax)
  y = Reshape(s, seven)
}"""


def test_could_not_verify_is_not_a_difference(tmp_path, capsys):
    """A model onnxruntime runs at none of the sizes tried: exit 2 (not 1), onnxruntime's reason,
    a pointer to --dim, nothing written."""
    src = write(tmp_path / "m.onnx", NEEDS_SEVEN)
    code, out, _ = cli(["optimize", src, "-o", str(tmp_path / "o.onnx"), "--verify"], capsys)
    assert code == 2 and "could not verify:" in out and "verify FAILED" not in out
    assert "cannot be reshaped to the requested shape" in out and "--dim NAME=VALUE" in out
    assert listing(tmp_path) == ["m.onnx"]
    code, out, _ = cli(["optimize", src, "--dry-run", "--verify", "--format", "json"], capsys)
    doc = json.loads(out)
    assert code == 2 and doc["verified"] is None and doc["verify"]["status"] == "not-verified"


def test_verify_sizes_from_the_graph_and_from_dim(tmp_path, capsys):
    """The first Conv's kernel (5) proves L >= 5: --verify runs there, not at L=1 where the model
    fails; --dim pins a size; --dim without --verify is a usage error."""
    text = """<ir_version: 8, opset_import: ["" : 13]>
g (float[N, 1, L] x) => (float[N, 1, M] y) <float[1, 1, 5] w = {1, 2, 3, 4, 5}, int64[1] ax = {0}>
{
  c = Conv(x, w)
  u = Unsqueeze(c, ax)
  y = Squeeze(u, ax)
}"""
    src = write(tmp_path / "m.onnx", text)
    code, out, _ = cli(["optimize", src, "--dry-run", "--verify"], capsys)
    assert code == 0 and "bit-identical (N=1, L=5; N=3, L=7)" in out
    code, out, _ = cli(["optimize", src, "--dry-run", "--verify", "--dim", "L=16"], capsys)
    assert code == 0 and "bit-identical (N=1, L=16; N=3, L=16)" in out
    code, _, err = cli(["optimize", src, "--dry-run", "--dim", "L=16"], capsys)
    assert code == 2 and "--dim sets input sizes for --verify" in err


def test_verify_without_onnxruntime(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    src = write(tmp_path / "m.onnx", PAIR)
    code, _, err = cli(["optimize", src, "-o", str(tmp_path / "o.onnx"), "--verify"], capsys)
    assert code == 2 and "--verify needs onnxruntime: pip install -e \".[verify]\"" in err
    assert listing(tmp_path) == ["m.onnx"]


def test_rejected_inputs(tmp_path, capsys):
    (tmp_path / "junk.onnx").write_bytes(b"\x00not a model at all")
    code, _, err = cli(["optimize", str(tmp_path / "junk.onnx"), "-o", str(tmp_path / "o.onnx")], capsys)
    assert code == 2 and "Traceback" not in err
    undefined = """<ir_version: 8, opset_import: ["" : 13]>
    g (float[N] x) => (float[N] y)
    {
      y = Add(x, ghost)
    }"""
    src = write(tmp_path / "bad.onnx", undefined)
    code, _, err = cli(["optimize", src, "-o", str(tmp_path / "o.onnx")], capsys)
    assert code == 2 and "SF002" in err
    assert not (tmp_path / "o.onnx").exists()


def test_error_level_findings_are_refused(tmp_path, capsys):
    paddle = """<ir_version: 8, opset_import: ["" : 13]>
    g (float[1, 3, 1, 5] x) => (float[3, 5] y) <int64[3] ax = {0, 2, 3}>
    {
      y = Squeeze(x, ax)
    }"""
    src = write(tmp_path / "p.onnx", paddle)
    code, _, err = cli(["optimize", src, "-o", str(tmp_path / "o.onnx")], capsys)
    assert code == 1 and "SF104" in err and "refusing to optimize" in err
    assert listing(tmp_path) == ["p.onnx"]
    code, out, _ = cli(["optimize", src, "--check", "--format", "json"], capsys)
    assert code == 1 and json.loads(out)["diagnostics"][0]["code"] == "SF104"


def test_unsafe_external_data_is_refused(tmp_path, capsys):
    w = numpy_helper.from_array(np.ones(4, np.float32), "w")
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "../outside.bin"), ("offset", "0"), ("length", "16")):
        w.external_data.append(onnx.StringStringEntryProto(key=k, value=v))
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], initializer=[w])
    path = tmp_path / "e.onnx"
    path.write_bytes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8).SerializeToString())
    code, _, err = cli(["optimize", str(path), "-o", str(tmp_path / "o.onnx")], capsys)
    assert code == 2 and "SF001" in err


def test_idempotent_and_deterministic(tmp_path, capsys):
    sys.path.insert(0, os.path.dirname(__file__))
    from model_builders import gpt2_like

    src = tmp_path / "g.onnx"
    src.write_bytes(gpt2_like(11, layers=2).SerializeToString())
    for name in ("a.onnx", "b.onnx"):
        assert cli(["optimize", str(src), "-o", str(tmp_path / name)], capsys)[0] == 0
    assert (tmp_path / "a.onnx").read_bytes() == (tmp_path / "b.onnx").read_bytes()
    code, out, _ = cli(["optimize", str(tmp_path / "a.onnx"), "-o", str(tmp_path / "c.onnx")], capsys)
    assert code == 0 and "nothing to rewrite" in out
    assert (tmp_path / "c.onnx").read_bytes() == (tmp_path / "a.onnx").read_bytes()


def test_help_lists_rules_and_exit_codes(capsys):
    code, out, _ = cli(["optimize", "--help"], capsys)
    assert code == 0
    assert "cancel-unsqueeze-squeeze" in out and "Exit codes" in out and "--verify" in out
