"""Round trip (RELIABILITY.md section 2): everything optimize does not rewrite survives byte for byte.

One model carries every field of the inventory: metadata and doc strings at every level, a local
function, training_info, a sparse initializer, quantization annotations, the device configuration,
an external-data initializer (its file next to the model) and unknown protobuf fields at model and
graph level. A rewrite fires (including a fold of the external initializer); each field is compared
as serialized bytes before and after.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np
import onnx
from google.protobuf import unknown_fields
from onnx import TensorProto, helper, numpy_helper

from shapeflow.cli import main
from shapeflow.io import load_model, load_model_bytes, save_model
from shapeflow.drivers.optimizer import optimize_model
from shapeflow.drivers.verify import verify_models

UNKNOWN_MODEL = b"\x98\x06\xb9\x60"  # field 99, varint 12345
UNKNOWN_GRAPH = b"\xa0\x06\x2a"  # field 100, varint 42


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _meta(key: str, value: str) -> onnx.StringStringEntryProto:
    return onnx.StringStringEntryProto(key=key, value=value)


def build(directory: str) -> str:
    """Write the kitchen-sink model and its data file to ``directory``; returns the model path."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4], doc_string="input doc")
    x.metadata_props.append(_meta("vi", "input"))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4], doc_string="output doc")
    ax = numpy_helper.from_array(np.array([0], np.int64), "ax")
    ax.doc_string = "axes doc"
    big = numpy_helper.from_array(np.linspace(0, 1, 4 * 64, dtype=np.float32).reshape(64, 4), "big")
    w = numpy_helper.from_array(np.arange(4, dtype=np.float32) + 0.5, "w")  # external, 16 bytes
    w.doc_string = "external weight"
    nodes = [
        helper.make_node("Unsqueeze", ["x", "ax"], ["u"], name="unsq", doc_string="node doc"),
        helper.make_node("Squeeze", ["u", "ax"], ["s"], name="sq"),
        helper.make_node("Unsqueeze", ["w", "ax"], ["w1"], name="unsq_w"),  # folds; w stays external
        helper.make_node("Add", ["s", "w1"], ["a"], name="add"),
        helper.make_node("ReduceSum", ["big"], ["bs"], name="rs", keepdims=0),
        helper.make_node("Add", ["a", "bs"], ["b"], name="add2"),
        helper.make_node("local_fn", ["b"], ["y"], name="call", domain="local"),
    ]
    nodes[0].metadata_props.append(_meta("node", "meta"))
    sparse = helper.make_sparse_tensor(numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "sp"),
                                       numpy_helper.from_array(np.array([0, 3], np.int64), "sp_idx"), [4])
    graph = helper.make_graph(nodes, "kitchen", [x], [y], initializer=[ax, big, w], doc_string="graph doc",
                              value_info=[helper.make_tensor_value_info("a", TensorProto.FLOAT, ["batch", 4],
                                                                        doc_string="vi doc")],
                              sparse_initializer=[sparse])
    graph.metadata_props.append(_meta("graph", "meta"))
    qa = graph.quantization_annotation.add()
    qa.tensor_name = "a"
    qa.quant_parameter_tensor_names.append(_meta("SCALE_TENSOR", "big"))
    fn = helper.make_function("local", "local_fn", ["i"], ["o"], [helper.make_node("Relu", ["i"], ["o"])],
                              [helper.make_opsetid("", 13)], doc_string="function doc")
    fn.metadata_props.append(_meta("fn", "meta"))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("local", 1),
                                                    helper.make_opsetid("unused.domain", 3)],
                              functions=[fn], ir_version=10, producer_name="kitchen", producer_version="9.9",
                              doc_string="model doc", domain="org.test", model_version=7)
    model.metadata_props.append(_meta("author", "tests"))
    ti = model.training_info.add()
    ti.initialization.CopyFrom(helper.make_graph([], "init", [], []))
    ti.algorithm.CopyFrom(helper.make_graph([helper.make_node("Relu", ["x"], ["tx"])], "algo", [], []))
    ti.update_binding.append(_meta("big", "tx"))
    if "configuration" in [f.name for f in onnx.ModelProto.DESCRIPTOR.fields]:
        conf = model.configuration.add()
        conf.name = "cfg"
        conf.num_devices = 2
    # w goes to a data file next to the model (written by hand: 16 bytes at offset 0)
    data_path = os.path.join(directory, "kitchen.data")
    with open(data_path, "wb") as fh:
        fh.write(numpy_helper.to_array(w).tobytes())
    w_t = model.graph.initializer[2]
    w_t.ClearField("raw_data")
    w_t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "kitchen.data"), ("offset", "0"), ("length", "16")):
        w_t.external_data.append(_meta(k, v))

    # unknown fields: one in the graph (re-encoded as field 7), one at the end of the model
    graph_bytes = model.graph.SerializeToString() + UNKNOWN_GRAPH
    model.ClearField("graph")
    data = model.SerializeToString() + b"\x3a" + _varint(len(graph_bytes)) + graph_bytes + UNKNOWN_MODEL
    path = os.path.join(directory, "kitchen.onnx")
    with open(path, "wb") as fh:
        fh.write(data)
    return path


def _unknown(msg: object) -> list[tuple[int, int]]:
    return [(f.field_number, f.data) for f in unknown_fields.UnknownFieldSet(msg)]  # type: ignore[arg-type]


def _digest(path: str) -> tuple[str, int, int]:
    st = os.stat(path)
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest(), st.st_mtime_ns, st.st_ino


