"""Shape inference for Squeeze and Unsqueeze: the seed tables, onnx's backend node cases checked
against onnxruntime running them at every opset version, and the corner cases of SPEC.md section 1."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from helpers import analyze_model, axes_node_model, bound, json_shape, ort_session
from model_builders import paddle_squeeze_cases, unsqueeze_doc_cases

ALL_OPSETS = (1, 11, 13, 21, 23, 24, 25)


def _only_axis_node(model: onnx.ModelProto):
    a = analyze_model(model)
    assert len(a.inference.axis_nodes) == 1
    return a, a.inference.axis_nodes[0]


# -- seed tables -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name, model, expected", unsqueeze_doc_cases(), ids=lambda v: v if isinstance(v, str) else "")
def test_unsqueeze_doc_examples(name: str, model: onnx.ModelProto, expected: list[int]) -> None:
    _, node = _only_axis_node(model)
    assert json_shape(node.output_shape) == list(expected)


@pytest.mark.parametrize("name, model, expected", paddle_squeeze_cases(), ids=lambda v: v if isinstance(v, str) else "")
def test_paddle_squeeze_cases(name: str, model: onnx.ModelProto, expected: object) -> None:
    a, node = _only_axis_node(model)
    if expected == "SF104":
        assert [d.code for d in a.diagnostics if d.severity.value == "error"] == ["SF104"]
    else:
        assert json_shape(node.output_shape) == list(expected)  # type: ignore[arg-type]
        assert not [d for d in a.diagnostics if d.severity.value == "error"]


# -- onnx's backend node tests, checked against onnxruntime ----------------------------------------

def _backend_cases() -> list:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.case.node import collect_testcases

        cases = collect_testcases(None)
    return [c for c in cases if c.model.graph.node[0].op_type in ("Squeeze", "Unsqueeze")
            and len(c.model.graph.node) == 1]


BACKEND = _backend_cases()


def _at_opset(case_model: onnx.ModelProto, opset: int) -> onnx.ModelProto | None:
    """The case's node rewritten in the axes form of ``opset``."""
    m = onnx.ModelProto()
    m.CopyFrom(case_model)
    m.opset_import[0].version = opset
    node = m.graph.node[0]
    if opset >= 13:
        return m
    if len(node.input) < 2:
        return m
    axes_name = node.input[1]
    axes = None
    for t in m.graph.initializer:
        if t.name == axes_name:
            axes = onnx.numpy_helper.to_array(t).tolist()
    if axes is None:  # axes fed as a graph input: give them the value of the data set
        return None
    del node.input[1]
    node.attribute.append(helper.make_attribute("axes", axes))
    return m


def test_backend_cases_found() -> None:
    names = {c.name for c in BACKEND}
    assert {"test_squeeze", "test_squeeze_negative_axes", "test_unsqueeze_axis_0",
            "test_unsqueeze_unsorted_axes", "test_unsqueeze_negative_axes"} <= names


@pytest.mark.parametrize("opset", ALL_OPSETS)
@pytest.mark.parametrize("case", BACKEND, ids=lambda c: c.name)
def test_backend_case_matches_onnxruntime(case, opset: int) -> None:  # type: ignore[no-untyped-def]
    inputs, _ = case.data_sets[0]
    model = case.model
    # Axes that the data set feeds as a graph input become an initializer, as exporters write them.
    if len(model.graph.input) > 1:
        model = onnx.ModelProto()
        model.CopyFrom(case.model)
        axes_vi = model.graph.input[1]
        model.graph.initializer.append(onnx.numpy_helper.from_array(np.asarray(inputs[1]), axes_vi.name))
        del model.graph.input[1]
        inputs = inputs[:1]
    m = _at_opset(model, opset)
    assert m is not None
    if opset == 1 and any(a < 0 for a in m.graph.node[0].attribute[0].ints):
        pass  # onnxruntime runs negative axes at opset 1 too; shapeflow follows it (SF107 warns)
    sess = ort_session(m)
    got = sess.run(None, {m.graph.input[0].name: inputs[0]})[0]
    a, node = _only_axis_node(m)
    assert json_shape(node.output_shape) == list(got.shape)


# -- SPEC.md section 1 corners ----------------------------------------------------------------------

@pytest.mark.parametrize("opset", ALL_OPSETS)
def test_squeeze_without_axes_static(opset: int) -> None:
    _, node = _only_axis_node(axes_node_model("Squeeze", [1, 3, 1, 5], None, opset))
    assert json_shape(node.output_shape) == [3, 5]


@pytest.mark.parametrize("opset", ALL_OPSETS)
def test_squeeze_without_axes_symbolic_is_unknown_rank(opset: int) -> None:
    a, node = _only_axis_node(axes_node_model("Squeeze", ["batch", 3, 1], None, opset))
    assert node.output_shape is None  # batch may be 1: the rank is not known
    assert "SF106" in {d.code for d in a.diagnostics}


