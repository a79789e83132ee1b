"""RELIABILITY.md 1.2 rows 8-19: models that parse but are malformed, unsupported or invalid graphs."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from onnx import helper

from .harness import WARNING_EXIT, E, Row, Run, Setup, check_row, params
from .models import cancelling_pair, ints, model, unknown_field, vi, write

ALL = "infer", "lint", "optimize"


def every(exp_code: int, *says: str, **kw: object) -> dict:
    return {cmd: E(exp_code, *says, writes=exp_code < 2 and cmd != "lint" or False, **kw) for cmd in ALL}


def invalid_graph(*says: str, names: tuple[str, ...] = ()) -> dict:
    return {cmd: E(2, *says, code="SF002", names=names, writes=False) for cmd in ALL}


def unreadable(*says: str) -> dict:
    return {cmd: E(2, *says, code="SF001", writes=False) for cmd in ALL}


def saved(m: onnx.ModelProto | bytes):  # type: ignore[no-untyped-def]
    def build(tmp: Path) -> Setup:
        return Setup(write(m, tmp / "m.onnx"))
    return build


# -- 8 concatenated models ----------------------------------------------------------------------------

CONCAT_13 = cancelling_pair(13).SerializeToString() * 2  # initializers, inputs and nodes all twice
CONCAT_11 = cancelling_pair(11).SerializeToString() * 2  # no initializers

# -- 9 unknown fields ---------------------------------------------------------------------------------

MARK_MODEL = unknown_field(1001, 0x5F5F01)
MARK_GRAPH = unknown_field(1002, 0x5F5F02)
MARK_NODE = unknown_field(1003, 0x5F5F03)


def future_ir_model() -> bytes:
    m = cancelling_pair()
    relu = m.graph.node[2]
    node = onnx.NodeProto.FromString(relu.SerializeToString() + MARK_NODE)
    relu.CopyFrom(node)
    graph = onnx.GraphProto.FromString(m.graph.SerializeToString() + MARK_GRAPH)
    m.graph.CopyFrom(graph)
    data = m.SerializeToString() + MARK_MODEL
    assert all(mark in data for mark in (MARK_MODEL, MARK_GRAPH, MARK_NODE))
    return data


def keeps_unknown_fields(setup: Setup, run: Run) -> None:
    out = Path(setup.output or Path(setup.model).parent / "out.onnx")
    data = out.read_bytes()
    lost = [name for name, mark in (("model", MARK_MODEL), ("graph", MARK_GRAPH), ("node", MARK_NODE))
            if mark not in data]
    assert not lost, f"unknown fields dropped at {lost} level"


# -- 10 missing parts ---------------------------------------------------------------------------------

def no_graph() -> onnx.ModelProto:
    m = cancelling_pair()
    m.ClearField("graph")
    return m


def no_ir_version() -> onnx.ModelProto:
    m = cancelling_pair()
    m.ClearField("ir_version")
    return m


def no_default_opset() -> onnx.ModelProto:
    m = cancelling_pair()
    del m.opset_import[:]
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    return m


# -- 11, 12 versions ----------------------------------------------------------------------------------

def with_opset(version: int, domain: str = "") -> onnx.ModelProto:
    m = cancelling_pair()
    if domain:
        m.opset_import.append(helper.make_opsetid(domain, version))
    else:
        m.opset_import[0].version = version
    return m


def with_ir(version: int) -> onnx.ModelProto:
    m = cancelling_pair()
    m.ir_version = version
    return m


def function_with_opset(version: int) -> onnx.ModelProto:
    m = cancelling_pair()
    fn = helper.make_function("local", "F", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"])],
                              [helper.make_opsetid("", version)])
    m.functions.append(fn)
    m.opset_import.append(helper.make_opsetid("local", 1))
    return m


# -- 13 custom domain ---------------------------------------------------------------------------------

def evil_squeeze() -> onnx.ModelProto:
    """ai.onnx Unsqueeze(0) then com.evil::Squeeze(0): looks like a cancelling pair, is not one."""
    nodes = [helper.make_node("Unsqueeze", ["x", "axes"], ["u"], name="unsq"),
             helper.make_node("Squeeze", ["u", "axes"], ["y"], name="evil_sq", domain="com.evil")]
    return model(nodes, [vi("x", [2, 3])], [vi("y", None)], [ints("axes", [0])],
                 extra_opsets=[("com.evil", 1)])


# -- 14 unknown op ------------------------------------------------------------------------------------

def typo_op(op_type: str) -> onnx.ModelProto:
    nodes = [helper.make_node(op_type, ["x", "axes"], ["y"], name="bad_node")]
    return model(nodes, [vi("x", [1, 3])], [vi("y", None)], [ints("axes", [0])])


# -- 15-18 graph validity -----------------------------------------------------------------------------

def cycle() -> onnx.ModelProto:
    nodes = [helper.make_node("Add", ["x", "b"], ["a"], name="A"),
             helper.make_node("Relu", ["a"], ["b"], name="B")]
    return model(nodes, [vi("x", [2])], [vi("b", [2])])


def self_loop() -> onnx.ModelProto:
    nodes = [helper.make_node("Add", ["x", "a"], ["a"], name="A")]
    return model(nodes, [vi("x", [2])], [vi("a", [2])])


def undefined_main() -> onnx.ModelProto:
    nodes = [helper.make_node("Unsqueeze", ["GHOST", "axes"], ["y"], name="n")]
    return model(nodes, [vi("x", [2])], [vi("y", None)], [ints("axes", [0])])


def if_model(branch_nodes: list[onnx.NodeProto], branch_out: str, *, main_extra: list[onnx.NodeProto] = (),
             ) -> onnx.ModelProto:
    then = helper.make_graph(branch_nodes, "then", [], [vi(branch_out, None)])
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["e"], name="else_id")], "else", [],
                              [vi("e", None)])
    nodes = list(main_extra) + [helper.make_node("If", ["c"], ["y"], name="if_node", then_branch=then,
                                                 else_branch=other)]
    return model(nodes, [vi("x", [2, 3]), vi("c", [], onnx.TensorProto.BOOL)], [vi("y", None)],
                 [ints("axes", [0])])


def undefined_in_subgraph() -> onnx.ModelProto:
    return if_model([helper.make_node("Unsqueeze", ["GHOST", "axes"], ["t"], name="inner")], "t")


def duplicate_output() -> onnx.ModelProto:
    nodes = [helper.make_node("Unsqueeze", ["x", "axes"], ["U"], name="n1"),
             helper.make_node("Identity", ["x"], ["U"], name="n2")]
    return model(nodes, [vi("x", [2])], [vi("U", None)], [ints("axes", [0])])


def initializer_shadows_output() -> onnx.ModelProto:
    nodes = [helper.make_node("Unsqueeze", ["x", "axes"], ["U"], name="n1")]
    return model(nodes, [vi("x", [2])], [vi("U", None)], [ints("axes", [0]), ints("U", [1, 2])])


def subgraph_shadows_outer() -> onnx.ModelProto:
    return if_model([helper.make_node("Unsqueeze", ["x", "axes"], ["x"], name="inner")], "x")


def output_never_produced() -> onnx.ModelProto:
    nodes = [helper.make_node("Unsqueeze", ["x", "axes"], ["u"], name="n")]
    return model(nodes, [vi("x", [2])], [vi("u", None), vi("Y", None)], [ints("axes", [0])])


def duplicate_graph_input() -> onnx.ModelProto:
    nodes = [helper.make_node("Unsqueeze", ["x", "axes"], ["u"], name="n")]
    return model(nodes, [vi("x", [2]), vi("x", [3])], [vi("u", None)], [ints("axes", [0])])


# -- 19 unsorted --------------------------------------------------------------------------------------

def unsorted() -> onnx.ModelProto:
    m = cancelling_pair()
    nodes = list(m.graph.node)
    del m.graph.node[:]
    m.graph.node.extend(reversed(nodes))  # relu, sq, unsq: acyclic, not in order
    return m


def output_sorted(setup: Setup, run: Run) -> None:
    out = onnx.load(str(Path(setup.model).parent / "out.onnx"), load_external_data=False)
    seen = {i.name for i in out.graph.input} | {t.name for t in out.graph.initializer}
    for node in out.graph.node:
        missing = [n for n in node.input if n and n not in seen]
        assert not missing, f"output not topologically sorted: {node.name} reads {missing} before they exist"
        seen.update(node.output)


ROWS = [
    Row("08-concatenated-with-initializers", saved(CONCAT_13),
        invalid_graph("defined twice", "(file may be concatenated models)")),
    Row("08-concatenated-nodes-only", saved(CONCAT_11),
        invalid_graph("'x' defined twice", "(file may be concatenated models)")),
    Row("09-unknown-fields", saved(future_ir_model()), {
        "infer": E(0, writes=True),
        "lint": E(WARNING_EXIT, "unknown field", severity="warning"),
        "optimize": E(0, writes=True, check=keeps_unknown_fields),
    }),
    Row("10-no-graph", saved(no_graph()), unreadable("model has no graph")),
    Row("10-no-ir-version", saved(no_ir_version()), unreadable("model has no ir_version")),
    Row("10-no-ai-onnx-opset", saved(no_default_opset()), unreadable("no opset_import for ai.onnx")),
    # (an error: onnxruntime refuses opsets and IR versions newer than its onnx knows)
    Row("11-opset-30", saved(with_opset(30)), {
        "infer": E(1, "ai.onnx opset 30 is newer than the newest known", code="SF005", severity="error"),
        "lint": E(1, "ai.onnx opset 30 is newer than the newest known", code="SF005", severity="error"),
        "optimize": E(2, "opset 30", writes=False),
    }),
    Row("11-ir-2^40", saved(with_ir(2**40)), {
        "infer": E(1, "IR version 1099511627776 is newer", code="SF005", severity="error"),
        "lint": E(1, "IR version 1099511627776 is newer", code="SF005", severity="error"),
        "optimize": E(2, "IR version 1099511627776 is newer", writes=False),
    }),
    Row("12-opset-2^62", saved(with_opset(2**62)), unreadable("invalid opset version 4611686018427387904")),
    Row("12-opset-negative", saved(with_opset(-1)), unreadable("invalid opset version -1")),
    Row("12-custom-domain-opset-0", saved(with_opset(0, "com.example")), unreadable("invalid opset version 0")),
    Row("12-function-opset-negative", saved(function_with_opset(-7)),
        unreadable("invalid opset version -7", "function 'local::F'")),
    Row("13-custom-domain-squeeze", saved(evil_squeeze()), {
        "infer": E(0, writes=True),
        "lint": E(0),
        "optimize": E(0, writes=True, identical=True),  # never rewritten: the output is a byte copy
    }),
    Row("14-unknown-op", saved(typo_op("Sqeeze")), {
        "infer": E(1, "unknown operator 'Sqeeze' in ai.onnx opset 13", code="SF004", names=("bad_node",)),
        "lint": E(1, "unknown operator 'Sqeeze' in ai.onnx opset 13", code="SF004", names=("bad_node",)),
        "optimize": E(2, "Sqeeze", names=("bad_node",), writes=False),
    }),
    Row("14-empty-op-type", saved(typo_op("")), {
        "infer": E(1, "empty op_type", code="SF004", names=("bad_node",)),
        "lint": E(1, "empty op_type", code="SF004", names=("bad_node",)),
        "optimize": E(2, "op_type", names=("bad_node",), writes=False),
    }),
    Row("15-cycle", saved(cycle()), invalid_graph("has a cycle", names=("A", "B", "→"))),
    Row("15-self-loop", saved(self_loop()), invalid_graph("has a cycle: A → A")),
    Row("16-undefined-input", saved(undefined_main()),
        invalid_graph("reads undefined tensor 'GHOST'", names=("'n'",))),
    Row("16-undefined-outer-input", saved(undefined_in_subgraph()),
        invalid_graph("reads undefined tensor 'GHOST'", names=("'inner'", "then_branch"))),
    Row("17-duplicate-output", saved(duplicate_output()),
        invalid_graph("'U' defined twice (Unsqueeze 'n1', Identity 'n2')")),
    Row("17-initializer-shadows-output", saved(initializer_shadows_output()),
        invalid_graph("'U' defined twice (initializer, Unsqueeze 'n1')")),
    Row("17-subgraph-shadows-outer", saved(subgraph_shadows_outer()), invalid_graph("shadows a tensor of main", "'x'")),
    Row("17-duplicate-graph-input", saved(duplicate_graph_input()), invalid_graph("'x' defined twice")),
    Row("18-output-never-produced", saved(output_never_produced()), invalid_graph("graph output 'Y'", "is never produced")),
    Row("19-unsorted", saved(unsorted()), {
        "infer": E(WARNING_EXIT, code="SF003", severity="warning"),
        "lint": E(WARNING_EXIT, code="SF003", severity="warning"),
        "optimize": E(0, writes=True, check=output_sorted),  # emits a sorted graph
    }),
]


@pytest.mark.parametrize("row, cmd", params(ROWS))
def test_row(row: Row, cmd: str, tmp_path: Path) -> None:
    check_row(row, cmd, tmp_path)
