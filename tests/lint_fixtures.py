"""One fixture per lint rule, in the ONNX text format: the nodes that break the rule and clean nodes
next to them, with the exact set of (code, place) the rule must report. ``place`` is the node's
display name (``#N`` when it has none) or, for findings about a tensor or the file, the tensor
name or None.

Each fixture reports only its own rule's code, except where a comment says why another rule fires
on the same node (a condition is owned by one rule, but a broken node may break two).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import onnx
from onnx import helper, numpy_helper, parser


@dataclass(frozen=True)
class Fixture:
    id: str
    code: str  # the rule under test
    text: str = ""  # ONNX text format (empty when ``build`` makes the model)
    expected: frozenset = field(default_factory=frozenset)  # {(code, place)}
    select: tuple[str, ...] | None = None  # lint only these codes (None: the rule under test)
    build: Callable[[], onnx.ModelProto] | None = None  # for what the text format cannot say

    def model(self) -> onnx.ModelProto:
        return self.build() if self.build is not None else parser.parse_model(self.text)


F = Fixture

FIXTURES: list[Fixture] = [
    F("sf003_unsorted", "SF003", """
<ir_version: 8, opset_import: ["" : 13]>
g (float[2] x) => (float[2] z, float[2] w)
{
    [b_node] z = Relu (y)
    [a_node] y = Neg (x)
    [clean] w = Relu (x)
}
""", frozenset({("SF003", "b_node")})),
    F("sf004_unknown_operator", "SF004", """
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 1] x) => (float[?] y, float[?, ?] z, float[2, 1] w)
<int64[1] ax = {1}>
{
    [typo] y = Sqeeze (x, ax)
    [too_new] z = Gelu (x)
    [clean] w = Relu (x)
}
""", frozenset({("SF004", "typo"), ("SF004", "too_new")})),
    F("sf005_unsupported_version", "SF005", """
<ir_version: 8, opset_import: ["" : 999]>
g (float[2] x) => (float[2] y)
{
    [clean] y = Relu (x)
}
""", frozenset({("SF005", None)})),
    F("sf101_axes_out_of_range", "SF101", """
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 5] c, float[1, 4] d) => (float[?, ?, ?] u, float[?] s, float[2, 5, 1] ok1, float[4] ok2)
<int64[1] ax3 = {3}, int64[1] axm3 = {-3}, int64[1] ax2 = {2}, int64[1] axm2 = {-2}>
{
    [unsq_far] u = Unsqueeze (c, ax3)
    [sq_far] s = Squeeze (d, axm3)
    [unsq_ok] ok1 = Unsqueeze (c, ax2)
    [sq_ok] ok2 = Squeeze (d, axm2)
}
""", frozenset({("SF101", "unsq_far"), ("SF101", "sq_far")})),
    F("sf102_duplicate_axes", "SF102", """
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 5] c) => (float[?, ?, ?, ?] u, float[?, ?, ?, ?] v, float[1, 2, 1, 5] ok)
<int64[2] dup = {1, -3}, int64[2] same = {0, 0}, int64[2] fine = {0, -2}>
{
    [unsq_neg_dup] u = Unsqueeze (c, dup)
    [unsq_dup] v = Unsqueeze (c, same)
    [unsq_ok] ok = Unsqueeze (c, fine)
}
""", frozenset({("SF102", "unsq_neg_dup"), ("SF102", "unsq_dup")})),
    F("sf103_squeeze_duplicate_axes", "SF103", """
<ir_version: 8, opset_import: ["" : 13]>
g (float[1, 3, 1] x) => (float[3, 1] y, float[3] ok)
<int64[2] dup = {0, -3}, int64[2] fine = {0, 2}>
{
    [sq_dup] y = Squeeze (x, dup)
    [sq_ok] ok = Squeeze (x, fine)
}
""", frozenset({("SF103", "sq_dup")})),
    F("sf104_squeeze_non_unit_dim", "SF104", """
