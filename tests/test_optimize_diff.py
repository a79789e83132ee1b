"""``optimize --diff``: every rewrite's nodes before and after, with shapes, in text and JSON."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

import cli_process
import onnx
import onnx.parser
import pytest

import shapeflow
from shapeflow.io import load_model
from shapeflow.drivers.optimizer import optimize_model
from shapeflow.drivers.rewritediff import optimize_diff

from test_netx import CORPUS_MODELS

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
MODELS = [EXAMPLES / "attention.onnx", EXAMPLES / "opset11_attribute_axes.onnx", *CORPUS_MODELS]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return cli_process.shapeflow(*args, cwd=ROOT, timeout=300)


def node_bag(model: onnx.ModelProto) -> Counter[tuple[str, str, tuple[str, ...], tuple[str, ...]]]:
    return Counter((n.name, n.op_type, tuple(i for i in n.input if i), tuple(o for o in n.output if o))
                   for n in model.graph.node)


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.name)
def test_json_diff_accounts_for_every_changed_node(path: Path, tmp_path: Path) -> None:
    out = tmp_path / "opt.onnx"
    r = run("optimize", str(path), "-o", str(out), "--diff", "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    rewrites = doc["diff"]
    assert rewrites and all(rw["before"] for rw in rewrites)  # each rewrite replaced something
    a, b = onnx.load(path), onnx.load(out)
    main = [rw for rw in rewrites if rw["graph"] == "main"]
    # the nodes listed before / after are exactly the main graph's nodes gone / new, counted another way
    gone, new = node_bag(a) - node_bag(b), node_bag(b) - node_bag(a)

    def bag(side: str) -> Counter[tuple[str, str, tuple[str, ...], tuple[str, ...]]]:
        return Counter((n["name"], n["op_type"], tuple(t["tensor"] for t in n["inputs"]),
                        tuple(t["tensor"] for t in n["outputs"]))
                       for rw in main for n in rw[side] if n["kind"] == "node")

    names = {n.name for n in a.graph.node} | {n.name for n in b.graph.node}
    if "" not in names:
        assert bag("before") == gone and bag("after") == new
    else:  # unnamed nodes are listed by their index, which the two models do not share: count them
        assert sum(bag("before").values()) == sum(gone.values()) and sum(bag("after").values()) == sum(new.values())
    new_inits = {t.name for t in b.graph.initializer} - {t.name for t in a.graph.initializer}
    assert {n["name"] for rw in main for n in rw["after"] if n["kind"] == "initializer"} == new_inits
    # a tensor written on both sides of a rewrite keeps its shape and dtype: the rewrite is exact
    for rw in rewrites:
        before = {t["tensor"]: t for n in rw["before"] for t in n["outputs"]}
        for n in rw["after"]:
            for t in n["outputs"]:
                if t["tensor"] in before:
                    assert (t["dtype"], t["shape"]) == (before[t["tensor"]]["dtype"], before[t["tensor"]]["shape"])
    # rule names come from the rules that fired
    fired = set(doc["rewrites"])
    assert all(set(rw["rules"]) <= fired for rw in rewrites)
    assert {rule for rw in rewrites for rule in rw["rules"]} >= fired - {"dead-nodes"}


def test_text_carries_the_same_rewrites() -> None:
    path = EXAMPLES / "attention.onnx"
    text = run("optimize", str(path), "--dry-run", "--diff")
    doc = json.loads(run("optimize", str(path), "--dry-run", "--diff", "--format", "json").stdout)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    heads = [line for line in lines if line.startswith("rewrite ")]
    assert len(heads) == len(doc["diff"])
    for head, rw in zip(heads, doc["diff"]):
        assert head.endswith(": " + ", ".join(rw["rules"]))
    # the merged mask chain, before and after, with its shapes
    start = lines.index(next(h for h in heads if h.endswith("merge-unsqueeze")))
    block = "\n".join(lines[start:start + 8])
    assert "Unsqueeze '/Unsqueeze': attention_mask [batch, seq], axes_1 [1] = [1] -> /Unsqueeze_output_0 [batch, 1, seq]" in block
    assert "-> /Unsqueeze_1_output_0 [batch, 1, 1, seq]" in block.split("after:")[1]
    assert "= [1, 2]" in block.split("after:")[1]


def test_cancelled_pair_in_text() -> None:
    model = onnx.parser.parse_model("""
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[batch, 3] x) => (float[batch, 3] y) <int64[1] ax = {1}> {
        u = Unsqueeze(x, ax)
        s = Squeeze(u, ax)
        y = Relu(s)
    }""")
    for k, n in enumerate(model.graph.node):
        n.name = f"n{k}"
    raw = model.SerializeToString()
    loaded = load_model_bytes_and_optimize(raw)
    rewrites = optimize_diff(raw, loaded[1].model, "m.onnx", loaded[1].log)
    assert len(rewrites) == 1
    rw = rewrites[0]
    assert rw.rules == ["cancel-unsqueeze-squeeze"]
    assert [n.name for n in rw.before] == ["n0", "n1", "n2"]  # the reader n2 is rewired
    assert [n.text() for n in rw.after] == ["Relu 'n2': x [batch, 3] -> y [batch, 3]"]
    assert rw.before[1].text() == "Squeeze 'n1': u [batch, 1, 3], ax [1] = [1] -> s [batch, 3]"


def load_model_bytes_and_optimize(raw: bytes):  # type: ignore[no-untyped-def]
    from shapeflow.io import load_model_bytes

    loaded = load_model_bytes(raw, "m.onnx")
    return loaded, optimize_model(loaded)


def test_nothing_to_rewrite_is_an_empty_diff(tmp_path: Path) -> None:
    out = tmp_path / "o.onnx"
    shapeflow.optimize(EXAMPLES / "attention.onnx", out)
    r = run("optimize", str(out), "--dry-run", "--diff", "--format", "json")
    assert r.returncode == 0 and json.loads(r.stdout)["diff"] == []
    r = run("optimize", str(out), "--dry-run", "--diff")
    assert r.returncode == 0 and "rewrite 1" not in r.stdout


def test_diff_leaves_the_written_model_alone(tmp_path: Path) -> None:
    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    assert run("optimize", str(EXAMPLES / "attention.onnx"), "-o", str(a)).returncode == 0
    assert run("optimize", str(EXAMPLES / "attention.onnx"), "-o", str(b), "--diff").returncode == 0
    assert a.read_bytes() == b.read_bytes()


def test_subgraph_rewrites_name_their_graph() -> None:
    model = onnx.parser.parse_model("""
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[batch, 3] x, bool c) => (float[batch, 3] y) <int64[1] ax = {1}> {
        y = If(c) <then_branch = g1 () => (float[batch, 3] t) {
            u = Unsqueeze(x, ax)
            t = Squeeze(u, ax)
        }, else_branch = g2 () => (float[batch, 3] e) {
            e = Identity(x)
        }>
    }""")
    model.graph.node[0].name = "if0"
    raw = model.SerializeToString()
    _, result = load_model_bytes_and_optimize(raw)
    assert result.changed
    rewrites = optimize_diff(raw, result.model, "m.onnx", result.log)
    assert [rw.graph for rw in rewrites] == ["main/if0.then_branch"]
    assert [n.op_type for n in rewrites[0].before] == ["Unsqueeze", "Squeeze"]


def test_refused_model_prints_no_diff() -> None:
    r = run("optimize", str(EXAMPLES / "axis_errors.onnx"), "--dry-run", "--diff", "--format", "json")
    assert r.returncode == 1 and "diff" not in json.loads(r.stdout)


def test_load_model_is_untouched_by_optimize_diff() -> None:
    loaded = load_model(EXAMPLES / "attention.onnx")
    raw = bytes(loaded.raw)
    result = optimize_model(loaded)
    optimize_diff(loaded.raw, result.model, loaded.path, result.log)
    assert loaded.raw == raw
