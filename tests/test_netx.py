"""``Analysis.to_networkx`` / ``shapeflow.load_graph``: the model as a networkx MultiDiGraph, its
GraphML round trip, and the README's queries."""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import networkx as nx
import onnx
import onnx.parser
import pytest
from onnx import TensorProto, helper

import shapeflow
from shapeflow.dims import shape_to_json
from shapeflow.drivers.netx import JSON_ATTRS_KEY, from_graphml, graphml_safe, node_keys, to_networkx

from helpers import analyze_model

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
CORPUS = ROOT.parent.parent / "shared" / "corpus"
if not CORPUS.is_dir():
    CORPUS = Path("/work/shared/corpus")
CORPUS_MODELS = sorted(CORPUS.glob("*.onnx")) if CORPUS.is_dir() else []

# an If whose branches read the outer tensors x, u and ax by name; every node unnamed
IF_MODEL = """
<ir_version: 8, opset_import: ["" : 13]>
agraph (float[batch, 3] x, bool c) => (float[batch, 1, 3] y, float[batch, 3] z) <int64[1] ax = {1}> {
    u = Unsqueeze(x, ax)
    z = Relu(x)
    y = If(c) <then_branch = g1 () => (float[batch, 1, 3] t) {
        t = Identity(u)
    }, else_branch = g2 () => (float[batch, 1, 3] e) {
        e0 = Unsqueeze(x, ax)
        e = Identity(e0)
    }>
}
"""


def if_graph() -> nx.MultiDiGraph:
    return analyze_model(onnx.parser.parse_model(IF_MODEL)).to_networkx()


def edges_by_tensor(g: nx.MultiDiGraph) -> dict[tuple[str, str, str], dict[str, object]]:
    return {(u, v, k): a for u, v, k, a in g.edges(keys=True, data=True)}


def test_axis_errors_nodes_edges_and_findings() -> None:
    a = shapeflow.infer(EXAMPLES / "axis_errors.onnx")
    g = a.to_networkx()
    assert isinstance(g, nx.MultiDiGraph)
    model = onnx.load(EXAMPLES / "axis_errors.onnx")
    # one node per ONNX node, graph input, initializer and graph output
    ops = {n for n, d in g.nodes(data=True) if d["kind"] == "node"}
    assert ops == {f"main/{n.name}" for n in model.graph.node}
    assert {d["name"] for _, d in g.nodes(data=True) if d["kind"] == "input"} == {i.name for i in model.graph.input}
    assert ({d["name"] for _, d in g.nodes(data=True) if d["kind"] == "initializer"}
            == {t.name for t in model.graph.initializer})
    assert {d["name"] for _, d in g.nodes(data=True) if d["kind"] == "output"} == {o.name for o in model.graph.output}
    for n in model.graph.node:
        attrs = g.nodes[f"main/{n.name}"]
        assert (attrs["op_type"], attrs["domain"], attrs["version"], attrs["graph"]) == (n.op_type, "", 13, "main")
    # findings: exactly the diagnostics of infer, on the node they name, with the highest severity
    by_node: dict[str, set[str]] = {}
    for d in a.diagnostics:
        by_node.setdefault(f"main/{d.location.node}", set()).add(d.code)
    assert {n: set(d["findings"]) for n, d in g.nodes(data=True) if "findings" in d} == by_node
    assert g.nodes["main/sq_symbolic_node"]["severity"] == "warning"
    assert g.nodes["main/sq_non_unit_node"]["severity"] == "error"
    # every edge carries its tensor's inferred dtype and shape, as infer --format json has them
    tensors = {t["name"]: t for t in a.to_json()["tensors"]}  # type: ignore[union-attr]
    for u, v, k, e in g.edges(keys=True, data=True):
        assert e["tensor"] == k
        assert (e["dtype"], e["shape"]) == (tensors[k]["dtype"], tensors[k]["shape"]), (u, v, k)
    # the axes operand is input 1 of each Squeeze, from its initializer, with its value on the edge
    axes_edges = [(u, v, e) for u, v, e in g.edges(data=True) if g.nodes[u]["kind"] == "initializer"]
    assert axes_edges and all(e["slots"] == [1] and "value" in e for _, _, e in axes_edges)
    edge = g.edges["main/initializer:axes_1_m3", "main/unsq_duplicate_node", "axes_1_m3"]
    assert edge["value"] == [1, -3]
    assert g.nodes["main/sq_ok_node"]["axes"] == [2]
    assert g.nodes["main/unsq_duplicate_node"]["axes"] is None  # invalid: not normalised


