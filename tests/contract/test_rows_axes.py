"""RELIABILITY.md 1.2 rows 20-33: axes and shapes that are wrong in a readable model.

Findings, not rejections: ``infer`` and ``lint`` exit 1 for an error-level finding (0 when only
warnings or info remain). ``optimize`` refuses a model with an error-level finding with exit 1 and
writes nothing (it never "repairs" a model on the way); with warnings only it runs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from .harness import WARNING_EXIT, E, Row, Setup, check_row, params
from .models import FLOAT, INT64, ints, model, single, vi, write


def finding(*says: str, code: str, names: tuple[str, ...] = ("n0",)) -> dict:
    """An error-level finding: infer/lint exit 1, optimize refuses (exit 1, nothing written)."""
    return {
        "infer": E(1, *says, code=code, severity="error", names=names),
        "lint": E(1, *says, code=code, severity="error", names=names),
        "optimize": E(1, *says, code=code, names=names, writes=False),
    }


def warning(*says: str, code: str, names: tuple[str, ...] = ("n0",), identical: bool = False) -> dict:
    return {
        "infer": E(WARNING_EXIT, *says, code=code, severity="warning", names=names),
        "lint": E(WARNING_EXIT, *says, code=code, severity="warning", names=names),
        "optimize": E(WARNING_EXIT, writes=True, identical=identical),
    }


def saved(m: onnx.ModelProto):  # type: ignore[no-untyped-def]
    def build(tmp: Path) -> Setup:
        return Setup(write(m, tmp / "m.onnx"))
    return build


# -- 26 axes not statically known ----------------------------------------------------------------------

def axes_from_graph_input() -> onnx.ModelProto:
    node = helper.make_node("Unsqueeze", ["x", "axes"], ["y"], name="n0")
    return model([node], [vi("x", [2, 3]), vi("axes", [1], INT64)], [vi("y", None)])


def axes_from_shape_op() -> onnx.ModelProto:
    # axes = Shape(z) where z is a runtime input of unknown extent: [len(z.shape)]
    nodes = [helper.make_node("Shape", ["z"], ["axes"], name="shape"),
             helper.make_node("Unsqueeze", ["x", "axes"], ["y"], name="n0")]
    return model(nodes, [vi("x", [2, 3]), vi("z", ["k"])], [vi("y", None)])


def axes_external(tmp: Path) -> Setup:
    m = single("Unsqueeze", [2, 3], [0])
    t = m.graph.initializer[0]
    (tmp / "axes.bin").write_bytes(np.asarray([0], dtype=np.int64).tobytes())
    t.ClearField("int64_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "axes.bin"), ("offset", "0"), ("length", "8")):
        e = t.external_data.add()
        e.key, e.value = k, v
    return Setup(write(m, tmp / "m.onnx"))


def info_only(*says: str) -> dict:
    return {
        "infer": E(0, *says, code="SF110", severity="info", names=("n0",)),
        "lint": E(0, *says, code="SF110", severity="info", names=("n0",)),
        "optimize": E(0, writes=True, identical=True),  # nothing provable, nothing rewritten
    }


# -- 28 declared dims ------------------------------------------------------------------------------------

def declared_input(shape: list[object]) -> onnx.ModelProto:
    node = helper.make_node("Unsqueeze", ["x", "axes"], ["y"], name="n0")
    return model([node], [vi("x", shape)], [vi("y", None)], [ints("axes", [0])])


# -- 29 rank -----------------------------------------------------------------------------------------------

def high_rank(rank: int) -> onnx.ModelProto:
    return declared_input([1] * rank)


# -- 30 long lists --------------------------------------------------------------------------------------

def many_axes(n: int, opset: int) -> onnx.ModelProto:
    return single("Unsqueeze", [2], list(range(n)), opset=opset)


def wide_concat(n: int) -> onnx.ModelProto:
    nodes = [helper.make_node("Unsqueeze", ["x", "axes"], ["u"], name="n0"),
             helper.make_node("Concat", ["u"] * n, ["y"], name="concat", axis=0)]
    return model(nodes, [vi("x", [2, 3])], [vi("y", None)], [ints("axes", [0])])


# -- 31, 32 declared data --------------------------------------------------------------------------------

def initializer_without_data() -> onnx.ModelProto:
    m = single("Unsqueeze", [2, 3], [0])
    t = m.graph.initializer[0]
    t.ClearField("int64_data")
    del t.dims[:]
    t.dims.append(2**40)
    return m


def constant_without_data() -> onnx.ModelProto:
    big = onnx.TensorProto(name="c", data_type=FLOAT, dims=[2**31, 2**31])
    nodes = [helper.make_node("Constant", [], ["c"], name="const", value=big),
             helper.make_node("Unsqueeze", ["c", "axes"], ["y"], name="n0")]
    return model(nodes, [], [vi("y", None)], [ints("axes", [0])])


def raw_data_mismatch() -> onnx.ModelProto:
    m = single("Unsqueeze", [2, 3], [0, 1, 2])
    t = m.graph.initializer[0]
    t.ClearField("int64_data")
    t.raw_data = b"\x00" * 5
    return m


# -- 33 value_info -----------------------------------------------------------------------------------------

def contradicting_value_info() -> onnx.ModelProto:
    nodes = [helper.make_node("Unsqueeze", ["x", "axes"], ["U"], name="n0"),
             helper.make_node("Relu", ["U"], ["y"], name="relu")]
    return model(nodes, [vi("x", [2, 3])], [vi("y", None)], [ints("axes", [0])],
                 value_info=[vi("U", [7, 7, 7, 7])])


def limit(*says: str, names: tuple[str, ...] = ()) -> dict:
    return {cmd: E(2, *says, names=names, writes=False) for cmd in ("infer", "lint", "optimize")}


ROWS = [
    Row("20-axes-int32", saved(single("Unsqueeze", [2, 3], [0], axes_dtype=TensorProto.INT32)),
        finding("axes must be int64 (got int32)", code="SF109")),
    Row("20-axes-float", saved(single("Squeeze", [1, 3], [0], axes_dtype=FLOAT)),
        finding("axes must be int64 (got float)", code="SF109")),
    Row("21-axes-scalar", saved(single("Unsqueeze", [2, 3], [0], axes_dims=[])),
        warning("axes should be 1-D (got a scalar; accepted by onnxruntime)", code="SF109")),
    Row("21-axes-rank-2", saved(single("Unsqueeze", [2, 3], [0], axes_dims=[1, 1])),
        finding("axes must be 1-D (got rank 2", code="SF109")),
    Row("22-axis-2^62", saved(single("Unsqueeze", [2, 3], [2**62])),
        finding("axis 4611686018427387904 out of range [-3, 2]", code="SF101")),
    Row("22-axis-int64-min", saved(single("Squeeze", [1, 3], [-2**63])),
        finding("axis -9223372036854775808 out of range [-2, 1]", code="SF101")),
    Row("22-axis-out-of-range-opset11", saved(single("Unsqueeze", [2, 3], [3], opset=11)),
        finding("axis 3 out of range [-3, 2]", code="SF101")),
    Row("23-unsqueeze-duplicate-axes", saved(single("Unsqueeze", [3], [0, -3])),
        finding("axis 0 repeated (0 and -3 both map to 0)", code="SF102")),
    Row("23-squeeze-duplicate-axes", saved(single("Squeeze", [1, 3], [0, -2])),
        warning("axis 0 repeated (0 and -2 both map to 0)", code="SF103")),
    Row("24-squeeze-non-unit-dim", saved(single("Squeeze", [2, 3, 4], [1])),
        finding("axis 1 has dim 3, not 1", code="SF104")),
    Row("25-squeeze-no-axes-symbolic", saved(single("Squeeze", ["batch", 3], None)),
        warning("no axes: the output rank depends on which dims of [batch, 3] are 1 at run time",
                code="SF106", identical=True)),
    Row("26-axes-graph-input", saved(axes_from_graph_input()), info_only("axes are computed at run time")),
    Row("26-axes-from-shape", saved(axes_from_shape_op()), info_only("axes are computed at run time")),
    Row("26-axes-external", axes_external, info_only("axes are stored as external data")),
    Row("27-attribute-axes-opset13", saved(single("Unsqueeze", [2, 3], [0], opset=13, form="attribute")),
        finding("Unsqueeze-13 takes axes as an input, not an attribute", code="SF108")),
    Row("27-input-axes-opset11", saved(single("Squeeze", [1, 3], [0], opset=11, form="input")),
        finding("Squeeze-11 takes axes as an attribute, not an input", code="SF108")),
    Row("28-negative-dim", saved(declared_input([-1, 3])),
        finding("graph input 'x' declares dim 0 as -1", code="SF114", names=("'x'",))),
    Row("28-dim-above-2^53", saved(declared_input([2**60, 3])),
        warning("graph input 'x' declares dim 0 as 1152921504606846976, above 2^53", code="SF114",
                names=("'x'",))),
    Row("29-rank-100", saved(high_rank(100)), {
        cmd: E(WARNING_EXIT, "rank 100", severity="warning") for cmd in ("infer", "lint")
    }),
    Row("29-rank-100001", saved(high_rank(100_001)),
        limit("limit max-rank exceeded (value 100001); raise with --max-rank", names=("'x'",))),
    Row("30-unsqueeze-100000-axes", saved(many_axes(100_000, 13)),
        limit("limit max-axes-elems exceeded (value 100000); raise with --max-axes-elems", names=("n0",))),
    Row("30-unsqueeze-100000-axes-attribute", saved(many_axes(100_000, 11)),
        limit("limit max-axes-elems exceeded (value 100000); raise with --max-axes-elems", names=("n0",))),
    # (linear in the inputs: a budget of benchmarks/bench_budgets.py)
    Row("30-concat-10000-inputs", saved(wide_concat(10_000)), {cmd: E(0) for cmd in ("infer", "lint", "optimize")}),
    Row("31-initializer-2^40-without-data", saved(initializer_without_data()),
        limit("initializer 'axes' declares 1099511627776 elements but holds 0 bytes", names=("SF001",))),
    Row("31-constant-2^31x2^31-without-data", saved(constant_without_data()),
        limit("declares 4611686018427387904 elements but holds 0 bytes", names=("'const'",))),
    Row("32-raw-data-size-mismatch", saved(raw_data_mismatch()),
        limit("raw_data is 5 bytes, expected 24", names=("'axes'",))),
    Row("33-value-info-contradicts", saved(contradicting_value_info()),
        finding("value_info for 'U' is declared [7, 7, 7, 7], inferred [1, 2, 3]", code="SF112")),
]


@pytest.mark.parametrize("row, cmd", params(ROWS))
def test_row(row: Row, cmd: str, tmp_path: Path) -> None:
    check_row(row, cmd, tmp_path)
