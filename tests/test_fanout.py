"""fan-out-merge (SF206): a Squeeze/Unsqueeze read only by Squeezes/Unsqueezes goes into each reader.

Every rewritten model is run in onnxruntime against the original at symbol bindings 0, 1, 2 and
257 (bit-identical outputs wherever the original runs), keeps its signature, and optimizing it
again changes nothing (``check_rewrite``).
"""

from __future__ import annotations

import os

import cli_process
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from shapeflow.drivers.analysis import analyze
from shapeflow.drivers.linter import LintOptions, lint_file
from shapeflow.drivers.optimizer import optimize_model
from shapeflow.passes import count_ops, find_candidates
from shapeflow.rewrites import select
from shapeflow.graph import build_graph
from test_passes_support import Outcome, all_nodes, check_rewrite, loaded_of, optimize, parse

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINDINGS = (0, 1, 2, 257)
RULE = "fan-out-merge"


def head(opset: int) -> str:
    return f'<ir_version: {6 if opset < 13 else 8}, opset_import: ["" : {opset}]>'


def axes_of(model: onnx.ModelProto, node: onnx.NodeProto, body: onnx.GraphProto | None = None) -> list[int]:
    for a in node.attribute:
        if a.name == "axes":
            return list(a.ints)
    inits = {t.name: t for t in (body or model.graph).initializer}
    inits.update({t.name: t for t in model.graph.initializer})
    return numpy_helper.to_array(inits[node.input[1]]).tolist()


def by_output(body: onnx.GraphProto) -> dict[str, onnx.NodeProto]:
    return {n.output[0]: n for n in body.node}


def checked(out: Outcome) -> Outcome:
    check_rewrite(out, values=BINDINGS)
    return out


def near_misses(out: Outcome) -> list[str]:
    return [s for s in out.result.skipped if s.startswith(RULE + ":")]


# The dynamo export's position ids: Unsqueeze(Range, [0, 1]) read by Unsqueeze[3] and Unsqueeze[2].
DYNAMO_18 = f"""{head(18)}
g (float[N, 4] x) => (int64[1, 1, N, 1] p, int64[1, 1, 1, N] q)
  <int64 zero = {{0}}, int64 one = {{1}}, int64[1] i0 = {{0}}, int64[2] a01 = {{0, 1}}, int64[1] a3 = {{3}},
   int64[1] a2 = {{2}}>
{{
  s = Shape(x)
  n = Gather<axis = 0>(s, zero)
  r = Range(zero, n, one)
  [first] t = Unsqueeze(r, a01)
  [p3] p = Unsqueeze(t, a3)
  [q2] q = Unsqueeze(t, a2)
}}"""


def test_dynamo_position_ids_opset18():
    out = checked(optimize(DYNAMO_18))
    assert out.fired[RULE] == 1
    assert out.ops() == ["Shape", "Gather", "Range", "Unsqueeze", "Unsqueeze"]
    nodes = by_output(out.after.graph)
    assert nodes["p"].input[0] == "r" and axes_of(out.after, nodes["p"]) == [0, 1, 3]
    assert nodes["q"].input[0] == "r" and axes_of(out.after, nodes["q"]) == [0, 1, 2]
    assert nodes["p"].name == "p3" and nodes["q"].name == "q2"  # the readers keep their names
    assert out.result.before["Unsqueeze"] == 3 and out.result.after["Unsqueeze"] == 2
    assert not [t for t in out.after.graph.initializer if t.name in ("a01", "a2", "a3")]


def test_optimize_twice_gives_the_same_bytes():
    once = optimize(DYNAMO_18)
    twice = optimize_model(loaded_of(once.data))
    assert not twice.changed
    again = optimize(DYNAMO_18)
    assert again.data == once.data  # deterministic


