"""Loop, Scan and If: what shapeflow states inside and after control flow, checked against onnxruntime.

Each model runs in onnxruntime (graph optimisations off, in a child process: a Scan over an empty
sequence crashes it) at every binding of its symbols to 0, 1, 2, 3 and 37; a binding where the
model fails is skipped. Two oracles:

* the main graph (``fuzz/shapearith.check_model``): every dim and value shapeflow states for any
  tensor equals the runtime's, and ``optimize`` keeps the outputs bit-identical;
* the bodies: every tensor of a Loop's or Scan's body (its inputs included) is exposed as one more
  scan output of its ``Shape``, so the runtime hands back its shape at *every* iteration; each dim
  shapeflow states for it must equal that shape at every iteration.

The expected shapes asserted below are what shapeflow states; the oracles check them against the
runtime at every binding (an expression that is wrong at some binding fails there).
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import cli_process
import numpy as np

import onnx
import onnx.parser
import pytest
from onnx import helper

pytest.importorskip("onnxruntime")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))
import shapearith  # noqa: E402

from helpers import analyze_model  # noqa: E402
from shapeflow.dims import format_shape, substitute  # noqa: E402
from shapeflow.inference import Inference  # noqa: E402

SIZES = (0, 1, 2, 3, 37)


@pytest.fixture(scope="module")
def runner(ort_runner) -> Iterator[shapearith.Runner]:
    yield ort_runner  # one onnxruntime worker for the session (tests/conftest.py)


def model(text: str, opset: int = 17) -> onnx.ModelProto:
    ir = 8 if opset <= 18 else 10
    m = onnx.parser.parse_model(f'<ir_version: {ir}, opset_import: ["" : {opset}]>\n' + text)
    onnx.checker.check_model(m)
    return m


def bindings(symbols: Sequence[str]) -> list[dict[str, int]]:
    return [dict(zip(symbols, vals)) for vals in itertools.product(SIZES, repeat=len(symbols))]


def inferred(m: onnx.ModelProto) -> Inference:
    return analyze_model(m).inference


def shape_text(inf: Inference, name: str, scope: int = 0) -> str:
    t = inf.lookup(scope, name)
    return "?" if t is None or t.shape is None else format_shape(t.shape)


def body_scope(inf: Inference, owner_output: str) -> int:
    """The scope id of the body of the node that produces ``owner_output`` (main graph)."""
    g = inf.graph
    nid = g.scopes[0].producer[owner_output]
    return g.nodes[nid].subscopes[0]


# -- the body oracle ------------------------------------------------------------------------------------

def _expose_body_shapes(m: onnx.ModelProto) -> tuple[onnx.ModelProto, list[tuple[str, str, str]]]:
    """A copy where every tensor of each main-graph Loop/Scan body is also a scan output, as its
    Shape; returns (model, [(node output, body scope attr owner, body tensor)])."""
    out = onnx.ModelProto()
    out.CopyFrom(m)
    exposed: list[tuple[str, str, str]] = []
    for k, node in enumerate(out.graph.node):
        if node.op_type not in ("Loop", "Scan") or node.domain:
            continue
        body = next(a.g for a in node.attribute if a.name == "body")
        names = [vi.name for vi in body.input] + [o for n in body.node for o in n.output if o]
        seen: set[str] = set()
        for j, name in enumerate(names):
            if name in seen:
                continue
            seen.add(name)
            shape_name = f"sf_shape_{k}_{j}"
            body.node.append(helper.make_node("Shape", [name], [shape_name]))
            body.output.append(helper.make_tensor_value_info(shape_name, onnx.TensorProto.INT64, [None]))
            loop_out = f"sf_exposed_{k}_{j}"
            node.output.append(loop_out)
            out.graph.output.append(onnx.ValueInfoProto(name=loop_out))
            exposed.append((loop_out, node.output[0], name))
        for a in node.attribute:
            if a.name in ("scan_output_axes", "scan_output_directions"):
                a.ints.extend([0] * len(seen))
    return out, exposed


def check_bodies(runner: shapearith.Runner, m: onnx.ModelProto, inf: Inference,
                 symbols: Sequence[str]) -> int:
    """Every dim shapeflow states for a main-graph Loop/Scan body tensor, at every iteration of
    every binding the model runs at. Returns the number of (iteration, tensor) shapes compared."""
    exposed, names = _expose_body_shapes(m)
    data = exposed.SerializeToString()
    compared = 0
    failures: list[str] = []
    for i, b in enumerate(bindings(symbols)):
        feeds = shapearith.make_feeds(m, b, i)
        assert feeds is not None
        status, res = runner.run(data, feeds, [n for n, _, _ in names])
        if status != "ok":
            continue
        for (_, owner, tensor), arr in zip(names, res):
            t = inf.lookup(body_scope(inf, owner), tensor)
            if t is None or t.shape is None:
                continue
            for row in arr.tolist() if arr.ndim == 2 else []:
                compared += 1
                if len(row) != len(t.shape):
                    failures.append(f"{tensor}: rank {len(t.shape)} {format_shape(t.shape)}, runtime {row} at {b}")
                    continue
                for d, real in zip(t.shape, row):
                    v = substitute(d, b) if d is not None else None
                    if type(v) is int and v != real:
                        failures.append(f"{tensor}: {format_shape(t.shape)}, runtime {row} at {b}")
                        break
    assert not failures, "\n".join(failures[:20])
    return compared


def check(runner: shapearith.Runner, m: onnx.ModelProto, symbols: Sequence[str], *,
          bodies: bool = True) -> Inference:
    """Both oracles over every binding of ``symbols`` to SIZES; the model must run at some."""
    stats = shapearith.check_model(m, bindings(symbols), runner)
    assert stats.bindings_run > stats.bindings_failed, "the model fails in onnxruntime at every binding"
    if stats.findings:
        pytest.fail("\n".join(f.line() for f in stats.findings) + "\n" + shapearith._model_text(m), pytrace=False)
    inf = inferred(m)
    if bodies:
        assert check_bodies(runner, m, inf, symbols) > 0
    return inf


# -- Loop: carried values ---------------------------------------------------------------------------------

# An RNN over x's time axis: h = tanh(h @ W + x[i] @ U), the trip count x's T (0 included), the
# condition a true constant passed through. jax2onnx lowers lax.scan to this form.
RNN_LOOP = """
rnn (float[B, T, 4] x) => (float[?, ?] h_final, float[?, ?, ?] hs, float[?, ?] y)
<int64[2] wshape = {8, 8}, int64[2] ushape = {4, 8}, int64[1] zero = {0}, bool keep = {1},
 int64[2] h0shape_tail = {8, 1}, int64[2] vshape = {8, 3}>
{
    w = ConstantOfShape <value = float[1] {0.1}> (wshape)
    u = ConstantOfShape <value = float[1] {0.2}> (ushape)
    v = ConstantOfShape <value = float[1] {0.3}> (vshape)
    xt = Transpose <perm = [1, 0, 2]> (x)
    xs = Shape(xt)
    t1 = Slice(xs, zero, one)
    trip = Squeeze(t1, zero)
    b1 = Gather <axis = 0> (xs, one)
    hshape = Concat <axis = 0> (b1, eight)
    h0 = ConstantOfShape <value = float[1] {0}> (hshape)
    h_final, hs = Loop(trip, keep, h0) <body = rnn_step (int64 i, bool c, float[?, ?] h) => (bool c_out, float[?, ?] h_next, float[?, ?] h_scan) {
        c_out = Identity(c)
        x_i = Gather <axis = 0> (xt, i)
        a = MatMul(h, w)
        bb = MatMul(x_i, u)
        s = Add(a, bb)
        h_next = Tanh(s)
        h_scan = Identity(h_next)
    }>
    y = MatMul(h_final, v)
}
""".replace("<int64[2] wshape", "<int64[1] one = {1}, int64[1] eight = {8}, int64[2] wshape")


def test_loop_carried_rnn_state_keeps_its_shape(runner: shapearith.Runner) -> None:
    """The carried h starts [B, 8] and the body maps [B, 8] to [B, 8]: it is [B, 8] in every
    iteration, and so after the Loop (the MatMul after it keeps its N = 3). The scan output
    stacks T of them, but T may be 0, and then onnxruntime makes its shape up from the body's
    declarations ([0, 0, 0] here): no rank is stated."""
    inf = check(runner, model(RNN_LOOP), ("B", "T"))
    body = body_scope(inf, "h_final")
    assert shape_text(inf, "h", body) == "[B, 8]"
    assert shape_text(inf, "x_i", body) == "[B, 4]"
    assert shape_text(inf, "h_final") == "[B, 8]"
    assert shape_text(inf, "y") == "[B, 3]"
    assert shape_text(inf, "hs") == "?"


def test_loop_scan_output_when_the_loop_runs_at_least_once(runner: shapearith.Runner) -> None:
    """An RNN over T + 1 steps (x with one zero step appended): the trip count is T + 1 >= 1 and
    the condition stays true, so the scan output is [T + 1, B, 8] at every binding, T = 0 too."""
    text = """
    rnn1 (float[B, T, 4] x) => (float[?, ?] h_final, float[?, ?, ?] hs)
    <int64[2] wshape = {8, 8}, int64[2] ushape = {4, 8}, int64[1] zero = {0}, int64[1] one = {1},
     int64[1] four = {4}, int64[1] eight = {8}, int64 one0 = {1}, bool keep = {1}>
    {
        w = ConstantOfShape <value = float[1] {0.1}> (wshape)
        u = ConstantOfShape <value = float[1] {0.2}> (ushape)
        xs = Shape(x)
        b1 = Slice(xs, zero, one)
        t1 = Slice(xs, one, two1)
        eshape = Concat <axis = 0> (one, b1, four)
        extra = ConstantOfShape <value = float[1] {0}> (eshape)
        xt0 = Transpose <perm = [1, 0, 2]> (x)
        xt = Concat <axis = 0> (xt0, extra)
        t0 = Squeeze(t1, zero)
        trip = Add(t0, one0)
        hshape = Concat <axis = 0> (b1, eight)
        h0 = ConstantOfShape <value = float[1] {0}> (hshape)
        h_final, hs = Loop(trip, keep, h0) <body = rnn_step (int64 i, bool c, float[?, ?] h) => (bool c_out, float[?, ?] h_next, float[?, ?] h_scan) {
            c_out = Identity(c)
            x_i = Gather <axis = 0> (xt, i)
            a = MatMul(h, w)
            bb = MatMul(x_i, u)
            s = Add(a, bb)
            h_next = Tanh(s)
            h_scan = Identity(h_next)
        }>
    }
    """.replace("<int64[2] wshape", "<int64[1] two1 = {2}, int64[2] wshape")
    inf = check(runner, model(text), ("B", "T"))
    assert shape_text(inf, "hs") == "[T + 1, B, 8]"
    assert shape_text(inf, "h_final") == "[B, 8]"


def test_loop_constant_trip_count_with_a_carried_value_that_grows(runner: shapearith.Runner) -> None:
    """v doubles each iteration: its dim is not stated (rank 1 is), the body sees [?] from the
    second round of the fixpoint. The scan output of Shape(v) is [3, 1]: three iterations for sure."""
    text = """
    grow (float[N] x) => (float[?] v_final, int64[?, ?] sizes)
    <int64 three = {3}, bool keep = {1}>
    {
        v_final, sizes = Loop(three, keep, x) <body = step (int64 i, bool c, float[?] v) => (bool c_out, float[?] v2, int64[?] s) {
            c_out = Identity(c)
            v2 = Concat <axis = 0> (v, v)
            s = Shape(v)
        }>
    }
    """
    inf = check(runner, model(text), ("N",))
    body = body_scope(inf, "v_final")
    assert shape_text(inf, "v", body) == "[?]"
    assert shape_text(inf, "v_final") == "[?]"
    assert shape_text(inf, "sizes") == "[3, 1]"


def test_loop_carried_shape_value_passes_through(runner: shapearith.Runner) -> None:
    """A carried shape vector that the body hands back unchanged keeps its value (a value fixpoint):
    the Reshape after the Loop reads [B, T, 4] from it. With a computed condition the trip count
    is unknown, but the Loop runs at least once (5 > 0, the first condition true): a scan output
    has its rank and per-iteration dims."""
    text = """
    keep (float[B, T, 4] x) => (float[?, ?, ?] y, int64[?] s_final, int64[?, ?] steps)
    <int64 five = {5}, int64 two = {2}>
    {
        s = Shape(x)
        flat = Flatten <axis = 0> (x)
        go = Less(two, five)
        s_final, steps = Loop(five, go, s) <body = step (int64 i, bool c, int64[?] s_in) => (bool c_out, int64[?] s_out, int64[?] seen) {
            c_out = Less(i, two)
            s_out = Identity(s_in)
            seen = Identity(s_in)
        }>
        y = Reshape <allowzero = 1> (flat, s_final)
    }
    """
    inf = check(runner, model(text, opset=18), ("B", "T"))
    assert shape_text(inf, "s_final") == "[3]"
    assert shape_text(inf, "y") == "[B, T, 4]"
    assert shape_text(inf, "steps") == "[?, 3]"


def test_loop_that_never_runs_hands_back_its_initial_values(runner: shapearith.Runner) -> None:
    """A false condition (or a trip count <= 0): no iteration, the carried outputs are the Loop's
    inputs as given, values included, whatever the body would do to them."""
    text = """
    never (float[B, T] x) => (int64[?] s_final, float[?, ?] y, int64[?] n_final)
    <bool stop = {0}, int64 minus = {-2}, bool keep = {1}>
    {
        s = Shape(x)
        s_final = Loop("", stop, s) <body = step (int64 i, bool c, int64[?] s_in) => (bool c_out, int64[?] s_out) {
            c_out = Identity(c)
            s_out = Concat <axis = 0> (s_in, s_in)
        }>
        y = Reshape(x, s_final)
        n_final = Loop(minus, keep, s) <body = step2 (int64 i2, bool c2, int64[?] n_in) => (bool c2_out, int64[?] n_out) {
            c2_out = Identity(c2)
            n_out = Concat <axis = 0> (n_in, n_in)
        }>
    }
    """
    inf = check(runner, model(text), ("B", "T"), bodies=False)  # (no iteration to look into)
    assert shape_text(inf, "s_final") == "[2]"
    assert shape_text(inf, "y") == "[B, T]"
    assert shape_text(inf, "n_final") == "[2]"


def test_loop_trip_count_that_may_be_negative(runner: shapearith.Runner) -> None:
    """M = T - 2 is negative for T < 2 (onnxruntime then runs no iteration): the carried value is
    the initial one or the body's, which agree here ([B, 4]); the scan output has no rank."""
    text = """
    neg (float[B, T, 4] x) => (float[?, ?] acc, float[?, ?, ?] parts)
    <int64[1] zero = {0}, int64[1] one = {1}, int64 two = {2}, bool keep = {1}>
    {
        xs = Shape(x)
        t1 = Slice(xs, one, two1)
        t = Squeeze(t1, zero)
        trip = Sub(t, two)
        first = Gather <axis = 1> (x, zeroi)
        acc, parts = Loop(trip, keep, first) <body = step (int64 i, bool c, float[?, ?] a) => (bool c_out, float[?, ?] a2, float[?, ?] p) {
            c_out = Identity(c)
            x_i = Gather <axis = 1> (x, i)
            a2 = Add(a, x_i)
            p = Identity(x_i)
        }>
    }
    """.replace("<int64[1] zero", "<int64[1] two1 = {2}, int64 zeroi = {0}, int64[1] zero")
    inf = check(runner, model(text), ("B", "T"))
    assert shape_text(inf, "acc") == "[B, 4]"
    t = inf.lookup(0, "parts")
    assert t is not None and t.shape is None


