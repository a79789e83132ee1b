"""Write the example models of examples/README.md.

    python examples/make_examples.py [OUT_DIR]      (default: this folder)

Deterministic: every run writes the same bytes. The transformer and Paddle models come from
tests/model_builders.py (one copy of the builder code); the small hand-written models are in the
ONNX text format below.
"""

from __future__ import annotations

import os
import sys

import onnx
from onnx import parser

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, "tests"))

from model_builders import attention_block, paddle_squeeze_cases  # noqa: E402

AXIS_ERRORS = """
<ir_version: 8, opset_import: ["" : 13], producer_name: "shapeflow-examples",
 doc_string: "Squeeze/Unsqueeze-13 nodes with deliberate axis errors, one rule each">
axis_errors (float[2, 3, 1] a, float[batch, 1, 4] b, float[2, 5] c)
    => (float[?, ?] sq_non_unit, float[?, ?, ?, ?] unsq_duplicate, float[?, ?, ?] unsq_out_of_range,
        float[1, 4] sq_symbolic, float[2, 3] sq_ok, float[1, batch, 1, 4] unsq_ok)
<int64[1] axes_0 = {0}, int64[1] axes_1 = {1}, int64[1] axes_2 = {2}, int64[1] axes_3 = {3},
 int64[2] axes_1_m3 = {1, -3}>
{
    # SF104 squeeze-non-unit-dim: dim 1 of a is 3
    [sq_non_unit_node] sq_non_unit = Squeeze(a, axes_1)
    # SF102 duplicate-axes: output rank 4, so -3 normalises to 1
    [unsq_duplicate_node] unsq_duplicate = Unsqueeze(c, axes_1_m3)
    # SF101 axes-out-of-range: output rank 3 allows [-3, 2]
    [unsq_out_of_range_node] unsq_out_of_range = Unsqueeze(c, axes_3)
    # SF105 squeeze-symbolic-dim: dim 0 of b is batch, fails at run time unless batch is 1
    [sq_symbolic_node] sq_symbolic = Squeeze(b, axes_0)
    # clean
    [sq_ok_node] sq_ok = Squeeze(a, axes_2)
    [relu_node] b_relu = Relu(b)
    [unsq_ok_node] unsq_ok = Unsqueeze(b_relu, axes_0)
}
"""

# The outputs of the broken nodes are declared with their rank and unknown dims (`?`): the checker
# needs a shape on graph outputs, and a bare `float y` in the text format declares a scalar.

OPSET11_ATTRIBUTE_AXES = """
<ir_version: 6, opset_import: ["" : 11], producer_name: "shapeflow-examples",
 doc_string: "opset-11 Squeeze/Unsqueeze with axes as attributes, negative axes, symbolic batch">
opset11_attribute_axes (float[batch, seq, 16] x)
    => (float[batch, seq, 4, 4] heads, float[batch, seq] mean, float[batch, seq, 1] mean_col)
<int64 i0 = {0}, int64 i1 = {1}, int64[1] four = {4}>
{
    # x.view(x.size(0), x.size(1), 4, 4) as exporters write it
    shape = Shape(x)
    batch = Gather<axis = 0>(shape, i0)
    batch_1 = Unsqueeze<axes = [0]>(batch)
    shape_b = Shape(x)
    seq = Gather<axis = 0>(shape_b, i1)
    seq_1 = Unsqueeze<axes = [-1]>(seq)
    split = Concat<axis = 0>(batch_1, seq_1, four, four)
    heads = Reshape(x, split)
    # mean over the last axis, squeezed with a negative axis
    mean_keep = ReduceMean<axes = [-1], keepdims = 1>(x)
    mean = Squeeze<axes = [-1]>(mean_keep)
    # Unsqueeze(-1) then Unsqueeze(-4): a mergeable chain; Squeeze(0) cancels the second one
    col = Unsqueeze<axes = [-1]>(mean)
    col_4d = Unsqueeze<axes = [-4]>(col)
    mean_col = Squeeze<axes = [0]>(col_4d)
}
"""


def build_examples() -> dict[str, onnx.ModelProto]:
    """The example models by file name."""
    paddle = {name: model for name, model, _ in paddle_squeeze_cases()}
    return {
        "attention.onnx": attention_block(17),
        "axis_errors.onnx": parser.parse_model(AXIS_ERRORS),
        "opset11_attribute_axes.onnx": parser.parse_model(OPSET11_ATTRIBUTE_AXES),
        "paddle_squeeze.onnx": paddle["paddle_case3_axes_0_2_3"],
    }


def write_examples(out_dir: str) -> list[str]:
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for name, model in build_examples().items():
        onnx.checker.check_model(model)
        path = os.path.join(out_dir, name)
        with open(path, "wb") as f:
            f.write(model.SerializeToString(deterministic=True))
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    if len(argv) > 1:
        print("usage: python examples/make_examples.py [OUT_DIR]", file=sys.stderr)
        return 2
    out_dir = argv[0] if argv else HERE
    for path in write_examples(out_dir):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
