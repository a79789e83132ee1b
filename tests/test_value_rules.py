"""Values that shape arithmetic computes and inference now states (issue 22, point 3): a Slice
whose start is ``T - 1``, reductions of shape vectors, int32 shape arithmetic (tf2onnx), and what
a broadcast of two different dims proves. Each model is checked against onnxruntime at bindings
0, 1, 2, 3 and a large one of every symbol (tests/oracle.py), and the dims the rule is for must be
stated.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from helpers import analyze_model  # noqa: E402
from oracle import INT64_MAX, check, model, shapearith, stated  # noqa: E402
from shapeflow.dims import format_shape  # noqa: E402


@pytest.fixture(scope="module")
def runner(ort_runner) -> Iterator[shapearith.Runner]:
    yield ort_runner  # one onnxruntime worker for the session (tests/conftest.py)


def _values(m, assume=()):  # type: ignore[no-untyped-def]
    a = analyze_model(m, assume=assume)
    return {k: (None if t is None or t.value is None else format_shape(t.value))
            for k, t in a.inference.tensors[0].items()}


# -- Slice with a start or end of unknown sign ---------------------------------------------------

_LAST = ("sh = Shape(x)\n t = Gather<axis=0>(sh, i0)\n tm1 = Sub(t, one)\n tm2 = Sub(t, two)\n"
         " s1 = Unsqueeze(tm1, z)\n s2 = Unsqueeze(tm2, z)\n e = Unsqueeze(t, z)\n")
_LAST_INITS = "int64 i0 = {0}, int64 one = {1}, int64 two = {2}, int64[1] z = {0}"


def test_slice_last_step_is_min_1_t(runner: shapearith.Runner) -> None:
    """x[T-1:T] on [T, 4] (the last step, as tf2onnx takes an LSTM's last output): min(1, T);
    at T = 0 the start -1 counts from the end and clamps to 0."""
    m = model(_LAST + " y = Slice(x, s1, e, z)", inputs="float[T,4] x", outputs="float[?,4] y", inits=_LAST_INITS)
    check(runner, m, ("T",), {"y": "[min(1, T), 4]"})


def test_slice_second_to_last_and_all_but_last(runner: shapearith.Runner) -> None:
    """x[T-2:T-1] is min(1, max(0, T - 1)); x[0:T-1] is max(0, T - 1)."""
    m = model(_LAST + " y = Slice(x, s2, s1, z)\n w = Slice(x, z, s1, z)", inputs="float[T,4] x",
              outputs="float[?,4] y, float[?,4] w", inits=_LAST_INITS)
    check(runner, m, ("T",), {"y": "[min(1, max(0, T - 1)), 4]", "w": "[max(0, T - 1), 4]"})


def test_slice_of_another_tensor_by_t_minus_one_is_sound(runner: shapearith.Runner) -> None:
    """The same bounds on a tensor of another length: whatever is stated holds."""
    m = model(_LAST + " y = Slice(w, s1, e, z)", inputs="float[T,4] x, float[past,3] w",
              outputs="float[?,3] y", inits=_LAST_INITS)
    check(runner, m, ("T", "past"))


# -- reductions of shape values ------------------------------------------------------------------

def test_reduce_prod_sum_min_max_of_a_shape(runner: shapearith.Runner) -> None:
    """tf2onnx multiplies dims with ReduceProd (Einsum, LayerNorm shapes): the values are stated,
    keepdims or not, over every axis or one."""
    m = model("sh = Shape(x)\n p = ReduceProd<keepdims=0>(sh)\n s = ReduceSum<keepdims=1>(sh)\n"
              " mx = ReduceMax<keepdims=0>(sh)\n mn = ReduceMin<keepdims=0>(sh)\n"
              " tail = Slice(sh, one, big)\n tp = ReduceProd<keepdims=1, axes=[0]>(tail)\n"
              " t = Concat<axis=0>(m1, tp)\n y = Reshape(x, t)",
              inputs="float[a,b,4] x", outputs="int64 p, int64[1] s, int64 mx, int64 mn, float[?,?] y",
              inits=f"int64[1] one = {{1}}, int64[1] big = {{{INT64_MAX}}}, int64[1] m1 = {{-1}}", opset=17)
    v = _values(m)
    assert (v["p"], v["s"], v["mx"], v["mn"], v["tp"]) == (
        "[4*a*b]", "[a + b + 4]", "[max(4, max(a, b))]", "[min(4, min(a, b))]", "[4*b]")
    check(runner, m, ("a", "b"), {"y": "[a, 4*b]"})


def test_reduce_sum_of_a_2d_shape_table(runner: shapearith.Runner) -> None:
    """ReduceSum over axis 1 of a [2, 2] table built from dims (a pads table)."""
    m = model("sh = Shape(x)\n r = Reshape(sh, two2)\n s = ReduceSum<keepdims=0>(r, ax)",
              inputs="float[a,b,3,5] x", outputs="int64[2] s", inits="int64[2] two2 = {2, 2}, int64[1] ax = {1}")
    assert _values(m)["s"] == "[a + b, 8]"
    check(runner, m, ("a", "b"))


def test_reduce_sum_and_prod_go_through_double(runner: shapearith.Runner) -> None:
    """onnxruntime sums and multiplies integers in double and converts back saturating:
    ReduceSum(int64 [0, 2**63 - 2]) is 2**63 - 1, ReduceProd(int32 [2**16, 2**16]) is 2**31 - 1.
    Such elements are not stated; a product that double holds exactly is (64*a*b: a power of two
    times a*b, which is at most 2**48 under the one premise), a product of three symbols is not."""
    m = model("s = ReduceSum<keepdims=0>(big)\n p = ReduceProd<keepdims=0>(wide)\n"
              " sh = Shape(x)\n q = ReduceProd<keepdims=0>(sh)\n sh3 = Shape(w)\n r = ReduceProd<keepdims=0>(sh3)",
              inputs="float[a,b,64] x, float[a,b,c] w", outputs="int64 s, int32 p, int64 q, int64 r",
              inits=f"int64[2] big = {{0, {INT64_MAX - 1}}}, int32[2] wide = {{65536, 65536}}", opset=17)
    v = _values(m)
    assert (v["s"], v["p"], v["q"], v["r"]) == (None, None, "[64*a*b]", None)
    # (the runtime's saturated results, which the old rule wrapped instead)
    x, w = np.zeros((1, 1, 64), np.float32), np.zeros((1, 1, 1), np.float32)
    status, res = runner.run(m.SerializeToString(), {"x": x, "w": w}, ["s", "p"])
    assert status == "ok" and [int(r) for r in res] == [INT64_MAX, 2**31 - 1]
    check(runner, m, ("a", "b", "c"))


# -- int32 shape arithmetic under the one premise (symbols up to 2**24) -----------------------------

def test_int32_shape_arithmetic_like_tf2onnx(runner: shapearith.Runner) -> None:
    """Shape -> Cast(int32) -> Gather -> Mul(4) -> Concat -> Cast(int64) -> Reshape: seq fits
    int32 for every seq up to 2**24, so the chain is stated; batch*seq does not, so it is not."""
    m = model("sh = Shape(x)\n s32 = Cast<to=6>(sh)\n b = Gather<axis=0>(s32, i0)\n s = Gather<axis=0>(s32, i1)\n"
              " s4 = Mul(s, four)\n bs = Mul(b, s)\n bu = Unsqueeze(b, z)\n su = Unsqueeze(s4, z)\n"
              " t = Concat<axis=0>(bu, su, m1)\n t64 = Cast<to=7>(t)\n y = Reshape(x, t64)\n"
              " p = ReduceProd<keepdims=0>(s32)",
              inputs="float[batch,seq,8] x", outputs="float[?,?,?] y, int32 bs, int32 p",
              inits="int64 i0 = {0}, int64 i1 = {1}, int32 four = {4}, int64[1] z = {0}, int32[1] m1 = {-1}")
    v = _values(m)
    assert v["s32"] == "[batch, seq, 8]" and v["s4"] == "[4*seq]"
    assert v["bs"] is None or v["bs"] == "[?]"  # batch*seq may pass 2**31 under the premise
    check(runner, m, ("batch", "seq"), {"y": "[batch, 4*seq, 2]"})


def test_cast_to_int16_of_a_dim_stays_unknown() -> None:
    """seq may exceed int16 under the premise: the value is not stated."""
    m = model("sh = Shape(x)\n c = Cast<to=5>(sh)", inputs="float[seq] x", outputs="int16[1] c")
    assert _values(m)["c"] is None


# -- broadcasting two different dims --------------------------------------------------------------

def test_broadcast_against_a_constant_proves_a_range(runner: shapearith.Runner) -> None:
    """Add(x[seq], w[3]) runs only at seq 1 or 3: later, x[:3] on seq is seq."""
    m = model("y = Add(x, w)\n s = Slice(x, z, three)", inputs="float[seq] x, float[3] w",
              outputs="float[?] y, float[?] s", inits="int64[1] z = {0}, int64[1] three = {3}")
    a = analyze_model(m)
    assert a.inference.proven() == {"seq": (1, 3)}
    check(runner, m, ("seq",), {"y": "[3]", "s": "[seq]"})


def test_broadcast_of_two_symbols_at_least_one(runner: shapearith.Runner) -> None:
    """[a] + [b] with both proved >= 1 (a -1 Reshape of each) is max(a, b); without the facts it
    is unknown, since a = 0 against b = 1 gives 0."""
    m = model("sa = Shape(x)\n ta = Concat<axis=0>(sa, m1)\n ra = Reshape(x, ta)\n"
              " sb = Shape(v)\n tb = Concat<axis=0>(sb, m1)\n rb = Reshape(v, tb)\n y = Add(x, v)",
              inputs="float[a] x, float[b] v", outputs="float[?,?] ra, float[?,?] rb, float[?] y",
              inits="int64[1] m1 = {-1}")
    check(runner, m, ("a", "b"), {"y": "[max(a, b)]"})
    bare = model("y = Add(x, v)", inputs="float[a] x, float[b] v", outputs="float[?] y")
    assert stated(bare)["y"] == "[?]"
    check(runner, bare, ("a", "b"))


def test_broadcast_against_a_dim_never_one(runner: shapearith.Runner) -> None:
    """[seq] + [n + 2]: seq is 1 or n + 2, so >= 1; the result is n + 2."""
    m = model("sh = Shape(w)\n n2 = Add(sh, two)\n e = Expand(x, n2)", inputs="float[seq] x, float[n] w",
              outputs="float[?] e", inits="int64[1] two = {2}")
    a = analyze_model(m)
    assert a.inference.proven().get("seq", (None, None))[0] == 1
    check(runner, m, ("seq", "n"), {"e": "[n + 2]"})
