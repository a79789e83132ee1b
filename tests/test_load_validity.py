"""What onnxruntime refuses to load is a lint error (issue 20, point 8).

Every row builds a small model and asks onnxruntime for a session; the expected verdict comes
from that answer, not from the row: a model onnxruntime refuses must make ``lint`` exit 1 with the
row's code (a refusal code) at the row's node, and a model it loads must get no error. The second
table holds the places where onnx's checker or strict shape inference and onnxruntime disagree:
shapeflow follows onnxruntime (README "Semantics"), and the test checks onnx's side of each
disagreement too, so a row that stops being one fails.

The refusal table runs through the real CLI once (every file in one ``lint`` call); the other
tests call the API.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import cli_process
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper, parser

from lint_fixtures import FIXTURES, Fixture
from shapeflow import codes, signatures
from shapeflow.drivers.api import lint
from shapeflow.cli import main as cli_main
from shapeflow.rules.sf004_unknown_operator import _STILL_LOADED
from shapeflow.rules.sf005_unsupported_version import ONNXRUNTIME_DOMAINS
from shapeflow.rules.sf014_invalid_attribute_value import _STRINGS

ort = pytest.importorskip("onnxruntime")

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def ort_refusal(model: onnx.ModelProto) -> str | None:
    """onnxruntime's reason for refusing to create a session (CPU, no graph optimization), or None."""
    so = ort.SessionOptions()
    so.log_severity_level = 4
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own exception types for every refusal
        return " ".join(str(exc).split())[:300]
    return None


def onnx_rejection(model: onnx.ModelProto) -> str | None:
    """onnx's verdict: the full checker (node checks and strict shape inference), or None."""
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as exc:
        return " ".join(str(exc).split())[:300]
    return None


def text(body: str, *, inputs: str, outputs: str, opset: int = 13, inits: str = "", ir: int = 8,
         extra: str = "", functions: str = "") -> Callable[[], onnx.ModelProto]:
    def build() -> onnx.ModelProto:
        imports = f'"" : {opset}' + (f", {extra}" if extra else "")
        m = parser.parse_model(f"<ir_version: {ir}, opset_import: [{imports}]>\n"
                               f"g ({inputs}) => ({outputs})\n" + (f"<{inits}>\n" if inits else "")
                               + "{\n" + body + "\n}\n" + functions)
        for vi in m.graph.output:  # "float y" is a graph output of no declared shape here, not a scalar
            if vi.type.tensor_type.HasField("shape") and not vi.type.tensor_type.shape.dim:
                vi.type.tensor_type.ClearField("shape")
        return m
    return build


def edited(build: Callable[[], onnx.ModelProto], edit: Callable[[onnx.ModelProto], object]) -> Callable[[], onnx.ModelProto]:
    def make() -> onnx.ModelProto:
        m = build()
        edit(m)
        return m
    return make


RELU = text("[relu] t = Relu(a)\n[neg] y = Neg(t)", inputs="float[2] a", outputs="float[2] y")


def _lstm(layout: int) -> onnx.ModelProto:
    hid = 3
    w = numpy_helper.from_array(np.zeros((1, 4 * hid, 2), np.float32), "W")
    r = numpy_helper.from_array(np.zeros((1, 4 * hid, hid), np.float32), "R")
    node = helper.make_node("LSTM", ["x", "W", "R"], ["Y"], name="lstm", hidden_size=hid, layout=layout)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", F, [1, 5, 2])],
                          [helper.make_tensor_value_info("Y", F, [1, 5, 1, hid] if layout else [1, 1, 5, hid])], [w, r])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)


def _sparse(indices: list[int] | list[list[int]], dims: list[int], values: int = 2) -> Callable[[], onnx.ModelProto]:
    def build() -> onnx.ModelProto:
        vals = numpy_helper.from_array(np.arange(1, values + 1, dtype=np.float32), "w")
        idx = numpy_helper.from_array(np.array(indices, np.int64), "w_idx")
        node = helper.make_node("Add", ["a", "w"], ["y"], name="add")
        g = helper.make_graph([node], "g", [helper.make_tensor_value_info("a", F, dims)],
                              [helper.make_tensor_value_info("y", F, dims)])
        g.sparse_initializer.append(helper.make_sparse_tensor(vals, idx, dims))
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    return build


def _set_attr_type(m: onnx.ModelProto, kind: int) -> None:
    m.graph.node[0].attribute[0].type = kind


def _two_fields(m: onnx.ModelProto) -> None:
    m.graph.node[0].attribute[0].f = 1.0


