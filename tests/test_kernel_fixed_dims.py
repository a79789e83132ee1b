"""Dims a kernel's validation fixes (issue 22: "state every dim the runtime fixes").

tf2onnx's LayerNorm below opset 17 builds BatchNormalization's scale as ``Expand(1.0, n)`` with
``n`` the int32 product of two dims: a value that may wrap under the domain's premise (symbols up
to 2**24), so inference does not know it. But onnxruntime refuses a BatchNormalization whose
scale is not ``[C]`` (``Invalid input scale: 0th dimension != C``), and a node of the main graph
always runs: wherever the model runs the Expand's dim is C, computed exactly in int64 by the
Reshape that made the activations. The same holds for InstanceNormalization's scale and bias,
MatMul's and Gemm's inner dims and Conv's input channels (group 1). Each is checked at bindings
0, 1, 2, 3 and a large one with onnxruntime as the oracle, and where the int32 value really wraps.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402

from helpers import ort_session  # noqa: E402
from oracle import check, model, shapearith, stated  # noqa: E402

# n = the int32 product a*b as tf2onnx computes it (Cast(Shape) to int32, ReduceProd), back in int64
_N = (" sh = Shape(x)\n sh32 = Cast<to=6>(sh)\n ab = Slice(sh32, zero, two)\n"
      " p = ReduceProd<keepdims=1>(ab)\n n = Cast<to=7>(p)\n")
_INITS = "int64[1] zero = {0}, int64[1] two = {2}, float one = {1.0}, float nil = {0.0}"


@pytest.fixture(scope="module")
def runner(ort_runner) -> Iterator[shapearith.Runner]:
    yield ort_runner  # one onnxruntime worker for the session (tests/conftest.py)


def _bn_model(times: int = 1, opset: int = 15):  # type: ignore[no-untyped-def]
    n = _N if opset >= 10 else _N.replace("Slice(sh32, zero, two)", "Slice<starts=[0], ends=[2], axes=[0]>(sh32)")
    if times != 1:
        n = n.replace(" n = Cast<to=7>(p)", " pk = Mul(p, k)\n n = Cast<to=7>(pk)")
    body = (n + " x4 = Reshape(x, shp)\n scale = Expand(one, n)\n bias = Expand(nil, n)\n"
            " mean = ReduceMean<axes=[0, 2, 3], keepdims=0>(x4)\n var = ReduceMean<axes=[0, 2, 3], keepdims=0>(x4)\n"
            " y = BatchNormalization(x4, scale, bias, mean, var)")
    return model(body, inputs="float[a,b,8] x", outputs="float[?,?,?,?] y", opset=opset,
                 inits=_INITS + f", int64[4] shp = {{1, -1, 8, 1}}, int32[1] k = {{{times}}}")


def test_batchnorm_scale_from_an_int32_product(runner: shapearith.Runner) -> None:
    """The tf2onnx LayerNorm pattern: scale and bias are [a*b] (unknown before)."""
    check(runner, _bn_model(), ("a", "b"), {"scale": "[a*b]", "bias": "[a*b]", "y": "[1, a*b, 8, 1]"})


@pytest.mark.parametrize("opset", [9, 14])
def test_batchnorm_other_versions(runner: shapearith.Runner, opset: int) -> None:
    check(runner, _bn_model(opset=opset), ("a", "b"), {"scale": "[a*b]"}, values=(0, 1, 3))


def test_batchnorm_fixes_the_wrapped_int32_where_it_runs() -> None:
    """A product that really wraps: n = int32(a*b*65537). At a*b = 65536 it wraps to 65536 and
    onnxruntime runs, with the stated [a*b]; where it wraps (or not) to anything else than a*b
    onnxruntime refuses the BatchNormalization, so stating a*b is no premise."""
    m = _bn_model(times=65537)
    assert stated(m)["scale"] == "[a*b]"
    exposed = m.__class__()
    exposed.CopyFrom(m)
    exposed.graph.output.append(helper.make_tensor_value_info("scale", TensorProto.FLOAT, None))
    exposed.graph.output.append(helper.make_tensor_value_info("pk", TensorProto.INT32, None))
    sess = ort_session(exposed)
    runs = {}
    for a, b in ((256, 256), (0, 5), (1, 1), (2, 3), (37, 1)):
        try:
            _, scale, pk = sess.run(None, {"x": np.zeros((a, b, 8), np.float32)})
            runs[(a, b)] = (scale.shape, int(pk[0]))
        except Exception:
            runs[(a, b)] = None
    assert runs[(256, 256)] == ((256 * 256,), 65536)  # 65536 * 65537 wrapped: 2**32 + 2**16 -> 2**16
    assert runs[(0, 5)] == ((0,), 0)
    assert runs[(1, 1)] is None and runs[(2, 3)] is None and runs[(37, 1)] is None


def test_batchnorm_fixes_unknown_channels_of_the_input(runner: shapearith.Runner) -> None:
    """The other way: the activations' channels are the unknown Expand, the scale known."""
    body = (_N + " dims = Concat<axis=0>(one1, n, eight)\n x3 = Expand(one, dims)\n"
            " flat = Reshape(x, shp)\n scale = ReduceMean<axes=[1], keepdims=0>(flat)\n"
            " y = BatchNormalization(x3, scale, scale, scale, scale)")
    m = model(body, inputs="float[a,b,8] x", outputs="float[?,?,?] y",
              inits=_INITS + ", int64[1] one1 = {1}, int64[1] eight = {8}, int64[2] shp = {-1, 8}", opset=15)
    check(runner, m, ("a", "b"), {"x3": "[1, a*b, 8]", "y": "[1, a*b, 8]"})


