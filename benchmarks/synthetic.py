"""Synthetic graphs of any size for the speed benchmarks (bench_infer.py, bench_optimize.py,
profile_phases.py).

Two kinds, both exactly ``n`` nodes, input ``x`` float [batch, seq, 8], output ``y`` of the same shape:

    chain   tests/model_builders.squeeze_unsqueeze_chain: shape chains and Squeeze/Unsqueeze pairs
    mix     ``mixed_graph`` below: shape chains with arithmetic, elementwise ops, reductions,
            Reshape and Transpose round trips, no-op Cast/Identity, a Softmax

    python benchmarks/synthetic.py KIND N OUT.onnx [--opset OPSET]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KINDS = ("chain", "mix")


def mixed_graph(n_nodes: int, opset: int = 17) -> onnx.ModelProto:
    """A model of exactly ``n_nodes`` nodes repeating one segment that keeps the running tensor
    ``h`` at [batch, seq, 8] (opset 14 to 17: Reshape has ``allowzero``, ReduceMean takes axes as
    an attribute)::

        s = Shape(h); n = Mul(Gather(s, 0), Gather(s, 1))                      shape arithmetic
        f = Reshape(h, Concat(Unsqueeze(n, 0), [8])); h1 = Reshape(f, s)       Reshape round trip
                                                    (allowzero=1: sound at batch 0 or seq 0)
        m = ReduceMean(h1, [-1], keepdims); c = Sub(h1, m)                    reduction
        v = Unsqueeze(ReduceSum(Mul(c, c), [2], keepdims=0), 2)                reduction, re-expanded
        g = Mul(Sigmoid(Add(Mul(Div(c, Sqrt(Add(v, eps))), w), b)), ...)     elementwise (swish)
        t = Transpose(Transpose(g, [1, 0, 2]), [1, 0, 2])                     Transpose round trip
        r = Reshape(t, [0, 0, 8]); Identity(Cast(r, float))                    no-op Reshape/Cast/Identity
        h = Add(Softmax(..., -1), Slice(s, 0, 2) -> Concat [8] -> Reshape)    shape chain again

    and pads with Relu nodes. Weights and index constants are shared initializers, names short.
    """
    if n_nodes < 1:
        raise ValueError("n_nodes must be >= 1")
    if not 14 <= opset <= 17:
        raise ValueError("opset must be 14 to 17")
    nodes: list[onnx.NodeProto] = []
    counter = 0

    def add(op_type: str, inputs: list[str], **attrs: object) -> str:
        nonlocal counter
        counter += 1
        out = f"t{counter}"
        nodes.append(helper.make_node(op_type, inputs, [out], name=f"n{len(nodes)}", **attrs))
        return out

    i64 = np.int64
    inits = [
        numpy_helper.from_array(np.array(0, i64), "i0"),
        numpy_helper.from_array(np.array(1, i64), "i1"),
        numpy_helper.from_array(np.array([0], i64), "ax0"),
        numpy_helper.from_array(np.array([2], i64), "ax2"),
        numpy_helper.from_array(np.array([8], i64), "c8"),
        numpy_helper.from_array(np.array([0], i64), "s0"),
        numpy_helper.from_array(np.array([2], i64), "s2"),
        numpy_helper.from_array(np.array([0, 0, 8], i64), "keep"),
        numpy_helper.from_array(np.array(1e-5, np.float32), "eps"),
        numpy_helper.from_array(np.linspace(0.5, 1.5, 8, dtype=np.float32), "w"),
        numpy_helper.from_array(np.linspace(-0.1, 0.1, 8, dtype=np.float32), "b"),
    ]
    h = "x"
    per_segment = 33
    while len(nodes) + per_segment <= n_nodes:
        s = add("Shape", [h])
        n = add("Mul", [add("Gather", [s, "i0"], axis=0), add("Gather", [s, "i1"], axis=0)])
        flat = add("Reshape", [h, add("Concat", [add("Unsqueeze", [n, "ax0"]), "c8"], axis=0)], allowzero=1)
        h1 = add("Reshape", [flat, s], allowzero=1)
        c = add("Sub", [h1, add("ReduceMean", [h1], axes=[-1], keepdims=1)])
        v = add("Unsqueeze", [add("ReduceSum", [add("Mul", [c, c]), "ax2"], keepdims=0), "ax2"])
        z = add("Add", [add("Mul", [add("Div", [c, add("Sqrt", [add("Add", [v, "eps"])])]), "w"]), "b"])
        g = add("Mul", [z, add("Sigmoid", [z])])
        t = add("Transpose", [add("Transpose", [g], perm=[1, 0, 2])], perm=[1, 0, 2])
        r = add("Identity", [add("Cast", [add("Reshape", [t, "keep"])], to=TensorProto.FLOAT)])
        sm = add("Softmax", [r], axis=-1)
        s2 = add("Shape", [sm])
        back = add("Reshape", [add("Relu", [h]), add("Concat", [add("Slice", [s2, "s0", "s2", "ax0"]), "c8"], axis=0)],
                   allowzero=1)
        h = add("Add", [sm, back])
    while len(nodes) < n_nodes:
        h = add("Relu", [h])
    nodes[-1].output[0] = "y"
    graph = helper.make_graph(
        nodes,
        f"mixed_{n_nodes}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", 8])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="shapeflow-benchmarks", doc_string=f"synthetic mixed graph, {n_nodes} nodes")
    model.ir_version = 8
    return model


def build(kind: str, n_nodes: int, opset: int | None = None) -> onnx.ModelProto:
    """The ``kind`` graph of ``n_nodes`` nodes at ``opset`` (default: 13 for the chain, 17 for the mix)."""
    if kind == "mix":
        return mixed_graph(n_nodes, opset or 17)
    if kind == "chain":
        sys.path.insert(0, os.path.join(ROOT, "tests"))
        from model_builders import squeeze_unsqueeze_chain

        return squeeze_unsqueeze_chain(n_nodes, opset or 13)
    raise ValueError(f"unknown graph kind {kind!r} (one of {', '.join(KINDS)})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kind", choices=KINDS)
    ap.add_argument("n", type=int)
    ap.add_argument("out")
    ap.add_argument("--opset", type=int, default=None, help="default: 13 for the chain, 17 for the mix")
    args = ap.parse_args()
    onnx.save(build(args.kind, args.n, args.opset), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