def _no_type(m: onnx.ModelProto) -> None:
    m.graph.node[0].attribute.append(onnx.AttributeProto(name="alpha", f=0.5))


def _elem(where: str, dtype: int) -> Callable[[onnx.ModelProto], None]:
    def edit(m: onnx.ModelProto) -> None:
        if where == "input":
            m.graph.input[0].type.tensor_type.elem_type = dtype
        elif where == "output":
            m.graph.output[0].type.tensor_type.elem_type = dtype
        elif where == "value_info":
            m.graph.value_info.append(helper.make_tensor_value_info("t", dtype, [2]))
        elif where == "initializer":
            m.graph.initializer[0].data_type = dtype
    return edit


FUNCTION = '''
<domain: "local", opset_import: ["" : 13]>
F (x) => (r)
{{
    [body] r = {body}
}}
'''
LOOP_BODY = "b (int64 i, bool ci, float[2] xi) => (bool co, float[2] xo) { co = Identity(ci) xo = Identity(xi) }"


@dataclass(frozen=True)
class Case:
    id: str
    build: Callable[[], onnx.ModelProto]
    code: str
    where: str | None  # the node (or the tensor) the finding names; None: the model


# The 29 kinds of issue 20 point 8 first, then more found while writing these rules. Outputs are
# declared without a shape where a shape would add a shape-conflict finding (SF112) of its own.
REFUSED = [
    # types
    Case("add-int-and-float", text("[add] y = Add(a, b)", inputs="int64[2] a, float[2] b", outputs="float[2] y"),
         "SF013", "add"),
    Case("relu-on-strings", text("[relu] y = Relu(a)", inputs="string[2] a", outputs="string[2] y"), "SF013", "relu"),
    Case("loop-float-trip-count", text(f"[loop] y = Loop(M, c, x) <body = {LOOP_BODY}>",
                                       inputs="float M, bool c, float[2] x", outputs="float[2] y"), "SF013", "loop"),
    Case("output-dtype-wrong", text("[relu] y = Relu(a)", inputs="float[2] a", outputs="int64[2] y"), "SF013", "relu"),
    Case("value-info-dtype-wrong", edited(RELU, _elem("value_info", I64)), "SF013", "relu"),
    Case("elem-type-0-input", edited(RELU, _elem("input", 0)), "SF016", "a"),
    # attributes
    Case("concat-without-axis", text("[cat] y = Concat(a, b)", inputs="float[2] a, float[2] b", outputs="float[4] y"),
         "SF011", "cat"),
    Case("concat-float-axis", text("[cat] y = Concat<axis=0.0>(a, b)", inputs="float[2] a, float[2] b",
                                   outputs="float[4] y"), "SF011", "cat"),
    Case("attribute-type-undefined", edited(text("[cat] y = Concat<axis=0>(a, b)", inputs="float[2] a, float[2] b",
                                                 outputs="float[4] y"), lambda m: _set_attr_type(m, 0)), "SF011", "cat"),
    Case("relu-unknown-attribute", text("[relu] y = Relu<foo=1>(a)", inputs="float[2] a", outputs="float[2] y"),
         "SF011", "relu"),
    Case("reducemean-axes-attribute-18", text("[rm] y = ReduceMean<axes=[1]>(a)", inputs="float[2,3] a",
                                              outputs="float y", opset=18), "SF011", "rm"),
    Case("shape-start-13", text("[shp] y = Shape<start=1>(a)", inputs="float[2,3] a", outputs="int64 y"),
         "SF011", "shp"),
    Case("cast-to-999", text("[cast] y = Cast<to=999>(a)", inputs="float[2] a", outputs="float[2] y"), "SF014", "cast"),
    Case("resize-invalid-mode", text('[rs] y = Resize<mode="bogus">(a, "", sc)', inputs="float[1,1,2,2] a",
                                     outputs="float[1,1,4,4] y", inits="float[4] sc = {1.0, 1.0, 2.0, 2.0}"),
         "SF014", "rs"),
    Case("pad-invalid-mode", text('[pad] y = Pad<mode="bogus">(a, p)', inputs="float[2,2] a", outputs="float[4,4] y",
                                  inits="int64[4] p = {1, 1, 1, 1}"), "SF014", "pad"),
    Case("lstm-layout-1", lambda: _lstm(1), "SF014", "lstm"),
    # input counts
    Case("add-three-inputs", text("[add] y = Add(a, b, b)", inputs="float[2] a, float[2] b", outputs="float[2] y"),
         "SF012", "add"),
    Case("reshape-one-input", text("[rs] y = Reshape(a)", inputs="float[2] a", outputs="float[2] y"), "SF012", "rs"),
    # If
    Case("if-branch-output-counts", text(
        "[if] y = If(c) <then_branch = t () => (float[2] o) { o = Identity(a) }, "
        "else_branch = e () => (float[2] o, float[2] p) { o = Identity(a) p = Identity(a) }>",
        inputs="bool c, float[2] a", outputs="float[2] y"), "SF116", "if"),
    Case("if-without-else", text("[if] y = If(c) <then_branch = t () => (float[2] o) { o = Identity(a) }>",
                                 inputs="bool c, float[2] a", outputs="float[2] y"), "SF011", "if"),
    # static shape errors
    Case("gather-axis-out-of-range", text("[ga] y = Gather<axis=5>(a, i)", inputs="float[2,3] a", outputs="float y",
                                          inits="int64[1] i = {0}"), "SF015", "ga"),
    Case("transpose-invalid-perm", text("[tr] y = Transpose<perm=[0,0]>(a)", inputs="float[2,3] a",
                                        outputs="float[3,2] y"), "SF015", "tr"),
    Case("reshape-allowzero-0-and-minus-1", text("[rs] y = Reshape<allowzero=1>(a, s)", inputs="float[2,3] a",
                                                 outputs="float y", opset=14, inits="int64[2] s = {0, -1}"),
         "SF015", "rs"),
    Case("concat-static-mismatch", text("[cat] y = Concat<axis=0>(a, b)", inputs="float[2,3] a, float[2,4] b",
                                        outputs="float[4,3] y"), "SF015", "cat"),
    Case("matmul-static-mismatch", text("[mm] y = MatMul(a, b)", inputs="float[2,3] a, float[4,5] b",
                                        outputs="float[2,5] y"), "SF015", "mm"),
    Case("split18-split-and-num-outputs", text("[sp] y, z = Split<num_outputs=2>(a, s)", inputs="float[4] a",
                                               outputs="float[2] y, float[2] z", opset=18,
                                               inits="int64[2] s = {2, 2}"), "SF015", "sp"),
    # the file
    Case("ir-version-99", edited(RELU, lambda m: setattr(m, "ir_version", 99)), "SF005", None),
    Case("sparse-index-out-of-range", _sparse([7, 100], [4]), "SF017", "w"),
    Case("duplicate-function", text("[call] y = local.F(a)", inputs="float[2] a", outputs="float[2] y",
                                    extra='"local" : 1', functions=FUNCTION.format(body="Relu(x)")
                                    + FUNCTION.format(body="Neg(x)")), "SF018", None),
    # -- more of the same kinds --
    Case("attribute-two-values", edited(text("[cat] y = Concat<axis=0>(a, b)", inputs="float[2] a, float[2] b",
                                             outputs="float[4] y"), _two_fields), "SF011", "cat"),
    Case("attribute-without-type", edited(text("[lr] y = LeakyRelu(a)", inputs="float[2] a", outputs="float[2] y"),
                                          _no_type), "SF011", "lr"),
    Case("relu-two-outputs", text("[relu] y, z = Relu(a)", inputs="float[2] a", outputs="float[2] y, float[2] z"),
         "SF012", "relu"),
    Case("required-input-empty", text('[add] y = Add("", b)', inputs="float[2] a, float[2] b", outputs="float[2] y"),
         "SF012", "add"),
    Case("add-broadcast-mismatch", text("[add] y = Add(a, b)", inputs="float[2] a, float[3] b", outputs="float y"),
         "SF015", "add"),
    Case("reshape-two-minus-1", text("[rs] y = Reshape(a, s)", inputs="float[2,3] a", outputs="float y",
                                     inits="int64[2] s = {-1, -1}"), "SF015", "rs"),
    Case("gemm-inner-mismatch", text("[gm] y = Gemm(a, b)", inputs="float[2,3] a, float[4,5] b", outputs="float y"),
         "SF015", "gm"),
    Case("slice-axis-out-of-range", text("[sl] y = Slice(a, s, e, ax)", inputs="float[2,3] a", outputs="float y",
                                         inits="int64[1] s = {0}, int64[1] e = {1}, int64[1] ax = {5}"),
         "SF015", "sl"),
    Case("expand-incompatible", text("[ex] y = Expand(a, s)", inputs="float[2,3] a", outputs="float y",
                                     inits="int64[2] s = {4, 3}"), "SF015", "ex"),
    Case("tile-repeats-length", text("[tl] y = Tile(a, r)", inputs="float[2,3] a", outputs="float y",
                                     inits="int64[1] r = {2}"), "SF015", "tl"),
    Case("split-sizes-sum", text("[sp] y, z = Split(a, s)", inputs="float[4] a", outputs="float y, float z",
                                 inits="int64[2] s = {1, 2}"), "SF015", "sp"),
    Case("split18-neither", text("[sp] y, z = Split(a)", inputs="float[4] a", outputs="float y, float z", opset=18),
         "SF015", "sp"),
    Case("concat-rank-mismatch", text("[cat] y = Concat<axis=0>(a, b)", inputs="float[2,3] a, float[2] b",
                                      outputs="float y"), "SF015", "cat"),
    Case("concat-scalar-and-vector", text("[cat] y = Concat<axis=0>(a, b)", inputs="int64 a, int64[2] b",
                                          outputs="int64 y"), "SF015", "cat"),
    Case("conv-auto-pad-lowercase", text('[cv] y = Conv<auto_pad="same_upper">(a, w)', inputs="float[1,1,5,5] a",
                                         outputs="float[1,1,5,5] y", inits="float[1,1,1,1] w = {1.0}"), "SF014", "cv"),
    Case("depth-to-space-mode", text('[d] y = DepthToSpace<blocksize=2, mode="dcr">(a)', inputs="float[1,4,2,2] a",
                                     outputs="float[1,1,4,4] y"), "SF014", "d"),
    Case("upsample-deprecated", text("[up] y = Upsample(a, sc)", inputs="float[1,1,2,2] a", outputs="float y",
                                     opset=10, inits="float[4] sc = {1.0, 1.0, 2.0, 2.0}"), "SF004", "up"),
    Case("elem-type-0-output", edited(RELU, _elem("output", 0)), "SF016", "y"),
    Case("elem-type-0-value-info", edited(RELU, _elem("value_info", 0)), "SF016", "t"),
    Case("elem-type-999-input", edited(RELU, _elem("input", 999)), "SF016", "a"),
    Case("initializer-dtype-0", edited(text("[add] y = Add(a, w)", inputs="float[2] a", outputs="float[2] y",
                                            inits="float[2] w = {1.0, 2.0}"), _elem("initializer", 0)), "SF016", "w"),
    Case("input-without-type", edited(RELU, lambda m: m.graph.input[0].ClearField("type")), "SF016", "a"),
    Case("loop-body-input-elem-type-0", edited(
        text(f"[loop] y = Loop(M, c, x) <body = {LOOP_BODY}>", inputs="int64 M, bool c, float[2] x",
             outputs="float[2] y"),
        lambda m: setattr(m.graph.node[0].attribute[0].g.input[2].type.tensor_type, "elem_type", 0)), "SF016", "xi"),
    Case("branch-output-elem-type-0", edited(
        text("[if] y = If(c) <then_branch = t () => (float[2] o) { o = Identity(a) }, "
             "else_branch = e () => (float[2] o) { o = Identity(a) }>", inputs="bool c, float[2] a",
             outputs="float[2] y"),
        lambda m: setattr(m.graph.node[0].attribute[0].g.output[0].type.tensor_type, "elem_type", 0)), "SF016", "o"),
    Case("sparse-count-mismatch", _sparse([0, 3], [4], values=3), "SF017", "w"),
    Case("sparse-negative-index", _sparse([-1, 2], [4]), "SF017", "w"),
    Case("sparse-coordinate-out-of-range", _sparse([[0, 1], [1, 5]], [2, 2]), "SF017", "w"),
    Case("ai-onnx-ml-opset-newer", text("[relu] y = Relu(a)", inputs="float[2] a", outputs="float[2] y",
                                        extra='"ai.onnx.ml" : 99'), "SF005", None),
    Case("function-body-type-at-call", text("[call] y = local.F(a)", inputs="int64[2] a", outputs="int64[2] y",
                                            extra='"local" : 1', functions=FUNCTION.format(body="Relu(x)")),
         "SF013", "body"),
    Case("function-body-unknown-attribute", text("[call] y = local.F(a)", inputs="float[2] a", outputs="float[2] y",
                                                 extra='"local" : 1', functions=FUNCTION.format(body="Relu<foo=1>(x)")),
         "SF011", "body"),
    Case("uncalled-function-input-count", text("[relu] y = Relu(a)", inputs="float[2] a", outputs="float[2] y",
                                               extra='"local" : 1', functions=FUNCTION.format(body="Add(x, x, x)")),
         "SF012", "body"),
]

