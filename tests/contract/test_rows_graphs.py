"""RELIABILITY.md 1.2 rows 34-36 (nesting, control-flow bodies, functions) and 43-44 (scale), plus
the issue's 200,000-node chain: no recursion over graph depth anywhere."""

from __future__ import annotations

import sys
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from .harness import E, Row, Run, Setup, check_row, params
from .models import chain, model, nested_if, unsqueeze_squeeze_chain, vi, write

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from model_builders import squeeze_unsqueeze_chain  # noqa: E402

ALL = "infer", "lint", "optimize"


def saved(m: onnx.ModelProto | bytes):  # type: ignore[no-untyped-def]
    def build(tmp: Path) -> Setup:
        return Setup(write(m, tmp / "m.onnx"))
    return build


# -- 35 Loop / Scan body signatures --------------------------------------------------------------------

def loop_missing_carried_output() -> onnx.ModelProto:
    """Loop with one carried value whose body returns only the condition (needs 1 + 1 outputs)."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond")], "body",
        [vi("i", [], TensorProto.INT64), vi("cond_in", [], TensorProto.BOOL), vi("v_in", [2])],
        [vi("cond_out", [], TensorProto.BOOL)])
    node = helper.make_node("Loop", ["M", "", "v"], ["v_out"], name="loop", body=body)
    return model([node], [vi("M", [], TensorProto.INT64), vi("v", [2])], [vi("v_out", None)])


def scan_wrong_arity() -> onnx.ModelProto:
    """Scan with one state and one scan input whose body takes a single input (needs 2)."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["s_in"], ["s_out"], name="body_id")], "body",
        [vi("s_in", [2])], [vi("s_out", [2])])
    node = helper.make_node("Scan", ["s", "xs"], ["s_final"], name="scan", body=body, num_scan_inputs=1)
    return model([node], [vi("s", [2]), vi("xs", [3, 2])], [vi("s_final", None)], opset=16)


# -- 36 recursive functions ------------------------------------------------------------------------------

def recursive_functions(kind: str) -> onnx.ModelProto:
    opsets = [helper.make_opsetid("", 13), helper.make_opsetid("local", 1)]
    if kind == "self":
        fns = [helper.make_function("local", "F", ["a"], ["b"],
                                    [helper.make_node("F", ["a"], ["b"], domain="local")], opsets)]
    elif kind == "mutual":
        fns = [helper.make_function("local", "F", ["a"], ["b"],
                                    [helper.make_node("G", ["a"], ["b"], domain="local")], opsets),
               helper.make_function("local", "G", ["a"], ["b"],
                                    [helper.make_node("F", ["a"], ["b"], domain="local")], opsets)]
    else:  # through an If body inside the function (onnx#8171)
        then = helper.make_graph([helper.make_node("F", ["a"], ["t"], domain="local")], "then", [], [vi("t", None)])
        other = helper.make_graph([helper.make_node("Identity", ["a"], ["e"])], "else", [], [vi("e", None)])
        fns = [helper.make_function("local", "F", ["a", "c"], ["b"],
                                    [helper.make_node("If", ["c"], ["b"], then_branch=then, else_branch=other)],
                                    opsets)]
    inputs = ["x"] if kind != "subgraph" else ["x", "c"]
    node = helper.make_node("F", inputs, ["y"], name="call", domain="local")
    graph_inputs = [vi("x", [2])] + ([vi("c", [], TensorProto.BOOL)] if kind == "subgraph" else [])
    return model([node], graph_inputs, [vi("y", None)], extra_opsets=[("local", 1)], functions=fns)


# -- 43, 44, chains ----------------------------------------------------------------------------------------

def keeps_interface(setup: Setup, run: Run) -> None:
    src = onnx.load(setup.model, load_external_data=False)
    out_path = Path(setup.model).parent / "out.onnx"
    if not out_path.exists():
        return
    out = onnx.load(str(out_path), load_external_data=False)
    assert [i.SerializeToString() for i in src.graph.input] == [i.SerializeToString() for i in out.graph.input]
    assert [o.SerializeToString() for o in src.graph.output] == [o.SerializeToString() for o in out.graph.output]
    produced = {o for n in out.graph.node for o in n.output} | {i.name for i in out.graph.input}
    assert all(o.name in produced for o in out.graph.output), "an output of the optimized model is not produced"


def big(n: int):  # type: ignore[no-untyped-def]
    cache: dict[str, bytes] = {}

    def build(tmp: Path) -> Setup:
        if "m" not in cache:
            cache["m"] = squeeze_unsqueeze_chain(n).SerializeToString()
        return Setup(write(cache["m"], tmp / "m.onnx"), timeout=180)
    return build


def deep(maker, *args):  # type: ignore[no-untyped-def]
    cache: dict[str, bytes] = {}

    def build(tmp: Path) -> Setup:
        if "m" not in cache:
            cache["m"] = maker(*args).SerializeToString()
        return Setup(write(cache["m"], tmp / "m.onnx"), timeout=120)
    return build


GiB = 1 << 30

ROWS = [
    Row("34-nested-31-deep", saved(nested_if(31)), {
        "infer": E(0, writes=True), "lint": E(0), "optimize": E(0, writes=True, identical=True)}),
    Row("34-nested-32-deep", saved(nested_if(32)), {
        cmd: E(2, "nesting too deep for protobuf (max ≈ 31 levels)", code="SF001", writes=False) for cmd in ALL}),
    Row("35-loop-body-missing-carried-output", saved(loop_missing_carried_output()), {
        cmd: E(1, "Loop body has 1 output", code="SF116", names=("loop",),
               writes=False if cmd == "optimize" else None) for cmd in ALL}),
    Row("35-scan-body-wrong-arity", saved(scan_wrong_arity()), {
        cmd: E(1, "Scan body has 1 input", code="SF116", names=("scan",),
               writes=False if cmd == "optimize" else None) for cmd in ALL}),
    Row("36-function-calls-itself", saved(recursive_functions("self")), {
        cmd: E(2, "function cycle: local::F → local::F", code="SF002", writes=False) for cmd in ALL}),
    Row("36-mutually-recursive-functions", saved(recursive_functions("mutual")), {
        cmd: E(2, "function cycle: local::", code="SF002", writes=False) for cmd in ALL}),
    Row("36-recursion-through-a-subgraph", saved(recursive_functions("subgraph")), {
        cmd: E(2, "function cycle: local::F → local::F", code="SF002", writes=False) for cmd in ALL}),
    # Row 43 at a tenth of its size (the same O(N) passes); the 300k-node model's time (against
    # onnx's infer_shapes) and memory are budgets of benchmarks/bench_budgets.py, run by .ci/run.
    Row("43-30k-nodes", big(30_000), {
        "infer": E(0, max_rss=3 * GiB // 2),
        "lint": E(0, max_rss=3 * GiB // 2),
        "optimize": E(0, writes=True, max_rss=3 * GiB // 2, check=keeps_interface),
    }),
    Row("44-5000-squeeze-unsqueeze-pairs", deep(unsqueeze_squeeze_chain, 5000), {
        "infer": E(0), "lint": E(0), "optimize": E(0, writes=True, check=keeps_interface)}),
    # 20,000 nodes deep is twenty times the interpreter's recursion limit: no recursion over depth
    # (the 200,000-node chain's time is a budget of benchmarks/bench_budgets.py)
    Row("44-20k-node-chain", deep(chain, 20_000), {cmd: E(0) for cmd in ALL}),
]


@pytest.mark.parametrize("row, cmd", params(ROWS))
def test_row(row: Row, cmd: str, tmp_path: Path) -> None:
    check_row(row, cmd, tmp_path)
