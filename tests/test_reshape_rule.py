"""Reshape as onnxruntime computes it (issue 22, points 1 and 2).

The runtime's rule is established by brute force (every small input shape against every small
target, both ``allowzero`` values) and written down in ``shapeflow.ops.numeric.reshape_dims``;
the symbolic rule (``shapeflow.ops.shape_ops``) is then checked at bindings 0, 1, 2, 3 and a
large one of every symbol, and must state the dims the file fixes.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402

from helpers import ort_session  # noqa: E402
from oracle import INT64_MAX, check, model, shapearith, stated  # noqa: E402
from shapeflow.ops.numeric import reshape_dims  # noqa: E402


@pytest.fixture(scope="module")
def runner(ort_runner) -> Iterator[shapearith.Runner]:
    yield ort_runner  # one onnxruntime worker for the session (tests/conftest.py)


def _session(rank_in: int, rank_t: int, allowzero: int):  # type: ignore[no-untyped-def]
    g = helper.make_graph(
        [helper.make_node("Reshape", ["x", "t"], ["y"], allowzero=allowzero)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None] * rank_in),
         helper.make_tensor_value_info("t", TensorProto.INT64, [rank_t])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return ort_session(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]))


def test_reshape_dims_is_onnxruntimes_rule_by_brute_force() -> None:
    """Zeros in the input, in the target, both; -1 beside a 0 (an empty product); both
    allowzero values: every case gives onnxruntime's shape, or None where it fails."""
    checked = failed = 0
    mismatches = []
    for rank_in, rank_t, az in itertools.product((1, 2, 3), (1, 2, 3), (0, 1)):
        sess = _session(rank_in, rank_t, az)
        for dims in itertools.product((0, 1, 2, 3), repeat=rank_in):
            x = np.zeros(dims, np.float32)
            for target in itertools.product((-1, 0, 2, 4), repeat=rank_t):
                try:
                    got = list(sess.run(None, {"x": x, "t": np.array(target, np.int64)})[0].shape)
                except Exception:
                    got = None
                    failed += 1
                checked += 1
                if reshape_dims(dims, target, az) != got:
                    mismatches.append((dims, target, az, got))
    assert not mismatches, mismatches[:10]
    assert failed and checked - failed > 1000  # both kinds of case occur


def test_allowzero_minus_one_beside_a_zero() -> None:
    """The issue's example: [0, 5, 64] -> [0, 5, -1, 16] with allowzero=1 is [0, 5, 4, 16]."""
    assert reshape_dims([0, 5, 64], [0, 5, -1, 16], 1) == [0, 5, 4, 16]
    assert reshape_dims([0, 5, 64], [0, 5, -1, 16], 0) is None  # without allowzero: -1 over 0 fails
    assert reshape_dims([0, 5, 64], [0, 5, -1, 16], 1) == list(
        _session(3, 4, 1).run(None, {"x": np.zeros((0, 5, 64), np.float32),
                                     "t": np.array([0, 5, -1, 16], np.int64)})[0].shape)


def test_dynamo_attention_heads_allowzero(runner: shapearith.Runner) -> None:
    """Reshape([b, s, 64], Concat(Shape[0:2], [-1, 16]), allowzero=1), every dynamo attention
    block: [b, s, 4, 16] for every b, s (0 included)."""
    m = model("sh = Shape<start=0, end=2>(x)\n t = Concat<axis=0>(sh, c)\n y = Reshape<allowzero=1>(x, t)",
              inputs="float[b,s,64] x", outputs="float[?,?,?,?] y", inits="int64[2] c = {-1, 16}")
    check(runner, m, ("b", "s"), {"y": "[b, s, 4, 16]"})


def test_allowzero_minus_one_needs_the_rest_non_zero(runner: shapearith.Runner) -> None:
    """[b*s, 64] -> [b, s, -1, 16] with allowzero=1: at b=0, s=2 onnxruntime gives -1 = 64/32 = 2,
    not 4 (the non-zero dims do not cancel): the -1 is not stated; the others are."""
    m = model("sh = Shape(x)\n b = Shape<start=0, end=1>(z)\n s = Shape<start=1, end=2>(z)\n"
              " t = Concat<axis=0>(b, s, c)\n y = Reshape<allowzero=1>(x, t)",
              inputs="float[bs,64] x, float[b,s] z", outputs="float[?,?,?,?] y", inits="int64[2] c = {-1, 16}")
    got = stated(m)["y"]
    assert got == "[b, s, ?, 16]"
    check(runner, m, ("b", "s", "bs"), values=(0, 1, 2, 4))