<ir_version: 8, opset_import: ["" : 13]>
g (float[1, 3, 1, 5] x, float[batch, 1] b) => (float[3, 5] paddle, float[?] two, float[3, 1, 5] ok, float[batch] sym)
<int64[3] paddle_axes = {0, 2, 3}, int64[2] two_axes = {1, -1}, int64[1] ax0 = {0}, int64[1] ax1 = {1}>
{
    # Paddle's case 3: dim 3 is 5
    [paddle_sq] paddle = Squeeze (x, paddle_axes)
    # two offending axes, one finding for the node
    [two_bad] two = Squeeze (x, two_axes)
    [sq_ok] ok = Squeeze (x, ax0)
    # a symbol is never judged != 1: SF105's, not this rule's
    [sq_sym] sym = Squeeze (b, ax1)
}
""", frozenset({("SF104", "paddle_sq"), ("SF104", "two_bad")})),
    F("sf105_squeeze_symbolic_dim", "SF105", """
<ir_version: 8, opset_import: ["" : 13]>
g (float[batch, 1, 4] b, float[1, 3] c) => (float[1, 4] y, float[3] ok)
<int64[1] ax0 = {0}>
{
    [sq_sym] y = Squeeze (b, ax0)
    [sq_ok] ok = Squeeze (c, ax0)
}
""", frozenset({("SF105", "sq_sym")})),
    F("sf106_squeeze_rank_unknowable", "SF106", """
<ir_version: 8, opset_import: ["" : 13]>
g (float[batch, 1, 16] b, float[1, 3, 1] c) => (float[?] y, float[3] ok)
{
    [sq_all_sym] y = Squeeze (b)
    [sq_all_ok] ok = Squeeze (c)
}
""", frozenset({("SF106", "sq_all_sym")})),
    F("sf107_negative_axes_opset1", "SF107", """
<ir_version: 3, opset_import: ["" : 9]>
g (float[3] x, float[1, 3] y) => (float[3, 1] u, float[3] s, float[1, 3] ok)
{
    [unsq_neg] u = Unsqueeze <axes = [-1]> (x)
    [sq_neg] s = Squeeze <axes = [-2]> (y)
    [unsq_ok] ok = Unsqueeze <axes = [0]> (x)
}
""", frozenset({("SF107", "unsq_neg"), ("SF107", "sq_neg")})),
    F("sf108_axes_form_mismatch", "SF108", """
<ir_version: 8, opset_import: ["" : 13]>
g (float[3] x) => (float[1, 3] u, float[1, 3] v, float[1, 3] ok)
<int64[1] ax0 = {0}>
{
    [attr_at_13] u = Unsqueeze <axes = [0]> (x)
    [no_axes] v = Unsqueeze (x)
    [unsq_ok] ok = Unsqueeze (x, ax0)
}
""", frozenset({("SF108", "attr_at_13"), ("SF108", "no_axes")})),
    F("sf108_input_below_13", "SF108", """
<ir_version: 7, opset_import: ["" : 11]>
g (float[3] x) => (float[1, 3] u, float[1, 3] ok)
<int64[1] ax0 = {0}>
{
    [input_at_11] u = Unsqueeze (x, ax0)
    [unsq_ok] ok = Unsqueeze <axes = [0]> (x)
}
""", frozenset({("SF108", "input_at_11")})),
    F("sf109_axes_bad_tensor", "SF109", """
<ir_version: 8, opset_import: ["" : 13]>
g (float[1, 3] x) => (float[1, 1, 3] u, float[3] s, float[1, 1, 3] w, float[1, 1, 3] ok)
<int32[1] ax_i32 = {0}, int64[1, 1] ax_2d = {0}, int64 ax_scalar = {0}, int64[1] ax0 = {0}>
{
    [int32_axes] u = Unsqueeze (x, ax_i32)
    [rank2_axes] s = Squeeze (x, ax_2d)
    [scalar_unsq] w = Unsqueeze (x, ax_scalar)
    [unsq_ok] ok = Unsqueeze (x, ax0)
}
""", frozenset({("SF109", "int32_axes"), ("SF109", "rank2_axes"), ("SF109", "scalar_unsq")})),
    F("sf110_axes_not_constant", "SF110", """