def test_loop_sequence_carried_through_as_jax2onnx_writes_lax_scan(runner: shapearith.Runner) -> None:
    """jax2onnx's lax.scan: the sequence itself is a carried value the body hands back unchanged
    (Identity), read with Gather at the iteration number; a counter is carried too (its value
    changes, so the fixpoint keeps its shape [] and drops the value)."""
    text = """
    jaxscan (float[B, T, 4] x) => (float[?, ?] h_final, float[?, ?, ?] seq_final, int64 count, float[?, ?] y)
    <int64[2] ushape = {4, 8}, int64[1] zero = {0}, int64[1] one = {1}, int64[1] eight = {8},
     bool keep = {1}, int64 c0 = {0}, int64 inc = {1}, int64[2] vshape = {8, 3}>
    {
        u = ConstantOfShape <value = float[1] {0.2}> (ushape)
        v = ConstantOfShape <value = float[1] {0.3}> (vshape)
        xt = Transpose <perm = [1, 0, 2]> (x)
        xs = Shape(xt)
        t1 = Slice(xs, zero, one)
        trip = Squeeze(t1, zero)
        b1 = Gather <axis = 0> (xs, one)
        hshape = Concat <axis = 0> (b1, eight)
        h0 = ConstantOfShape <value = float[1] {0}> (hshape)
        h_final, seq_final, count = Loop(trip, keep, h0, xt, c0) <body = step (int64 i, bool c, float[?, ?] h, float[?, ?, ?] seq, int64 n) => (bool c_out, float[?, ?] h2, float[?, ?, ?] seq2, int64 n2) {
            c_out = Identity(c)
            x_i = Gather <axis = 0> (seq, i)
            proj = MatMul(x_i, u)
            h2 = Add(h, proj)
            seq2 = Identity(seq)
            n2 = Add(n, inc)
        }>
        y = MatMul(h_final, v)
    }
    """
    inf = check(runner, model(text), ("B", "T"))
    body = body_scope(inf, "h_final")
    assert shape_text(inf, "seq", body) == "[T, B, 4]"
    assert shape_text(inf, "n", body) == "[]"
    assert inf.lookup(body, "n").value is None  # type: ignore[union-attr]
    assert shape_text(inf, "h_final") == "[B, 8]"
    assert shape_text(inf, "seq_final") == "[T, B, 4]"
    assert shape_text(inf, "count") == "[]"
    assert shape_text(inf, "y") == "[B, 3]"