def test_subgraph_outer_reads_are_edges_to_the_owner() -> None:
    g = if_graph()
    edges = edges_by_tensor(g)
    # x is read by the main graph's Unsqueeze (slot 0) and, by name, inside the else branch
    assert edges["main/input:x", "main/#0", "x"]["slots"] == [0]
    assert edges["main/input:x", "main/#2", "x"] == {
        "tensor": "x", "dtype": "float32", "shape": ["batch", 3], "slots": [], "outer": True}
    assert edges["main/#0", "main/#2", "u"]["outer"] is True  # then_branch's Identity(u)
    assert edges["main/initializer:ax", "main/#2", "ax"]["outer"] is True
    # the If's own input c is a plain edge
    assert edges["main/input:c", "main/#2", "c"]["outer"] is False
    # the bodies' nodes carry their graph path; no edge crosses into a body
    assert g.nodes["main/#2.else_branch/#0"]["graph"] == "main/#2.else_branch"
    assert g.nodes["main/#2.else_branch/#0"]["axes"] == [1]
    assert edges["main/#2.else_branch/#0", "main/#2.else_branch/#1", "e0"]["shape"] == ["batch", 1, 3]
    for u, v in g.edges():
        assert g.nodes[u]["graph"] == g.nodes[v]["graph"]
    assert nx.is_directed_acyclic_graph(g)


def test_keys_unnamed_duplicate_and_hash_names() -> None:
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="r"),
             helper.make_node("Relu", ["a"], ["b"], name="r"),  # a second 'r'
             helper.make_node("Relu", ["b"], ["c"], name="#0"),  # would be the key of an unnamed node 0
             helper.make_node("Relu", ["c"], ["d"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("d", TensorProto.FLOAT, [2])])
    a = analyze_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    assert node_keys(a) == ["main/r", "main/#1", "main/#2", "main/#3"]
    g = a.to_networkx()
    assert g.nodes["main/#1"]["name"] == "r" and g.nodes["main/#3"]["name"] == ""
    assert list(nx.topological_sort(g.subgraph(node_keys(a)))) == node_keys(a)


def test_unknown_value_and_rank_on_edges() -> None:
    a = analyze_model(onnx.parser.parse_model("""
    <ir_version: 8, opset_import: ["" : 13]>
    agraph (float[batch, seq] x, float y) => (int64[2] s, float z) {
        s = Shape(x)
        z = Relu(y)
    }"""))
    g = a.to_networkx()
    edge = g.edges["main/#0", "main/output:s", "s"]
    assert edge["value"] == ["batch", "seq"] and edge["shape"] == [2]
    assert g.edges["main/input:y", "main/#1", "y"]["shape"] == []


def _same(g1: nx.MultiDiGraph, g2: nx.MultiDiGraph) -> None:
    assert dict(g1.nodes(data=True)) == dict(g2.nodes(data=True))
    assert list(g1.nodes) == list(g2.nodes)
    assert edges_by_tensor(g1) == edges_by_tensor(g2)
    assert g1.graph == g2.graph


@pytest.mark.parametrize("path", [*sorted(EXAMPLES.glob("*.onnx")), *CORPUS_MODELS], ids=lambda p: p.name)
def test_graphml_round_trip(path: Path, tmp_path: Path) -> None:
    g = shapeflow.load_graph(path)
    out = tmp_path / "g.graphml"
    nx.write_graphml(graphml_safe(g), out)
    back = nx.read_graphml(out, force_multigraph=True)
    assert JSON_ATTRS_KEY in back.graph
    _same(from_graphml(back), g)


def test_graphml_round_trip_with_subgraphs_and_unknowns(tmp_path: Path) -> None:
    g = if_graph()
    g.nodes["main/#1"]["findings"] = ["SF105"]  # a list on one node only
    out = tmp_path / "g.graphml"
    nx.write_graphml(graphml_safe(g), out)
    _same(from_graphml(nx.read_graphml(out, force_multigraph=True)), g)
    # only what GraphML cannot hold is encoded: scalars keep their GraphML types
    safe = graphml_safe(g)
    assert safe.nodes["main/#0"]["index"] == 0 and safe.nodes["main/#1"]["findings"] == '["SF105"]'
    assert safe.edges["main/input:x", "main/#0", "x"]["shape"] == '["batch", 3]'


