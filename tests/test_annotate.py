"""``infer -o`` refines what the model declares: unknown declared dims and names the exporter
invented become the inferred ones, contradicting declarations are kept (and reported as SF112)
unless ``--fix-declarations``, scalars are written as rank 0, graph outputs are refined only with
``--refine-outputs``."""

from __future__ import annotations

import subprocess
from pathlib import Path

import cli_process
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from shapeflow.drivers.analysis import analyze
from shapeflow.drivers.annotate import annotate
from shapeflow.io import load_model_bytes

ort = pytest.importorskip("onnxruntime")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return cli_process.shapeflow(*args, timeout=120)


def _vi(name: str, dtype: int, shape: list | None) -> onnx.ValueInfoProto:
    """A declaration as the dynamo exporter writes it: None in ``shape`` is a dim with neither a
    value nor a name; ``shape=None`` is no shape field at all."""
    return helper.make_tensor_value_info(name, dtype, shape)


def dynamo_style_model(wrong: bool = False) -> onnx.ModelProto:
    """[batch, 1, samples] -> Conv(k=10, s=5) -> Relu -> Transpose, plus the scalar length that
    shape arithmetic computes; value_info declares every tensor with unknown dims."""
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((4, 1, 10)).astype(np.float32), "w")
    idx = numpy_helper.from_array(np.array(2, np.int64), "idx")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[10], strides=[5]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1]),
        helper.make_node("Shape", ["t"], ["s"]),
        helper.make_node("Gather", ["s", "idx"], ["n"], axis=0),
        helper.make_node("Cast", ["n"], ["nf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["t", "nf"], ["y"]),
    ]
    value_info = [
        _vi("c", TensorProto.FLOAT, [None, 4, None]),
        _vi("r", TensorProto.FLOAT, [None, None, None] if not wrong else [None, 5, None]),
        _vi("t", TensorProto.FLOAT, None),  # no shape at all
        _vi("n", TensorProto.INT64, None),  # a scalar without a shape field: unknown rank to onnx
        _vi("s", TensorProto.INT64, ["s_len"]),  # a name the exporter made up: replaced by the proven dim
    ]
    graph = helper.make_graph(nodes, "g", [_vi("x", TensorProto.FLOAT, ["batch", 1, "samples"])],
                              [_vi("y", TensorProto.FLOAT, [None, None, 4])], [w, idx], value_info=value_info)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _dims(vi: onnx.ValueInfoProto) -> list | None:
    tt = vi.type.tensor_type
    if not tt.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tt.shape.dim]


def _by_name(entries) -> dict:  # type: ignore[no-untyped-def]
    return {vi.name: vi for vi in entries}


def test_unknown_declared_dims_are_filled_and_scalars_are_rank_0(tmp_path: Path) -> None:
    src, out = tmp_path / "m.onnx", tmp_path / "out.onnx"
    onnx.save(dynamo_style_model(), src)
    r = run("infer", str(src), "-o", str(out))
    assert r.returncode == 0, r.stderr
    m = onnx.load(out)
    vi = _by_name(m.graph.value_info)
    length = "floor(samples/5) - 1"
    assert _dims(vi["c"]) == ["batch", 4, length]
    assert _dims(vi["r"]) == ["batch", 4, length]
    assert _dims(vi["t"]) == ["batch", length, 4]
    assert _dims(vi["n"]) == []  # rank 0, a present shape without dims
    assert _dims(vi["s"]) == [3]  # an invented name becomes the proven dim (as onnx's inference does)
    assert vi["nf"].type.tensor_type.HasField("shape") and _dims(vi["nf"]) == []  # added, rank 0
    assert _dims(_by_name(m.graph.output)["y"]) == [None, None, 4]  # the signature is the user's
    # c 2, r 3, t 3 (a missing shape gets all its dims), n none (rank 0); nf is a new entry
    assert "1 value_info entries added, 8 declared dims filled, 1 invented dim names replaced" in r.stderr, r.stderr
    # the written model is valid, and its declarations hold at run time
    onnx.checker.check_model(m, full_check=True)
    _holds_at_run_time(m)


def test_outputs_are_refined_only_when_asked(tmp_path: Path) -> None:
    src, out = tmp_path / "m.onnx", tmp_path / "out.onnx"
    onnx.save(dynamo_style_model(), src)
    r = run("infer", str(src), "-o", str(out), "--refine-outputs")
    assert r.returncode == 0, r.stderr
    m = onnx.load(out)
    assert _dims(_by_name(m.graph.output)["y"]) == ["batch", "floor(samples/5) - 1", 4]
    assert "10 declared dims filled" in r.stderr, r.stderr


def test_a_contradicting_declaration_is_kept_and_reported(tmp_path: Path) -> None:
    src, out = tmp_path / "m.onnx", tmp_path / "out.onnx"
    onnx.save(dynamo_style_model(wrong=True), src)
    r = run("infer", str(src), "-o", str(out))
    assert r.returncode == 1 and "SF112" in r.stdout, (r.stdout, r.stderr)
    vi = _by_name(onnx.load(out).graph.value_info)
    assert _dims(vi["r"]) == [None, 5, None]  # left exactly as declared
    assert "1 contradicting declarations kept (SF112)" in r.stderr