def test_allowzero_minus_one_never_zero_product(runner: shapearith.Runner) -> None:
    """[b, 64] -> [-1, 16] with allowzero=1: no 0 beside the -1, so 4*b at every b."""
    m = model("y = Reshape<allowzero=1>(x, t)", inputs="float[b,64] x", outputs="float[?,?] y",
              inits="int64[2] t = {-1, 16}")
    check(runner, m, ("b",), {"y": "[4*b, 16]"})


def test_allowzero_symbolic_target_is_literal(runner: shapearith.Runner) -> None:
    """allowzero=1: a computed target that is 0 is a 0, not a copy."""
    m = model("sh = Shape<start=1, end=2>(z)\n t = Concat<axis=0>(sh, c)\n y = Reshape<allowzero=1>(x, t)",
              inputs="float[s,6] x, float[2,s] z", outputs="float[?,?] y", inits="int64[1] c = {6}")
    check(runner, m, ("s",), {"y": "[s, 6]"})


# -- allowzero=0: a computed target that is 0 copies the input's dim (point 2) ---------------------

def test_target_four_batch_over_batch(runner: shapearith.Runner) -> None:
    """Target 4*batch at a position whose input dim is batch: where 4*batch is 0 so is batch,
    so the copy is 0 too: 4*batch at every binding."""
    m = model("sh = Shape<start=0, end=1>(x)\n b4 = Mul(sh, four)\n t = Concat<axis=0>(b4, c)\n y = Reshape(x, t)",
              inputs="float[batch,s,64] x", outputs="float[?,?] y", inits="int64[1] four = {4}, int64[1] c = {-1}")
    check(runner, m, ("batch", "s"), {"y": "[4*batch, 16*s]"})


def test_target_product_over_one_factor(runner: shapearith.Runner) -> None:
    """Target batch*seq at a position whose input dim is batch: batch*seq is 0 at seq = 0 while
    batch is not; the product rule (numel equal, the rest >= 1) still states it."""
    m = model("sh = Shape(x)\n b = Gather<axis=0>(sh, i0)\n s = Gather<axis=0>(sh, i1)\n bs = Mul(b, s)\n"
              " u = Unsqueeze(bs, z)\n t = Concat<axis=0>(u, c)\n y = Reshape(x, t)",
              inputs="float[batch,seq,64] x", outputs="float[?,?] y",
              inits="int64 i0 = {0}, int64 i1 = {1}, int64[1] z = {0}, int64[1] c = {64}")
    check(runner, m, ("batch", "seq"), {"y": "[batch*seq, 64]"})


def test_target_sum_over_one_of_its_symbols(runner: shapearith.Runner) -> None:
    """Target past + seq at a position whose input dim is past: 0 only where both are, so past is
    0 too; the second target, seq over 8, is 0 where seq is while 8 is copied: unknown there."""
    m = model("p = Shape<start=0, end=1>(a)\n s = Shape<start=0, end=1>(b)\n ps = Add(p, s)\n"
              " t = Concat<axis=0>(ps, s)\n y = Reshape(x, t)",
              inputs="float[past,8] x, float[past] a, float[seq] b", outputs="float[?,?] y")
    got = stated(m)["y"]
    assert got.startswith("[past + seq, "), got
    check(runner, m, ("past", "seq"))


def test_target_that_may_be_zero_without_implication_is_joined(runner: shapearith.Runner) -> None:
    """Target 2*seq at a position whose input dim is batch: at seq = 0 the 0 copies batch, from
    seq = 1 on it is 2*seq; the two cases join in one exact expression. The -1 (4*batch/(2*seq)
    from seq = 1 on) is no expression of the algebra: unknown."""
    m = model("s = Shape<start=0, end=1>(z)\n s2 = Mul(s, two)\n t = Concat<axis=0>(s2, m1)\n y = Reshape(x, t)",
              inputs="float[batch,4] x, float[seq] z", outputs="float[?,?] y",
              inits="int64[1] two = {2}, int64[1] m1 = {-1}")
    assert stated(m)["y"] == "[-batch*min(1, seq) + batch + 2*seq, ?]"
    check(runner, m, ("batch", "seq"))


def test_optimize_keeps_a_computed_zero_and_minus_one_target(runner: shapearith.Runner) -> None:
    """Found by the fuzzer: Reshape<allowzero=1>(x[2, 0, b], Concat(Shape(x)[0:2], [-1, 1])) runs
    ([2, 0, 1, 1] at b = 0: the -1 is 2/2); folded to the constant [2, 0, -1, 1], onnx's shape
    inference refuses the model when onnxruntime loads it. The target stays computed. The -1 is the
    non-zero dims' ratio at every b: max(1, b)."""
    m = model("sh = Shape<start=0, end=2>(x)\n t = Concat<axis=0>(sh, c)\n y = Reshape<allowzero=1>(x, t)",
              inputs="float[2,0,b] x", outputs="float[?,?,?,?] y", inits="int64[2] c = {-1, 1}")
    check(runner, m, ("b",), {"y": "[2, 0, max(1, b), 1]"})


