"""Models onnxruntime refuses to load (issues 11 and 20) are error findings: a duplicated attribute, a
function body's ``@ref`` attribute passed with the wrong type or not at all, an empty name on a
required output; and what onnxruntime checks when it creates a session (rows 75-83: the node
against its schema, element types, shape inference, its kernels' attribute values, sparse
initializers, duplicate functions). ``lint`` and ``infer`` exit 1 naming the node; ``optimize``
refuses and writes nothing. Their clean neighbours (a default for the attribute, an empty
*optional* output, what onnx's checker rejects but onnxruntime loads) pass.

``test_differential.py`` runs onnxruntime on every row here too.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper, parser

from .harness import E, Row, Setup, check_row, params
from .models import vi, write


def _error(code: str, *says: str, node: str) -> dict:
    return {
        "infer": E(1, *says, code=code, names=(node,)),
        "lint": E(1, *says, code=code, names=(node,)),
        "optimize": E(1, *says, code=code, names=(node,), writes=False),
    }


CLEAN = {"infer": E(0, writes=True), "lint": E(0), "optimize": E(0, writes=True)}


def saved(make):  # type: ignore[no-untyped-def]
    def build(tmp: Path) -> Setup:
        return Setup(write(make(), tmp / "m.onnx"))
    return build


def squeeze_two_axes() -> onnx.ModelProto:
    node = helper.make_node("Squeeze", ["x"], ["y"], name="sq", axes=[0])
    node.attribute.append(helper.make_attribute("axes", [0]))
    graph = helper.make_graph([node], "g", [vi("x", [1, 3])], [vi("y", [3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])


def relu_two_alphas() -> onnx.ModelProto:
    node = helper.make_node("LeakyRelu", ["x"], ["y"], name="act", alpha=0.1)
    node.attribute.append(helper.make_attribute("alpha", 0.2))
    graph = helper.make_graph([node], "g", [vi("x", [1, 3])], [vi("y", [1, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


_FUNCTION = """
<domain: "local", opset_import: ["" : 11]>
F <axes> (fx) => (fy)
{{
    fy = {op} <axes: ints = @axes> (fx)
}}
"""


def calling(op: str, call_attrs: str, out: str, default: bool = False):  # type: ignore[no-untyped-def]
    def make() -> onnx.ModelProto:
        fn = _FUNCTION.format(op=op)
        if default:
            fn = fn.replace("F <axes>", "F <axes: ints = [0]>")
        return parser.parse_model(f"""
<ir_version: 8, opset_import: ["" : 11, "local" : 1]>
g (float[1, 3] x) => (float{out} y)
{{
    [call] y = local.F {call_attrs} (x)
}}
{fn}""")
    return make


def function_older_opset() -> onnx.ModelProto:
    """An opset-13 model calling a function that imports opset 11: runtimes run its Squeeze as
    Squeeze-13, which has no axes attribute."""
    return parser.parse_model("""
<ir_version: 8, opset_import: ["" : 13, "local" : 1]>
g (float[1, 3] x) => (float[3] y)
{
    [call] y = local.F (x)
}
<domain: "local", opset_import: ["" : 11]>
F (fx) => (fy)
{
    [body_sq] fy = Squeeze <axes = [0]> (fx)
}
""")


def empty_output_read() -> onnx.ModelProto:
    return parser.parse_model("""
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] x) => (float[2, 3] y)
<int64[1] ax = {0}>
{
    [unsq] "" = Unsqueeze (x, ax)
    [sq] y = Squeeze ("", ax)
}
""")


def empty_optional_output() -> onnx.ModelProto:
    return parser.parse_model("""
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] x) => (float[2, 3] y)
{
    [drop] y, "" = Dropout (x)
}
""")


def _text(body: str, inputs: str, outputs: str, *, opset: int = 13, inits: str = "", head: str = "",
          functions: str = ""):  # type: ignore[no-untyped-def]
    def make() -> onnx.ModelProto:
        imports = f'"" : {opset}' + head
        return parser.parse_model(f"<ir_version: 8, opset_import: [{imports}]>\ng ({inputs}) => ({outputs})\n"
                                  + (f"<{inits}>\n" if inits else "") + "{\n" + body + "\n}\n" + functions)
    return make


def _sparse(indices: list[int]):  # type: ignore[no-untyped-def]
    def make() -> onnx.ModelProto:
        values = numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "w")
        idx = numpy_helper.from_array(np.array(indices, np.int64), "w_idx")
        graph = helper.make_graph([helper.make_node("Add", ["a", "w"], ["y"], name="add")], "g",
                                  [vi("a", [4])], [vi("y", [4])])
        graph.sparse_initializer.append(helper.make_sparse_tensor(values, idx, [4]))
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    return make


def _input_elem_type_0() -> onnx.ModelProto:
    m = _text("[relu] y = Relu(a)", "float[2] a", "float[2] y")()
    m.graph.input[0].type.tensor_type.elem_type = 0
    return m


def _ml_only() -> onnx.ModelProto:
    return parser.parse_model("""