def test_opset11_attribute_form():
    out = checked(optimize(f"""{head(11)}
    g (float[N, 4] x) => (float[1, 1, N, 4, 1] p, float[1, 1, 1, N, 4] q)
    {{
      t = Unsqueeze<axes = [0, 1]>(x)
      p = Unsqueeze<axes = [4]>(t)
      q = Unsqueeze<axes = [2]>(t)
    }}"""))
    assert out.fired[RULE] == 1
    nodes = by_output(out.after.graph)
    for name, axes in (("p", [0, 1, 4]), ("q", [0, 1, 2])):
        node = nodes[name]
        assert list(node.input) == ["x"]  # no axes input below opset 13
        assert [list(a.ints) for a in node.attribute if a.name == "axes"] == [axes]
    assert not out.after.graph.initializer


def test_negative_axes():
    out = checked(optimize(f"""{head(13)}
    g (float[N, 4] x) => (float[N, 4, 1, 1] p, float[1, N, 4, 1] q)
      <int64[1] am1 = {{-1}}, int64[1] a0 = {{0}}>
    {{
      t = Unsqueeze(x, am1)
      p = Unsqueeze(t, am1)
      q = Unsqueeze(t, a0)
    }}"""))
    assert out.fired[RULE] == 1
    nodes = by_output(out.after.graph)
    assert axes_of(out.after, nodes["p"]) == [2, 3]
    assert axes_of(out.after, nodes["q"]) == [0, 3]


def test_squeeze_fan_out_merges_squeezes():
    out = checked(optimize(f"""{head(13)}
    g (float[1, N, 1, 3, 1] x) => (float[N, 3, 1] p, float[N, 1, 3] q)
      <int64[1] a0 = {{0}}, int64[1] a1 = {{1}}, int64[1] am1 = {{-1}}>
    {{
      s = Squeeze(x, a0)
      p = Squeeze(s, a1)
      q = Squeeze(s, am1)
    }}"""))
    assert out.fired[RULE] == 1
    assert out.ops() == ["Squeeze", "Squeeze"]
    nodes = by_output(out.after.graph)
    assert nodes["p"].input[0] == "x" and axes_of(out.after, nodes["p"]) == [0, 2]
    assert nodes["q"].input[0] == "x" and axes_of(out.after, nodes["q"]) == [0, 4]


def test_mixed_cancel_and_merge_readers():
    """U([0, 2]) read by S([0, 2]) (cancels), S([0]) (leaves U([1])) and U([4]) (merges)."""
    text = f"""{head(13)}
    g (float[N, 3] x) => (float[N, 3] a, float[N, 1, 3] b, float[1, N, 1, 3, 1] c)
      <int64[2] a02 = {{0, 2}}, int64[1] a0 = {{0}}, int64[1] a4 = {{4}}>
    {{
      t = Unsqueeze(x, a02)
      z = Squeeze(t, a02)
      a = Relu(z)
      [sq0] b = Squeeze(t, a0)
      c = Unsqueeze(t, a4)
    }}"""
    # alone, the rule does all three readers
    alone = checked(optimize(text, rules=[RULE]))
    assert alone.fired == {RULE: 1}
    nodes = by_output(alone.after.graph)
    assert nodes["a"].input[0] == "x"  # the cancelled reader's reader reads x
    assert nodes["b"].op_type == "Unsqueeze" and nodes["b"].input[0] == "x"
    assert axes_of(alone.after, nodes["b"]) == [1]
    assert nodes["b"].name == "sq0/unsqueeze"
    assert nodes["c"].input[0] == "x" and axes_of(alone.after, nodes["c"]) == [0, 2, 4]
    assert sorted(alone.ops()) == ["Relu", "Unsqueeze", "Unsqueeze"]
    # the reported counts follow the Squeeze that became an Unsqueeze
    assert alone.result.after == count_ops(build_graph(loaded_of(alone.data)))
    assert alone.result.after == {"nodes": 3, "Squeeze": 0, "Unsqueeze": 2}
    # with every rule the cancel rule takes the identity first, the fan-out the rest: same model
    every = checked(optimize(text))
    assert every.fired[RULE] == 1 and every.fired["cancel-unsqueeze-squeeze"] == 1
    assert sorted(every.ops()) == sorted(alone.ops())