def test_instance_normalization(runner: shapearith.Runner) -> None:
    body = (_N + " x3 = Reshape(x, shp)\n scale = Expand(one, n)\n bias = Expand(nil, n)\n"
            " y = InstanceNormalization(x3, scale, bias)")
    m = model(body, inputs="float[a,b,8] x", outputs="float[?,?,?] y",
              inits=_INITS + ", int64[3] shp = {1, -1, 8}")
    check(runner, m, ("a", "b"), {"scale": "[a*b]", "bias": "[a*b]"})


def test_matmul_inner_dims(runner: shapearith.Runner) -> None:
    body = (_N + " dims = Concat<axis=0>(two, n)\n lhs = Expand(one, dims)\n rhs = Reshape(x, shp)\n"
            " y = MatMul(lhs, rhs)\n v = Expand(one, n)\n w = MatMul(v, rhs)")
    m = model(body, inputs="float[a,b,8] x", outputs="float[?,?] y, float[?] w",
              inits=_INITS + ", int64[2] shp = {-1, 8}")
    check(runner, m, ("a", "b"), {"lhs": "[2, a*b]", "v": "[a*b]", "y": "[2, 8]"})


@pytest.mark.parametrize("trans", [0, 1])
def test_gemm_inner_dims(runner: shapearith.Runner, trans: int) -> None:
    order = "n, two" if trans else "two, n"
    body = (_N + f" dims = Concat<axis=0>({order})\n lhs = Expand(one, dims)\n rhs = Reshape(x, shp)\n"
            f" y = Gemm<transA={trans}>(lhs, rhs)")
    m = model(body, inputs="float[a,b,8] x", outputs="float[?,?] y",
              inits=_INITS + ", int64[2] shp = {-1, 8}")
    check(runner, m, ("a", "b"), {"lhs": "[a*b, 2]" if trans else "[2, a*b]"}, values=(0, 1, 2, 37))


def test_conv_input_channels(runner: shapearith.Runner) -> None:
    body = (_N + " dims = Concat<axis=0>(four, n, one1)\n w = Expand(one, dims)\n x3 = Reshape(x, shp)\n"
            " y = Conv(x3, w)")
    m = model(body, inputs="float[a,b,8] x", outputs="float[?,?,?] y",
              inits=_INITS + ", int64[1] four = {4}, int64[1] one1 = {1}, int64[3] shp = {1, -1, 8}")
    check(runner, m, ("a", "b"), {"w": "[4, a*b, 1]", "y": "[1, 4, 8]"}, values=(0, 1, 2, 37))