# onnx's checker or strict shape inference rejects these; onnxruntime loads them: no lint error.
ONNX_ONLY = [
    Case("sparse-initializer-feeds-add", _sparse([0, 3], [4]), "", None),  # strict inference: sparse_tensor type
    Case("sparse-indices-unsorted", _sparse([3, 0], [4]), "", None),
    Case("sparse-indices-repeated", _sparse([1, 1], [4]), "", None),
    Case("cast-to-undefined", text("[cast] y = Cast<to=0>(a)", inputs="float[2] a", outputs="float[2] y"), "", None),
    Case("graph-output-without-type", edited(RELU, lambda m: m.graph.output[0].ClearField("type")), "", None),
    Case("graph-output-without-shape", text("[relu] y = Relu(a)", inputs="float[2] a", outputs="float y"), "", None),
    Case("uncalled-function-unknown-attribute", text(
        "[relu] y = Relu(a)", inputs="float[2] a", outputs="float[2] y", extra='"local" : 1',
        functions=FUNCTION.format(body="Relu<foo=1>(x)")), "", None),
    Case("group-normalization-18", text("[gn] y = GroupNormalization<num_groups=2>(x, s, b)",
                                        inputs="float[1,2,3] x, float[2] s, float[2] b", outputs="float[1,2,3] y",
                                        opset=18), "", None),
    Case("transpose-short-perm", text("[tr] y = Transpose<perm=[0]>(a)", inputs="float[2,3] a", outputs="float[3,2] y"),
         "", None),
]


