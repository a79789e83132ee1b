"""``infer --format dot|graphml``: pictures parse back (pydot, networkx), mark what they should,
select neighbourhoods, and refuse what they should (exit 2)."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from pathlib import Path

import networkx as nx
import cli_process
import onnx
import onnx.parser
import pydot
import pytest
from onnx import TensorProto, helper

import shapeflow
from shapeflow.errors import display_path
from shapeflow.drivers.netx import from_graphml
from shapeflow.render.pictures import SEVERITY_COLORS, PictureOptions, neighbourhood, picture, shape_text

from helpers import analyze_model
from test_netx import CORPUS_MODELS, IF_MODEL

# pydot's parser calls pyparsing's old names
pytestmark = pytest.mark.filterwarnings("ignore:.*deprecated.*:DeprecationWarning")

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
AXIS_ERRORS = EXAMPLES / "axis_errors.onnx"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return cli_process.shapeflow(*args, cwd=ROOT, timeout=120)


def parse_dot(text: str) -> pydot.Dot:
    graphs = pydot.graph_from_dot_data(text)
    assert graphs is not None and len(graphs) == 1, text[:500]
    return graphs[0]


def dot_unescape(text: str) -> str:
    """A double-quoted DOT string's text as Graphviz reads it (``\\"`` and ``\\\\``)."""
    out, k = [], 0
    while k < len(text):
        if text[k] == "\\" and k + 1 < len(text) and text[k + 1] in '"\\':
            k += 1
        out.append(text[k])
        k += 1
    return "".join(out)


def dot_nodes(d: pydot.Dot) -> dict[str, pydot.Node]:
    """Node statements by tooltip (the networkx key, as printed), clusters included."""
    out: dict[str, pydot.Node] = {}
    stack = [d]
    while stack:
        sub = stack.pop()
        for n in sub.get_nodes():
            tip = n.get("tooltip")
            if tip is not None:
                out[dot_unescape(tip[1:-1])] = n
        stack.extend(sub.get_subgraphs())
    return out


def unquote(v: str | None) -> str:
    assert v is not None
    return v[1:-1] if v.startswith('"') else v


def check_dot_against_graph(text: str, g: nx.MultiDiGraph) -> pydot.Dot:
    """The DOT text draws exactly the non-initializer nodes of ``g`` and the tensor edges between
    them, each labelled with its shape."""
    d = parse_dot(text)
    nodes = dot_nodes(d)
    drawn = {display_path(n): n for n, a in g.nodes(data=True) if a["kind"] != "initializer"}
    assert set(nodes) == set(drawn)
    ids = {unquote(n.get_name()): drawn[key] for key, n in nodes.items()}
    edges = d.get_edges()
    keys = set(drawn.values())
    want = sorted((u, v, display_path(shape_text(a["shape"], a.get("declared_shape")))) for u, v, a in g.edges(data=True)
                  if u in keys and v in keys)
    got = sorted((ids[e.get_source()], ids[e.get_destination()], dot_unescape(unquote(e.get("label")).split("\\n")[0]))
                 for e in edges)
    assert got == want
    return d


# (one export of the corpus: the others are drawn by the same code, and pydot parses slowly)
@pytest.mark.parametrize("path", [*sorted(EXAMPLES.glob("*.onnx")), *CORPUS_MODELS[:1]], ids=lambda p: p.name)
def test_dot_of_whole_model_parses_and_matches_the_graph(path: Path) -> None:
    a = shapeflow.infer(path)
    check_dot_against_graph(picture(a, "dot"), a.to_networkx())


def test_dot_marks_findings_by_severity_and_axis_ops() -> None:
    a = shapeflow.infer(AXIS_ERRORS)
    nodes = dot_nodes(parse_dot(picture(a, "dot")))
    err = nodes["main/sq_non_unit_node"]
    assert unquote(err.get("fillcolor")) == SEVERITY_COLORS["error"][0]
    assert "error SF104" in unquote(err.get("label")) and "axes [1]" in unquote(err.get("label"))
    warn = nodes["main/sq_symbolic_node"]
    assert unquote(warn.get("fillcolor")) == SEVERITY_COLORS["warning"][0]
    ok = nodes["main/sq_ok_node"]  # a Squeeze without findings: bold, its axes, no severity colour
    assert "bold" in unquote(ok.get("style")) and "axes [2]" in unquote(ok.get("label"))
    assert unquote(ok.get("fillcolor")) not in {c for c, _ in SEVERITY_COLORS.values()}
    relu = nodes["main/relu_node"]
    assert relu.get("fillcolor") is None and relu.get("style") is None


AXES_AS_WRITTEN = """
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 5] x, float[2, 3, 1] z, int64[1] k) => (float[?] a, float[?] b, float[?] c, float[?] d, float[?] e)
<int64[2] dup = {1, -3}, int64[1] far = {3}, int64[1] neg = {-1}>
{
    [dup_node] a = Unsqueeze (x, dup)
    [far_node] b = Unsqueeze (x, far)
    [neg_node] c = Squeeze (z, neg)
    [none_node] d = Squeeze (z)
    [runtime_node] e = Unsqueeze (x, k)
}
"""