def test_shapes_on_edges_match_inference_on_corpus_or_attention() -> None:
    path = CORPUS_MODELS[0] if CORPUS_MODELS else EXAMPLES / "attention.onnx"
    a = shapeflow.infer(path)
    g = to_networkx(a)
    scope = {s.path: s.id for s in a.graph.scopes}
    checked = 0
    for u, _, e in g.edges(data=True):
        t = a.inference.lookup(scope[g.nodes[u]["graph"]], e["tensor"])
        assert e["shape"] == (shape_to_json(t.shape) if t is not None else None)
        checked += 1
    assert checked == g.number_of_edges() > 100


def _readme_blocks() -> tuple[str, str]:
    """The query block of the README's networkx section and the output shown under it."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## The model as a networkx graph", 1)[1].split("\n## ", 1)[0]
    code, shown = re.findall(r"```python\n(.*?)```\s*```text\n(.*?)```", section, re.S)[0]
    return code, shown


def test_readme_queries_run_and_are_right() -> None:
    """The README's two queries, run as written; their answers checked another way."""
    out = io.StringIO()
    code, shown = _readme_blocks()
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, "README.md", "exec"), {})  # noqa: S102 - our own README
    finally:
        os.chdir(cwd)
    assert out.getvalue() == shown  # the README shows what the block prints
    lines = out.getvalue().splitlines()
    g = shapeflow.load_graph(EXAMPLES / "attention.onnx")
    # query 1: the ops between input_ids and the first Reshape's shape operand, path by path
    reshape = next(n for n, d in g.nodes(data=True) if d.get("op_type") == "Reshape")
    (operand,) = [u for u, _, e in g.in_edges(reshape, data=True) if 1 in e["slots"]]
    assert g.nodes[operand]["op_type"] == "Concat"
    paths = [line for line in lines if line.startswith("input_ids -> ")]
    assert paths and all(p.endswith("-> Concat") for p in paths)
    walks = nx.all_simple_paths(g, "main/input:input_ids", operand)
    assert sorted(paths) == sorted({" -> ".join(["input_ids"] + [g.nodes[n]["op_type"] for n in w[1:]])
                                    for w in walks})
    # query 2: the longest run of Squeeze/Unsqueeze, by brute force over every run
    axis = [n for n, d in g.nodes(data=True) if d.get("op_type") in ("Squeeze", "Unsqueeze")]
    longest = 1
    for n in axis:
        length, cur = 1, n
        while True:
            nxt = [v for v in g.successors(cur) if v in axis]
            if not nxt:
                break
            cur, length = nxt[0], length + 1
        longest = max(longest, length)
    chain = [line for line in lines if line.startswith("longest chain:")]
    assert chain and chain[0].count("->") == longest - 1 and longest >= 2


def test_infer_and_lint_never_build_the_graph() -> None:
    code = ("import sys\nfrom shapeflow.cli import main\n"
            "for args in (['infer', 'examples/attention.onnx'], ['lint', 'examples/attention.onnx']):\n"
            "    try:\n        main(args)\n    except SystemExit:\n        pass\n"
            "print('networkx' in sys.modules, file=sys.stderr)\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.stderr.strip().splitlines()[-1] == "False", r.stderr


def test_graphml_of_hostile_names_is_well_formed(tmp_path: Path) -> None:
    """Control characters cannot be in XML at all: they are written escaped, and read back as they
    were (issue 20: the round trip used to keep the escapes)."""
    node = helper.make_node("Relu", ["x\x01<&>"], ["y"], name="bad\x02name\u00e9")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x\x01<&>", TensorProto.FLOAT, ["b\x03"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    g = analyze_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])).to_networkx()
    out = tmp_path / "g.graphml"
    nx.write_graphml(graphml_safe(g), out)
    back = from_graphml(nx.read_graphml(out, force_multigraph=True))
    assert back.nodes["main/bad\x02name\u00e9"]["name"] == "bad\x02name\u00e9"
    edge = back.edges["main/input:x\x01<&>", "main/bad\x02name\u00e9", "x\x01<&>"]
    assert edge["shape"] == ["b\x03"]  # JSON text keeps it exactly
    assert edge["tensor"] == "x\x01<&>"
    assert "\x02" not in out.read_text(encoding="utf-8")  # and the file is XML
