"""onnxruntime's number semantics (ops/numeric.py, the Slice/Range/Reshape rules) against
onnxruntime itself, by brute force over small dims, and the symbolic forms against the int ones."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper

from shapeflow.dims import BASE, Sym, dim_add, dim_mul, substitute
from shapeflow.ops.numeric import canonical_element, cast_element, float_holds, slice_range, wrap_int
from shapeflow.ops.shape_ops import _slice_len

ort = pytest.importorskip("onnxruntime")

I64MAX, I64MIN, I32MAX = 2**63 - 1, -(2**63), 2**31 - 1
EDGES = [-5, -3, -2, -1, 0, 1, 2, 3, 5, I64MAX, I32MAX, I64MIN]
STEPS = [-2, -1, 1, 2]


def _session(model):  # type: ignore[no-untyped-def]
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 4
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def test_slice_indices_are_onnxruntimes() -> None:
    """Every start/end/step at the edges (INT_MAX with a negative step included) on dims 0..4."""
    vi = helper.make_tensor_value_info
    g = helper.make_graph(
        [helper.make_node("Slice", ["x", "s", "e", "ax", "st"], ["y"])], "g",
        [vi("x", TP.FLOAT, ["n"]), vi("s", TP.INT64, [1]), vi("e", TP.INT64, [1]), vi("st", TP.INT64, [1])],
        [vi("y", TP.FLOAT, None)], [helper.make_tensor("ax", TP.INT64, [1], [0])])
    sess = _session(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]))
    for d in range(5):
        x = np.arange(d, dtype=np.float32)
        for s, e, st in itertools.product(EDGES, EDGES, STEPS):
            y = sess.run(None, {"x": x, "s": np.array([s]), "e": np.array([e]), "st": np.array([st])})[0]
            assert list(slice_range(d, s, e, st)) == [int(v) for v in y], (d, s, e, st)


def test_symbolic_slice_lengths_equal_the_int_ones_at_every_binding() -> None:
    n = Sym.symbol("n")
    unknown = 0
    for s, e, st in itertools.product(EDGES, EDGES, STEPS):
        length = _slice_len(n, s, e, st, BASE)
        if length is None:
            unknown += 1
            continue
        for d in (*range(9), 1000):
            assert substitute(length, {"n": d}) == len(slice_range(d, s, e, st)), (s, e, st, d, length)
    assert unknown == 0  # every int start/end has a closed form


def test_slice_reads_like_the_clamp() -> None:
    n = Sym.symbol("seq")
    assert str(_slice_len(n, -3, I64MAX, 1, BASE)) == "min(3, seq)"
    assert str(_slice_len(n, 2, I64MAX, 1, BASE)) == "max(0, seq - 2)"
    assert _slice_len(n, -1, I64MIN, -1, BASE) == n  # x[::-1]


@pytest.mark.parametrize(
    ("src", "dst", "values"),
    [
        (TP.INT64, TP.UINT8, [300, -1, 255, 256, 2**40 + 7]),
        (TP.INT64, TP.INT8, [128, -129, 127]),
        (TP.INT64, TP.INT32, [2**32 + 3, -(2**31) - 1, 2**31]),
        (TP.INT64, TP.UINT16, [70000, -2]),
        (TP.INT64, TP.UINT32, [2**33 + 5, -1]),
        (TP.INT64, TP.FLOAT16, [2048, 2049, 2050, 4097, 65504, -2049]),
        (TP.INT64, TP.FLOAT, [2**24, 2**24 + 1, 2**24 + 2, 16777219]),
        (TP.INT64, TP.DOUBLE, [2**53, 2**53 + 1]),
        (TP.INT64, TP.BFLOAT16, [256, 257, 258, 384]),
        (TP.INT64, TP.BOOL, [0, 5, -3]),
    ],
)
def test_cast_is_onnxruntimes_or_unknown(src: int, dst: int, values: list[int]) -> None:
    """Integers wrap as onnxruntime wraps them; a float keeps a value only if it holds it exactly
    (else unknown, never a guessed rounding)."""
    vi = helper.make_tensor_value_info
    g = helper.make_graph([helper.make_node("Cast", ["x"], ["c"], to=dst),
                           helper.make_node("Cast", ["c"], ["y"], to=TP.DOUBLE)], "g",
                          [vi("x", src, [len(values)])], [vi("y", TP.DOUBLE, None)])
    got = _session(helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])).run(
        None, {"x": np.array(values, dtype=np.int64)})[0]
    for v, r in zip(values, got):
        mine = cast_element(src, dst, v, BASE)
        if mine is not None:
            assert float(mine) == float(r), (v, mine, r)
        else:
            assert dst in (TP.FLOAT16, TP.FLOAT, TP.DOUBLE, TP.BFLOAT16) and not float_holds(dst, v)


def test_wrap_and_symbolic_fit() -> None:
    assert wrap_int(TP.INT64, 2**63) == -(2**63)
    assert wrap_int(TP.UINT8, -1) == 255
    seq = Sym.symbol("seq")
    assert canonical_element(TP.INT64, seq, BASE) == seq
    assert canonical_element(TP.UINT8, seq, BASE) is None  # seq may be 257
    # the one built-in premise (dims.OVERFLOW_CAP): every symbol up to 2**24, in every type alike
    assert canonical_element(TP.FLOAT, seq, BASE) == seq  # 2**24 is a float32
    assert canonical_element(TP.INT32, seq, BASE) == seq
    batch_seq = dim_mul(seq, Sym.symbol("batch"))
    assert canonical_element(TP.INT32, batch_seq, BASE) is None  # 2**48 is no int32
    assert canonical_element(TP.INT64, batch_seq, BASE) == batch_seq
    assert canonical_element(TP.FLOAT, dim_add(seq, 1), BASE) is None  # 2**24 + 1 is no float32
    assert canonical_element(TP.INT16, seq, BASE) is None
    from shapeflow.dims import Domain

    short = Domain(ranges={"seq": (0, 255)})
    assert canonical_element(TP.UINT8, seq, short) == seq
    assert canonical_element(TP.FLOAT16, seq, short) == seq


def test_values_through_a_constant_table_chain_are_onnxruntimes() -> None:
    """TorchScript writes Pad's pads as Reshape[-1, 2] -> Slice(step -1) -> Transpose -> Reshape[-1]
    of a constant; a partially unknown Concat keeps its known elements."""
    import onnx.parser

    from helpers import analyze_model

    model = onnx.parser.parse_model("""
<ir_version: 8, opset_import: ["" : 13]>
g (float[seq, 3] x) => (int64[?] p, int64[?] q, int64[?] w)
  <int64[6] c = {1, 2, 3, 4, 5, 6}, int64[2] sh = {-1, 2}, int64[1] s = {-1}, int64[1] e = {-9223372036854775808},
   int64[1] ax = {0}, int64[1] st = {-1}, int64[1] flat = {-1}, int64[1] two = {2}>
{
  r = Reshape (c, sh)
  sl = Slice (r, s, e, ax, st)
  t = Transpose <perm: ints = [1, 0]> (sl)
  p = Reshape (t, flat)
  q = Slice (t, s, e, ax, st)
  am = ArgMax <axis: int = 1, keepdims: int = 0> (x)
  row = Gather <axis: int = 0> (am, ax)
  w = Concat <axis: int = 0> (two, row)
}
""")
    a = analyze_model(model)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    p, q, w = sess.run(None, {"x": np.zeros((1, 3), np.float32)})
    table = a.inference.tensors[0]
    assert table["p"].value == tuple(int(v) for v in p)
    assert table["q"].value == tuple(int(v) for v in q.reshape(-1))
    assert table["w"].value == (2, None) and int(w[0]) == 2
