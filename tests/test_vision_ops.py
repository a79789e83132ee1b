"""Shape rules of the sliding-window, resize, tile/pad/split, Einsum and TopK ops, checked against
onnxruntime: each model is one node over an input with symbolic dims, inferred once symbolically,
then run at several lengths including 0, 1, 2 and 3; every dim shapeflow states, with the symbols
bound to the run's lengths, must equal the runtime dim. Lengths the runtime refuses are skipped,
and each case must run at some length and state the dims it names."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import onnx
import pytest
from helpers import analyze_model
from onnx import TensorProto, helper, numpy_helper

from shapeflow.dims import substitute

ort = pytest.importorskip("onnxruntime")

SIZES = (0, 1, 2, 3, 4, 5, 7, 10, 17, 64, 1001)
BATCH = ("n", "b", "batch")  # bound to 2 at every size: the lengths are the point


@dataclass
class Case:
    op: str
    attrs: dict
    x: Sequence[object]  # ints and symbol names; every symbol is bound to the run's length
    opset: int = 19
    inits: dict = field(default_factory=dict)  # input position -> numpy array (a constant input)
    n_out: int = 1
    known: Sequence[int] = ()  # output-0 positions that must be stated (not unknown)

    def model(self) -> onnx.ModelProto:
        inputs = ["x"]
        inits = []
        for pos in sorted(self.inits):
            while len(inputs) < pos:
                inputs.append("")
            name = f"c{pos}"
            inits.append(numpy_helper.from_array(self.inits[pos], name))
            inputs.append(name)
        outs = [f"y{i}" for i in range(self.n_out)]
        node = helper.make_node(self.op, inputs, outs, **self.attrs)
        graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(self.x))],
                                  [onnx.ValueInfoProto(name=o) for o in outs], inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
        m.ir_version = 8
        return m


def _session(model: onnx.ModelProto):  # type: ignore[no-untyped-def]
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 4
    so.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def check(case: Case, sizes: Sequence[int] = SIZES, assume: tuple[str, ...] = ()) -> list:
    """Runs the case; returns the inferred output shapes. Fails on any stated dim the runtime
    contradicts, or when the runtime runs at no size."""
    model = case.model()
    inf = analyze_model(model, assume=assume).inference
    shapes = [inf.shape_of(f"y{i}") for i in range(case.n_out)]
    symbols = sorted({d for d in case.x if isinstance(d, str)})
    sess = _session(model)
    ran = 0
    for size in sizes:
        bindings = {s: 2 if s in BATCH else size for s in symbols}
        dims = [bindings.get(d, d) if isinstance(d, str) else d for d in case.x]
        try:
            outs = sess.run(None, {"x": np.random.default_rng(0).standard_normal(dims).astype(np.float32)})
        except Exception:  # the runtime refuses this length: nothing to compare
            continue
        ran += 1
        for i, (shape, out) in enumerate(zip(shapes, outs)):
            if shape is None:
                continue
            assert len(shape) == out.ndim, (case, i, shape, out.shape)
            for d, r in zip(shape, out.shape):
                b = substitute(d, bindings)
                assert b is None or b == r, f"{case.op} {case.attrs} at {size}: y{i} inferred {shape} -> {b}, runtime {out.shape}"
    assert ran, f"{case} never runs"
    for pos in case.known:
        assert shapes[0] is not None and shapes[0][pos] is not None, (case, shapes[0])
    return shapes


def _w(*shape: int) -> np.ndarray:
    return np.random.default_rng(1).standard_normal(shape).astype(np.float32)


# -- sliding windows ---------------------------------------------------------------------------------

def _pool_cases() -> list[Case]:
    cases = []
    for op, k, s, d, pb, pe, cm, ap in itertools.product(
            ("MaxPool", "AveragePool", "LpPool"), (1, 2, 3, 4), (1, 2, 3), (1, 2), (0, 1, 2), (0, 3), (0, 1),
            ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER")):
        if (ap != "NOTSET" and (pb or pe)) or (op != "MaxPool" and d != 1) or pb >= k or pe >= k:
            continue
        attrs: dict = {"kernel_shape": [k], "strides": [s], "ceil_mode": cm, "auto_pad": ap}
        if ap == "NOTSET":
            attrs["pads"] = [pb, pe]
        if d != 1:
            attrs["dilations"] = [d]
        cases.append(Case(op, attrs, ["n", 3, "L"], opset=18 if op == "LpPool" else 19))
    return cases


def test_pools_match_the_runtime_at_every_length() -> None:
    stated = 0
    for case in _pool_cases():
        shape = check(case, sizes=(0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 101))[0]
        stated += shape is not None and shape[2] is not None
    assert stated > 200  # most configurations are stated, not left unknown


@pytest.mark.parametrize("op", ["Conv", "ConvTranspose"])
def test_convs_match_the_runtime_at_every_length(op: str) -> None:
    stated = 0
    for k, s, d, pb, pe, ap, opad in itertools.product((1, 2, 4), (1, 2, 3), (1, 2), (0, 1), (0, 2),
                                                        ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"), (0, 1)):
        if (ap != "NOTSET" and (pb or pe)) or (op == "Conv" and opad) or (opad and opad >= s) \
                or (op == "Conv" and ap.startswith("SAME") and d != 1):  # refused by the runtime
            continue
        attrs: dict = {"kernel_shape": [k], "strides": [s], "auto_pad": ap}
        if ap == "NOTSET":
            attrs["pads"] = [pb, pe]
        if d != 1:
            attrs["dilations"] = [d]
        if opad:
            attrs["output_padding"] = [opad]
        w = _w(4, 3, k) if op == "Conv" else _w(3, 4, k)
        shape = check(Case(op, attrs, ["n", 3, "L"], opset=17, inits={1: w}), sizes=(0, 1, 2, 3, 4, 5, 7, 10, 100))[0]
        stated += shape is not None and shape[2] is not None
    assert stated > 80


@pytest.mark.parametrize("auto_pad", ["NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"])
def test_conv_transpose_output_shape(auto_pad: str) -> None:
    shape = check(Case("ConvTranspose", {"kernel_shape": [3], "strides": [2], "output_shape": [10], "auto_pad": auto_pad},
                       ["n", 3, "L"], opset=17, inits={1: _w(3, 4, 3)}, known=(1, 2)), sizes=(0, 1, 2, 3, 4, 5, 6, 7))[0]
    assert shape[2] == 10


def test_wav2vec2_feature_encoder_conv_is_the_documented_formula() -> None:
    case = Case("Conv", {"kernel_shape": [10], "strides": [5]}, ["batch", 1, "samples"], opset=17,
                inits={1: _w(16, 1, 10)}, known=(0, 1, 2))
    shape = check(case, sizes=(10, 11, 14, 15, 16000, 16003))[0]
    assert str(shape[2]) == "floor(samples/5) - 1"  # floor((samples - 10)/5) + 1


def test_patch_embedding_and_stem_convs_are_stated() -> None:
    patch = check(Case("Conv", {"kernel_shape": [2, 2], "strides": [2, 2]}, ["b", 3, "h", "w"], opset=17,
                       inits={1: _w(8, 3, 2, 2)}, known=(0, 1, 2, 3)), sizes=(2, 3, 5, 64))[0]
    assert [str(patch[2]), str(patch[3])] == ["floor(h/2)", "floor(w/2)"]
    stem = check(Case("Conv", {"kernel_shape": [7, 7], "strides": [2, 2], "pads": [3, 3, 3, 3]}, ["b", 3, "h", "w"],
                      opset=17, inits={1: _w(8, 3, 7, 7)}, known=(2, 3)), sizes=(1, 2, 3, 224))[0]
    assert str(stem[2]) == "floor((h + 1)/2)"
    same = check(Case("Conv", {"kernel_shape": [3], "strides": [2], "auto_pad": "SAME_UPPER"}, ["b", 3, "t"],
                      opset=17, inits={1: _w(8, 3, 3)}, known=(2,)), sizes=(1, 2, 3, 9))[0]
    assert str(same[2]) == "floor((t + 1)/2)"


def test_ceil_mode_last_window_rule() -> None:
    # k=1, s=2, no pads: the runtime drops a last window that would start past the input, which
    # depends on the parity of L: min(ceil((L-1)/2) + 1, ceil(L/2)), which is ceil(L/2) at every L
    # (floor is monotone: floor(L/2) + 1 >= floor((L + 1)/2)); k=3, s=2 never drops one. check()
    # compares both with the runtime at every length.
    dropped = check(Case("MaxPool", {"kernel_shape": [1], "strides": [2], "ceil_mode": 1}, ["n", 3, "L"]))[0]
    kept = check(Case("MaxPool", {"kernel_shape": [3], "strides": [2], "ceil_mode": 1}, ["n", 3, "L"], known=(2,)))[0]
    assert str(dropped[2]) == "floor((L + 1)/2)" and str(kept[2]) == "floor(L/2)"  # ceil((L-3)/2) + 1


def test_two_d_pool_with_group_conv_and_large_lengths() -> None:
    check(Case("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, ["n", 3, "h", 5]),
          sizes=(1, 2, 3, 225))
    check(Case("Conv", {"kernel_shape": [3], "strides": [2], "group": 3}, ["n", 3, "L"], opset=17,
               inits={1: _w(6, 1, 3)}, known=(1, 2)), sizes=(3, 4, 100_003))
    check(Case("AveragePool", {"kernel_shape": [4], "strides": [3], "ceil_mode": 1}, ["n", 3, "L"], known=(2,)),
          sizes=(4, 5, 6, 7, 200_001, 200_002))


def test_global_pools() -> None:
    for op in ("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"):
        shape = check(Case(op, {}, ["n", 3, "h", "w"], known=(0, 1, 2, 3)), sizes=(1, 2, 3))[0]
        assert shape[2:] == (1, 1)


# -- tile, pad, split ----------------------------------------------------------------------------------

def test_tile_keeps_symbolic_dims_with_repeat_one() -> None:
    shape = check(Case("Tile", {}, [1, "seq", 1, 4, 1], opset=13, inits={1: np.array([1, 1, 1, 1, 2], np.int64)},
                       known=(0, 1, 2, 3, 4)))[0]
    assert [str(d) for d in shape] == ["1", "seq", "1", "4", "2"]
    doubled = check(Case("Tile", {}, ["a", 3], opset=13, inits={1: np.array([3, 0], np.int64)}, known=(0, 1)))[0]
    assert str(doubled[0]) == "3*a" and doubled[1] == 0


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_pad_modes_axes_and_negative_pads(mode: str) -> None:
    shape = check(Case("Pad", {"mode": mode}, ["n", "L"], opset=19, inits={1: np.array([0, 2, 1, 3], np.int64)},
                       known=(0, 1)))[0]
    assert str(shape[1]) == "L + 5"
    axes = check(Case("Pad", {"mode": mode}, ["n", "L", 4], opset=19,
                      inits={1: np.array([1, -1], np.int64), 3: np.array([-2], np.int64)}, known=(0, 1, 2)))[0]
    assert str(axes[1]) == "L" and axes[2] == 4
    crop = check(Case("Pad", {"mode": mode}, ["L"], opset=13, inits={1: np.array([-1, -1], np.int64)},
                      known=(0,)))[0]
    assert str(crop[0]) == "L - 2"


def test_pad_attribute_form() -> None:
    check(Case("Pad", {"pads": [0, 1, 0, 2]}, ["n", "L"], opset=10, known=(1,)))


def test_split_sizes_and_num_outputs() -> None:
    equal = check(Case("Split", {"axis": 1}, ["n", "L"], opset=13, n_out=2), sizes=(0, 2, 4, 6, 64))
    assert str(equal[0][1]) == "floor(L/2)"
    given = check(Case("Split", {"axis": 0}, ["L", 2], opset=13, n_out=2,
                       inits={1: np.array([1, 2], np.int64)}), sizes=(3,))
    assert given[0][0] == 1 and given[1][0] == 2
    for n in (2, 3, 4):
        outs = check(Case("Split", {"axis": 0, "num_outputs": n}, ["L"], opset=18, n_out=n), sizes=range(12))
        assert outs[0][0] is not None and outs[-1][0] is not None


# -- resize, depth/space, einsum, topk -----------------------------------------------------------------

def test_resize_sizes_and_scales() -> None:
    # Scales on a symbolic dim: float32 rounding past 2**24 makes them unknown without bounds.
    scaled = check(Case("Resize", {"mode": "nearest"}, [1, 2, "h", 5], opset=13,
                        inits={2: np.array([1, 1, 2, 0.5], np.float32)}, known=(0, 1, 3)), sizes=(0, 1, 2, 3))[0]
    assert scaled[3] == 2 and scaled[2] is None or str(scaled[2]) == "2*h"
    sized = check(Case("Resize", {"mode": "linear"}, [1, 2, "h", "w"], opset=13,
                       inits={3: np.array([1, 2, 6, 7], np.int64)}, known=(0, 1, 2, 3)), sizes=(1, 2, 3))[0]
    assert sized == (1, 2, 6, 7)
    axes = check(Case("Resize", {"mode": "nearest", "axes": [2]}, [1, "c", 4], opset=19,
                      inits={2: np.array([1.5], np.float32)}, known=(2,)), sizes=(1, 2))[0]
    assert axes[2] == 6
    check(Case("Upsample", {"mode": "nearest"}, [1, 1, "h", 3], opset=9,
               inits={1: np.array([1, 1, 1, 3], np.float32)}, known=(3,)), sizes=(1, 2))
    up7 = check(Case("Upsample", {"mode": "nearest", "scales": [1.0, 1.0, 2.0, 1.5]}, [1, 1, "h", 3], opset=7,
                     known=(3,)), sizes=(1, 2))[0]
    assert up7[3] == 4  # int(float32(1.5) * 3)


def test_depth_to_space_and_back() -> None:
    d2s = check(Case("DepthToSpace", {"blocksize": 2}, ["n", 8, "h", "w"], known=(1, 2, 3)), sizes=(0, 1, 2, 3))[0]
    assert d2s[1] == 2 and str(d2s[2]) == "2*h"
    check(Case("SpaceToDepth", {"blocksize": 2}, ["n", 2, "h", "w"], known=(1, 2, 3)), sizes=(0, 2, 4, 6))


@pytest.mark.parametrize("eq,shape,other,expected", [
    # b meets the constant's 3: the model runs only where b is 3 (or 1, broadcast), so 3.
    ("bij,bjk->bik", ["p", "i", 4], ("p", 4, 5), ["3", "i", "5"]),
    ("...ij->...ji", ["p", "i", 4], None, ["p", "4", "i"]),
    ("bi,bi->b", ["p", "i"], ("p", "i"), ["3"]),
    ("ij", ["i", 3], None, ["i", "3"]),
    ("ij->", ["i", 3], None, []),
])
def test_einsum(eq: str, shape: list, other: tuple | None, expected: list) -> None:
    # A second operand is a constant of one binding's shape: run at that binding only.
    size = 3
    inits = {}
    if other is not None:
        inits[1] = _w(*[size if isinstance(d, str) else d for d in other])
    sizes = (size,) if other is not None else (0, 1, 2, 3, 7)
    out = check(Case("Einsum", {"equation": eq}, shape, opset=12, inits=inits), sizes=sizes)[0]
    assert [str(d) for d in out] == expected


def test_topk_axis_becomes_k() -> None:
    out = check(Case("TopK", {"axis": 1}, ["n", "L"], opset=11, inits={1: np.array([2], np.int64)}, n_out=2,
                     known=(0, 1)), sizes=(2, 3, 10))
    assert out[0][1] == 2 and out[1][1] == 2


def test_tile_with_symbolic_repeats() -> None:
    """repeats = Concat([2], Shape(z)[0:1]): a known and a symbolic repeat."""
    nodes = [
        helper.make_node("Constant", [], ["two"], value=numpy_helper.from_array(np.array([2], np.int64))),
        helper.make_node("Shape", ["z"], ["zs"], start=0, end=1),
        helper.make_node("Concat", ["two", "zs"], ["reps"], axis=0),
        helper.make_node("Tile", ["x", "reps"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["seq", 4]),
                                           helper.make_tensor_value_info("z", TensorProto.FLOAT, ["k"])],
                              [onnx.ValueInfoProto(name="y")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    shape = analyze_model(model).inference.shape_of("y")
    assert shape is not None and [str(d) for d in shape] == ["2*seq", "4*k"]
    sess = _session(model)
    rng = np.random.default_rng(0)
    for seq, k in ((0, 1), (1, 0), (2, 3), (3, 2), (5, 7)):
        out = sess.run(None, {"x": rng.standard_normal((seq, 4)).astype(np.float32),
                              "z": rng.standard_normal(k).astype(np.float32)})[0]
        assert out.shape == (2 * seq, 4 * k)


def test_resize_scales_on_a_bounded_symbol() -> None:
    """Under an assumed bound that keeps float32 exact, a scaled symbolic dim is stated."""
    case = Case("Resize", {"mode": "nearest"}, [1, 2, "h", 5], opset=13, inits={2: np.array([1, 1, 1.5, 0.5], np.float32)})
    shape = check(case, sizes=(0, 1, 2, 3, 4095), assume=("h<=4096",))[0]
    assert str(shape[2]) == "floor(3*h/2)" and shape[3] == 2
    assert check(case, sizes=(0, 1, 2))[0][2] is None  # unbounded: 2**24 + 1 would round


def test_resize_scales_that_a_caller_may_replace_are_unknown() -> None:
    """An initializer also listed as a graph input is only a default: its scales are not used."""
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    graph = helper.make_graph([helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 5]),
                               helper.make_tensor_value_info("scales", TensorProto.FLOAT, [4])],
                              [onnx.ValueInfoProto(name="y")], [scales])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    assert analyze_model(model).inference.shape_of("y") == (None,) * 4
    del model.graph.input[1]  # a plain initializer: the runtime's float32 product
    assert analyze_model(model).inference.shape_of("y") == (1, 2, 8, 10)