@pytest.mark.parametrize("opset", (13, 21, 25))
def test_squeeze_empty_axes_follows_onnxruntime(opset: int) -> None:
    model = axes_node_model("Squeeze", [1, 3, 1], [], opset)
    got = ort_session(model).run(None, {"x": np.zeros((1, 3, 1), np.float32)})[0]
    a, node = _only_axis_node(model)
    assert json_shape(node.output_shape) == list(got.shape) == [3]
    # ... and says that onnx's own inference disagrees
    assert "SF113" in {d.code for d in a.diagnostics}
    onnx_view = onnx.shape_inference.infer_shapes(model).graph.output[0].type.tensor_type.shape
    assert [d.dim_value for d in onnx_view.dim] == [1, 3, 1]


def test_squeeze_duplicate_axes_follows_onnxruntime() -> None:
    model = axes_node_model("Squeeze", [1, 3, 1], [0, -3], 13)
    got = ort_session(model).run(None, {"x": np.zeros((1, 3, 1), np.float32)})[0]
    a, node = _only_axis_node(model)
    assert json_shape(node.output_shape) == list(got.shape) == [3, 1]
    assert [d.code for d in a.diagnostics] == ["SF103"]


def test_opset1_negative_axes_follow_onnxruntime() -> None:
    model = axes_node_model("Unsqueeze", [3], [-1], 1)
    got = ort_session(model).run(None, {"x": np.zeros((3,), np.float32)})[0]
    a, node = _only_axis_node(model)
    assert json_shape(node.output_shape) == list(got.shape) == [3, 1]
    assert [d.code for d in a.diagnostics] == ["SF107"]


def test_symbolic_dims_flow_through() -> None:
    _, node = _only_axis_node(axes_node_model("Unsqueeze", ["batch", "seq"], [-1, 0], 13))
    assert json_shape(node.output_shape) == [1, "batch", "seq", 1]


def test_dim_binding_substitutes_everywhere() -> None:
    a = analyze_model(axes_node_model("Unsqueeze", ["batch", "seq"], [1], 13), dims={"batch": 2})
    assert json_shape(a.inference.axis_nodes[0].output_shape) == [2, 1, "seq"]


