"""What the file declares (issue 22, point 5): shown where inference proves nothing, parsed where
it is an expression over input symbols, checked (SF112), fixed on request, and the SF105 finding on
a dim that is 1 unless a symbol is 0.

Oracles: onnxruntime running the models (a declared or inferred dim holds at run time, a
witness binding really shows the declaration wrong), and the dims module evaluating expressions.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import cli_process
import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from helpers import analyze_model, ort_session
from shapeflow.declared import DimReader, conflict, marked_dim
from shapeflow.dimexpr import MAX_TEXT, parse_dim
from shapeflow.dims import Dim, Sym, dim_add, dim_floordiv, dim_max, dim_min, dim_mod, dim_mul, dim_neg, \
    dim_sub, substitute
from shapeflow.render.pictures import picture
from shapeflow.render import infer_text
from shapeflow.render.json import infer_json_text

T = TensorProto
SYMS = frozenset({"B", "C", "H", "seq", "batch", "2*seq"})


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return cli_process.shapeflow(*args, timeout=300)


def _dims(vi: onnx.ValueInfoProto) -> list:
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in vi.type.tensor_type.shape.dim]


# -- the parser ------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, want", [
    ("-floordiv(-H, 2)", "-floor(-H/2)"),  # jax2onnx's ceiling division
    ("floor((H + 1)/2)", "floor((H + 1)/2)"),
    ("ceil(H/4)", "-floor(-H/4)"),
    ("2*seq + 1", "2*seq + 1"),
    ("min(3, seq)", "min(3, seq)"),
    ("Max(1, H)", "max(1, H)"),  # sympy's spelling
    ("max(0, seq - 2)", "max(0, seq - 2)"),
    ("seq % 4", "seq % 4"),
    ("mod(seq, 4)", "seq % 4"),
    ("(seq//2)", "floor(seq/2)"),
    ("batch*seq", "batch*seq"),
    ("H**2", "H**2"),
    ("floor((B - 10)/5) + 1", "floor(B/5) - 1"),  # shapeflow's own text, as `infer -o` writes it
    ("  H ", "H"),
    ("16", "16"),
    ("2*seq", "2*seq"),  # an input symbol's name is that symbol, whatever it says
])
def test_parse_reads_the_grammar(text: str, want: str) -> None:
    d = parse_dim(text, SYMS)
    assert d is not None and str(d) == want


@pytest.mark.parametrize("text", [
    "unk__123", "LayerNormalization_dim_1", "Reshape/output_0_dim_1",  # invented names: opaque
    "H/2", "floordiv(H, C)", "mod(H, 0)", "floordiv(H, -2)", "min(H)", "H H", "H +", "(H", "H)",
    "H**9", "sqrt(H)", "__import__('os').system('x')", "H; C", "1e3", "H." , "",
    "((B+C+H+seq)**8)**8",  # grows past the size bound
    "-" * 20 + "H",  # deeper than the bound
    "(" * 17 + "H" + ")" * 17,
    "H + " * 100 + "H",  # longer than MAX_TEXT
    "1" * 20,  # an int of more than 19 digits
    "héllo",
])
def test_parse_leaves_everything_else_opaque(text: str) -> None:
    assert parse_dim(text, SYMS) is None


def test_parse_is_bounded_on_long_text() -> None:
    assert len("H + " * 100) > MAX_TEXT
    assert parse_dim("+".join(["H"] * 60), SYMS) is not None  # 119 characters: fine


_atoms = st.sampled_from([Sym.symbol("B"), Sym.symbol("H"), Sym.symbol("seq"), 0, 1, 2, 3, 5, 17])


def _combine(children: st.SearchStrategy[Dim]) -> st.SearchStrategy[Dim]:
    ops = [
        st.tuples(children, children).map(lambda p: dim_add(*p)),
        st.tuples(children, children).map(lambda p: dim_sub(*p)),
        st.tuples(children, st.integers(-3, 4)).map(lambda p: dim_mul(*p)),
        st.tuples(children, st.integers(1, 6)).map(lambda p: dim_floordiv(*p)),
        st.tuples(children, st.integers(1, 6)).map(lambda p: dim_mod(*p)),
        st.tuples(children, children).map(lambda p: dim_min(*p)),
        st.tuples(children, children).map(lambda p: dim_max(*p)),
        children.map(dim_neg),
    ]
    return st.one_of(*ops)


@settings(max_examples=300, deadline=None)
@given(st.recursive(_atoms, _combine, max_leaves=8))
def test_shapeflows_own_text_parses_back_to_the_same_dim(d: Dim) -> None:
    """Every expression shapeflow prints (what `infer -o` writes as dim_param) reads back as the
    same function of its symbols."""
    if not isinstance(d, Sym) or len(str(d)) > MAX_TEXT:
        return
    back = parse_dim(str(d), {"B", "H", "seq"})
    assert back is not None, str(d)
    for env in ({"B": 0, "H": 0, "seq": 0}, {"B": 1, "H": 2, "seq": 3}, {"B": 7, "H": 100, "seq": 5},
                {"B": 2, "H": 3, "seq": 1000}):
        assert substitute(back, env) == substitute(d, env), (str(d), env)


def test_reader_tells_invented_names() -> None:
    r = DimReader({"B", "H"})
    assert r.invented("unk__3") and r.invented("Reshape_dim_2")
    assert not r.invented("B") and not r.invented("-floordiv(-H, 2)") and not r.invented(4)  # type: ignore[arg-type]


# -- showing what the file declares ----------------------------------------------------------------

def runtime_target_model() -> onnx.ModelProto:
    """A Reshape whose target is only known at run time: inference keeps the rank, not the dims;
    value_info and the graph output declare them (as the dynamo exporter does)."""
    x = helper.make_tensor_value_info("x", T.FLOAT, ["b", "s", 64])
    tgt = helper.make_tensor_value_info("tgt", T.INT64, [4])
    nodes = [helper.make_node("Reshape", ["x", "tgt"], ["r"], name="rs"),
             helper.make_node("Unsqueeze", ["r", "ax"], ["u"], name="unsq"),
             helper.make_node("Relu", ["u"], ["y"], name="relu")]
    ax = helper.make_tensor("ax", T.INT64, [1], [0])
    vi = [helper.make_tensor_value_info("r", T.FLOAT, ["b", "s", 4, 16]),
          helper.make_tensor_value_info("u", T.FLOAT, [1, "b", "unk__7", "2*s + 1", None])]
    g = helper.make_graph(nodes, "g", [x, tgt],
                          [helper.make_tensor_value_info("y", T.FLOAT, [1, "b", "s", "heads", 16])], [ax], value_info=vi)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def test_text_tables_mark_declared_dims() -> None:
    a = analyze_model(runtime_target_model())
    assert a.inference.shape_of("r") == (None, None, None, None)  # nothing proven: only declared
    table = infer_text(a, all_tensors=True)
    rows = {line.split()[1]: line.split(None, 3)[3] for line in table.splitlines()[2:] if line.startswith("main")}
    assert rows["r"] == "[~b, ~s, ~4, ~16]"
    assert rows["u"] == "[1, ~b, ~unk__7, ~(2*s + 1), ?]"  # an expression in brackets; a dim declared empty: ?
    assert rows["y"] == "[1, ~b, ~s, ~heads, ~16]"
    assert rows["x"] == "[b, s, 64]"  # inputs: proven from their own declaration
    squeeze_table = infer_text(a)
    assert "[~b, ~s, ~4, ~16]" in squeeze_table and "[1, ~b, ~unk__7, ~(2*s + 1), ?]" in squeeze_table
    assert marked_dim(4) == "~4" and marked_dim("heads") == "~heads" and marked_dim(None) == "?"


def test_unknown_rank_shows_the_declaration_whole() -> None:
    x = helper.make_tensor_value_info("x", T.FLOAT, ["n"])
    s = helper.make_tensor_value_info("shape", T.INT64, ["k"])  # the rank itself is a run-time value
    g = helper.make_graph([helper.make_node("Reshape", ["x", "shape"], ["y"])], "g", [x, s],
                          [helper.make_tensor_value_info("y", T.FLOAT, ["n", 1, None])])
    a = analyze_model(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]))
    assert a.inference.shape_of("y") is None
    assert "~[n, 1, ?]" in infer_text(a, all_tensors=True)


def test_json_carries_declared_shape_only_where_it_says_more() -> None:
    a = analyze_model(runtime_target_model())
    doc = a.to_json()
    by_name = {t["name"]: t for t in doc["tensors"]}
    assert by_name["r"]["declared_shape"] == ["b", "s", 4, 16]
    assert by_name["u"]["declared_shape"] == [1, "b", "unk__7", "2*s + 1", None]
    assert by_name["y"]["declared_shape"] == [1, "b", "s", "heads", 16]
    assert "declared_shape" not in by_name["x"] and "declared_shape" not in by_name["ax"]
    assert infer_json_text(a) == json.dumps(doc, indent=2)  # the streamed writer writes the same


def test_json_has_no_declared_shape_where_inference_knows_every_dim() -> None:
    """A declaration of a proven tensor (another name for a proven dim) adds nothing."""
    x = helper.make_tensor_value_info("x", T.FLOAT, ["b", 4])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x],
                          [helper.make_tensor_value_info("y", T.FLOAT, ["unk__1", 4])])
    doc = analyze_model(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])).to_json()
    assert all("declared_shape" not in t for t in doc["tensors"])


def test_pictures_mark_declared_dims() -> None:
    a = analyze_model(runtime_target_model())
    dot = picture(a, "dot")
    assert 'label="[~b, ~s, ~4, ~16]"' in dot and 'label="[1, ~b, ~s, ~heads, ~16]"' in dot
    from shapeflow.drivers.netx import from_graphml
    import networkx as nx

    g = from_graphml(nx.parse_graphml(picture(a, "graphml"), force_multigraph=True))
    shapes = {d["tensor"]: d.get("declared_shape") for _, _, d in g.edges(data=True)}
    assert shapes["r"] == ["b", "s", 4, 16] and shapes["x"] is None


# -- SF112 on declared expressions, and the fix ---------------------------------------------------

def pool_model(declared: str, *, ceil_mode: int, output: list | None = None, conv: bool = False) -> onnx.ModelProto:
    """x [B, C, H] -> MaxPool(k=2, s=2) -> Relu; value_info declares the pooled length as
    ``declared``. With ``conv``, jax2onnx's CNN: a stride-2 SAME Conv before the pool, whose
    length jax2onnx 0.17 also declares for the pool's output."""
    x = helper.make_tensor_value_info("x", T.FLOAT, ["B", "C", "H"])
    nodes = [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[2], strides=[2], ceil_mode=ceil_mode, name="pool"),
             helper.make_node("Relu", ["p"], ["y"], name="relu")]
    inits = []
    if conv:
        inits = [helper.make_tensor("w", T.FLOAT, [2, 2, 3], [0.5] * 12)]
        nodes.insert(0, helper.make_node("Conv", ["x", "w"], ["c"], strides=[2], auto_pad="SAME_UPPER", name="conv"))
        nodes[1].input[0] = "c"
    vi = [helper.make_tensor_value_info("p", T.FLOAT, ["B", "C", declared])]
    out = helper.make_tensor_value_info("y", T.FLOAT, output if output is not None else ["B", "C", None])
    g = helper.make_graph(nodes, "g", [x], [out], inits, value_info=vi)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def _runtime_dim(model: onnx.ModelProto, tensor: str, h: int) -> int | None:
    m = onnx.ModelProto()
    m.CopyFrom(model)
    if tensor not in [o.name for o in m.graph.output]:
        m.graph.output.append(onnx.ValueInfoProto(name=tensor))
    try:
        outs = ort_session(m).run(None, {"x": np.zeros((1, 2, h), np.float32)})
    except Exception:
        return None
    names = [o.name for o in m.graph.output]
    return int(outs[names.index(tensor)].shape[2])