def test_nested_loops(runner: shapearith.Runner) -> None:
    """A Loop in a Loop's body: the inner one runs twice (a constant trip count, its condition
    passed through) on the outer carried value, so its scan output is [2, B, 8], and both carried
    values keep [B, 8]."""
    text = """
    nested (float[B, T, 8] x) => (float[?, ?] h_final, float[?, ?, ?, ?] inner_all)
    <int64[2] wshape = {8, 8}, int64[1] zero = {0}, int64[1] one = {1}, bool keep = {1}, int64 two = {2}>
    {
        w = ConstantOfShape <value = float[1] {0.1}> (wshape)
        xt = Transpose <perm = [1, 0, 2]> (x)
        xs = Shape(xt)
        t1 = Slice(xs, zero, one)
        trip = Squeeze(t1, zero)
        h0 = Gather <axis = 1> (x, zeroi)
        h_final, inner_all = Loop(trip, keep, h0) <body = outer (int64 i, bool c, float[?, ?] h) => (bool c_out, float[?, ?] h2, float[?, ?, ?] steps) {
            c_out = Identity(c)
            x_i = Gather <axis = 0> (xt, i)
            g, steps = Loop(two, keep, h) <body = inner (int64 j, bool d, float[?, ?] k) => (bool d_out, float[?, ?] k2, float[?, ?] k_scan) {
                d_out = Identity(d)
                m = MatMul(k, w)
                k2 = Tanh(m)
                k_scan = Identity(k2)
            }>
            h2 = Add(g, x_i)
        }>
    }
    """.replace("<int64[2] wshape", "<int64 zeroi = {0}, int64[2] wshape")
    inf = check(runner, model(text), ("B", "T"))
    body = body_scope(inf, "h_final")
    assert shape_text(inf, "g", body) == "[B, 8]"
    assert shape_text(inf, "steps", body) == "[2, B, 8]"
    assert shape_text(inf, "h_final") == "[B, 8]"