def _runtime_axes_model(op: str, axes_len: int | None) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 1, 4])
    ax = helper.make_tensor_value_info("axes", TensorProto.INT64, [axes_len] if axes_len is not None else None)
    node = helper.make_node(op, ["x", "axes"], ["y"], name="n0")
    g = helper.make_graph([node], "g", [x, ax], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def test_runtime_axes_unsqueeze_keeps_rank() -> None:
    a, node = _only_axis_node(_runtime_axes_model("Unsqueeze", 2))
    assert node.output_shape == (None,) * 5
    assert [d.code for d in a.diagnostics] == ["SF110"]


def test_runtime_axes_squeeze_one_axis_keeps_rank() -> None:
    _, node = _only_axis_node(_runtime_axes_model("Squeeze", 1))
    assert node.output_shape == (None, None)


def test_runtime_axes_squeeze_several_axes_is_unknown_rank() -> None:
    # onnxruntime tolerates repeated Squeeze axes, so two runtime axes may remove one dim or two
    _, node = _only_axis_node(_runtime_axes_model("Squeeze", 2))
    assert node.output_shape is None


def test_axes_from_constant_node_and_computed() -> None:
    model = onnx.parser.parse_model("""
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[batch, seq] x) => (float[batch, 1, seq] y, float[1, batch, seq] z) {
        c = Constant <value = int64[1] {1}> ()
        y = Unsqueeze (x, c)
        s = Shape (x)
        zero = Constant <value = int64[1] {0}> ()
        one = Constant <value = int64[1] {1}> ()
        k = Slice (s, zero, one)
        ax = Sub (k, k)
        z = Unsqueeze (x, ax)
    }
    """)
    a = analyze_model(model)
    nodes = {n.output: n for n in a.inference.axis_nodes}
    assert nodes["y"].axes.source == "constant"
    assert json_shape(nodes["y"].output_shape) == ["batch", 1, "seq"]
    assert nodes["z"].axes.source == "computed"  # batch - batch == 0
    assert json_shape(nodes["z"].output_shape) == [1, "batch", "seq"]


def test_axes_form_mismatch_is_reported() -> None:
    a, _ = _only_axis_node(axes_node_model("Unsqueeze", [3], [0], 13, form="attribute"))
    assert [d.code for d in a.diagnostics] == ["SF108"]
    a, _ = _only_axis_node(axes_node_model("Unsqueeze", [3], [0], 11, form="input"))
    assert [d.code for d in a.diagnostics] == ["SF108"]


def test_axes_wrong_dtype_and_scalar() -> None:
    model = axes_node_model("Unsqueeze", [3], [0], 13)
    model.graph.initializer[0].CopyFrom(helper.make_tensor("axes", TensorProto.INT32, [1], [0]))
    a, _ = _only_axis_node(model)
    assert [(d.code, d.severity.value) for d in a.diagnostics] == [("SF109", "error")]
    model.graph.initializer[0].CopyFrom(helper.make_tensor("axes", TensorProto.INT64, [], [0]))
    a, node = _only_axis_node(model)
    assert [(d.code, d.severity.value) for d in a.diagnostics] == [("SF109", "warning")]
    assert json_shape(node.output_shape) == [1, 3]


def test_squeeze_inside_if_branch_sees_outer_tensor() -> None:
    model = onnx.parser.parse_model("""
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[batch, 1, 4] x, bool c) => (float[batch, 4] y) {
        ax = Constant <value = int64[1] {1}> ()
        y = If (c) <
            then_branch = t () => (float[batch, 4] a) { a = Squeeze (x, ax) },
            else_branch = e () => (float[batch, 4] b) { b = Squeeze (x, ax) }
        >
    }
    """)
    a = analyze_model(model)
    assert [n.graph for n in a.inference.axis_nodes] == ["main/#1.then_branch", "main/#1.else_branch"]
    assert all(json_shape(n.output_shape) == ["batch", 4] for n in a.inference.axis_nodes)
    assert json_shape(a.inference.shape_of("y")) == ["batch", 4]


# -- attributes that are not plain values ------------------------------------------------------------

def test_function_attribute_references_are_unknown_not_empty() -> None:
    """``axes = @ax`` and ``value_ints = @v`` in a function body hold the caller's values: an empty
    ``ints`` field must not be read as "no axes" (which would infer the input's shape unchanged)
    nor as an empty constant."""
    model = onnx.parser.parse_model("""
<ir_version: 8, opset_import: ["" : 11, "local" : 1]>
g (float[2, 3] x) => (float[?] y, int64[?] k)
{
    y, k = local.F <ax = [0]> (x)
}
<domain: "local", opset_import: ["" : 11]>
F <ax> (a) => (b, c)
{
    b = Unsqueeze <axes: ints = @ax> (a)
    c = Constant <value_ints: ints = @ax> ()
}
""")
    a = analyze_model(model)
    fn = next(s for s in a.graph.scopes if s.kind == "function")
    table = a.inference.tensors[fn.id]
    assert table["b"] is None or table["b"].shape is None
    assert table["c"] is None or table["c"].shape is None
    node = next(n for n in a.inference.axis_nodes if n.op_type == "Unsqueeze")
    assert node.axes.values is None
    assert not [d for d in a.diagnostics if d.code == "SF117"]


@pytest.mark.parametrize("attr", [helper.make_attribute("axes", 0), helper.make_attribute("axes", [0.0])],
                         ids=["int", "floats"])
def test_mistyped_axes_attribute_is_unknown_and_flagged(attr: onnx.AttributeProto) -> None:
    """onnxruntime refuses an ``axes`` attribute that is not ``ints``; its ``ints`` field reads as
    empty, which must not be taken for an empty axes list."""
    node = helper.make_node("Unsqueeze", ["x"], ["y"], name="u")
    node.attribute.append(attr)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    with pytest.raises(Exception, match="Mismatched attribute type"):
        ort_session(model)
    a, n = _only_axis_node(model)
    assert n.axes.values is None and n.output_shape is None
    assert [(d.code, d.location.node) for d in a.diagnostics if d.severity.value == "error"] == [("SF117", "u")]


# -- model-local functions: inferred at each call site ------------------------------------------------

_FUNCTION_MODEL = """
<ir_version: 9, opset_import: ["" : 13, "local" : 1]>
g (float[batch, 3] x) => (float[1, batch, 3] y0, float[batch, 3, 1] y1, float[batch, 1, 3] y2,
                          float[1, batch, 3] y3, float[1, batch, 3, 1] y4)
{
    k0 = Constant <value = int64[1] {0}> ()
    k2 = Constant <value = int64[1] {2}> ()
    y0 = local.Lift <ax = [0]> (x)
    y1 = local.Lift <ax = [-1]> (x)
    y2 = local.Lift (x)
    y3 = local.ByInput (x, k0)
    y4 = local.Outer (x, k2)
}
<domain: "local", opset_import: ["" : 13]>
Lift <ax: ints = [1]> (a) => (b)
{
    axes = Constant <value_ints: ints = @ax> ()
    u = Unsqueeze (a, axes)
    b = Relu (u)
}
<domain: "local", opset_import: ["" : 13]>
ByInput (a, k) => (b)
{
    b = Unsqueeze (a, k)
}
<domain: "local", opset_import: ["" : 13, "local" : 1]>
Outer (a, k) => (b)
{
    t = local.ByInput (a, k)
    one = Constant <value = int64[1] {0}> ()
    b = local.ByInput (t, one)
}
"""


def test_function_calls_are_inferred_per_call_site() -> None:
    """Each call's outputs follow from its own inputs and attribute values (defaults included,
    nested calls too), and match what onnxruntime computes for two batch sizes."""
    model = onnx.parser.parse_model(_FUNCTION_MODEL)
    onnx.checker.check_model(model)
    a = analyze_model(model)
    outputs = [f"y{i}" for i in range(5)]
    inferred = {name: a.inference.shape_of(name) for name in outputs}
    assert all(s is not None for s in inferred.values()), inferred
    sess = ort_session(model)
    for batch in (1, 4):
        got = sess.run(outputs, {"x": np.zeros((batch, 3), np.float32)})
        for name, arr in zip(outputs, got):
            assert bound(inferred[name], {"batch": batch}) == list(arr.shape), name
    assert json_shape(inferred["y0"]) == [1, "batch", 3]
    assert json_shape(inferred["y4"]) == [1, "batch", 3, 1]
    # the declared output shapes agree with the inferred ones (SF112 compares them)
    assert not [d for d in a.diagnostics if d.severity.value == "error"]


def test_function_bodies_keep_one_generic_set_of_facts() -> None:
    """Re-running a body for its call sites adds no facts: the lint rules see each Squeeze or
    Unsqueeze of a function once, as inferred with unknown inputs."""
    a = analyze_model(onnx.parser.parse_model(_FUNCTION_MODEL))
    in_functions = [n for n in a.inference.axis_nodes if n.graph.startswith("local::")]
    assert sorted(n.graph for n in in_functions) == ["local::ByInput", "local::Lift"]
    assert all(n.input_shape is None for n in in_functions)


def _nested_calls(depth: int) -> onnx.ModelProto:
    """f_k(a) = f_{k-1}(Unsqueeze(a, [0])), also calling f_{k-1}(a): two call signatures per level."""
    opsets = [helper.make_opsetid("", 11), helper.make_opsetid("local", 1)]
    fns = [helper.make_function("local", "f0", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"])], opsets)]
    for k in range(1, depth):
        nodes = [helper.make_node("Unsqueeze", ["a"], ["u"], axes=[0]),
                 helper.make_node(f"f{k - 1}", ["u"], ["b"], domain="local"),
                 helper.make_node(f"f{k - 1}", ["a"], ["unused"], domain="local")]
        fns.append(helper.make_function("local", f"f{k}", ["a"], ["b"], nodes, opsets))
    graph = helper.make_graph([helper.make_node(f"f{depth - 1}", ["x"], ["y"], domain="local")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=opsets, functions=fns)


@pytest.mark.parametrize("depth", [8, 40])
def test_nested_function_calls_are_bounded(depth: int) -> None:
    """Calls nest up to a fixed depth (no recursion over the model's depth); deeper, the call's
    outputs are unknown rather than an error."""
    a = analyze_model(_nested_calls(depth))
    y = a.inference.shape_of("y")
    if depth == 8:
        assert json_shape(y) == [1] * 7 + ["n"]
        assert list(ort_session(_nested_calls(depth)).run(["y"], {"x": np.zeros(3, np.float32)})[0].shape) \
            == [1] * 7 + [3]
    else:
        assert y is None


@pytest.mark.parametrize("ir_version", [3, 8])
def test_initializer_that_is_a_graph_input_is_a_default_from_ir4(ir_version: int) -> None:
    """From IR 4 a caller may feed another value for an initializer listed among the graph inputs
    (onnxruntime does not constant-fold it), so its values are not known; before IR 4 every
    initializer had to be listed there, and it is a constant."""
    from onnx import numpy_helper

    inits = [numpy_helper.from_array(np.array([7, 8, 9], np.int64), "v"),
             numpy_helper.from_array(np.array(1, np.int64), "i")]
    graph = helper.make_graph([helper.make_node("Gather", ["v", "i"], ["g"])], "g",
                              [helper.make_tensor_value_info("v", TensorProto.INT64, [3])],
                              [helper.make_tensor_value_info("g", TensorProto.INT64, [])], inits)
    if ir_version < 4:
        graph.input.append(helper.make_tensor_value_info("i", TensorProto.INT64, []))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 8)], ir_version=ir_version)
    g = analyze_model(model).inference.lookup(0, "g")
    assert g is not None and g.shape == ()
    assert g.value == ((8,) if ir_version < 4 else None)