def _sf112(model: onnx.ModelProto) -> list:
    return [d for d in analyze_model(model).diagnostics if d.code == "SF112"]


def test_a_declared_expression_that_agrees_is_no_finding() -> None:
    model = pool_model("-floordiv(-H, 2)", ceil_mode=1)  # jax2onnx's ceil(H/2): right for ceil_mode
    assert _sf112(model) == []
    for h in (2, 3, 4, 5, 17, 1000):
        assert _runtime_dim(model, "p", h) == -(-h // 2)


def test_jax2onnx_pool_declaration_is_sf112_with_a_true_witness() -> None:
    """jax2onnx 0.17's CNN: the pool's output declared with the conv's length, ceil(H/2)."""
    model = pool_model("- floordiv(- H, 2)", ceil_mode=0, conv=True)  # (spaces as jax2onnx writes them)
    found = _sf112(model)
    assert len(found) == 1
    m = re.search(r"at H=(\d+) the declaration gives (\d+), inference (\d+)", found[0].message)
    assert m, found[0].message
    h, declared, inferred = (int(g) for g in m.groups())
    assert declared != inferred
    assert _runtime_dim(model, "p", h) == inferred  # onnxruntime sides with inference
    for h in (3, 4, 16, 1000):  # and the declaration is wrong at every one of them
        assert _runtime_dim(model, "p", h) != -(-h // 2)


@pytest.mark.parametrize("declared, finding", [
    ("H", True),  # H against floor(H/2): different wherever H >= 2
    ("-floordiv(-H, 2)", False),  # ceil against floor: equal at every even H, where the model may run
    ("unk__9", False),  # a name the exporter invented
    ("C", False),  # another input symbol: the model might make them equal
    ("7", False),  # an int against an expression
    ("floordiv(H, 2)", False),  # agrees
])
def test_what_is_a_contradiction(declared: str, finding: bool) -> None:
    assert len(_sf112(pool_model(declared, ceil_mode=0))) == int(finding)


def test_expressions_that_agree_somewhere_do_not_conflict() -> None:
    """What the dynamo exports of the text corpus declare: ``seq`` where inference states
    ``min(256, seq)``, and a pool's ``h//2 - 1`` against its exact (truncating) length."""
    r = DimReader({"seq", "h"})
    seq, h = Sym.symbol("seq"), Sym.symbol("h")
    assert conflict(["seq"], (dim_min(256, seq),), r) is None
    trunc = dim_sub(dim_add(dim_neg(dim_floordiv(dim_max(-4, dim_neg(h)), 2)), dim_floordiv(dim_max(4, h), 2)), 3)
    assert conflict(["((h//2)) - 1"], (trunc,), r) is None
    assert conflict(["2*seq"], (seq,), r) is not None


def test_conflict_respects_assumed_ranges() -> None:
    """A witness must lie in the ranges inference holds in: under H<=2 nothing is tried."""
    r = DimReader({"H"})
    h = Sym.symbol("H")
    inferred = (dim_floordiv(h, 2),)
    assert conflict(["H"], inferred, r) is not None
    assert conflict(["H"], inferred, r, {"H": (0, 2)}) is None


def _hint_command(hint: str, model: Path, out: Path) -> list[str]:
    cmd = re.search(r"`shapeflow ([^`]*)`", hint)
    assert cmd, hint
    args = cmd.group(1).split()
    return [str(model) if a == "MODEL" else str(out) if a == "OUT" else a for a in args]


@pytest.mark.parametrize("where", ["value_info", "output"])
def test_the_hinted_command_fixes_the_declaration(where: str, tmp_path: Path) -> None:
    if where == "value_info":
        model = pool_model("-floordiv(-H, 2)", ceil_mode=0, conv=True)
    else:
        model = pool_model("floordiv(H, 2)", ceil_mode=0, output=["B", "C", "H"])  # the output is wrong
    src, out = tmp_path / "m.onnx", tmp_path / "fixed.onnx"
    onnx.save(model, src)
    found = _sf112(model)
    assert len(found) == 1
    r = run(*_hint_command(found[0].hint, src, out))
    assert r.returncode == 0 and "1 contradicting declarations rewritten" in r.stderr, r.stderr
    fixed = onnx.load(out)
    onnx.checker.check_model(fixed, full_check=True)
    lint = run("lint", str(out), "--format", "json")
    assert lint.returncode == 0 and "SF112" not in lint.stdout, lint.stdout
    # every declared dim of the fixed model holds in onnxruntime
    reader = DimReader({"B", "C", "H"})
    for h in (2, 3, 4, 5, 1000):
        env = {"B": 1, "C": 2, "H": h}
        for vi in list(fixed.graph.value_info) + list(fixed.graph.output):
            d = reader.dim(_dims(vi)[2])
            if d is not None:
                assert substitute(d, env) == _runtime_dim(fixed, vi.name, h), (vi.name, h)
    assert _dims(fixed.graph.input[0]) == ["B", "C", "H"]  # inputs untouched


def test_fix_declarations_leaves_outputs_without_refine_outputs(tmp_path: Path) -> None:
    model = pool_model("floordiv(H, 2)", ceil_mode=0, output=["B", "C", "H"])
    src, out = tmp_path / "m.onnx", tmp_path / "o.onnx"
    onnx.save(model, src)
    r = run("infer", str(src), "-o", str(out), "--fix-declarations")
    assert r.returncode == 1  # the output's SF112 stands: its declaration is the user's signature
    assert _dims(onnx.load(out).graph.output[0]) == ["B", "C", "H"]
    assert run("infer", str(src), "--fix-declarations").returncode == 2  # nothing is written: a usage error


def test_refine_outputs_replaces_invented_names(tmp_path: Path) -> None:
    model = pool_model("floordiv(H, 2)", ceil_mode=0, output=["B", "unk__3", "LayerNormalization_dim_2"])
    src, out, plain = tmp_path / "m.onnx", tmp_path / "o.onnx", tmp_path / "p.onnx"
    onnx.save(model, src)
    assert run("infer", str(src), "-o", str(plain)).returncode == 0
    assert _dims(onnx.load(plain).graph.output[0]) == ["B", "unk__3", "LayerNormalization_dim_2"]
    r = run("infer", str(src), "-o", str(out), "--refine-outputs")
    assert r.returncode == 0 and "2 invented dim names replaced" in r.stderr, r.stderr
    fixed = onnx.load(out)
    y = _dims(fixed.graph.output[0])
    assert y[0] == "B" and y[1] == "C"  # an input symbol stays; an invented name becomes the proven dim
    length = parse_dim(y[2], {"H"})
    assert length is not None
    for h in (2, 3, 4, 5, 1000):
        assert substitute(length, {"H": h}) == _runtime_dim(fixed, "y", h)


# -- SF105 on a dim that is 1 unless a symbol is 0 ---------------------------------------------------

def last_step_model(extra_squeeze_on: str | None = None) -> onnx.ModelProto:
    """tf2onnx's LSTM tail: the last step x[-1:] of T steps, squeezed on its time axis."""
    x = helper.make_tensor_value_info("x", T.FLOAT, ["T", "batch", 4])
    inits = [helper.make_tensor("st", T.INT64, [1], [-1]), helper.make_tensor("en", T.INT64, [1], [2**62]),
             helper.make_tensor("ax", T.INT64, [1], [0])]
    nodes = [helper.make_node("Slice", ["x", "st", "en", "ax"], ["s"], name="last"),
             helper.make_node("Squeeze", ["s", "ax"], ["y"], name="sq")]
    outs = [helper.make_tensor_value_info("y", T.FLOAT, None)]
    if extra_squeeze_on:
        nodes.append(helper.make_node("Squeeze", ["x", "ax"], ["z"], name="sq_plain"))
        outs.append(helper.make_tensor_value_info("z", T.FLOAT, None))
    g = helper.make_graph(nodes, "g", [x], outs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def test_sf105_on_a_dim_that_fails_only_when_empty_is_info(tmp_path: Path) -> None:
    model = last_step_model(extra_squeeze_on="x")
    found = {d.location.node: d for d in analyze_model(model).diagnostics if d.code == "SF105"}
    last, plain = found["sq"], found["sq_plain"]
    assert last.severity.value == "info" and "only when T is 0" in last.message
    assert "--assume 'T>=1'" in last.hint
    assert plain.severity.value == "warning"  # T itself: fails at every T but 1
    # the claim, against onnxruntime: the Squeeze of x[-1:] fails at T = 0 and only there
    sess_model = last_step_model()
    for t in (0, 1, 2, 3, 1000):
        try:
            ort_session(sess_model).run(None, {"x": np.zeros((t, 2, 4), np.float32)})
            ran = True
        except Exception:
            ran = False
        assert ran == (t != 0), t
    # a pre-commit gate: exit 0, nothing shown by default; under --assume T>=1 no finding at all
    path = tmp_path / "m.onnx"
    onnx.save(sess_model, path)
    r = run("lint", str(path))
    assert r.returncode == 0 and "SF105" not in r.stdout, r.stdout
    r = run("lint", str(path), "--assume", "T>=1", "--show-info", "--format", "json")
    assert r.returncode == 0 and "SF105" not in r.stdout