<ir_version: 8, opset_import: ["" : 13]>
g (float[1, 3] x, int64[1] runtime_axes) => (float[?, ?, ?] u, float[1, 1, 3] ok)
<int64[1] ax0 = {0}>
{
    [unsq_runtime] u = Unsqueeze (x, runtime_axes)
    [unsq_ok] ok = Unsqueeze (x, ax0)
}
""", frozenset({("SF110", "unsq_runtime")})),
    F("sf111_unsqueeze_empty_axes", "SF111", """
<ir_version: 8, opset_import: ["" : 13]>
g (float[1, 3] x) => (float[1, 3] u, float[1, 1, 3] ok)
<int64[0] none = {}, int64[1] ax0 = {0}>
{
    [unsq_empty] u = Unsqueeze (x, none)
    [unsq_ok] ok = Unsqueeze (x, ax0)
}
""", frozenset({("SF111", "unsq_empty")})),
    F("sf112_shape_conflict", "SF112", """
<ir_version: 8, opset_import: ["" : 13]>
g (float[1, 2] x, float[batch, 4] b, float[4] w2) => (float[5, 2] wrong_out, float[1, 1, 2] ok_out, float[batch, 4] sym_out, float[7] rank_out)
<int64[1] ax0 = {0}, float[3] w2 = {1, 2, 3}, float[7, 7, 7, 7] u, float[batch2, 4] r>
{
    [unsq_u] u = Unsqueeze (x, ax0)
    [relu_wrong] wrong_out = Relu (x)
    [unsq_ok] ok_out = Unsqueeze (x, ax0)
    [relu_sym] sym_out = Relu (b)
    [unsq_rank] rank_out = Unsqueeze (x, ax0)
    [relu_clean] r = Relu (b)
}
""", frozenset({("SF112", "relu_wrong"), ("SF112", "unsq_rank"), ("SF112", "unsq_u"), ("SF112", "w2")})),
    F("sf113_squeeze_empty_axes", "SF113", """
<ir_version: 8, opset_import: ["" : 13]>
g (float[1, 3, 1] x) => (float[3] y, float[3, 1] ok)
<int64[0] none = {}, int64[1] ax0 = {0}>
{
    [sq_empty] y = Squeeze (x, none)
    [sq_ok] ok = Squeeze (x, ax0)
}
""", frozenset({("SF113", "sq_empty")})),
    F("sf114_invalid_dim_value", "SF114", """
<ir_version: 8, opset_import: ["" : 13]>
g (float[-1, 3] x, float[2, 3] y, float[9007199254740993] huge) => (float[2, 3] z)
{
    [clean] z = Relu (y)
}
""", frozenset({("SF114", "x"), ("SF114", "huge")})),
    # Rules see inside If/Loop/Scan bodies and model-local functions, and name the graph path.
    # (In the Loop body the bad Unsqueeze reads the iteration number: a carried input's declared
    # shape is not trusted, since the body may change it from one iteration to the next.)
    F("subgraphs_and_functions", "SF1", """
<ir_version: 8, opset_import: ["" : 13, "local" : 1]>
g (bool cond, float[2, 3] x, int64 trip) => (float[?] y, float[2, 3] z, float[2, 3] loop_out)
<int64[1] ax1 = {1}, int64[1] ax0 = {0}, int64[1] ax3 = {3}>
{
    [if_node] y = If (cond) <
        then_branch = then_g () => (float[?] t) {
            [then_sq] t = Squeeze (x, ax1)
        },
        else_branch = else_g () => (float[?] e) {
            [else_unsq] e1 = Unsqueeze (x, ax0)
            [else_ok] e = Squeeze (e1, ax0)
        }
    >
    [loop_node] loop_out = Loop (trip, cond, x) <
        body = body_g (int64 i, bool c_in, float[2, 3] v_in) => (bool c_out, float[2, 3] v_out) {
            [body_far] far = Unsqueeze (i, ax3)
            [body_id] c_out = Identity (c_in)
            [body_relu] v_out = Relu (v_in)
        }
    >
    [call] z = local.F (x)
}
<domain: "local", opset_import: ["" : 13]>
F (a) => (b)
{
    k = Constant <value = float[2, 3] {1, 2, 3, 4, 5, 6}> ()
    kax = Constant <value = int64[1] {0}> ()
    [f_sq] s = Squeeze (k, kax)
    b = Identity (a)
}
""", frozenset({("SF104", "then_sq"), ("SF101", "body_far"), ("SF104", "f_sq")}), select=("SF1",)),
    F("sf115_rank_above_64", "SF115", f"""