def test_reader_that_is_a_graph_output_becomes_an_identity():
    out = checked(optimize(f"""{head(13)}
    g (float[N, 3] x) => (float[N, 3] y, float[1, 1, N, 3] w) <int64[1] a0 = {{0}}>
    {{
      t = Unsqueeze(x, a0)
      y = Squeeze(t, a0)
      w = Unsqueeze(t, a0)
    }}"""))
    assert out.fired == {RULE: 1}
    nodes = by_output(out.after.graph)
    assert nodes["y"].op_type == "Identity" and list(nodes["y"].input) == ["x"]
    assert nodes["w"].op_type == "Unsqueeze" and axes_of(out.after, nodes["w"]) == [0, 1]
    assert out.result.after == {"nodes": 2, "Squeeze": 0, "Unsqueeze": 1}


def test_first_node_that_is_a_graph_output_does_not_fire():
    out = optimize(f"""{head(13)}
    g (float[N, 3] x) => (float[1, N, 3] t, float[1, N, 3, 1] p, float[1, 1, N, 3] q)
      <int64[1] a0 = {{0}}, int64[1] a3 = {{3}}>
    {{
      t = Unsqueeze(x, a0)
      p = Unsqueeze(t, a3)
      q = Unsqueeze(t, a0)
    }}""")
    assert not out.result.changed
    assert any("graph output" in s for s in near_misses(out))


def test_a_reader_of_another_op_does_not_fire():
    out = optimize(f"""{head(13)}
    g (float[N, 3] x) => (float[1, N, 3, 1] p, float[1, 1, N, 3] q, float[1, N, 3] r)
      <int64[1] a0 = {{0}}, int64[1] a3 = {{3}}>
    {{
      t = Unsqueeze(x, a0)
      p = Unsqueeze(t, a3)
      q = Unsqueeze(t, a0)
      r = Relu(t)
    }}""")
    assert not out.result.changed


def test_a_reader_that_cannot_absorb_blocks_all():
    """S([0]) then U([1]) is no one node: the Squeeze stays, and so do its readers."""
    out = optimize(f"""{head(13)}
    g (float[1, N, 3] x) => (float[1, N, 3] p, float[N, 1, 3] q) <int64[1] a0 = {{0}}, int64[1] a1 = {{1}}>
    {{
      s = Squeeze(x, a0)
      p = Unsqueeze(s, a0)
      q = Unsqueeze(s, a1)
    }}""")
    assert not out.result.changed
    assert any("positions differ" in s for s in near_misses(out))


def test_single_reader_is_left_to_merge_unsqueeze():
    out = checked(optimize(f"""{head(13)}
    g (float[N, 3] x) => (float[1, 1, N, 3] y) <int64[1] a0 = {{0}}>
    {{
      t = Unsqueeze(x, a0)
      y = Unsqueeze(t, a0)
    }}"""))
    assert out.fired.get("merge-unsqueeze") == 1 and RULE not in out.fired


SQUEEZE_SYMBOLIC = f"""{head(13)}
g (float[N, 3] x) => (float[N, 3] p, float[N, 3] q) <int64[1] a0 = {{0}}>
{{
  s = Squeeze(x, a0)
  p = Unsqueeze(s, a0)
  q = Unsqueeze(s, a0)
}}"""


def test_squeeze_of_a_symbolic_dim_cancels_with_a_note_but_not_under_strict():
    out = optimize(SQUEEZE_SYMBOLIC)
    assert out.fired[RULE] == 1
    assert [n.op_type for n in out.after.graph.node] == ["Identity", "Identity"]
    assert any("run-time failure" in n and "dim 0 (N)" in n for n in out.result.notes)
    check_rewrite(out, values=BINDINGS)  # runs where the original runs (N = 1)
    strict = optimize(SQUEEZE_SYMBOLIC, strict=True)
    assert not strict.result.changed
    assert any("--strict" in s for s in near_misses(strict))