def test_every_field_survives(tmp_path):
    path = build(str(tmp_path))
    data_file = tmp_path / "kitchen.data"
    before_in, before_data = _digest(path), _digest(str(data_file))
    loaded = load_model(path)
    original = onnx.ModelProto.FromString(loaded.raw)
    assert _unknown(original) == [(99, 12345)] and _unknown(original.graph) == [(100, 42)]

    result = optimize_model(loaded)
    assert result.changed
    assert result.rewrites.get("cancel-unsqueeze-squeeze") == 1 and result.rewrites.get("fold-constant") == 1
    out = str(tmp_path / "kitchen.opt.onnx")
    save_model(result.model, out, input_path=path)
    after = onnx.ModelProto.FromString(open(out, "rb").read())

    # the input and its data file are untouched
    assert _digest(path) == before_in and _digest(str(data_file)) == before_data
    # unknown fields at both levels
    assert _unknown(after) == [(99, 12345)] and _unknown(after.graph) == [(100, 42)]
    # model-level fields, byte for byte
    for name in ("ir_version", "producer_name", "producer_version", "domain", "model_version", "doc_string"):
        assert getattr(after, name) == getattr(original, name), name
    for name in ("opset_import", "metadata_props", "training_info", "functions", "configuration"):
        if name not in [f.name for f in onnx.ModelProto.DESCRIPTOR.fields]:
            continue
        a = [m.SerializeToString() for m in getattr(original, name)]
        b = [m.SerializeToString() for m in getattr(after, name)]
        assert a == b, name
    # graph-level fields
    g0, g1 = original.graph, after.graph
    for name in ("name", "doc_string"):
        assert getattr(g0, name) == getattr(g1, name)
    for name in ("input", "output", "sparse_initializer", "quantization_annotation", "metadata_props", "value_info"):
        assert [m.SerializeToString() for m in getattr(g0, name)] == [m.SerializeToString() for m in getattr(g1, name)], name
    # untouched nodes keep every field and their relative order
    kept = {n.name: n.SerializeToString() for n in g0.node if n.name in ("rs", "add2", "call")}
    assert [n.name for n in g1.node if n.name in kept] == ["rs", "add2", "call"]
    assert all(n.SerializeToString() == kept[n.name] for n in g1.node if n.name in kept)
    # the rewritten ones: the Unsqueeze/Squeeze pair is gone; add reads x
    assert [n.name for n in g1.node] == ["add", "rs", "add2", "call"]
    assert list(g1.node[0].input) == ["x", "w1"]
    # untouched initializers byte for byte; the folded one keeps its external reference, new dims
    inits0 = {t.name: t for t in g0.initializer}
    inits1 = {t.name: t for t in g1.initializer}
    assert inits1["big"].SerializeToString() == inits0["big"].SerializeToString()
    assert "ax" not in inits1  # left unread by the rewrites: removed
    folded = inits1["w1"]
    assert list(folded.dims) == [1, 4] and folded.data_location == TensorProto.EXTERNAL
    assert [(e.key, e.value) for e in folded.external_data] == [(e.key, e.value) for e in inits0["w"].external_data]
    assert folded.doc_string == "external weight" and not folded.HasField("raw_data")
    # the output loads with its data from its own folder and computes the same, bit for bit
    full = onnx.load(out)
    w1 = next(t for t in full.graph.initializer if t.name == "w1")
    assert numpy_helper.to_array(w1).tolist() == [[0.5, 1.5, 2.5, 3.5]]
    report = verify_models(loaded.raw, open(out, "rb").read(), directory=str(tmp_path))
    assert report.ok, report.problems
    # idempotent: optimizing the output again changes nothing, and writes it byte-identical
    again = str(tmp_path / "kitchen.opt2.onnx")
    try:
        main(["optimize", out, "-o", again])
    except SystemExit as exc:
        assert exc.code == 0
    assert open(again, "rb").read() == open(out, "rb").read()


def test_no_op_is_byte_identical(tmp_path):
    model = helper.make_model(
        helper.make_graph([helper.make_node("Relu", ["x"], ["y"], doc_string="d")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N"])]),
        opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    data = model.SerializeToString() + UNKNOWN_MODEL
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    try:
        main(["optimize", str(path), "-o", str(tmp_path / "o.onnx")])
    except SystemExit as exc:
        assert exc.code == 0
    assert (tmp_path / "o.onnx").read_bytes() == data


def test_names_training_info_refers_to_are_kept():
    # the training graph reads the Squeeze output and the folded initializer by name: both stay
    text = """<ir_version: 8, opset_import: ["" : 13]>
    g (float[N, 3] x) => (float[N, 3] y) <int64[1] ax = {0}, float[1, 3] c = {1.0, 2.0, 3.0}>
    {
      t = Unsqueeze(x, ax)
      z = Squeeze(t, ax)
      k = Squeeze(c, ax)
      y = Add(z, k)
    }"""
    model = onnx.parser.parse_model(text)
    ti = model.training_info.add()
    ti.algorithm.CopyFrom(helper.make_graph([helper.make_node("Relu", ["z"], ["tz"])], "algo", [], []))
    ti.update_binding.append(_meta("c", "tz"))
    loaded = load_model_bytes(model.SerializeToString())
    result = optimize_model(loaded)
    after = onnx.ModelProto.FromString(result.model.SerializeToString())
    produced = {o for n in after.graph.node for o in n.output} | {t.name for t in after.graph.initializer}
    assert {"z", "c"} <= produced
    assert after.training_info[0].SerializeToString() == ti.SerializeToString()