def test_loop_without_trip_count_stops_on_its_condition(runner: shapearith.Runner) -> None:
    """No M: the Loop runs while the body's condition (i + 1 < T) holds, from a first condition
    0 < T. How often that is depends on a condition computed in the body: no trip count, and no
    rank for the scan output (T = 0 runs no iteration); the accumulator keeps [B, 4] either way."""
    text = """
    until (float[B, T, 4] x) => (float[?, ?] acc, float[?, ?, ?] parts)
    <int64[1] zero = {0}, int64[1] one = {1}, int64[1] two1 = {2}, int64 zeroi = {0}, int64 onei = {1}>
    {
        xs = Shape(x)
        t1 = Slice(xs, one, two1)
        t = Squeeze(t1, zero)
        go = Less(zeroi, t)
        b1 = Slice(xs, zero, one)
        ashape = Concat <axis = 0> (b1, four)
        a0 = ConstantOfShape <value = float[1] {0}> (ashape)
        acc, parts = Loop("", go, a0) <body = step (int64 i, bool c, float[?, ?] a) => (bool c_out, float[?, ?] a2, float[?, ?] p) {
            x_i = Gather <axis = 1> (x, i)
            a2 = Add(a, x_i)
            p = Identity(x_i)
            nxt = Add(i, onei)
            c_out = Less(nxt, t)
        }>
    }
    """.replace("<int64[1] zero", "<int64[1] four = {4}, int64[1] zero")
    inf = check(runner, model(text), ("B", "T"))
    assert shape_text(inf, "acc") == "[B, 4]"
    assert shape_text(inf, "parts") == "?"