def _by_file(report: dict) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for d in report["diagnostics"]:
        found.setdefault(Path(d["file"]).name, []).append(d)
    return found


@pytest.fixture(scope="module")
def refused_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str | None], dict[str, list[dict]], int]:
    """Every REFUSED model written, asked of onnxruntime, and linted in one CLI call."""
    folder = tmp_path_factory.mktemp("refused")
    refusals: dict[str, str | None] = {}
    files = []
    for case in REFUSED:
        model = case.build()
        refusals[case.id] = ort_refusal(model)
        path = folder / f"{case.id}.onnx"
        path.write_bytes(model.SerializeToString())
        files.append(str(path))
    r = cli_process.shapeflow("lint", "--isolated", "--no-cache", "--format", "json", *files,
                              timeout=600)
    assert r.returncode in (1, 2), r.stderr
    return refusals, _by_file(json.loads(r.stdout)), r.returncode


@pytest.mark.parametrize("case", REFUSED, ids=[c.id for c in REFUSED])
def test_refused_model_is_a_refusal_error(case: Case, refused_run: tuple) -> None:
    refusals, found, _ = refused_run
    assert refusals[case.id] is not None, f"onnxruntime loads {case.id}: the row is wrong"
    errors = [d for d in found.get(f"{case.id}.onnx", []) if d["severity"] == "error"]
    assert any(d["code"] == case.code for d in errors), (
        f"onnxruntime refuses it ({refusals[case.id]}); lint reports {[(d['code'], d['message']) for d in errors]}")
    assert codes.lookup(case.code).refusal
    if case.where is not None:
        # (JSON names a node; a tensor is named in the message)
        assert any(d["code"] == case.code and (d["node"] == case.where or f"'{case.where}'" in d["message"])
                   for d in errors), errors