def test_annotate_api_counts_and_is_idempotent() -> None:
    loaded = load_model_bytes(dynamo_style_model().SerializeToString(), "m.onnx")
    a = analyze(loaded)
    first = annotate(a.graph, a.inference)
    assert (first.added, first.filled, first.kept, first.replaced) == (1, 8, 0, 1)
    again = load_model_bytes(loaded.proto.SerializeToString(), "m.onnx")
    b = analyze(again)
    second = annotate(b.graph, b.inference)
    assert (second.added, second.filled, second.kept, second.replaced) == (0, 0, 0, 0)


def _holds_at_run_time(m: onnx.ModelProto) -> None:
    """Every declared value_info dim, bound to the run's lengths, equals the runtime dim."""
    names = [vi.name for vi in m.graph.value_info]
    exposed = onnx.ModelProto()
    exposed.CopyFrom(m)
    for n in names:
        exposed.graph.output.append(onnx.ValueInfoProto(name=n))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 4
    sess = ort.InferenceSession(exposed.SerializeToString(), so, providers=["CPUExecutionProvider"])
    decl = _by_name(m.graph.value_info)
    for batch, samples in ((1, 10), (2, 14), (3, 16003)):
        outs = dict(zip([o.name for o in sess.get_outputs()],
                        sess.run(None, {"x": np.zeros((batch, 1, samples), np.float32)})))
        env = {"batch": batch, "samples": samples, "floor(samples/5) - 1": samples // 5 - 1}
        for n in names:
            dims = _dims(decl[n])
            assert dims is not None and len(dims) == outs[n].ndim, n
            for d, rt in zip(dims, outs[n].shape):
                if isinstance(d, int) or d in env:
                    assert env.get(d, d) == rt, (n, d, rt)


def test_scalars_of_an_example_are_written_as_rank_0(tmp_path: Path) -> None:
    src = Path(__file__).resolve().parent.parent / "examples" / "attention.onnx"
    out = tmp_path / "out.onnx"
    r = run("infer", str(src), "-o", str(out))
    assert r.returncode == 0, r.stderr
    entries = onnx.load(out).graph.value_info
    scalars = [vi for vi in entries if _dims(vi) == []]
    assert scalars, "the example computes scalars (Gather of a Shape)"
    assert all(_dims(vi) is not None for vi in entries)  # no entry reads as unknown rank


def _declared_unknown_but_known(model: onnx.ModelProto) -> int:
    a = analyze(load_model_bytes(model.SerializeToString(), "m.onnx"), rules=[])
    gaps = 0
    for vi in model.graph.value_info:
        t = a.inference.shape_of(vi.name)
        tt = vi.type.tensor_type
        if t is None:
            continue
        if not tt.HasField("shape"):
            gaps += sum(d is not None for d in t) + (t == ())
            continue
        if len(tt.shape.dim) == len(t):
            gaps += sum(1 for d, x in zip(tt.shape.dim, t)
                        if x is not None and not d.HasField("dim_value") and not d.dim_param)
    return gaps


def test_a_dynamo_export_has_every_known_dim_filled(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnxscript")  # the dynamo exporter's dependency

    class Encoder(torch.nn.Module):  # wav2vec2-like: strided convs, GroupNorm, a sliced positional conv
        def __init__(self) -> None:
            super().__init__()
            self.c1 = torch.nn.Conv1d(1, 8, 10, stride=5)
            self.gn = torch.nn.GroupNorm(8, 8)  # exported with declarations of unknown dims
            self.c2 = torch.nn.Conv1d(8, 8, 3, stride=2)
            self.pos = torch.nn.Conv1d(8, 8, 4, padding=2)

        def forward(self, x):  # type: ignore[no-untyped-def]
            h = torch.nn.functional.gelu(self.c2(torch.nn.functional.gelu(self.gn(self.c1(x)))))
            return (h + self.pos(h)[:, :, :-1]).transpose(1, 2)

    src, out = tmp_path / "m.onnx", tmp_path / "out.onnx"
    dims = {0: torch.export.Dim("batch", min=1, max=64), 2: torch.export.Dim("samples", min=40, max=100_000)}
    prog = torch.onnx.export(Encoder().eval(), (torch.randn(2, 1, 400),), input_names=["x"], dynamo=True,
                             dynamic_shapes={"x": dims}, opset_version=18)
    prog.save(str(src))
    before = _declared_unknown_but_known(onnx.load(src))
    r = run("infer", str(src), "-o", str(out))
    assert r.returncode == 0, r.stderr
    m = onnx.load(out)
    assert _declared_unknown_but_known(m) == 0
    assert before > 0 and f"{before} declared dims filled" in r.stderr, (before, r.stderr)