<ir_version: 8, opset_import: ["" : 13]>
g (float[{", ".join(["1"] * 65)}] big, float[2, 3] small) => (float[2, 3] y)
{{
    [clean] y = Relu (small)
}}
""", frozenset({("SF115", "big")})),
    F("sf116_control_flow_signature", "SF116", """
<ir_version: 8, opset_import: ["" : 13]>
g (int64 m, bool c, float[2] v) => (float[2] good_out, float[2] bad_out)
{
    [good_loop] good_out = Loop (m, c, v) <body = b1 (int64 i1, bool c1, float[2] v1) => (bool co1, float[2] vo1) {
        co1 = Identity (c1)
        vo1 = Relu (v1)
    }>
    [bad_loop] bad_out = Loop (m, c, v) <body = b2 (int64 i2, bool c2, float[2] v2) => (bool co2) {
        co2 = Identity (c2)
    }>
}
""", frozenset({("SF116", "bad_loop")})),
    F("sf117_invalid_attribute", "SF117", """
<ir_version: 8, opset_import: ["" : 11]>
g (float[2, 1] x) => (float[1, 2, 1] a, float[1, 2, 1] b, float[?] c, float[2] d)
{
    [clean] a = Unsqueeze <axes = [0]> (x)
    [extra] b = Unsqueeze <axes = [0], keepdims = 1> (x)
    [int_axes] c = Unsqueeze <axes = 0> (x)
    [float_axes] d = Squeeze <axes = [1.0]> (x)
}
""", frozenset({("SF117", "extra"), ("SF117", "int_axes"), ("SF117", "float_axes")})),
    F("sf009_duplicate_attribute", "SF009", """
<ir_version: 8, opset_import: ["" : 11]>
g (float[1, 3] x) => (float[3] a, float[3] b, float[1, 3] c)
{
    [dup] a = Squeeze <axes = [0], axes = [0]> (x)
    [clean] b = Squeeze <axes = [0]> (x)
    [dup_alpha] c = LeakyRelu <alpha = 0.1, alpha = 0.2> (x)
}
""", frozenset({("SF009", "dup"), ("SF009", "dup_alpha")})),
    F("sf010_empty_output_name", "SF010", """
<ir_version: 8, opset_import: ["" : 13]>
g (float[1, 3] x) => (float[1, 3] y, float[1, 3] d)
<int64[1] ax = {0}>
{
    [unnamed] "" = Unsqueeze (x, ax)
    [reader] y = Squeeze ("", ax)
    [optional_mask] d, "" = Dropout (x)
}
""", frozenset({("SF010", "unnamed")})),
    F("sf118_attribute_ref_type", "SF118", """
<ir_version: 8, opset_import: ["" : 11, "local" : 1]>
g (float[1, 3] x) => (float[3] y, float[3] z)
{
    [wrong] y = local.F <axes = 0> (x)
    [clean] z = local.F <axes = [0]> (x)
}
<domain: "local", opset_import: ["" : 11]>
F <axes> (fx) => (fy)
{
    fy = Squeeze <axes: ints = @axes> (fx)
}
""", frozenset({("SF118", "wrong")})),
    F("sf119_attribute_ref_missing", "SF119", """