def test_every_refused_file_fails_the_run(refused_run: tuple) -> None:
    refusals, found, exit_code = refused_run
    assert exit_code == 1  # not 2: every one of these is read and judged, none rejected
    clean = [case.id for case in REFUSED if not any(d["severity"] == "error" for d in found.get(f"{case.id}.onnx", []))]
    assert clean == []


@pytest.mark.parametrize("case", ONNX_ONLY, ids=[c.id for c in ONNX_ONLY])
def test_onnx_rejects_onnxruntime_loads_no_error(case: Case, tmp_path: Path) -> None:
    model = case.build()
    assert ort_refusal(model) is None
    try:
        rejected = onnx_rejection(model) or _strict_inference_rejection(model)
    except Exception as exc:  # pragma: no cover - a crash is a rejection as well
        rejected = str(exc)
    assert rejected, f"onnx accepts {case.id} too: not a disagreement, move it"
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    (result,) = lint([str(path)])
    assert result.exit_code == 0, [(d.code, d.message) for d in result.diagnostics]


def _strict_inference_rejection(model: onnx.ModelProto) -> str | None:
    try:
        onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    except Exception as exc:
        return str(exc)
    return None


ONNXRUNTIME_ONLY = ["resize-invalid-mode", "pad-invalid-mode", "lstm-layout-1", "elem-type-0-output",
                    "elem-type-0-value-info", "ai-onnx-ml-opset-newer", "conv-auto-pad-lowercase",
                    "depth-to-space-mode", "loop-body-input-elem-type-0"]