def test_target_that_is_zero_only_with_one_symbol_is_joined(runner: shapearith.Runner) -> None:
    """dynamo's attention: Reshape(x[b, 4, s, 32], [-1, s, 32]) (s from Shape(x)). At s = 0 the s
    target copies the input's 4 and the -1 is 0: [0, 4, 32]; from s = 1 on it is [4*b, s, 32].
    Both cases in one expression each, exact at every binding; the Reshape back to [b, 4, 32, s]
    is then stated plainly."""
    m = model("sh = Shape(x)\n s = Slice(sh, m2, m1)\n c = Slice(sh, m1, big)\n t = Concat<axis=0>(m1, s, c)\n"
              " y = Reshape(x, t)\n tr = Transpose<perm=[0, 2, 1]>(y)\n b4 = Slice(sh, z, m2)\n"
              " u = Concat<axis=0>(b4, c, s)\n w = Reshape(tr, u)",
              inputs="float[b,4,s,32] x", outputs="float[?,?,?] y, float[?,?,?,?] w",
              inits=f"int64[1] m1 = {{-1}}, int64[1] m2 = {{-2}}, int64[1] big = {{{INT64_MAX}}}, int64[1] z = {{0}}")
    check(runner, m, ("b", "s"), {"y": "[4*b*min(1, s), s - 4*min(1, s) + 4, 32]", "w": "[b, 4, 32, s]"})


def test_allowzero_minus_one_beside_a_symbol_that_may_be_0(runner: shapearith.Runner) -> None:
    """dynamo's gpt2 ``view(-1, seq)`` of the ids under allowzero=1: batch from seq = 1 on; at
    seq = 0 the -1 is the non-zero dims' ratio, max(batch, 1): one expression, max(batch, 1 - seq).
    And ``view(batch, -1)``: seq, or max(seq, 1) at batch = 0."""
    m = model("s = Shape<start=1, end=2>(mask)\n t = Concat<axis=0>(m1, s)\n y = Reshape<allowzero=1>(ids, t)\n"
              " b = Shape<start=0, end=1>(mask)\n u = Concat<axis=0>(b, m1)\n z = Reshape<allowzero=1>(mask, u)",
              inputs="float[batch,seq] ids, float[batch,seq] mask", outputs="float[?,?] y, float[?,?] z",
              inits="int64[1] m1 = {-1}")
    check(runner, m, ("batch", "seq"), {"y": "[max(batch, -seq + 1), seq]", "z": "[batch, max(-batch + 1, seq)]"})


def test_one_unknown_dim_is_the_size_quotient(runner: shapearith.Runner) -> None:
    """tf2onnx's Tensordot: Reshape(x[a, b, 16], Cast(Concat(ReduceProd(Cast(Shape(x)[0:2], int32)),
    [16]), int64)). The int32 product may pass 2**31 under the premise (symbols up to 2**24), so its
    value is unknown; but the output has x's size wherever the model runs, so beside 16 it is a*b
    (whatever the wrapped target was: a 0 that copies, a -1, the product itself)."""
    m = model("sh = Shape<start=0, end=2>(x)\n s32 = Cast<to=6>(sh)\n p = ReduceProd<keepdims=1>(s32)\n"
              " t = Concat<axis=0>(p, c)\n t64 = Cast<to=7>(t)\n y = Reshape(x, t64)",
              inputs="float[a,b,16] x", outputs="float[?,?] y", inits="int32[1] c = {16}", opset=17)
    check(runner, m, ("a", "b"), {"y": "[a*b, 16]"})


def test_size_quotient_needs_the_other_dims_non_zero(runner: shapearith.Runner) -> None:
    """Beside a dim that may be 0 any value keeps the size 0: the unknown dim stays unknown."""
    m = model("v = Shape<start=0, end=1>(z)\n u = Shape<start=1, end=2>(z)\n t = Concat<axis=0>(v, u)\n"
              " y = Reshape(x, t)", inputs="float[a,b] x, float[n,k] z", outputs="float[?,?] y")
    assert stated(m)["y"] == "[?, ?]"
    check(runner, m, ("a", "b", "n", "k"), values=(0, 1, 2, 4))