<ir_version: 8, opset_import: ["" : 11, "local" : 1]>
g (float[3] x) => (float[1, 3] w, float[1, 3] v, float[3] s)
{
    [missing] w = local.G (x)
    [clean] v = local.G <axes = [0]> (x)
    [optional] s = local.H (x)
}
<domain: "local", opset_import: ["" : 11]>
G <axes> (gx) => (gy)
{
    gy = Unsqueeze <axes: ints = @axes> (gx)
}
<domain: "local", opset_import: ["" : 11]>
H <axes> (hx) => (hy)
{
    hy = Squeeze <axes: ints = @axes> (hx)
}
""", frozenset({("SF119", "missing")})),
    F("sf120_function_opset_mismatch", "SF120", """
<ir_version: 8, opset_import: ["" : 13, "local" : 1]>
g (float[1, 3] x) => (float[3] y, float[1, 3] z, float[3] w)
{
    [call_old] y = local.Old (x)
    [call_relu] z = local.R (x)
    [call_same] w = local.Same (x)
}
<domain: "local", opset_import: ["" : 11]>
Old (fx) => (fy)
{
    [old_sq] fy = Squeeze <axes = [0]> (fx)
}
<domain: "local", opset_import: ["" : 11]>
R (rx) => (ry)
{
    [relu] ry = Relu (rx)
}
<domain: "local", opset_import: ["" : 13]>
Same (sx) => (sy)
{
    sax = Constant <value = int64[1] {0}> ()
    [same_sq] sy = Squeeze (sx, sax)
}
""", frozenset({("SF120", "old_sq"), ("SF120", "relu")})),
]


def _element_type_0() -> onnx.ModelProto:
    """Graph input ``x`` and initializer ``w`` with element type 0; ``y`` and ``w_ok`` are fine."""
    m = parser.parse_model("""
<ir_version: 8, opset_import: ["" : 13]>
g (float[2] x, float[2] y) => (float[2] z, float[2] ok)
<float[2] w = {1.0, 2.0}, float[2] w_ok = {1.0, 2.0}>
{
    [use_x] z = Add (x, w)
    [clean] ok = Add (y, w_ok)
}
""")
    m.graph.input[0].type.tensor_type.elem_type = 0
    m.graph.initializer[0].data_type = 0
    return m


def _sparse_initializers() -> onnx.ModelProto:
    """Sparse initializer ``bad`` has an index past its end; ``good`` is unsorted, which onnxruntime
    accepts."""
    g = helper.make_graph([helper.make_node("Add", ["bad", "good"], ["y"], name="add")], "g", [],
                          [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [4])])
    for name, idx in (("bad", [1, 9]), ("good", [3, 0])):
        values = numpy_helper.from_array(np.array([1.0, 2.0], np.float32), name)
        g.sparse_initializer.append(helper.make_sparse_tensor(
            values, numpy_helper.from_array(np.array(idx, np.int64), f"{name}_idx"), [4]))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


_LOCAL_F = """
<domain: "local", opset_import: ["" : 13]>
F (x) => (r)
{{
    r = {op} (x)
}}
"""

LOAD_TIME_FIXTURES = [
    F("sf011_attribute_mismatch", "SF011", """
<ir_version: 8, opset_import: ["" : 13]>
g (float[2] a, float[2] b) => (float[4] y, float[2] z, float[4] w, float[4] ok)
{
    [no_axis] y = Concat (a, b)
    [unknown_attr] z = Relu <foo = 1> (a)
    [float_axis] w = Concat <axis = 0.0> (a, b)
    [clean] ok = Concat <axis = 0> (a, b)
}
""", frozenset({("SF011", "no_axis"), ("SF011", "unknown_attr"), ("SF011", "float_axis")})),
    F("sf012_arity_mismatch", "SF012", """
<ir_version: 8, opset_import: ["" : 13]>
g (float[2] a, float[2] b) => (float[2] y, float[2] z, float[2] ok)
{
    [three] y = Add (a, b, b)
    [empty_input] z = Add ("", b)
    [clean] ok = Add (a, b)
}
""", frozenset({("SF012", "three"), ("SF012", "empty_input")})),
    F("sf013_type_mismatch", "SF013", """