<ir_version: 8, opset_import: ["ai.onnx.ml" : 3]>
g (float[1, 2] a) => (float[1, 2] y)
{
    [norm] y = ai.onnx.ml.Normalizer<norm = "L2">(a)
}
""")


_LOCAL = '''
<domain: "local", opset_import: ["" : 13]>
F (x) => (r)
{{
    [body] r = {body}
}}
'''

ROWS = [
    Row("70-squeeze-two-axes-attributes", saved(squeeze_two_axes),
        _error("SF009", "attribute 'axes' is given 2 times", node="sq")),
    Row("70-two-alpha-attributes", saved(relu_two_alphas),
        _error("SF009", "attribute 'alpha' is given 2 times", node="act")),
    Row("71-ref-attribute-wrong-type", saved(calling("Squeeze", "<axes = 0>", "[3]")),
        _error("SF118", "attribute 'axes' is of type int", "takes 'axes' as ints", node="call")),
    Row("71-ref-attribute-string", saved(calling("Squeeze", '<axes = "0">', "[3]")),
        _error("SF118", "attribute 'axes' is of type string", node="call")),
    Row("71-ref-attribute-right-type", saved(calling("Squeeze", "<axes = [0]>", "[3]")), CLEAN),
    Row("72-ref-attribute-missing", saved(calling("Unsqueeze", "", "[1, 1, 3]")),
        _error("SF119", "no attribute 'axes' is passed", "requires 'axes'", node="call")),
    Row("72-ref-attribute-default", saved(calling("Unsqueeze", "", "[1, 1, 3]", default=True)), CLEAN),
    Row("72-ref-attribute-optional", saved(calling("Squeeze", "", "[3]")), CLEAN),
    Row("74-function-imports-older-opset", saved(function_older_opset),
        _error("SF120", "this node is Squeeze-11 by the function's import, Squeeze-13 by the model's",
               node="body_sq")),
    Row("73-empty-output-name-read", saved(empty_output_read),
        _error("SF010", "output 0 of Unsqueeze-13 has an empty name", node="unsq")),
    Row("73-empty-optional-output", saved(empty_optional_output), CLEAN),
    Row("75-concat-without-axis", saved(_text("[cat] y = Concat(a, b)", "float[2] a, float[2] b", "float[4] y")),
        _error("SF011", "Concat-13 requires attribute 'axis'", node="cat")),
    Row("75-relu-unknown-attribute", saved(_text("[relu] y = Relu<foo = 1>(a)", "float[2] a", "float[2] y")),
        _error("SF011", "Relu-13 has no attribute 'foo'", node="relu")),
    Row("76-add-three-inputs", saved(_text("[add] y = Add(a, b, b)", "float[2] a, float[2] b", "float[2] y")),
        _error("SF012", "Add-13 takes 2 inputs; the node has 3", node="add")),
    Row("77-add-int-and-float", saved(_text("[add] y = Add(a, b)", "int64[2] a, float[2] b", "float[2] y")),
        _error("SF013", "input 1 is tensor(float) but input 0 is tensor(int64)", node="add")),
    Row("77-declared-output-type", saved(_text("[relu] y = Relu(a)", "float[2] a", "int64[2] y")),
        _error("SF013", "graph output 'y' is declared tensor(int64)", node="relu")),
    Row("78-pad-mode", saved(_text('[pad] y = Pad<mode = "CONSTANT">(a, p)', "float[2, 2] a", "float[4, 4] y",
                                   inits="int64[4] p = {1, 1, 1, 1}")),
        _error("SF014", "mode='CONSTANT' is not a value Pad-13 accepts", node="pad")),
    Row("79-matmul-static-mismatch", saved(_text("[mm] y = MatMul(a, b)", "float[2, 3] a, float[4, 5] b",
                                                 "float[2, 5] y")),
        _error("SF015", "Incompatible dimensions for matrix multiplication", node="mm")),
    Row("79-gather-axis", saved(_text("[ga] y = Gather<axis = 5>(a, i)", "float[2, 3] a", "float[1, 3] y",
                                      inits="int64[1] i = {0}")),
        _error("SF015", "axis must be in [-r, r-1]", node="ga")),
    Row("80-input-element-type-0", saved(_input_elem_type_0),
        _error("SF016", "graph input 'a' has element type 0", node="'a'")),
    Row("81-sparse-index-out-of-range", saved(_sparse([1, 9])),
        _error("SF017", "index 9 (position 1) is outside [0, 3]", node="'w'")),
    Row("82-duplicate-function", saved(_text("[call] y = local.F(a)", "float[2] a", "float[2] y",
                                             head=', "local" : 1', functions=_LOCAL.format(body="Relu(x)")
                                             + _LOCAL.format(body="Neg(x)"))),
        _error("SF018", "function local::F is defined 2 times", node="local::F")),
    # onnx's checker rejects these, onnxruntime loads them: clean (README "Semantics")
    Row("83-sparse-indices-unsorted", saved(_sparse([3, 0])), CLEAN),
    Row("83-cast-to-undefined", saved(_text("[cast] y = Cast<to = 0>(a)", "float[2] a", "float[2] y")), CLEAN),
    Row("83-uncalled-function-unknown-attribute",
        saved(_text("[relu] y = Relu(a)", "float[2] a", "float[2] y", head=', "local" : 1',
                    functions=_LOCAL.format(body="Relu<foo = 1>(x)"))), CLEAN),
    Row("83-ai-onnx-ml-only", saved(_ml_only), {"infer": E(0, writes=True), "lint": E(0),
                                               "optimize": E(0, writes=True, identical=True)}),
]


@pytest.mark.parametrize("row, cmd", params(ROWS))
def test_row(row: Row, cmd: str, tmp_path: Path) -> None:
    check_row(row, cmd, tmp_path)
