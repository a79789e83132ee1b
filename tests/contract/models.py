"""Small models for the contract rows, built with onnx.helper only (no shapeflow imports)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FLOAT = TensorProto.FLOAT
INT64 = TensorProto.INT64


def ints(name: str, values: Sequence[int], dims: Sequence[int] | None = None,
         dtype: int = INT64) -> onnx.TensorProto:
    return helper.make_tensor(name, dtype, list(dims) if dims is not None else [len(values)], list(values))


def model(nodes: Sequence[onnx.NodeProto], inputs: Sequence[onnx.ValueInfoProto],
          outputs: Sequence[onnx.ValueInfoProto], inits: Sequence[onnx.TensorProto] = (), *,
          opset: int = 13, ir: int = 8, extra_opsets: Sequence[tuple[str, int]] = (),
          functions: Sequence[onnx.FunctionProto] = (), value_info: Sequence[onnx.ValueInfoProto] = ()
          ) -> onnx.ModelProto:
    g = helper.make_graph(list(nodes), "g", list(inputs), list(outputs), list(inits),
                          value_info=list(value_info))
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    m = helper.make_model(g, opset_imports=opsets, ir_version=ir, functions=list(functions))
    m.producer_name = "shapeflow-contract"
    return m


def vi(name: str, shape: Sequence[object] | None, dtype: int = FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, dtype, None if shape is None else list(shape))


def cancelling_pair(opset: int = 13) -> onnx.ModelProto:
    """x[2, 3] -> Unsqueeze(0) -> Squeeze(0) -> y: valid, and optimize removes both nodes."""
    if opset >= 13:
        nodes = [helper.make_node("Unsqueeze", ["x", "axes"], ["u"], name="unsq"),
                 helper.make_node("Squeeze", ["u", "axes"], ["s"], name="sq"),
                 helper.make_node("Relu", ["s"], ["y"], name="relu")]
        inits = [ints("axes", [0])]
    else:
        nodes = [helper.make_node("Unsqueeze", ["x"], ["u"], name="unsq", axes=[0]),
                 helper.make_node("Squeeze", ["u"], ["s"], name="sq", axes=[0]),
                 helper.make_node("Relu", ["s"], ["y"], name="relu")]
        inits = []
    return model(nodes, [vi("x", [2, 3])], [vi("y", [2, 3])], inits, opset=opset)


def single(op: str, shape: Sequence[object], axes: Sequence[int] | None, *, opset: int = 13,
           form: str | None = None, axes_dtype: int = INT64, axes_dims: Sequence[int] | None = None,
           name: str = "n0") -> onnx.ModelProto:
    """One Squeeze/Unsqueeze named ``name`` over ``x``; axes in the opset's form unless ``form``."""
    form = form or ("attribute" if opset < 13 else "input")
    inputs, inits, kw = ["x"], [], {}
    if axes is not None:
        if form == "attribute":
            kw["axes"] = list(axes)
        else:
            if axes_dtype == FLOAT:
                inits.append(helper.make_tensor("axes", FLOAT, list(axes_dims if axes_dims is not None
                                                                     else [len(axes)]), [float(a) for a in axes]))
            else:
                inits.append(ints("axes", axes, axes_dims, axes_dtype))
            inputs.append("axes")
    node = helper.make_node(op, inputs, ["y"], name=name, **kw)
    return model([node], [vi("x", shape)], [vi("y", None)], inits, opset=opset)


def chain(n: int, opset: int = 13) -> onnx.ModelProto:
    """A chain of ``n`` Relu nodes (depth n) between x and y."""
    nodes = [helper.make_node("Relu", ["x" if i == 0 else f"t{i - 1}"], [f"t{i}" if i < n - 1 else "y"],
                              name=f"r{i}") for i in range(n)]
    return model(nodes, [vi("x", ["batch", 3])], [vi("y", ["batch", 3])], opset=opset)


