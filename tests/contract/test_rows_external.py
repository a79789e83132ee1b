"""RELIABILITY.md 1.2 rows 37-42, 45 and 50: external data.

External data is never opened by infer, lint or optimize (tests/contract/test_audit.py proves it
with an audit hook; here RLIMIT_AS and the untouched files show it). A location that escapes the
model's folder is an SF001 finding for infer and lint (exit 1) and a refusal for the commands that
write a model, optimize and infer -o (exit 2): the output would pass the reference on. The rows run
infer with -o; test_infer_without_output_reports_it covers infer alone.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from .harness import WARNING_EXIT, E, Row, Setup, check_row, params
from .models import ints, model, vi, weight_model, with_external_weight, write

SECRET = b"-----BEGIN OPENSSH PRIVATE KEY----- not for you\n"


def folder(tmp: Path) -> Path:
    """``tmp/model`` for the model, and ``tmp/secret.bin`` next to it: what an escape would read."""
    d = tmp / "model"
    d.mkdir()
    (tmp / "secret.bin").write_bytes(SECRET.ljust(64, b"."))
    return d


def escaping(*says: str, names: tuple[str, ...] = ("'w'",)) -> dict:
    return {
        "infer": E(2, *says, code="SF001", names=names, writes=False),  # (with -o)
        "lint": E(1, *says, code="SF001", severity="error", names=names),
        "optimize": E(2, *says, code="SF001", names=names, writes=False),
    }


def fine_with_warning(*says: str, names: tuple[str, ...] = ("'w'",)) -> dict:
    return {
        "infer": E(WARNING_EXIT, *says, code="SF001", severity="warning", names=names),
        "lint": E(WARNING_EXIT, *says, code="SF001", severity="warning", names=names),
        "optimize": E(WARNING_EXIT, writes=True),
    }


# -- 37 location strings -------------------------------------------------------------------------------

def no_location_key(tmp: Path) -> Setup:
    """data_location EXTERNAL, but no "location" entry at all (only offset and length)."""
    d = folder(tmp)
    m, _ = weight_model()
    from .models import external

    external(m, "w", "weights.bin", offset="0", length="16")
    t = m.graph.initializer[0]
    kept = [(e.key, e.value) for e in t.external_data if e.key != "location"]
    del t.external_data[:]
    for k, v in kept:
        e = t.external_data.add()
        e.key, e.value = k, v
    return Setup(write(m, d / "m.onnx"))


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def no_location_key_padded(tmp: Path) -> Setup:
    """The same, with data_location = EXTERNAL written as padded varints (tag and value), which
    protobuf accepts: the file holds neither b"location" nor the canonical bytes 0x70 0x01."""
    setup = no_location_key(tmp)
    m = onnx.load(setup.model, load_external_data=False)
    t = m.graph.initializer[0]
    assert t.data_location == TensorProto.EXTERNAL
    t.ClearField("data_location")
    tensors = [x.SerializeToString() for x in m.graph.initializer]
    tensors[0] += b"\xf0\x80\x00" + b"\x81\x80\x00"  # field 14 = 1, padded
    del m.graph.initializer[:]
    graph = m.graph.SerializeToString() + b"".join(
        b"\x2a" + _varint(len(x)) + x for x in tensors)  # initializer (field 5)
    m.ClearField("graph")
    data = m.SerializeToString() + b"\x3a" + _varint(len(graph)) + graph  # graph (7)
    assert b"location" not in data and b"\x70\x01" not in data
    assert onnx.ModelProto.FromString(data).graph.initializer[0].data_location == TensorProto.EXTERNAL
    Path(setup.model).write_bytes(data)
    return setup


def location(loc: str):  # type: ignore[no-untyped-def]
    def build(tmp: Path) -> Setup:
        d = folder(tmp)
        path, _ = with_external_weight(d, loc, data_path=tmp / "unused.bin")
        return Setup(path)
    return build


# -- 38 links ------------------------------------------------------------------------------------------

def data_symlink_out(tmp: Path) -> Setup:
    d = folder(tmp)
    os.symlink("../secret.bin", d / "weights.bin")
    path, _ = with_external_weight(d, "weights.bin", data_path=d / "weights.bin")
    return Setup(path)


def parent_symlink_out(tmp: Path) -> Setup:
    d = folder(tmp)
    (tmp / "elsewhere").mkdir()
    (tmp / "elsewhere" / "weights.bin").write_bytes(np.arange(4, dtype=np.float32).tobytes())
    os.symlink("../elsewhere", d / "sub")
    path, _ = with_external_weight(d, "sub/weights.bin", data_path=d / "sub" / "weights.bin")
    return Setup(path)


def data_hardlink(tmp: Path) -> Setup:
    d = folder(tmp)
    (tmp / "elsewhere.bin").write_bytes(np.arange(4, dtype=np.float32).tobytes())
    os.link(tmp / "elsewhere.bin", d / "weights.bin")
    path, _ = with_external_weight(d, "weights.bin", data_path=d / "weights.bin")
    return Setup(path)


# -- 39, 40, 41 numbers, keys, markers --------------------------------------------------------------------

def entries(offset: str | None, length: str | None, size: int = 16, extra: tuple = ()):  # type: ignore[no-untyped-def]
    def build(tmp: Path) -> Setup:
        d = folder(tmp)
        (d / "weights.bin").write_bytes(np.arange(4, dtype=np.float32).tobytes()[:size])
        path, _ = with_external_weight(d, "weights.bin", data_path=d / "weights.bin", offset=offset,
                                       length=length, extra=extra)
        return Setup(path)
    return build


def overlapping(tmp: Path) -> Setup:
    d = folder(tmp)
    (d / "weights.bin").write_bytes(np.arange(4, dtype=np.float32).tobytes())
    w = numpy_helper.from_array(np.arange(4, dtype=np.float32), "w")
    w2 = numpy_helper.from_array(np.arange(4, dtype=np.float32), "w2")
    for t, off in ((w, "0"), (w2, "8")):
        t.ClearField("raw_data")
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", "weights.bin"), ("offset", off), ("length", "16" if off == "0" else "8")):
            e = t.external_data.add()
            e.key, e.value = k, v
    w2.dims[:] = [2]
    nodes = [helper.make_node("Add", ["x", "w"], ["a"], name="add"),
             helper.make_node("Unsqueeze", ["a", "axes"], ["y"], name="unsq"),
             helper.make_node("Identity", ["w2"], ["z"], name="id")]
    m = model(nodes, [vi("x", [2, 4])], [vi("y", [1, 2, 4]), vi("z", [2])], [w, w2, ints("axes", [0])])
    return Setup(write(m, d / "m.onnx"))


# -- 42 sparse initializers ----------------------------------------------------------------------------------

def sparse_model(values: onnx.TensorProto, dims: list[int]) -> onnx.ModelProto:
    indices = numpy_helper.from_array(np.array([5], dtype=np.int64), "sp_idx")
    sp = helper.make_sparse_tensor(values, indices, dims)
    nodes = [helper.make_node("Unsqueeze", ["sp", "axes"], ["y"], name="unsq")]
    m = model(nodes, [], [vi("y", None)], [ints("axes", [0])])
    m.graph.sparse_initializer.append(sp)
    return m


def sparse_huge(tmp: Path) -> Setup:
    values = numpy_helper.from_array(np.array([1.5], dtype=np.float32), "sp")
    return Setup(write(sparse_model(values, [2**40]), tmp / "m.onnx"))  # densified: 4 TiB


def sparse_escaping(tmp: Path) -> Setup:
    d = folder(tmp)
    values = onnx.TensorProto(name="sp", data_type=TensorProto.FLOAT, dims=[1])
    values.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "../secret.bin"), ("offset", "0"), ("length", "4")):
        e = values.external_data.add()
        e.key, e.value = k, v
    return Setup(write(sparse_model(values, [16]), d / "m.onnx"))


# -- 45 over 2 GiB of external data ---------------------------------------------------------------------------

HUGE = 5 * 2**29  # 2.5 GiB of float32


def huge_external(tmp: Path) -> Setup:
    d = tmp / "model"
    d.mkdir()
    data = d / "weights.bin"
    with open(data, "wb") as fh:
        fh.truncate(HUGE)  # sparse: no disk, and RLIMIT_AS (2 GiB) kills a reader
    w = onnx.TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[HUGE // 4])
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "weights.bin"), ("offset", "0"), ("length", str(HUGE))):
        e = w.external_data.add()
        e.key, e.value = k, v
    nodes = [helper.make_node("Unsqueeze", ["w", "axes"], ["u"], name="unsq"),
             helper.make_node("Squeeze", ["u", "axes"], ["s"], name="sq"),
             helper.make_node("Relu", ["s"], ["y"], name="relu")]
    m = model(nodes, [], [vi("y", [HUGE // 4])], [w, ints("axes", [0])])
    return Setup(write(m, d / "m.onnx"))


# -- 50 Hugging Face cache ---------------------------------------------------------------------------------

def hf_cache(tmp: Path) -> Setup:
    repo = tmp / "hub" / "models--org--name"
    blobs, snap = repo / "blobs", repo / "snapshots" / "0123abc"
    blobs.mkdir(parents=True)
    snap.mkdir(parents=True)
    m, w = weight_model()
    from .models import external

    external(m, "w", "model.onnx.data", offset="0", length="16")
    (blobs / "b1e2f3").write_bytes(m.SerializeToString())
    (blobs / "d4c5a6").write_bytes(w.tobytes())
    os.symlink("../../blobs/b1e2f3", snap / "model.onnx")
    os.symlink("../../blobs/d4c5a6", snap / "model.onnx.data")
    return Setup(str(snap / "model.onnx"))


GiB = 1 << 30

ROWS = [
    Row("37-location-dotdot", location("../secret.bin"), escaping("'../secret.bin' escapes the model folder")),
    Row("37-location-deep-dotdot", location("a/../../secret.bin"), escaping("escapes the model folder")),
    Row("37-location-windows-dotdot", location("..\\secret.bin"), escaping("escapes the model folder")),
    Row("37-location-absolute", location("/etc/passwd"), escaping("'/etc/passwd' is an absolute path")),
    Row("37-location-drive-letter", location("C:\\weights.bin"), escaping("has a drive letter")),
    Row("37-location-nul", location("weights.bin\x00../../secret.bin"), escaping("contains a NUL byte")),
    Row("37-location-empty", location(""), escaping("external data location is empty")),
    # (the engine's preflight, now passes/requires.py, once skipped the check when the file had no b"location" bytes)
    Row("37-location-key-missing", no_location_key, escaping("external data location is empty")),
    Row("37-location-key-missing-padded", no_location_key_padded, escaping("external data location is empty")),
    Row("38-data-symlink-out", data_symlink_out, escaping("resolves outside the model folder via a symlink")),
    Row("38-parent-symlink-out", parent_symlink_out, escaping("resolves outside the model folder via a symlink")),
    Row("38-data-hardlink", data_hardlink, fine_with_warning("is a hard link (2 links)")),
    Row("39-offset-negative", entries("-1", "16"), escaping("external data offset -1 is negative")),
    Row("39-offset-not-a-number", entries("0x10", "16"), escaping("external data offset '0x10' is not an integer")),
    Row("39-length-not-a-number", entries("0", "16.0"), escaping("external data length '16.0' is not an integer")),
    Row("39-past-eof", entries("0", "16", size=8), escaping("offset+length beyond data file size (8 B)")),
    Row("39-offset-past-eof", entries("64", "16"), escaping("offset+length beyond data file size (16 B)")),
    Row("39-overlapping", overlapping, fine_with_warning("overlaps", names=("'w2'",))),
    Row("40-unknown-key", entries("0", "16", extra=(("__class__", "os.system"),)),
        fine_with_warning("unknown external data key '__class__'")),
    Row("41-ort-memory-marker", location("*/_ORT_MEM_ADDR_/*"), escaping("reserved ORT marker in model file")),
    Row("42-sparse-huge-dims", sparse_huge, {
        "infer": E(0, writes=True, max_rss=GiB // 2), "lint": E(0, max_rss=GiB // 2),
        "optimize": E(0, writes=True, max_rss=GiB // 2)}),
    Row("42-sparse-external-escaping", sparse_escaping, escaping("escapes the model folder", names=("'sp'",))),
    Row("45-2.5GiB-external-data", huge_external, {
        "infer": E(0, writes=True, max_rss=GiB // 2), "lint": E(0, max_rss=GiB // 2),
        "optimize": E(0, writes=True, max_rss=GiB // 2)}),
    Row("50-hugging-face-cache", hf_cache, {"infer": E(0, writes=True), "lint": E(0), "optimize": E(0, writes=True)}),
]


@pytest.mark.parametrize("row, cmd", params(ROWS))
def test_row(row: Row, cmd: str, tmp_path: Path) -> None:
    check_row(row, cmd, tmp_path)


@pytest.mark.parametrize("build, says", [
    (location("../secret.bin"), "'../secret.bin' escapes the model folder"),
    (no_location_key, "external data location is empty"),
    (data_symlink_out, "resolves outside the model folder via a symlink"),
])
def test_infer_without_output_reports_it(build, says: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """infer writes nothing without -o: an unsafe reference is a finding there (exit 1), as in lint."""
    from .harness import assert_untouched, run_cli, snapshot

    setup = build(tmp_path)
    before = snapshot(tmp_path)
    r = run_cli(["infer", setup.model], cwd=tmp_path)
    assert r.returncode == 1, r.describe()
    assert [line for line in r.lines() if says in line and "error SF001" in line and "'w'" in line], r.describe()
    assert_untouched(before, snapshot(tmp_path))