<ir_version: 8, opset_import: ["" : 13]>
g (int64[2] i, float[2] a) => (float[2] y, int64[2] z, int64[2] w, float[2] ok)
{
    [mixed] y = Add (i, a)
    [relu_int] z = Relu (i)
    [declared] w = Neg (a)
    [clean] ok = Add (a, a)
}
""", frozenset({("SF013", "mixed"), ("SF013", "relu_int"), ("SF013", "declared")})),
    F("sf014_invalid_attribute_value", "SF014", """
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 2] a) => (float[4, 4] y, float[2, 2] c, float[4, 4] ok)
<int64[4] p = {1, 1, 1, 1}>
{
    [bad_mode] y = Pad <mode = "CONSTANT"> (a, p)
    [bad_cast] c = Cast <to = 999> (a)
    [clean] ok = Pad <mode = "reflect"> (a, p)
}
""", frozenset({("SF014", "bad_mode"), ("SF014", "bad_cast")})),
    F("sf015_shape_inference_error", "SF015", """
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] a, float[4, 5] b) => (float[2, 5] y, float[?] z, float[3, 2] ok)
<int64[1] i = {0}>
{
    [mm] y = MatMul (a, b)
    [gather] z = Gather <axis = 5> (a, i)
    [clean] ok = Transpose (a)
}
""", frozenset({("SF015", "mm"), ("SF015", "gather")})),
    F("sf016_invalid_element_type", "SF016", build=_element_type_0,
      expected=frozenset({("SF016", "x"), ("SF016", "w")})),
    F("sf017_invalid_sparse_tensor", "SF017", build=_sparse_initializers, expected=frozenset({("SF017", "bad")})),
    F("sf018_duplicate_function", "SF018", """
<ir_version: 8, opset_import: ["" : 13, "local" : 1]>
g (float[2] a) => (float[2] y)
{
    [call] y = local.F (a)
}
""" + _LOCAL_F.format(op="Relu") + _LOCAL_F.format(op="Neg"), frozenset({("SF018", None)})),
]
FIXTURES += LOAD_TIME_FIXTURES


def paddle_in_if() -> onnx.ModelProto:
    """Not text: an If whose branches need their own initializer (for the fix tests)."""
    return parser.parse_model("""
<ir_version: 8, opset_import: ["" : 13]>
g (bool cond, float[1, 3, 1, 5] x) => (float[?, ?] y)
{
    y = If (cond) <
        then_branch = then_g () => (float[?, ?] t) {
            ax = Constant <value = int64[3] {0, 2, 3}> ()
            [then_sq] t = Squeeze (x, ax)
        },
        else_branch = else_g () => (float[?, ?] e) {
            ax2 = Constant <value = int64[2] {0, 2}> ()
            [else_sq] e = Squeeze (x, ax2)
        }
    >
}
""")


def external_data_model(tmp_dir: str) -> onnx.ModelProto:
    """A model with one safe and one escaping external-data location (written into ``tmp_dir``)."""
    import os

    weights = np.arange(6, dtype=np.float32).reshape(2, 3)
    with open(os.path.join(tmp_dir, "weights.bin"), "wb") as f:
        f.write(weights.tobytes())
    safe = numpy_helper.from_array(weights, "safe_w")
    unsafe = numpy_helper.from_array(weights, "unsafe_w")
    for t, loc in ((safe, "weights.bin"), (unsafe, "../outside.bin")):
        t.ClearField("raw_data")
        t.data_location = onnx.TensorProto.EXTERNAL
        for k, v in (("location", loc), ("offset", "0"), ("length", str(weights.nbytes))):
            entry = t.external_data.add()
            entry.key, entry.value = k, v
    graph = helper.make_graph(
        [helper.make_node("Add", ["safe_w", "unsafe_w"], ["y"], name="add")],
        "ext",
        [],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 3])],
        initializer=[safe, unsafe],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