def test_loop_whose_body_condition_is_the_true_constant(runner: shapearith.Runner) -> None:
    """M = N + 2 >= 2 and a body condition that is the constant true: exactly N + 2 iterations."""
    text = """
    count (float[N] x) => (float[?] v_final, float[?, ?] vs)
    <int64 two = {2}, bool keep = {1}>
    {
        n = Size(x)
        m = Add(n, two)
        v_final, vs = Loop(m, keep, x) <body = step (int64 i, bool c, float[?] v) => (bool c_out, float[?] v2, float[?] v_scan) {
            c_out = Constant <value = bool {1}> ()
            v2 = Neg(v)
            v_scan = Identity(v)
        }>
    }
    """
    inf = check(runner, model(text), ("N",))
    assert shape_text(inf, "v_final") == "[N]"
    assert shape_text(inf, "vs") == "[N + 2, N]"


def test_if_with_a_constant_condition_is_its_branch(runner: shapearith.Runner) -> None:
    text = """
    fixed (float[B, T] x) => (float[?, ?] y)
    <bool yes = {1}>
    {
        y = If(yes) <
            then_branch = a () => (float[?, ?] t) { t = Concat <axis = 1> (x, x) },
            else_branch = b () => (float[?, ?] e) { e = Identity(x) }>
    }
    """
    inf = check(runner, model(text), ("B", "T"), bodies=False)
    assert shape_text(inf, "y") == "[B, 2*T]"