def test_squeeze_of_a_static_one_cancels_under_strict():
    out = checked(optimize(SQUEEZE_SYMBOLIC.replace("float[N, 3] x", "float[1, N] x")
                           .replace("float[N, 3] p, float[N, 3] q", "float[1, N] p, float[1, N] q"), strict=True))
    assert out.fired[RULE] == 1
    assert not out.result.notes


def _if_model(opset: int) -> onnx.ModelProto:
    """The dynamo pattern inside an If branch, reading the outer x."""
    def axes(name: str, values: list[int]) -> onnx.TensorProto:
        return numpy_helper.from_array(np.array(values, dtype=np.int64), name)

    then = helper.make_graph(
        [helper.make_node("Unsqueeze", ["x", "b_a0"], ["bt"]),
         helper.make_node("Unsqueeze", ["bt", "b_a3"], ["bp"]),
         helper.make_node("Unsqueeze", ["bt", "b_a2"], ["bq"]),
         helper.make_node("Add", ["bp", "bq"], ["o"])],
        "then", [], [helper.make_tensor_value_info("o", TensorProto.FLOAT, [1, "N", 1, 1])],
        initializer=[axes("b_a0", [0]), axes("b_a2", [2]), axes("b_a3", [3])])
    other = helper.make_graph(
        [helper.make_node("Unsqueeze", ["x", "e_a"], ["o2"])],
        "else", [], [helper.make_tensor_value_info("o2", TensorProto.FLOAT, [1, "N", 1, 1])],
        initializer=[axes("e_a", [0, 3])])
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)], "g",
        [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "N", 1, 1])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def test_in_an_if_branch():
    out = checked(optimize(_if_model(13)))
    assert out.fired[RULE] == 1
    then = next(a.g for a in out.after.graph.node[0].attribute if a.name == "then_branch")
    nodes = by_output(then)
    assert "bt" not in nodes
    assert nodes["bp"].input[0] == "x" and axes_of(out.after, nodes["bp"], then) == [0, 3]
    assert nodes["bq"].input[0] == "x" and axes_of(out.after, nodes["bq"], then) == [0, 2]
    assert sum(n.op_type == "Unsqueeze" for n in all_nodes(out.after)) == 3


def test_in_a_function_body():
    text = """<ir_version: 8, opset_import: ["" : 13, "local" : 1]>
    g (float[N, 3] x) => (float[1, 1, N, 3] y)
    {
      y = local.F(x)
    }
    <domain: "local", opset_import: ["" : 13]>
    F (a) => (o)
    {
      k0 = Constant<value = int64[1] {0}>()
      k1 = Constant<value = int64[1] {1}>()
      t = Unsqueeze(a, k0)
      p = Unsqueeze(t, k0)
      q = Unsqueeze(t, k1)
      o = Add(p, q)
    }"""
    out = optimize(text)
    assert out.fired[RULE] == 1
    body = out.after.functions[0]
    ops = [n.op_type for n in body.node]
    assert ops.count("Unsqueeze") == 2 and len(ops) <= 6
    assert all(n.input[0] == "a" for n in body.node if n.op_type == "Unsqueeze")
    check_rewrite(out, values=BINDINGS, full_check=False)


def test_find_candidates_reports_the_first_node():
    loaded = loaded_of(parse(DYNAMO_18))
    analysis = analyze(loaded)
    found = [c for c in find_candidates(analysis.graph, analysis.inference, select()) if c.rule == RULE]
    assert len(found) == 1 and found[0].code == "SF206"
    assert "'first' (Unsqueeze)" in found[0].message


