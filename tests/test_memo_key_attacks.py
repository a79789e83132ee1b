"""Red team of the rules' shortcut over inference's memo keys (``Inference.memo_keys``): SF011 and
SF013 judge one node per (signature, memo key object). Every finding must be the same with the
shortcut and inference's node memo on as with all of them off (the oracle reads every node)."""

from __future__ import annotations

import contextlib
import io
import random
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP, helper, numpy_helper, parser

from shapeflow import cli, inference
from shapeflow.drivers.analysis import analyze
from shapeflow.io import load_model_bytes
from shapeflow.rules import sf011_attribute_mismatch, sf013_type_mismatch

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _set(monkeypatch: pytest.MonkeyPatch, on: bool, kept: int | None = None) -> None:
    monkeypatch.setattr(sf011_attribute_mismatch, "MEMO", on)
    monkeypatch.setattr(sf013_type_mismatch, "MEMO", on)
    monkeypatch.setattr(inference, "NODE_MEMO", on)
    if kept is not None:
        monkeypatch.setattr(inference, "MEMO_KEYS_KEPT", kept)


def _findings(model: onnx.ModelProto) -> list[dict[str, object]] | tuple[str, str]:
    try:
        a = analyze(load_model_bytes(model.SerializeToString(), "m"))
    except Exception as exc:  # (a model the loader refuses: refused the same way both times)
        return type(exc).__name__, str(exc)
    return [d.to_json() for d in a.diagnostics]


def _both(model: onnx.ModelProto, monkeypatch: pytest.MonkeyPatch, kept: int | None = None) -> list[dict[str, object]]:
    with monkeypatch.context() as m:
        _set(m, True, kept)
        on = _findings(model)
    with monkeypatch.context() as m:
        _set(m, False)
        off = _findings(model)
    with monkeypatch.context() as m:  # the rules' shortcut off, inference's memo on
        monkeypatch.setattr(sf011_attribute_mismatch, "MEMO", False)
        monkeypatch.setattr(sf013_type_mismatch, "MEMO", False)
        mid = _findings(model)
    assert on == off == mid
    return on  # type: ignore[return-value]


# -- random small graphs -------------------------------------------------------------------------
_DT = [TP.FLOAT, TP.INT64, TP.INT32, TP.STRING, TP.BOOL, TP.DOUBLE, TP.FLOAT16]
_NIN = {"Shape": 1, "Gather": 2, "Concat": 2, "Cast": 1, "Add": 2, "Mul": 2, "Reshape": 2, "Transpose": 1,
        "Relu": 1, "Softmax": 1, "Identity": 1, "Where": 3, "Equal": 2}


def _attr(rng: random.Random, op: str) -> onnx.AttributeProto:
    name = {"Gather": "axis", "Concat": "axis", "Softmax": "axis", "Cast": "to", "Shape": "start",
            "Transpose": "perm", "Reshape": "allowzero"}.get(op, "extra")
    pick = rng.randrange(9)
    if pick == 0:
        return helper.make_attribute(name, rng.choice([0, 1, -1, 7]))
    if pick == 1:
        return helper.make_attribute(name, rng.choice([0.0, 1.0]))
    if pick == 2:
        return helper.make_attribute(name, rng.choice(["0", "1"]))
    if pick == 3:
        return helper.make_attribute(name, [1, 0])
    if pick == 4:
        return helper.make_attribute("big", "x" * rng.choice([10, 300]))  # past MEMO_KEY_BYTES_MAX
    if pick == 5:
        return helper.make_attribute("__private", 1)
    a = helper.make_attribute(name, 1)
    if pick == 6:
        a.ClearField("type")
    elif pick == 7:
        a.f = 2.0  # two value fields
    else:
        a.type = onnx.AttributeProto.FLOAT  # the value in another type's field
    return a


def _nodes(rng: random.Random, avail: list[str], n: int, prefix: str) -> list[onnx.NodeProto]:
    out: list[onnx.NodeProto] = []
    templates: list[tuple[str, list[str], list[onnx.AttributeProto], str]] = []
    for i in range(n):
        if templates and rng.random() < 0.45:  # a node repeated: one memo key for several
            op, ins, attrs, dom = rng.choice(templates)
        else:
            op = rng.choice(list(_NIN))
            ins = [rng.choice(avail) for _ in range(_NIN[op] + (rng.random() < 0.1))]
            attrs = [_attr(rng, op) for _ in range(rng.choice([0, 1, 1, 2]))]
            if attrs and rng.random() < 0.1:
                attrs.append(attrs[0])  # a duplicate attribute
            dom = rng.choice(["", "", "", "", "ai.onnx"])
            templates.append((op, ins, attrs, dom))
        node = helper.make_node(op, ins, [f"{prefix}t{i}"], domain=dom)
        node.attribute.extend(attrs)
        out.append(node)
        if rng.random() < 0.6:
            avail.append(node.output[0])
    return out