# -- Scan --------------------------------------------------------------------------------------------------

SCAN_RNN = """
scan_rnn (float[B, T, 4] x) => (float[?, ?] h_final, float[?, ?, ?] hs, float[?, ?, ?] hs_last)
<int64[2] wshape = {8, 8}, int64[2] ushape = {4, 8}, int64[1] one = {1}, int64[1] eight = {8}>
{
    w = ConstantOfShape <value = float[1] {0.1}> (wshape)
    u = ConstantOfShape <value = float[1] {0.2}> (ushape)
    xs = Shape(x)
    b1 = Slice(xs, zero, one)
    hshape = Concat <axis = 0> (b1, eight)
    h0 = ConstantOfShape <value = float[1] {0}> (hshape)
    h_final, hs, hs_last = Scan(h0, x) <num_scan_inputs = 1, scan_input_axes = [1], scan_output_axes = [1, -1],
        scan_input_directions = [1],
        body = step (float[?, ?] h, float[?, ?] x_t) => (float[?, ?] h_next, float[?, ?] h_out, float[?, ?] h_out2) {
        a = MatMul(h, w)
        bb = MatMul(x_t, u)
        s = Add(a, bb)
        h_next = Tanh(s)
        h_out = Identity(h_next)
        h_out2 = Identity(h_next)
    }>
}
""".replace("<int64[2] wshape", "<int64[1] zero = {0}, int64[2] wshape")


def test_scan_slices_state_and_output_axes(runner: shapearith.Runner) -> None:
    """Scan over x's axis 1 (backwards): each slice is [B, 4], the state stays [B, 8], the scan
    outputs stack T of them at axis 1 and at axis -1. T = 0 fails in onnxruntime (a crash when
    the scan axis is not 0), so T is at least 1 wherever the model runs."""
    inf = check(runner, model(SCAN_RNN), ("B", "T"))
    body = body_scope(inf, "h_final")
    assert shape_text(inf, "x_t", body) == "[B, 4]"
    assert shape_text(inf, "h", body) == "[B, 8]"
    assert shape_text(inf, "h_final") == "[B, 8]"
    assert shape_text(inf, "hs") == "[B, T, 8]"
    assert shape_text(inf, "hs_last") == "[B, 8, T]"
    assert inf.proven() == {"T": (1, None)}