def test_every_axis_node_shows_its_axes_as_written() -> None:
    """The axes of a Squeeze/Unsqueeze as the model writes them, on every node, the ones with
    the axis error included (no ``axes ?`` where the model says what they are); a normalised form
    that reads differently after them; ``?`` only for axes computed at run time. GraphML carries
    them as ``written_axes``."""
    a = analyze_model(onnx.parser.parse_model(AXES_AS_WRITTEN))
    nodes = dot_nodes(parse_dot(picture(a, "dot")))
    labels = {key.split("/")[1]: unquote(n.get("label")).split("\\n") for key, n in nodes.items()
              if key.endswith("_node")}
    assert "axes [1, -3]" in labels["dup_node"] and "error SF102" in labels["dup_node"]
    assert "axes [3]" in labels["far_node"] and "error SF101" in labels["far_node"]
    assert "axes [-1] = [2]" in labels["neg_node"]
    assert "axes none" in labels["none_node"] and "axes ?" in labels["runtime_node"]
    g = from_graphml(nx.read_graphml(io.BytesIO(picture(a, "graphml").encode()), force_multigraph=True))
    assert g.nodes["main/dup_node"]["written_axes"] == [1, -3] and g.nodes["main/dup_node"]["axes"] is None
    assert g.nodes["main/none_node"]["written_axes"] == "none"
    assert g.nodes["main/runtime_node"]["written_axes"] is None
    # and the example the README draws: no axis node without its axes
    text = picture(shapeflow.infer(AXIS_ERRORS), "dot")
    assert "axes ?" not in text and "axes [1, -3]" in text


def test_subgraphs_are_clusters_and_outer_reads_dashed() -> None:
    a = analyze_model(onnx.parser.parse_model(IF_MODEL))
    d = check_dot_against_graph(picture(a, "dot"), a.to_networkx())
    labels = sorted(unquote(s.get_graph_defaults()[0]["label"]) for s in d.get_subgraphs())
    assert labels == ["main/#2.else_branch", "main/#2.then_branch"]
    dashed = [e for e in d.get_edges() if e.get("style") is not None]
    assert len(dashed) == 2  # x and u read inside the branches (ax is an initializer: not drawn)