def _random_model(seed: int) -> onnx.ModelProto:
    rng = random.Random(seed)
    inputs, avail = [], []
    for k in range(rng.randint(1, 4)):
        dt = 0 if rng.random() < 0.1 else rng.choice(_DT)
        inputs.append(helper.make_tensor_value_info(f"x{k}", dt, rng.choice([[2, 3], [2], ["n", 3], None])))
        avail.append(f"x{k}")
    inits = [numpy_helper.from_array(np.array([0, 1], dtype=np.int64), "idx")]
    avail.append("idx")
    nodes = _nodes(rng, avail, rng.randint(3, 12), "")
    inputs.append(helper.make_tensor_value_info("cond", TP.BOOL, []))
    if seed % 2:  # an If whose branches repeat the main graph's nodes
        branches = []
        for b in range(2):
            body = _nodes(rng, list(avail), rng.randint(2, 5), f"b{b}_")
            body.append(helper.make_node("Identity", [body[-1].output[0]], [f"b{b}_out"]))
            branches.append(helper.make_graph(body, f"br{b}", [], [helper.make_tensor_value_info(f"b{b}_out", 0, None)]))
        nodes.append(helper.make_node("If", ["cond"], ["last"], then_branch=branches[0], else_branch=branches[1]))
    else:  # a Loop whose carried value is widened (its body inferred again)
        body = _nodes(rng, ["v", "iter"] + avail, rng.randint(3, 8), "L_")
        body.append(helper.make_node("Identity", ["cin"], ["cout"]))
        body.append(rng.choice([helper.make_node("Concat", ["v", "v"], ["vout"], axis=0),
                                helper.make_node("Cast", ["v"], ["vout"], to=rng.choice([1, 7, 8])),
                                helper.make_node("Identity", ["v"], ["vout"])]))
        graph = helper.make_graph(body, "loop", [helper.make_tensor_value_info("iter", TP.INT64, []),
                                                 helper.make_tensor_value_info("cin", TP.BOOL, []),
                                                 helper.make_tensor_value_info("v", 0, None)],
                                  [helper.make_tensor_value_info("cout", TP.BOOL, []),
                                   helper.make_tensor_value_info("vout", 0, None)])
        inits.append(numpy_helper.from_array(np.array(3, dtype=np.int64), "trip"))
        nodes.append(helper.make_node("Loop", ["trip", "cond", rng.choice(avail)], ["last"], body=graph))
    outs = [helper.make_tensor_value_info(n.output[0], 0, None) for n in nodes[-2:]]
    opsets = [helper.make_opsetid("", rng.choice([11, 13, 17, 19]))]
    if rng.random() < 0.3:
        opsets.append(helper.make_opsetid("ai.onnx", opsets[0].version))
    return helper.make_model(helper.make_graph(nodes, "g", inputs, outs, initializer=inits),
                             opset_imports=opsets, ir_version=rng.choice([3, 8]))


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("kept", [None, 1, 2])
def test_random_graphs_find_the_same(kept: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    judged = 0
    for seed in range(60):
        found = _both(_random_model(seed * 3 + (kept or 0)), monkeypatch, kept)
        if isinstance(found, list):
            judged += sum(1 for d in found if d["code"] in ("SF011", "SF013"))
    assert judged > 100  # the rules had something to say


# -- hand-made models ------------------------------------------------------------------------------
REPEATED_BAD = """
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] x, int64[2] idx, string[2] s) => (float[?] y) {
    a1 = Gather <axis = 0.0> (x, idx)
    a2 = Gather <axis = 0.0> (x, idx)
    a3 = Gather <axis = 0.0> (x, idx)
    c1 = Concat (x, x)
    c2 = Concat (x, x)
    c3 = Concat (x, x)
    d1 = Concat <axis = 0, axis = 0> (x, x)
    d2 = Concat <axis = 0, axis = 0> (x, x)
    e1 = Add (s, s)
    e2 = Add (s, s)
    e3 = Add (x, idx)
    e4 = Add (x, idx)
    f1 = Shape <start = 0, extra = 1> (x)
    f2 = Shape <start = 0, extra = 1> (x)
    y = Concat <axis = 0> (a1, a2)
}
"""

BODIES = """
<ir_version: 8, opset_import: ["" : 13]>
g (float[2] x, string[2] s, bool c) => (float[2] y, float[2] z) {
    m1 = Add (x, x)
    m2 = Gather <axis = 0.0> (x, x)
    y = If (c) <
        then_branch = a () => (float[2] o1) { p1 = Add (x, x) p2 = Gather <axis = 0.0> (x, x) q = Add (s, s) o1 = Identity (p1) },
        else_branch = b () => (float[2] o2) { r1 = Add (x, x) r2 = Add (s, s) o2 = Identity (r1) }
    >
    z = Add (s, s)
}
"""

PROOF = """
<ir_version: 8, opset_import: ["" : 13]>
g (float[batch, seq, 4] x, string[2] s) => (float[?] y, int64[?] z) {
    sh = Shape (x)
    i0 = Constant <value = int64[1] {0}> ()
    b = Gather <axis = 0> (sh, i0)
    m1 = Constant <value = int64[1] {-1}> ()
    f = Constant <value = int64[1] {4}> ()
    tgt = Concat <axis = 0> (b, m1, f)
    y = Reshape (x, tgt)
    sh2 = Shape (x)
    b2 = Gather <axis = 0> (sh2, i0)
    g1 = Gather <axis = 0.0> (sh2, i0)
    g2 = Gather <axis = 0.0> (sh2, i0)
    z = Concat <axis = 0> (b2, m1, f)
    t1 = Add (s, s)
    t2 = Add (s, s)
}
"""


def _big_constants() -> onnx.ModelProto:
    """Constant nodes and attributes over MEMO_KEY_BYTES_MAX, repeated, some with a stray attribute."""
    big = numpy_helper.from_array(np.arange(100, dtype=np.int64), "v")
    nodes = []
    for k in range(3):
        nodes.append(helper.make_node("Constant", [], [f"c{k}"], value=big))
        n = helper.make_node("Constant", [], [f"d{k}"], value=big)
        n.attribute.append(helper.make_attribute("stray", 1))
        nodes.append(n)
        nodes.append(helper.make_node("Cast", ["x"], [f"e{k}"], to=1, extra="y" * 400))
    nodes.append(helper.make_node("Identity", ["c0"], ["y"]))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TP.INT64, [2])],
                          [helper.make_tensor_value_info("y", TP.INT64, [100])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


@pytest.mark.parametrize("kept", [None, 1])
def test_each_repeated_bad_node_is_reported(kept: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    found = _both(parser.parse_model(REPEATED_BAD), monkeypatch, kept)
    nodes11 = {d["node"] for d in found if d["code"] == "SF011"}
    nodes13 = {d["node"] for d in found if d["code"] == "SF013"}
    # a1-a3 (#0-#2), c1-c3 (#3-#5), f1, f2 (#12, #13); e1-e4 (#8-#11)
    assert {"#0", "#1", "#2", "#3", "#4", "#5", "#12", "#13"} <= nodes11, found
    assert {"#8", "#9", "#10", "#11"} <= nodes13, found


@pytest.mark.parametrize("text", [BODIES, PROOF], ids=["bodies", "proof"])
@pytest.mark.parametrize("kept", [None, 1, 2])
def test_bodies_and_proofs_find_the_same(text: str, kept: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    found = _both(parser.parse_model(text), monkeypatch, kept)
    assert sum(1 for d in found if d["code"] == "SF013") >= 2, found


def test_big_attributes_find_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    found = _both(_big_constants(), monkeypatch)
    assert sum(1 for d in found if d["code"] == "SF011") >= 6, found


# -- the commands ----------------------------------------------------------------------------------
def _cli(args: list[str]) -> tuple[object, str]:
    out = io.StringIO()
    code: object = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            cli.main(args)
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue()


@pytest.mark.parametrize("args", [["infer", "--format", "json"], ["lint", "--format", "json"],
                                  ["lint", "--select", "SF2", "--format", "json"],
                                  ["lint", "--select", "SF011,SF013", "--format", "json"]])
def test_commands_print_the_same(args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = [tmp_path / "repeated.onnx", tmp_path / "proof.onnx", EXAMPLES / "attention.onnx"]
    onnx.save(parser.parse_model(REPEATED_BAD), str(files[0]))
    onnx.save(parser.parse_model(PROOF), str(files[1]))
    for f in files:
        out = {}
        for on in (True, False):
            with monkeypatch.context() as m:
                _set(m, on)
                out[on] = _cli([*args, str(f)])
        assert out[True] == out[False], f