def test_scan_state_that_changes_shape(runner: shapearith.Runner) -> None:
    """A state [N] that the body broadcasts with a [2] slice: [2] after one iteration whatever N
    (1 or 2; onnxruntime runs N = 1 with one step, though it refuses a state that changes shape
    in other cases). The fixpoint widens the state to [?], and the body gives [2] from there."""
    text = """
    scan_state (float[N] s0, float[T, 2] xs) => (float[?] s_final, float[?, ?] ys)
    {
        s_final, ys = Scan(s0, xs) <num_scan_inputs = 1,
            body = step (float[?] s, float[?] x) => (float[?] s2, float[?] y) {
            s2 = Add(s, x)
            y = Identity(s2)
        }>
    }
    """
    inf = check(runner, model(text), ("N", "T"))
    body = body_scope(inf, "s_final")
    assert shape_text(inf, "s", body) == "[?]"
    assert shape_text(inf, "s_final") == "[2]"
    assert shape_text(inf, "ys") == "[T, 2]"


def test_scan8_batch_axis(runner: shapearith.Runner) -> None:
    """Scan-8: every input has a batch axis 0 and the scanned ones a sequence axis 1; the body
    sees one batch entry: state [2], slice [2]; outputs [B, 2] and [B, T, 2]."""
    text = """
    scan8 (float[B, 2] s0, float[B, T, 2] xs) => (float[?, ?] s_final, float[?, ?, ?] ys)
    {
        s_final, ys = Scan("", s0, xs) <num_scan_inputs = 1,
            body = step (float[?] s, float[?] x) => (float[?] s2, float[?] y) {
            s2 = Add(s, x)
            y = Identity(s2)
        }>
    }
    """
    m = model(text, opset=8)
    inf = check(runner, m, ("B", "T"), bodies=False)
    body = body_scope(inf, "s_final")
    assert shape_text(inf, "x", body) == "[2]"
    assert shape_text(inf, "s_final") == "[B, 2]"
    assert shape_text(inf, "ys") == "[B, T, 2]"


# -- If --------------------------------------------------------------------------------------------------

def test_if_states_what_both_branches_agree_on(runner: shapearith.Runner) -> None:
    text = """
    branch (float[B, T] x) => (float[?, ?] same, float[?, ?] differ, float[?] rank_differs)
    <int64 two = {2}, int64[1] one = {1}, int64[1] zero = {0}>
    {
        xs = Shape(x)
        t1 = Slice(xs, one, two1)
        t = Squeeze(t1, zero)
        big = Greater(t, two)
        same, differ, rank_differs = If(big) <
            then_branch = yes () => (float[?, ?] a, float[?, ?] b, float[?] c) {
                a = Relu(x)
                b = Concat <axis = 1> (x, x)
                c = Flatten <axis = 0> (x)
            },
            else_branch = no () => (float[?, ?] a2, float[?, ?] b2, float[?] c2) {
                a2 = Neg(x)
                b2 = Identity(x)
                c2 = ReduceSum <keepdims = 0> (x)
            }>
    }
    """.replace("<int64 two", "<int64[1] two1 = {2}, int64 two")
    inf = check(runner, model(text), ("B", "T"), bodies=False)
    assert shape_text(inf, "same") == "[B, T]"
    assert shape_text(inf, "differ") == "[B, ?]"
    assert shape_text(inf, "rank_differs") == "?"


# -- what optimize and infer -o leave alone ------------------------------------------------------------

# The carried h is [2, 8] in every iteration (shapeflow proves it), but the body declares it
# [?, ?]: onnxruntime's own static inference of the body, which shapes the scan output after zero
# iterations, knows only the rank, and gives [0, 0, 0].
ZERO_TRIP = """
zero_trip (float[2, 8] x, float[T] t) => (float[?, ?] h_final, float[?, ?, ?] hs)
<bool keep = {1}>
{
    n = Size(t)
    h_final, hs = Loop(n, keep, x) <body = step (int64 i, bool c, float[?, ?] h) => (bool c_out, float[?, ?] h2, float[?, ?] h_scan) {
        c_out = Identity(c)
        s = Shape(h)
        h2 = Reshape(h, s)
        mid = Identity(h2)
        h_scan = Identity(mid)
    }>
}
"""


