"""Models onnxruntime refuses to load (issue 11) are error findings: a duplicated attribute, a
function body's ``@ref`` attribute passed with the wrong type or not at all, an empty name on a
required output. ``lint`` and ``infer`` exit 1 naming the node; ``optimize`` refuses and writes
nothing. Their clean neighbours (a default for the attribute, an empty *optional* output) pass.

``test_differential.py`` runs onnxruntime on every row here too.
"""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from onnx import helper, parser

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
]


@pytest.mark.parametrize("row, cmd", params(ROWS))
def test_row(row: Row, cmd: str, tmp_path: Path) -> None:
    check_row(row, cmd, tmp_path)