def test_lint_reports_sf206_and_fix_applies_it(tmp_path):
    path = tmp_path / "dynamo.onnx"
    original = parse(DYNAMO_18)
    path.write_bytes(original.SerializeToString())
    result = lint_file(str(path))
    sf206 = [d for d in result.diagnostics if d.code == "SF206"]
    assert len(sf206) == 1 and sf206[0].name == "fan-out-merge" and sf206[0].fixable
    assert path.read_bytes() == original.SerializeToString()  # lint alone writes nothing
    fixed = lint_file(str(path), LintOptions(fix=True, show_info=True))
    assert fixed.changed and not [d for d in fixed.diagnostics if d.code == "SF206"]
    after = onnx.load(str(path))
    assert sum(n.op_type == "Unsqueeze" for n in after.graph.node) == 2
    check_rewrite(Outcome(optimize_model(loaded_of(original)), original, after, after.SerializeToString(), {}),
                  values=BINDINGS)


def test_cli_lint_select_sf206(tmp_path):
    path = tmp_path / "dynamo.onnx"
    path.write_bytes(parse(DYNAMO_18).SerializeToString())
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    run = cli_process.shapeflow("lint", "--isolated", "--show-info", "--select", "SF206", str(path), env=env,
                                timeout=300)
    assert run.returncode == 0, run.stderr
    assert "SF206 fan-out-merge" in run.stdout and "'first' (Unsqueeze) [0, 1]" in run.stdout


def test_lint_fix_leaves_a_reader_whose_finding_is_suppressed(tmp_path):
    """The cancelling reader's SF201 is suppressed in the model: --fix must not rewrite that node,
    neither by the cancel rooted at it nor by the fan-out rooted at the node it reads."""
    model = parse(f"""{head(13)}
    g (float[N, 3] x) => (float[N, 3] a, float[1, N, 3, 1] c) <int64[1] a0 = {{0}}, int64[1] a3 = {{3}}>
    {{
      t = Unsqueeze(x, a0)
      [keep] z = Squeeze(t, a0)
      a = Relu(z)
      c = Unsqueeze(t, a3)
    }}""")
    node = next(n for n in model.graph.node if n.name == "keep")
    node.doc_string = "shapeflow: ignore[SF201]"
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    plain = lint_file(str(path))
    assert {d.code for d in plain.diagnostics} == {"SF206"}  # SF201 at 'keep' is suppressed
    lint_file(str(path), LintOptions(fix=True, show_info=True))
    after = onnx.load(str(path))
    kept = [n for n in after.graph.node if n.name == "keep"]
    assert len(kept) == 1 and kept[0].op_type == "Squeeze" and kept[0].input[0] == "t"
    # without the suppression, the same fix rewrites both readers
    node.doc_string = ""
    path.write_bytes(model.SerializeToString())
    lint_file(str(path), LintOptions(fix=True, show_info=True))
    assert sorted(n.op_type for n in onnx.load(str(path)).graph.node) == ["Relu", "Unsqueeze"]


def test_opset11_squeeze_reader_becomes_an_unsqueeze_with_the_attribute():
    text = f"""{head(11)}
    g (float[N, 3] x) => (float[N, 1, 3] b, float[1, N, 1, 3, 1] c)
    {{
      t = Unsqueeze<axes = [0, -2]>(x)
      [sq0] b = Squeeze<axes = [0]>(t)
      c = Unsqueeze<axes = [4]>(t)
    }}"""
    out = checked(optimize(text))
    assert out.fired[RULE] == 1
    nodes = by_output(out.after.graph)
    assert nodes["b"].op_type == "Unsqueeze" and list(nodes["b"].input) == ["x"]
    assert [list(a.ints) for a in nodes["b"].attribute if a.name == "axes"] == [[1]]
    assert [list(a.ints) for a in nodes["c"].attribute if a.name == "axes"] == [[0, 2, 4]]
    # carrying inference over between rounds gives the model a whole inference per round gives
    assert optimize(text, full_inference=True).data == out.data