def test_optimize_leaves_a_loop_body_with_scan_outputs_alone(runner: shapearith.Runner) -> None:
    """Folding the body's Shape(h) to [2, 8] would let onnxruntime infer the scan output's shape
    statically: after zero iterations it would give [0, 2, 8] instead of [0, 0, 0]. The oracle
    compares the optimized model's outputs with the original's at T = 0 too."""
    inf = check(runner, model(ZERO_TRIP), ("T",))
    assert shape_text(inf, "s", body_scope(inf, "hs")) == "[2]"


def test_infer_output_records_no_shape_in_a_loop_body_with_scan_outputs(tmp_path: Path) -> None:
    """``infer -o`` writes value_info; inside such a body onnxruntime would read it ([2, 8] for
    ``mid``) and shape the zero-iteration scan output [0, 2, 8]. Outside it, shapes are written."""

    from helpers import ort_session

    src, dst = tmp_path / "in.onnx", tmp_path / "out.onnx"
    onnx.save(model(ZERO_TRIP), str(src))
    done = cli_process.shapeflow("infer", str(src), "-o", str(dst))
    assert done.returncode == 0, done.stderr
    out = onnx.load(str(dst))
    assert {vi.name for vi in out.graph.value_info} == {"n"}
    assert not out.graph.node[-1].attribute[0].g.value_info
    feeds = {"x": np.ones((2, 8), np.float32), "t": np.ones((0,), np.float32)}
    before = ort_session(model(ZERO_TRIP)).run(None, feeds)
    after = ort_session(out).run(None, feeds)
    assert [a.shape for a in after] == [b.shape for b in before] == [(2, 8), (0, 0, 0)]


# The body reads o from the main graph; onnxruntime infers the body with what it knows of o,
# [?, ?] here (it does not evaluate the Cast). Folding the Cast to the constant 8 would let it know
# [?, 8], and the zero-iteration scan output would become [0, 0, 8].
OUTER_READ = """
outer_read (float[B, 8] x, float[T] t) => (float[?, ?, ?] hs, float[?, ?] after)
<bool keep = {1}, float eightf = {8.0}, int64[1] zero = {0}, int64[1] one = {1}>
{
    n = Size(t)
    e = Cast <to = 7> (eightf)
    e1 = Unsqueeze(e, zero)
    sx = Shape(x)
    b = Slice(sx, zero, one)
    target = Concat <axis = 0> (b, e1)
    o = Reshape(x, target)
    hs = Loop(n, keep) <body = step (int64 i, bool c) => (bool c_out, float[?, ?] h_scan) {
        c_out = Identity(c)
        h_scan = Identity(o)
    }>
    e2 = Cast <to = 7> (eightf)
    e3 = Unsqueeze(e2, zero)
    target2 = Concat <axis = 0> (b, e3)
    after = Reshape(x, target2)
}
"""


def test_optimize_and_infer_output_leave_what_a_zero_trip_body_reads_alone(
        runner: shapearith.Runner, tmp_path: Path) -> None:
    """What computes o (read in the body) is neither rewritten nor annotated; the same
    computation for a tensor no such body reads is (optimize folds its Cast, infer -o records it)."""

    from shapeflow.ops.control import zero_trip_nodes

    m = model(OUTER_READ)
    inf = check(runner, m, ("B", "T"), bodies=False)
    g = inf.graph
    frozen = {g.nodes[n].outputs[0] for n in zero_trip_nodes(g)}
    assert {"o", "target", "e1", "e", "b", "sx", "h_scan"} <= frozen
    assert not {"after", "target2", "e3", "e2", "n", "hs"} & frozen
    src, dst, opt = tmp_path / "in.onnx", tmp_path / "out.onnx", tmp_path / "opt.onnx"
    onnx.save(m, str(src))
    for args in (["infer", str(src), "-o", str(dst)], ["optimize", str(src), "-o", str(opt)]):
        done = cli_process.shapeflow(*args)
        assert done.returncode == 0, done.stderr
    annotated = {vi.name for vi in onnx.load(str(dst)).graph.value_info}
    assert "target2" in annotated and not annotated & {"o", "target", "e1", "e"}
    kept = {n.output[0] for n in onnx.load(str(opt)).graph.node}
    assert "e" in kept and "e2" not in kept