def test_hostile_names_stay_valid_dot() -> None:
    name = 'a "quoted" \\ name\nwith a newline'
    node = helper.make_node("Relu", ["x\\\""], ["y"], name=name)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x\\\"", TensorProto.FLOAT, ["b\"x"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    a = analyze_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    text = picture(a, "dot")
    # one statement per line: no newline from a name gets into the text raw
    assert all(line.rstrip().endswith((";", "{", "}")) for line in text.splitlines())
    check_dot_against_graph(text, a.to_networkx())
    if shutil.which("dot"):
        r = subprocess.run(["dot", "-Tsvg"], input=text, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and "<svg" in r.stdout, r.stderr


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
@pytest.mark.parametrize("path", [AXIS_ERRORS, EXAMPLES / "attention.onnx"], ids=lambda p: p.name)
def test_graphviz_renders_it(path: Path) -> None:
    r = run("infer", str(path), "--format", "dot")
    assert r.returncode in (0, 1) and r.stdout.startswith("digraph"), r.stderr
    svg = subprocess.run(["dot", "-Tsvg"], input=r.stdout, capture_output=True, text=True, timeout=60)
    assert svg.returncode == 0 and "<svg" in svg.stdout and not svg.stderr, svg.stderr


def _undirected_ball(g: nx.MultiDiGraph, seeds: list[str], depth: int) -> set[str]:
    """The expected neighbourhood, another way: networkx's ego graphs over the graph without
    initializers, then the initializers feeding the result."""
    plain = nx.Graph(g.subgraph(n for n, a in g.nodes(data=True) if a["kind"] != "initializer"))
    ball: set[str] = set()
    for s in seeds:
        ball |= set(nx.ego_graph(plain, s, radius=depth))
    return ball | {u for v in ball for u in g.predecessors(v) if g.nodes[u]["kind"] == "initializer"}


@pytest.mark.parametrize("depth", [0, 1, 2, 3])
def test_neighbourhood_is_the_ball_of_radius_depth(depth: int) -> None:
    g = shapeflow.load_graph(EXAMPLES / "attention.onnx")
    seeds = [n for n, a in g.nodes(data=True) if a.get("op_type") == "Squeeze"]
    assert neighbourhood(g, seeds, depth) == _undirected_ball(g, seeds, depth)


def test_around_by_cli_draws_the_neighbourhood() -> None:
    r = run("infer", str(AXIS_ERRORS), "--format", "dot", "--around", "sq_symbolic_node", "--depth", "1")
    assert r.returncode == 1, r.stderr  # infer's exit code: the model has errors
    assert set(dot_nodes(parse_dot(r.stdout))) == {"main/input:b", "main/sq_symbolic_node", "main/output:sq_symbolic"}
    r = run("infer", str(AXIS_ERRORS), "--format", "dot", "--around", "sq_symbolic_node,main/unsq_ok_node",
            "--depth", "0")
    assert set(dot_nodes(parse_dot(r.stdout))) == {"main/sq_symbolic_node", "main/unsq_ok_node"}
    r = run("infer", str(AXIS_ERRORS), "--format", "dot", "--around", "sq_symbolic_node", "--depth", "2")
    assert "main/relu_node" in dot_nodes(parse_dot(r.stdout))  # through input b


def test_findings_draws_around_every_finding() -> None:
    a = shapeflow.infer(AXIS_ERRORS)
    text = picture(a, "dot", PictureOptions(findings=True, depth=0))
    assert set(dot_nodes(parse_dot(text))) == {f"main/{d.location.node}" for d in a.diagnostics}


def test_graphml_output_reads_back_as_the_selection() -> None:
    r = run("infer", str(AXIS_ERRORS), "--format", "graphml", "--around", "sq_non_unit_node", "--depth", "1")
    assert r.returncode == 1, r.stderr
    g = from_graphml(nx.read_graphml(io.BytesIO(r.stdout.encode()), force_multigraph=True))
    full = shapeflow.load_graph(AXIS_ERRORS)
    want = _undirected_ball(full, ["main/sq_non_unit_node"], 1)
    assert set(g.nodes) == want and "main/initializer:axes_1" in want
    for n in g.nodes:
        assert g.nodes[n] == full.nodes[n]
    assert {(u, v, k) for u, v, k in g.edges(keys=True)} == {
        (u, v, k) for u, v, k in full.edges(keys=True) if u in want and v in want}


def test_whole_model_graphml_by_cli_round_trips() -> None:
    r = run("infer", str(EXAMPLES / "attention.onnx"), "--format", "graphml")
    assert r.returncode == 0, r.stderr
    g = from_graphml(nx.read_graphml(io.BytesIO(r.stdout.encode()), force_multigraph=True))
    full = shapeflow.load_graph(EXAMPLES / "attention.onnx")
    assert dict(g.nodes(data=True)) == dict(full.nodes(data=True))
    assert g.number_of_edges() == full.number_of_edges()


def test_unknown_around_names_are_a_usage_error(tmp_path: Path) -> None:
    out = tmp_path / "annotated.onnx"
    r = run("infer", str(AXIS_ERRORS), "--format", "dot", "--around", "nope,sq_ok_node,also_nope", "-o", str(out))
    assert r.returncode == 2
    assert r.stdout == "" and not out.exists()  # nothing drawn, nothing written
    line = r.stderr.strip().splitlines()
    assert len(line) == 1 and "'nope'" in line[0] and "'also_nope'" in line[0] and "sq_ok_node" not in line[0]
    assert "Traceback" not in r.stderr


def test_too_large_a_picture_asks_for_around() -> None:
    r = run("infer", str(EXAMPLES / "attention.onnx"), "--format", "dot", "--max-draw", "50")
    assert r.returncode == 2 and r.stdout == ""
    assert "--max-draw 50" in r.stderr and "--around" in r.stderr and r.stderr.count("\n") == 1
    # a neighbourhood under the limit is drawn
    g = shapeflow.load_graph(EXAMPLES / "attention.onnx")
    name = next(a["name"] for _, a in g.nodes(data=True) if a.get("op_type") == "Squeeze")
    r = run("infer", str(EXAMPLES / "attention.onnx"), "--format", "dot", "--max-draw", "50", "--around", name)
    assert r.returncode == 0 and 0 < len(dot_nodes(parse_dot(r.stdout))) <= 50, r.stderr
    # and a neighbourhood over it is refused too
    r = run("infer", str(EXAMPLES / "attention.onnx"), "--format", "graphml", "--max-draw", "5", "--around", name,
            "--depth", "4")
    assert r.returncode == 2 and r.stdout == "" and "--depth" in r.stderr


def test_selection_flags_need_a_picture_format() -> None:
    for args in (["--around", "sq_ok_node"], ["--findings"]):
        r = run("infer", str(AXIS_ERRORS), *args)
        assert r.returncode == 2 and r.stdout == "" and "--format dot" in r.stderr


def test_unnamed_nodes_by_index() -> None:
    a = analyze_model(onnx.parser.parse_model(IF_MODEL))
    text = picture(a, "dot", PictureOptions(around=("#1",), depth=0))
    assert set(dot_nodes(parse_dot(text))) == {"main/#1"}


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_make_pictures_script_draws_the_readme_picture(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, str(EXAMPLES / "make_pictures.py"), str(tmp_path)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    svg = (tmp_path / "axis_errors.svg").read_text()
    assert "<svg" in svg and "examples/axis_errors.onnx" in svg
    for node in onnx.load(AXIS_ERRORS).graph.node:
        assert node.name in svg
    assert "error SF104" in svg and "warning SF105" in svg
    assert (ROOT / "README.md").read_text().count("](examples/axis_errors.svg)") == 1
    assert (EXAMPLES / "axis_errors.svg").read_text().count("<svg") == 1  # the committed picture