def unsqueeze_squeeze_chain(pairs: int, opset: int = 13) -> onnx.ModelProto:
    """x -> (Unsqueeze(0) -> Squeeze(0)) * pairs -> y: 2*pairs nodes deep, all rewritable."""
    nodes = []
    cur = "x"
    for i in range(pairs):
        nodes.append(helper.make_node("Unsqueeze", [cur, "axes"], [f"u{i}"], name=f"u{i}"))
        nxt = "y" if i == pairs - 1 else f"s{i}"
        nodes.append(helper.make_node("Squeeze", [f"u{i}", "axes"], [nxt], name=f"s{i}"))
        cur = nxt
    return model(nodes, [vi("x", ["batch", 3])], [vi("y", ["batch", 3])], [ints("axes", [0])], opset=opset)


def write(m: onnx.ModelProto | bytes, path: str | os.PathLike[str]) -> str:
    data = m if isinstance(m, bytes) else m.SerializeToString()
    Path(path).write_bytes(data)
    return str(path)


def external(m: onnx.ModelProto, tensor: str, location: str, *, offset: str | None = None,
             length: str | None = None, extra: Sequence[tuple[str, str]] = ()) -> onnx.ModelProto:
    """Mark initializer ``tensor`` as stored in external data at ``location`` (bytes dropped)."""
    for t in m.graph.initializer:
        if t.name == tensor:
            t.ClearField("raw_data")
            for f in ("int64_data", "float_data", "int32_data"):
                t.ClearField(f)
            t.data_location = TensorProto.EXTERNAL
            entries = [("location", location)]
            if offset is not None:
                entries.append(("offset", offset))
            if length is not None:
                entries.append(("length", length))
            entries.extend(extra)
            for k, v in entries:
                e = t.external_data.add()
                e.key, e.value = k, v
            return m
    raise KeyError(tensor)


def weight_model() -> tuple[onnx.ModelProto, np.ndarray]:
    """x[2, 4] + w[4] -> Unsqueeze(0) -> y, with ``w`` a 16-byte float initializer."""
    w = np.arange(4, dtype=np.float32)
    nodes = [helper.make_node("Add", ["x", "w"], ["a"], name="add"),
             helper.make_node("Unsqueeze", ["a", "axes"], ["y"], name="unsq")]
    return model(nodes, [vi("x", [2, 4])], [vi("y", [1, 2, 4])],
                 [numpy_helper.from_array(w, "w"), ints("axes", [0])]), w


def with_external_weight(folder: Path, location: str = "weights.bin", *, name: str = "m.onnx",
                         data_path: Path | None = None, offset: str | None = "0", length: str | None = "16",
                         extra: Sequence[tuple[str, str]] = ()) -> tuple[str, Path]:
    """The weight model with ``w`` in an external file; returns (model path, data file path)."""
    m, w = weight_model()
    data = data_path if data_path is not None else folder / location
    if data is not None and not os.path.lexists(data):
        data.parent.mkdir(parents=True, exist_ok=True)
        data.write_bytes(w.tobytes())
    external(m, "w", location, offset=offset, length=length, extra=extra)
    return write(m, folder / name), data


def nested_if(depth: int) -> onnx.ModelProto:
    """``depth`` Ifs nested in then-branches; the innermost body unsqueezes the outer ``x``.

    Built inside out, as protobuf's own depth limit allows (the file is what is being tested)."""
    g = helper.make_graph([helper.make_node("Unsqueeze", ["x", "axes"], ["y0"], name="inner")], "b0", [],
                          [vi("y0", [1, 2, 3])])
    for i in range(depth):
        other = helper.make_graph([helper.make_node("Identity", ["x"], [f"e{i}"], name=f"else{i}")], f"e{i}", [],
                                  [vi(f"e{i}", None)])
        node = helper.make_node("If", ["c"], [f"y{i + 1}"], name=f"if{i}", then_branch=g, else_branch=other)
        if i == depth - 1:
            return model([node], [vi("x", [2, 3]), vi("c", [], TensorProto.BOOL)], [vi(f"y{i + 1}", None)],
                         [ints("axes", [0])])
        g = helper.make_graph([node], f"b{i + 1}", [], [vi(f"y{i + 1}", None)])
    raise ValueError("depth must be >= 1")


def unknown_field(tag_number: int, value: int) -> bytes:
    """One varint field with a field number no ONNX message defines."""
    def varint(n: int) -> bytes:
        out = bytearray()
        while True:
            b = n & 0x7F
            n >>= 7
            if n:
                out.append(b | 0x80)
            else:
                out.append(b)
                return bytes(out)

    return varint(tag_number << 3) + varint(value)