def test_a_branch_fixes_nothing_outside_it(runner: shapearith.Runner) -> None:
    """A BatchNormalization in an If branch runs only when the branch is taken: the Expand it
    reads stays unknown (onnxruntime runs the model with any scale when the other branch is)."""
    body = (_N + " x4 = Reshape(x, shp)\n scale = Expand(one, n)\n"
            " mean = ReduceMean<axes=[0, 2, 3], keepdims=0>(x4)\n"
            " y = If(c) <then_branch = g1 () => (float[?,?,?,?] t) {\n"
            "   t = BatchNormalization(x4, scale, mean, mean, mean)\n },\n"
            " else_branch = g2 () => (float[?,?,?,?] e) {\n e = Identity(x4)\n }>")
    m = model(body, inputs="float[a,b,8] x, bool c", outputs="float[?,?,?,?] y",
              inits=_INITS + ", int64[4] shp = {1, -1, 8, 1}", opset=15)
    assert stated(m)["scale"] == "[?]"
    check(runner, m, ("a", "b"), values=(0, 1, 2))


def _refuses(node: str, opset: int, feeds: dict[str, tuple[int, ...]], **attrs: int) -> bool:
    names = list(feeds)
    g = helper.make_graph([helper.make_node(node, names, ["y"], **attrs)], "g",
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in names],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    sess = ort_session(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]))
    try:
        sess.run(None, {n: np.ones(s, np.float32) for n, s in feeds.items()})
    except Exception:
        return True
    return False


_BN = ("x", "scale", "bias", "mean", "var")


@pytest.mark.parametrize("node, opset, ok, attrs, broken", [
    # every per-channel input of BatchNormalization (7, 9, 15) against the channels, 0 and 1 too
    *[("BatchNormalization", v, dict(zip(_BN, [(2, c, 4)] + [(c,)] * 4)), {}, k)
      for v in (7, 9, 15) for c in (0, 1, 3) for k in range(1, 5)],
    *[("InstanceNormalization", 6, {"x": (2, c, 4), "scale": (c,), "bias": (c,)}, {}, k)
      for c in (0, 1, 3) for k in (1, 2)],
    *[("MatMul", 13, {"a": (2, c), "b": (c, 5)}, {}, k) for c in (0, 1, 3) for k in (0, 1)],
    ("MatMul", 13, {"a": (3,), "b": (4, 3, 5)}, {}, 0),
    ("MatMul", 13, {"a": (4, 2, 3), "b": (3,)}, {}, 1),
    *[("Gemm", 13, {"a": (c, 2) if t else (2, c), "b": (c, 5)}, {"transA": t}, k)
      for t in (0, 1) for c in (0, 1, 3) for k in (0, 1)],
    *[("Gemm", 13, {"a": (2, c), "b": (5, c)}, {"transB": 1}, k) for c in (1, 3) for k in (0, 1)],
    *[("Conv", 13, {"x": (1, c, 8), "w": (4, c, 1)}, {}, k) for c in (1, 3) for k in (0, 1)],
])
def test_the_kernel_refuses_unequal_dims(node: str, opset: int, ok: dict[str, tuple[int, ...]],
                                         attrs: dict[str, int], broken: int) -> None:
    """The premise of every dim above: onnxruntime runs the node with the dims equal and refuses
    it when one of them is changed by one (either way: 0 against 1 included)."""
    assert not _refuses(node, opset, ok, **attrs)
    name = list(ok)[broken]
    axis = {"BatchNormalization": 0, "InstanceNormalization": 0}.get(node, 1)
    dims = ok[name]
    which = {("MatMul", 0): -1, ("MatMul", 1): 0 if len(dims) < 2 else -2, ("Conv", 0): 1, ("Conv", 1): 1,
             ("Gemm", 0): 0 if attrs.get("transA") else 1, ("Gemm", 1): 1 if attrs.get("transB") else 0}
    axis = which.get((node, broken), axis)
    for delta in (1, -1):
        changed = list(dims)
        changed[axis] += delta
        if changed[axis] < 0:
            continue
        assert _refuses(node, opset, {**ok, name: tuple(changed)}, **attrs), (name, changed)
