"""The rewrite engine visits the roots its rules name: any op type, every node (``ANY_OP``), and
nodes without inputs (``FROM_NOTHING``), and runs them to a fixpoint like the Squeeze/Unsqueeze
rules. The rules here exist only for these tests."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper

from shapeflow.graph import build_graph
from shapeflow.inference import infer
from shapeflow.io import LoadedModel
from shapeflow.io.load import load_model_bytes
from shapeflow import rewrites
from shapeflow.passes import find_candidates, rewrite_model
from shapeflow.passes.context import ANY_OP, FROM_NOTHING, RoundContext
from shapeflow.passes.dispatch import Dispatch, input_kind, roots
from shapeflow.passes.edit import Editor
from shapeflow.passes.match import Match, NoMatch, Result
from shapeflow.passes.pattern import AnyNode, Bound, Op
from shapeflow.passes.spec import Rewrite


class _DropIdentity(Rewrite):
    """Identity(x) is x (test rule)."""

    name = "drop-identity-test"
    pattern = Op("Identity")

    def check(self, ctx: RoundContext, b: Bound) -> Result:
        nid = b.root
        sid, z = ctx.sid(nid), ctx.output(nid)
        if ctx.is_output(sid, z) or not ctx.direct_readers_only(sid, z):
            return NoMatch("output must keep its name")
        readers = tuple(r for r in ctx.readers(sid, z))
        return Match(nid, rewires=readers, message=f"{ctx.display(nid)} goes")

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[Any]) -> None:
        sid = ctx.sid(m.nid)
        edit.replace_uses(sid, ctx.output(m.nid), ctx.inputs(m.nid)[0])
        edit.delete_node(m.nid)


class _SeenEverything(Rewrite):
    """Records the roots it is asked about (test rule: never fires)."""

    name = "seen-test"
    pattern = AnyNode()

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.kinds: dict[str, str] = {}

    def match(self, ctx: RoundContext, nid: int) -> Result:
        self.seen.append(ctx.info(nid).op_type)
        return NoMatch("never", near=False)


def _loaded(model: onnx.ModelProto) -> LoadedModel:
    return load_model_bytes(model.SerializeToString(), "m.onnx")


def _model() -> onnx.ModelProto:
    c = helper.make_node("Constant", [], ["c"], value=helper.make_tensor("v", TensorProto.INT64, [1], [0]))
    nodes = [
        c,
        helper.make_node("Identity", ["x"], ["i1"]),
        helper.make_node("Identity", ["i1"], ["i2"]),
        helper.make_node("Unsqueeze", ["i2", "c"], ["u"]),
        helper.make_node("Identity", ["u"], ["y"]),
    ]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "n"])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_rules_rooted_at_other_ops_run_to_a_fixpoint() -> None:
    loaded = _loaded(_model())
    result = rewrite_model(loaded, [_DropIdentity()])
    ops = [n.op_type for n in loaded.proto.graph.node]
    # the two inner Identities go (over two rounds: the second reads the first), the one producing
    # a graph output stays
    assert ops == ["Constant", "Unsqueeze", "Identity"], ops
    assert result.rewrites["drop-identity-test"] == 2
    assert loaded.proto.graph.node[1].input[0] == "x"
    x = np.arange(3, dtype=np.float32)
    import onnxruntime as ort

    sess = ort.InferenceSession(loaded.proto.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], x[None])


def test_full_inference_and_carried_inference_agree() -> None:
    a, b = _loaded(_model()), _loaded(_model())
    rewrite_model(a, [_DropIdentity()])
    rewrite_model(b, [_DropIdentity()], full_inference=True)
    assert a.proto.SerializeToString() == b.proto.SerializeToString()


def test_any_op_visits_every_node_and_constants_have_no_input_kind() -> None:
    loaded = _loaded(_model())
    graph = build_graph(loaded)
    inference = infer(graph)
    ctx = RoundContext.build(graph, inference)
    rule = _SeenEverything()
    dispatch = Dispatch([rule])
    planned = dispatch.plan(ctx, latest_first=False)
    assert [graph.nodes[n].op_type for n, _ in planned] == ["Constant", "Identity", "Identity", "Unsqueeze", "Identity"]
    assert dispatch.plan_plain(ctx, latest_first=False) == planned
    assert rule.roots == (ANY_OP,)
    # only Squeeze/Unsqueeze roots unless a rule names other ops
    assert [graph.nodes[n].op_type for n in roots(ctx)] == ["Unsqueeze"]
    assert input_kind(ctx, 0) == FROM_NOTHING


def test_candidates_of_other_roots_are_listed() -> None:
    loaded = _loaded(_model())
    graph = build_graph(loaded)
    found = find_candidates(graph, infer(graph), rewrites.select())
    assert all(c.rule != "drop-identity-test" for c in found)  # (not registered)


def test_a_long_chain_of_pairs_takes_few_rounds() -> None:
    """A deferred rewrite reserves only what it would leave to the sweep (``Match.sweeps``): were a
    chain rule's nodes reserved too, each deferred pair would defer the next one, one pair a round
    (the contract row of 5,000 pairs then ran for minutes)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from contract.models import unsqueeze_squeeze_chain

    loaded = _loaded(unsqueeze_squeeze_chain(300))
    result = rewrite_model(loaded, rewrites.select(), explain=False)
    assert sum(result.rewrites.get(k, 0) for k in ("cancel-unsqueeze-squeeze", "cancel-squeeze-unsqueeze")) == 300
    assert result.rounds <= 16, result.rounds