@pytest.mark.parametrize("case_id", ONNXRUNTIME_ONLY)
def test_onnx_accepts_what_onnxruntime_refuses(case_id: str) -> None:
    """The other direction: onnx's full checker passes these, onnxruntime refuses them, and the
    refusal table above holds them as errors."""
    case = next(c for c in REFUSED if c.id == case_id)
    model = case.build()
    assert onnx_rejection(model) is None
    assert ort_refusal(model) is not None


# -- the tables behind SF014, SF004 and SF005, each entry asked of onnxruntime ----------------------

def _string_case(op: str, attr: str, value: str, since: int) -> onnx.ModelProto:
    sc = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "sc")
    inits: list[onnx.TensorProto] = []
    shape = [1, 1, 2, 2]
    extra: dict[str, object] = {}
    if op == "Resize":
        opset = max(since, 19)
        inputs, inits = ["a", "", "sc"], [sc]
        if attr == "keep_aspect_ratio_policy":  # a policy goes with sizes
            inputs = ["a", "", "", "sz"]
            inits = [numpy_helper.from_array(np.array([1, 1, 4, 4], np.int64), "sz")]
    elif op == "Upsample":
        opset, inputs, inits = 9, ["a", "sc"], [sc]
    elif op == "Pad":
        opset, inputs = 19, ["a", "p"]
        inits = [numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "p")]
    elif op == "DepthToSpace":
        opset, inputs, shape, extra = 13, ["a"], [1, 4, 2, 2], {"blocksize": 2}
    elif op == "GridSample":
        opset = 20 if since >= 20 else 16
        inputs = ["a", "grid"]
    elif op in ("LSTM", "GRU", "RNN"):
        gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
        dirs = 2 if value == "bidirectional" else 1
        inits = [numpy_helper.from_array(np.zeros((dirs, gates * 2, 2), np.float32), "W"),
                 numpy_helper.from_array(np.zeros((dirs, gates * 2, 2), np.float32), "R")]
        opset, inputs, shape, extra = 14, ["a", "W", "R"], [1, 1, 2], {"hidden_size": 2}
    else:  # convolutions and pooling
        opset, inputs = 13, ["a"]
        if "Conv" in op:
            inputs = ["a", "w"]
            if op == "ConvInteger":
                inits = [numpy_helper.from_array(np.ones((1, 1, 1, 1), np.uint8), "w")]
            elif op == "QLinearConv":
                return _qlinearconv(value)
            else:
                inits = [numpy_helper.from_array(np.ones((1, 1, 1, 1), np.float32), "w")]
        else:
            extra = {"kernel_shape": [1, 1]}
    dtype = TensorProto.UINT8 if op == "ConvInteger" else F
    node = helper.make_node(op, inputs, ["y"], name="n", **extra, **{attr: value})
    ins = [helper.make_tensor_value_info("a", dtype, shape)]
    if op == "GridSample":
        ins.append(helper.make_tensor_value_info("grid", F, [1, 2, 2, 2]))
    g = helper.make_graph([node], "g", ins, [helper.make_tensor_value_info("y", None if False else (
        TensorProto.INT32 if op == "ConvInteger" else F), None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)


def _qlinearconv(auto_pad: str) -> onnx.ModelProto:
    return parser.parse_model(f"""
<ir_version: 8, opset_import: ["" : 13]>
g (uint8[1,1,3,3] x) => (uint8 y)
<float xs = {{1.0}}, uint8 xz = {{0}}, uint8[1,1,1,1] w = {{1}}, float ws = {{1.0}}, uint8 wz = {{0}},
 float ys = {{1.0}}, uint8 yz = {{0}}>
{{
    [n] y = QLinearConv<auto_pad="{auto_pad}">(x, xs, xz, w, ws, wz, ys, yz)
}}
""")


STRING_ROWS = [(op, attr, since, value) for (op, attr), versions in sorted(_STRINGS.items())
               for since, values in versions for value in sorted(values | {"bogus"})]


@pytest.mark.parametrize("op, attr, since, value", STRING_ROWS,
                         ids=[f"{op}-{attr}-{since}-{value or 'empty'}" for op, attr, since, value in STRING_ROWS])
def test_attribute_value_table_is_onnxruntime_s(op: str, attr: str, since: int, value: str, tmp_path: Path) -> None:
    """Every value SF014 accepts loads in onnxruntime; a value it does not is refused."""
    model = _string_case(op, attr, value, since)
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    (result,) = lint([str(path)])
    flagged = any(d.code == "SF014" for d in result.diagnostics)
    refusal = ort_refusal(model)
    if value == "bogus":
        assert refusal is not None and flagged
    else:
        assert refusal is None, refusal
        assert not flagged


def _deprecated_case(key: tuple[str, str, int]) -> onnx.ModelProto:
    domain, op, since = key
    cases = {
        "Upsample": ("[n] y = Upsample(a, sc)", "float[1,1,2,2] a", "float[4] sc = {1.0, 1.0, 2.0, 2.0}"),
        "Scatter": ("[n] y = Scatter(a, i, u)", "float[3] a, int64[1] i, float[1] u", ""),
        "GroupNormalization": ("[n] y = GroupNormalization<num_groups=2>(a, s, b)",
                               "float[1,2,3] a, float[2] s, float[2] b", ""),
    }
    tree = ('nodes_featureids=[0], nodes_modes=["LEAF"], nodes_nodeids=[0], nodes_treeids=[0], '
            'nodes_falsenodeids=[0], nodes_truenodeids=[0], nodes_values=[0.0]')
    if op == "TreeEnsembleRegressor":
        body = (f"[n] y = ai.onnx.ml.TreeEnsembleRegressor<n_targets=1, {tree}, target_ids=[0], target_nodeids=[0], "
                "target_treeids=[0], target_weights=[1.0]>(a)")
        return text(body, inputs="float[1,2] a", outputs="float y", extra=f'"ai.onnx.ml" : {since}')()
    if op == "TreeEnsembleClassifier":
        body = (f"[n] y, p = ai.onnx.ml.TreeEnsembleClassifier<classlabels_int64s=[0], {tree}, class_ids=[0], "
                "class_nodeids=[0], class_treeids=[0], class_weights=[1.0]>(a)")
        return text(body, inputs="float[1,2] a", outputs="int64 y, float p", extra=f'"ai.onnx.ml" : {since}')()
    body, inputs, inits = cases[op]
    return text(body, inputs=inputs, outputs="float y", opset=since, inits=inits)()


@pytest.mark.parametrize("key", sorted(signatures.deprecated()), ids=lambda k: f"{k[1]}-{k[2]}")
def test_deprecated_operators_as_onnxruntime_loads_them(key: tuple[str, str, int], tmp_path: Path) -> None:
    model = _deprecated_case(key)
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    (result,) = lint([str(path)])
    flagged = any(d.code == "SF004" for d in result.diagnostics)
    refused = ort_refusal(model) is not None
    assert flagged == refused == (key not in _STILL_LOADED)


DOMAINS = sorted({**signatures.domain_max(), **ONNXRUNTIME_DOMAINS}.items())


@pytest.mark.parametrize("domain, newest", DOMAINS, ids=[d or "ai.onnx" for d, _ in DOMAINS])
def test_newest_opset_loads_the_next_is_refused(domain: str, newest: int, tmp_path: Path) -> None:
    for version, refused in ((newest, False), (newest + 1, True)):
        if domain:
            model = text("[relu] y = Relu(a)", inputs="float[2] a", outputs="float[2] y",
                         extra=f'"{domain}" : {version}', ir=10)()
        else:
            model = text("[relu] y = Relu(a)", inputs="float[2] a", outputs="float[2] y", opset=version, ir=10)()
        path = tmp_path / f"m{version}.onnx"
        path.write_bytes(model.SerializeToString())
        (result,) = lint([str(path)])
        assert (ort_refusal(model) is not None) == refused, (domain, version)
        assert any(d.code == "SF005" and d.severity.value == "error" for d in result.diagnostics) == refused


def test_newest_ir_version_loads_the_next_is_refused(tmp_path: Path) -> None:
    for version, refused in ((onnx.IR_VERSION, False), (onnx.IR_VERSION + 1, True)):
        model = edited(RELU, lambda m: setattr(m, "ir_version", version))()
        path = tmp_path / f"m{version}.onnx"
        path.write_bytes(model.SerializeToString())
        (result,) = lint([str(path)])
        assert (ort_refusal(model) is not None) == refused
        assert (result.exit_code == 1) == refused


# -- ai.onnx.ml-only models (issue 22, point 6) ------------------------------------------------------

ML_ONLY = text('[n] y = ai.onnx.ml.Normalizer<norm="L2">(a)', inputs="float[1,2] a", outputs="float[1,2] y",
               extra='"ai.onnx.ml" : 3')


def _ml_only() -> onnx.ModelProto:
    m = ML_ONLY()
    del m.opset_import[0]  # no ai.onnx import at all
    return m


def test_ai_onnx_ml_only_model_is_readable(tmp_path: Path) -> None:
    model = _ml_only()
    assert [o.domain for o in model.opset_import] == ["ai.onnx.ml"]
    assert ort_refusal(model) is None
    path = tmp_path / "ml.onnx"
    path.write_bytes(model.SerializeToString())
    for cmd in (["lint", "--isolated", "--no-cache"], ["infer"], ["optimize", "-o", str(tmp_path / "out.onnx")]):
        r = cli_process.shapeflow(*cmd, str(path), timeout=120)
        assert r.returncode == 0, (cmd, r.stdout, r.stderr)
        assert "SF001" not in r.stdout + r.stderr


def test_ai_onnx_ml_only_model_is_still_judged(tmp_path: Path) -> None:
    """Readable is not unchecked: an ml operator with an attribute it does not have is an error."""
    model = _ml_only()
    model.graph.node[0].attribute.append(helper.make_attribute("foo", 1))
    assert ort_refusal(model) is not None
    path = tmp_path / "ml.onnx"
    path.write_bytes(model.SerializeToString())
    (result,) = lint([str(path)])
    assert [d.code for d in result.diagnostics if d.severity.value == "error"] == ["SF011"]


# -- infer reports the findings, optimize refuses the model ------------------------------------------

@pytest.mark.parametrize("case_id", ["concat-without-axis", "add-int-and-float", "matmul-static-mismatch"])
def test_infer_reports_and_optimize_refuses(case_id: str, tmp_path: Path) -> None:
    case = next(c for c in REFUSED if c.id == case_id)
    path = tmp_path / "m.onnx"
    path.write_bytes(case.build().SerializeToString())
    out = tmp_path / "out.onnx"
    infer = cli_process.shapeflow("infer", str(path), timeout=120)
    assert infer.returncode == 1 and case.code in infer.stdout + infer.stderr
    opt = cli_process.shapeflow("optimize", str(path), "-o", str(out), timeout=120)
    assert opt.returncode == 1 and "refusing to optimize" in opt.stdout + opt.stderr
    assert not out.exists()


def test_every_load_time_code_is_a_refusal() -> None:
    for code in ("SF005", "SF011", "SF012", "SF013", "SF014", "SF015", "SF016", "SF017", "SF018"):
        entry = codes.lookup(code)
        assert entry.refusal and entry.severity.value == "error", code


# -- nothing a pull request writes hides a load-time refusal (issue 20, points 2 and 8) ---------------

LOAD_TIME = [f for f in FIXTURES if f.code in ("SF005", "SF011", "SF012", "SF013", "SF014", "SF015", "SF016",
                                                "SF017", "SF018")]


def test_every_load_time_code_has_a_fixture() -> None:
    assert sorted(f.code for f in LOAD_TIME) == ["SF005", "SF011", "SF012", "SF013", "SF014", "SF015", "SF016",
                                                 "SF017", "SF018"]


@pytest.mark.parametrize("fx", LOAD_TIME, ids=[f.code for f in LOAD_TIME])
def test_markers_settings_and_baseline_cannot_hide_a_load_time_refusal(
        fx: Fixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The fixture's model marked to ignore its code every way a marker can say it, in a repository
    whose config ignores, lowers and exit-zeroes it and whose baseline records it: still exit 1.
    The command line may hide it."""
    assert ort_refusal(fx.model()) is not None
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    monkeypatch.chdir(repo)
    name = codes.lookup(fx.code).name

    def lint_cli(*args: str) -> tuple[int, str]:
        with pytest.raises(SystemExit) as exc:
            cli_main(["lint", "--show-info", *args])
        return int(exc.value.code or 0), capsys.readouterr().out

    onnx.save(fx.model(), "m.onnx")
    code, out = lint_cli("--write-baseline", "baseline.json", "m.onnx")
    assert code == 0 and fx.code in Path("baseline.json").read_text(), out
    m = fx.model()
    marker = f"SF,SF0,{fx.code[:4]},{fx.code},{name}"
    entry = m.metadata_props.add()
    entry.key, entry.value = "shapeflow.ignore", marker
    for node in m.graph.node:
        node.doc_string = f"shapeflow: ignore[{marker}]"
    onnx.save(m, "m.onnx")
    Path("shapeflow.toml").write_text(
        f'ignore = ["{fx.code}"]\nseverity = {{ {fx.code} = "info" }}\nexit-zero = true\n'
        f'per-file-ignores = {{ "*.onnx" = ["{name}"] }}\nbaseline = "baseline.json"\n')
    code, out = lint_cli("m.onnx")
    assert code == 1 and f"error {fx.code}" in out, out
    assert lint_cli("--ignore", fx.code, "m.onnx")[0] == 0
