"""Issue 25 point 3: zero-initial-state (SF237): an RNN/GRU/LSTM initial state that is provably all
+0 (tf2onnx's ``Unsqueeze(Expand(0.0, Cast(Concat(Shape(x)[0:1], [H]))))``, paddle2onnx's
``Slice(Expand(0.0, Concat([2], batch, [H])))``, ``ConstantOfShape``) is omitted, and the chain that
built it goes. onnxruntime runs the original and the rewritten model in a child process (it aborts
on an LSTM at batch 0 and a GRU at sequence length 0, with or without a state) at batch and
sequence lengths 0, 1, 2, 3 and 33, with sequence_lens holding zeros; outputs must be the same bits,
or both runs fail."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

pytest.importorskip("onnxruntime")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))
import shapearith  # noqa: E402
from test_passes_support import optimize, signature  # noqa: E402

H, IN = 3, 4  # hidden size, input size
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


@pytest.fixture(scope="module")
def runner(ort_runner) -> Iterator[shapearith.Runner]:
    yield ort_runner  # one onnxruntime worker for the session (tests/conftest.py)


def const(name: str, values: object, dtype: type = np.int64) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(values, dtype=dtype), name)


def recurrent_model(op: str, direction: str, state: str, *, lens: bool = False, zero: float = 0.0,
                    extra_outputs: tuple[str, ...] = (), opset: int = 17) -> onnx.ModelProto:
    """x: float[b, s, IN] transposed to [s, b, IN]; the state built as ``state`` says."""
    nd = 2 if direction == "bidirectional" else 1
    rng = np.random.default_rng(7)
    g = GATES[op]
    inits = [
        numpy_helper.from_array(rng.standard_normal((nd, g * H, IN)).astype(np.float32), "W"),
        numpy_helper.from_array(rng.standard_normal((nd, g * H, H)).astype(np.float32), "R"),
        numpy_helper.from_array(rng.standard_normal((nd, 2 * g * H)).astype(np.float32), "B"),
        const("zero", [zero], np.float32), const("ax0", [0]), const("one", [1]), const("nd", [nd]),
        const("h", [H]),
    ]
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2]),
             helper.make_node("Shape", ["x"], ["sh"]),
             helper.make_node("Slice", ["sh", "ax0", "one", "ax0"], ["batch"])]
    if state == "tf2onnx":  # Unsqueeze(Expand(0.0, Cast(Concat(batch, [H]))), [0])
        nodes += [helper.make_node("Concat", ["batch", "h"], ["bh"], axis=0),
                  helper.make_node("Cast", ["bh"], ["bh64"], to=TensorProto.INT64),
                  helper.make_node("Expand", ["zero", "bh64"], ["z2"]),
                  helper.make_node("Unsqueeze", ["z2", "ax0"], ["h0"])]
    elif state == "paddle":  # Slice(Identity(Expand(0.0, Concat([nd], batch, [H]))), 0, nd)
        nodes += [helper.make_node("Concat", ["nd", "batch", "h"], ["shape3"], axis=0),
                  helper.make_node("Expand", ["zero", "shape3"], ["full"]),
                  helper.make_node("Identity", ["full"], ["fullid"]),
                  helper.make_node("Slice", ["fullid", "ax0", "nd", "ax0"], ["h0"])]
    elif state == "constant_of_shape":
        nodes += [helper.make_node("Concat", ["nd", "batch", "h"], ["shape3"], axis=0),
                  helper.make_node("ConstantOfShape", ["shape3"], ["h0"])]
    elif state == "arithmetic":  # 0 * 0 is 0, but no walk through arithmetic proves it
        nodes += [helper.make_node("Concat", ["nd", "batch", "h"], ["shape3"], axis=0),
                  helper.make_node("Expand", ["zero", "shape3"], ["full"]),
                  helper.make_node("Mul", ["full", "zero"], ["h0"])]
    elif state == "input":
        pass
    else:
        raise AssertionError(state)
    ins = ["xt", "W", "R", "B", "lens" if lens else "", "h0"] + (["h0"] if op == "LSTM" else [])
    outs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    nodes.append(helper.make_node(op, ins, outs, hidden_size=H, direction=direction))
    nodes.append(helper.make_node("Neg", ["Y_h"], ["yh"]))
    graph_inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", "s", IN])]
    if lens:
        graph_inputs.append(helper.make_tensor_value_info("lens", TensorProto.INT32, ["b"]))
    if state == "input":
        graph_inputs.append(helper.make_tensor_value_info("h0", TensorProto.FLOAT, [nd, "b", H]))
    graph_outputs = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None] * 4),
                     helper.make_tensor_value_info("yh", TensorProto.FLOAT, [None] * 3)]
    graph_outputs += [helper.make_tensor_value_info(o, TensorProto.FLOAT, [None] * 3) for o in extra_outputs]
    graph = helper.make_graph(nodes, "g", graph_inputs, graph_outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def feeds_for(m: onnx.ModelProto, b: int, s: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((b, s, IN)).astype(np.float32)
    x[rng.random(x.shape) < 0.2] = -0.0
    out = {"x": x}
    names = {i.name for i in m.graph.input}
    if "lens" in names:
        out["lens"] = rng.integers(0, s + 1, size=b).astype(np.int32)
    if "h0" in names:
        out["h0"] = np.zeros((1, b, H), np.float32)
    return out


# (batch, sequence length) pairs: each 0, 1, 2, 3 and 33 on both sides
PAIRS = ((0, 0), (0, 2), (2, 0), (1, 1), (2, 3), (3, 2), (33, 3), (3, 33), (1, 33))


def same_bits(runner: shapearith.Runner, before: onnx.ModelProto, after: onnx.ModelProto) -> int:
    """Runs both models at every (batch, sequence) pair of PAIRS; returns how many ran."""
    names = [o.name for o in before.graph.output]
    feeds = [feeds_for(before, b, s, seed) for seed, (b, s) in enumerate(PAIRS)]
    # (one model after the other: the worker keeps one session)
    wants = [runner.run(before.SerializeToString(), f, names) for f in feeds]
    gots = [runner.run(after.SerializeToString(), f, names) for f in feeds]
    ran = 0
    for pair, want, got in zip(PAIRS, wants, gots):
        if want[0] != "ok":
            continue  # (the rewrite may make a failing run succeed; never the other way)
        assert got[0] == "ok", (pair, got)
        for x, y in zip(want[1], got[1]):
            assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes(), pair
        ran += 1
    return ran


# every op, direction and kind of chain with sequence_lens (holding zeros), two without
CASES = [("LSTM", "forward", "tf2onnx", True), ("LSTM", "bidirectional", "paddle", True),
         ("GRU", "reverse", "tf2onnx", True), ("GRU", "bidirectional", "paddle", True),
         ("RNN", "forward", "constant_of_shape", True), ("LSTM", "reverse", "constant_of_shape", True),
         ("LSTM", "forward", "tf2onnx", False), ("GRU", "bidirectional", "paddle", False)]


@pytest.mark.parametrize("op,direction,state,lens", CASES)
def test_zero_state_is_omitted(runner: shapearith.Runner, op: str, direction: str, state: str, lens: bool) -> None:
    before = recurrent_model(op, direction, state, lens=lens)
    onnx.checker.check_model(before)
    out = optimize(before)
    assert out.fired.get("zero-initial-state") == 1, out.fired
    assert signature(out.after) == signature(before)
    rnn = [n for n in out.after.graph.node if n.op_type == op][0]
    assert all(not name for name in rnn.input[5:]), list(rnn.input)
    # the whole chain went: what is left is the transpose, the recurrence and the Neg
    assert sorted(n.op_type for n in out.after.graph.node) == sorted(["Transpose", op, "Neg"])
    assert same_bits(runner, before, out.after) >= 5


def test_shared_state_is_omitted_and_its_chain_kept(runner: shapearith.Runner) -> None:
    # h0 is also a graph output: the LSTM still reads zeros without it; the chain stays for the output
    before = recurrent_model("LSTM", "forward", "tf2onnx", extra_outputs=("h0",))
    out = optimize(before)
    assert out.fired.get("zero-initial-state") == 1, out.fired
    assert "Expand" in out.ops()
    assert same_bits(runner, before, out.after) >= 5


def test_states_that_are_not_proven_zero_stay() -> None:
    for m in (recurrent_model("LSTM", "forward", "tf2onnx", zero=-0.0),  # another bit pattern
              recurrent_model("GRU", "forward", "tf2onnx", zero=0.5),
              recurrent_model("GRU", "forward", "input"),
              recurrent_model("RNN", "forward", "arithmetic")):
        assert "zero-initial-state" not in optimize(m).fired
    # a zero initializer that is also a graph input can be overridden at run time
    paddle = recurrent_model("GRU", "forward", "paddle")
    paddle.graph.input.append(helper.make_tensor_value_info("zero", TensorProto.FLOAT, [1]))
    assert "zero-initial-state" not in optimize(paddle).fired
    # a ConstantOfShape filled with -0.0
    cos = recurrent_model("RNN", "forward", "constant_of_shape")
    for n in cos.graph.node:
        if n.op_type == "ConstantOfShape":
            n.attribute.append(helper.make_attribute("value", const("", [-0.0], np.float32)))
    assert "zero-initial-state" not in optimize(cos).fired
