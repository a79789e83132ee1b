"""Tests for shapeflow.io: hostile inputs (RELIABILITY.md section 1) and safe, atomic writes."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import socket
import stat
import sys
import threading
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import shapeflow.io as sfio
from shapeflow.errors import EXIT_REJECTED, ModelUnreadableError, UsageError, WriteError
from shapeflow.io import (
    ExternalDataProblem,
    LoadedModel,
    external_data_problems,
    load_model,
    load_model_bytes,
    save_model,
)
from shapeflow.limits import Limits

# --------------------------------------------------------------------------------------------
# fixtures and builders
# --------------------------------------------------------------------------------------------


def make_model(*, extra_inits: list[TensorProto] | None = None, opset: int = 13) -> onnx.ModelProto:
    """x[2,3] -Unsqueeze(axes=[0])-> y[1,2,3] -Squeeze-> z, with an int64 axes initializer."""
    axes = numpy_helper.from_array(np.array([0], dtype=np.int64), "axes")
    nodes = [
        helper.make_node("Unsqueeze", ["x", "axes"], ["y"], name="u"),
        helper.make_node("Squeeze", ["y", "axes"], ["z"], name="s"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3])],
        initializer=[axes, *(extra_inits or [])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="test")


def nested_model(depth: int) -> onnx.ModelProto:
    """A model whose main graph holds an If whose then-branch holds an If ... ``depth`` deep."""
    g = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y0"])],
        "g0",
        [],
        [helper.make_tensor_value_info("y0", TensorProto.FLOAT, [1])],
    )
    for i in range(depth):
        node = helper.make_node("If", ["c"], [f"y{i + 1}"], then_branch=g)
        out = helper.make_tensor_value_info(f"y{i + 1}", TensorProto.FLOAT, [1])
        g = helper.make_graph([node], f"g{i + 1}", [], [out])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def model_file(tmp_path: Path, name: str = "m.onnx", model: onnx.ModelProto | None = None) -> Path:
    return write(tmp_path / name, (model or make_model()).SerializeToString())


def fingerprint(path: Path) -> tuple[str, int, int]:
    st = os.stat(path)
    return hashlib.sha256(path.read_bytes()).hexdigest(), st.st_mtime_ns, st.st_ino


def unreadable(fn, *args, **kw) -> ModelUnreadableError:  # type: ignore[no-untyped-def]
    with pytest.raises(ModelUnreadableError) as info:
        fn(*args, **kw)
    err = info.value
    assert err.code == "SF001"
    assert err.exit_code == EXIT_REJECTED
    assert "\n" not in str(err)
    return err


def external_tensor(name: str, entries: list[tuple[str, str]], dims: tuple[int, ...] = (3,)) -> TensorProto:
    t = TensorProto()
    t.name = name
    t.data_type = TensorProto.FLOAT
    t.dims.extend(dims)
    t.data_location = TensorProto.EXTERNAL
    for key, value in entries:
        e = t.external_data.add()
        e.key, e.value = key, value
    return t


def model_with_external(entries: list[tuple[str, str]], dims: tuple[int, ...] = (3,)) -> onnx.ModelProto:
    t = external_tensor("w", entries, dims)
    graph = helper.make_graph(
        [helper.make_node("Identity", ["w"], ["y"])],
        "g",
        [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(dims))],
        initializer=[t],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def listing(directory: Path) -> list[str]:
    return sorted(os.listdir(directory))


class _OpenRecorder:
    """Audit hooks cannot be removed, so one recorder is installed once and switched on/off."""

    def __init__(self) -> None:
        self.active = False
        self.paths: list[str] = []

    def __call__(self, event: str, args: tuple) -> None:  # type: ignore[type-arg]
        if self.active and event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
            self.paths.append(os.fsdecode(args[0]))


_RECORDER = _OpenRecorder()
sys.addaudithook(_RECORDER)


# --------------------------------------------------------------------------------------------
# load_model: success
# --------------------------------------------------------------------------------------------


def test_load_returns_exact_bytes_and_real_directory(tmp_path: Path) -> None:
    path = model_file(tmp_path)
    loaded = load_model(path)
    assert isinstance(loaded, LoadedModel)
    assert loaded.path == str(path)
    assert loaded.raw == path.read_bytes()
    assert loaded.directory == os.path.realpath(tmp_path)
    assert loaded.proto.graph.node[0].op_type == "Unsqueeze"
    assert "raw=" not in repr(loaded)  # never dump the model bytes


def test_load_model_bytes(tmp_path: Path) -> None:
    raw = make_model().SerializeToString()
    loaded = load_model_bytes(raw, name="stdin")
    assert loaded.path == "stdin" and loaded.raw == raw and loaded.directory == ""
    err = unreadable(load_model_bytes, b"", name="stdin")
    assert err.file == "stdin" and err.message == "empty file (0 bytes); not an ONNX model"


def test_concatenated_models_still_parse(tmp_path: Path) -> None:
    # protobuf merges the two messages; the duplicate definitions are the graph checker's job
    raw = make_model().SerializeToString()
    loaded = load_model(write(tmp_path / "cat.onnx", raw + raw))
    assert len(loaded.proto.graph.node) == 4


def test_ai_onnx_domain_name_counts_as_default(tmp_path: Path) -> None:
    m = make_model()
    m.opset_import[0].domain = "ai.onnx"
    assert load_model(model_file(tmp_path, model=m)).proto.opset_import[0].version == 13


# --------------------------------------------------------------------------------------------
# load_model: non-files and unsafe paths
# --------------------------------------------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.onnx"
    err = unreadable(load_model, path)
    assert err.message == "no such file"
    assert err.file == str(path)
    assert str(path) in str(err) and "SF001" in str(err)


def test_directory_rejected(tmp_path: Path) -> None:
    (tmp_path / "d.onnx").mkdir()
    assert unreadable(load_model, tmp_path / "d.onnx").message == "not a regular file (directory)"


@contextlib.contextmanager
def traced():
    """``peak()``: the most memory Python allocated inside the block (tracemalloc), in bytes."""
    import tracemalloc

    seen: dict[str, int] = {}
    tracemalloc.start()
    try:
        yield lambda: seen["peak"]
    finally:
        seen["peak"] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()


def test_fifo_rejected_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.onnx"
    os.mkfifo(fifo)
    outcome: dict[str, BaseException] = {}

    def run() -> None:
        try:
            load_model(fifo)
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            outcome["exc"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    # a hang guard, not a time budget: a blocking open of a FIFO without a writer never returns
    worker.join(timeout=120)
    assert not worker.is_alive(), "load_model blocked on a FIFO"
    exc = outcome["exc"]
    assert isinstance(exc, ModelUnreadableError)
    assert exc.message == "not a regular file (FIFO)"


def test_symlink_to_dev_zero_rejected(tmp_path: Path) -> None:
    link = tmp_path / "zero.onnx"
    link.symlink_to("/dev/zero")
    _RECORDER.paths.clear()
    _RECORDER.active = True
    try:
        assert unreadable(load_model, link).message == "not a regular file (character device)"
    finally:
        _RECORDER.active = False
    assert _RECORDER.paths == []  # refused by stat, the device was never opened


def test_socket_rejected(tmp_path: Path) -> None:
    path = tmp_path / "s.onnx"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(path))
        assert unreadable(load_model, path).message == "not a regular file (socket)"
    finally:
        sock.close()


def test_repo_root_containment(tmp_path: Path) -> None:
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    (repo / "sub").mkdir(parents=True)
    outside.mkdir()
    model_file(outside, "m.onnx")
    model_file(repo / "sub", "m.onnx")
    (repo / "out.onnx").symlink_to(outside / "m.onnx")
    (repo / "in.onnx").symlink_to(repo / "sub" / "m.onnx")

    err = unreadable(load_model, repo / "out.onnx", repo_root=str(repo))
    assert err.message == "symlink points outside the repository"
    assert load_model(repo / "in.onnx", repo_root=str(repo)).proto.HasField("graph")
    assert load_model(repo / "sub" / "m.onnx", repo_root=str(repo)).proto.HasField("graph")
    err = unreadable(load_model, outside / "m.onnx", repo_root=str(repo))
    assert err.message.startswith("path is outside the repository")
    # without repo_root the same link is fine (infer on a user's own path)
    assert load_model(repo / "out.onnx").proto.HasField("graph")


# --------------------------------------------------------------------------------------------
# load_model: sizes
# --------------------------------------------------------------------------------------------


def test_empty_file(tmp_path: Path) -> None:
    err = unreadable(load_model, write(tmp_path / "e.onnx", b""))
    assert err.message == "empty file (0 bytes); not an ONNX model"


def test_over_protobuf_limit_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "big.onnx"
    with open(path, "wb") as fh:
        fh.truncate(2**31)  # sparse: costs no disk and, if wrongly read, would cost 2 GiB RAM
    with traced() as peak:
        err = unreadable(load_model, path)
    assert err.message == "2147483648 bytes > protobuf 2 GiB limit; such models must use external data"
    assert peak() < 16 << 20  # refused from its size: never read (reading it would take 2 GiB)


def test_lowered_max_bytes_names_the_flag(tmp_path: Path) -> None:
    path = model_file(tmp_path)
    size = path.stat().st_size
    err = unreadable(load_model, path, Limits(max_bytes=size - 1))
    assert err.message == f"limit max-bytes exceeded (value {size}); raise with --max-bytes"
    assert load_model(path, Limits(max_bytes=size)).raw == path.read_bytes()
    err = unreadable(load_model_bytes, path.read_bytes(), "b", Limits(max_bytes=10))
    assert "raise with --max-bytes" in err.message


def test_raised_max_bytes_reports_the_users_limit(tmp_path: Path) -> None:
    path = tmp_path / "huge.onnx"
    with open(path, "wb") as fh:
        fh.truncate(2**32 + 1)
    err = unreadable(load_model, path, Limits(max_bytes=2**32))
    assert err.message == f"limit max-bytes exceeded (value {2**32 + 1}); raise with --max-bytes"


# --------------------------------------------------------------------------------------------
# load_model: not a model / damaged
# --------------------------------------------------------------------------------------------


def test_git_lfs_pointer(tmp_path: Path) -> None:
    pointer = b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"0" * 64 + b"\nsize 123\n"
    err = unreadable(load_model, write(tmp_path / "lfs.onnx", pointer))
    assert err.message == "git-lfs pointer, run `git lfs pull`"


@pytest.mark.parametrize(
    "data",
    [
        b"\x89PNG\r\n\x1a\n" + bytes(64),
        b"<!DOCTYPE html><html><body>404</body></html>",
        b"\xff" * 64,
        b"\x80",
    ],
    ids=["png", "html", "ff", "lone-continuation-byte"],
)
def test_foreign_files(tmp_path: Path, data: bytes) -> None:
    err = unreadable(load_model, write(tmp_path / "x.onnx", data))
    assert err.message.startswith("not an ONNX protobuf (parse failed")


def test_truncation_at_every_cut_point(tmp_path: Path) -> None:
    raw = make_model().SerializeToString()
    for cut in range(1, len(raw)):
        unreadable(load_model_bytes, raw[:cut])  # every strict prefix is refused, in one line
    # cuts that land inside a field (the graph, or the trailing opset_import) say so
    for cut in (len(raw) // 4, len(raw) // 2, 3 * len(raw) // 4, len(raw) - 1):
        err = unreadable(load_model_bytes, raw[:cut])
        assert err.message.startswith("truncated or corrupt protobuf"), (cut, err.message)
    err = unreadable(load_model, write(tmp_path / "t.onnx", raw[: len(raw) // 2]))
    assert err.message.startswith("truncated or corrupt protobuf (file ends inside field 'graph'")


def test_corruption_inside_the_graph(tmp_path: Path) -> None:
    raw = bytearray(make_model().SerializeToString())
    graph = make_model().graph.SerializeToString()
    at = bytes(raw).index(graph)
    raw[at] = 0x07  # field 0, wire type 7: invalid as the first tag of the graph message
    err = unreadable(load_model_bytes, bytes(raw))
    assert err.message.startswith("truncated or corrupt protobuf")


def test_nesting_too_deep(tmp_path: Path) -> None:
    ok = load_model(model_file(tmp_path, "n31.onnx", nested_model(31)))
    assert ok.proto.graph.node[0].op_type == "If"
    err = unreadable(load_model, model_file(tmp_path, "n32.onnx", nested_model(32)))
    assert err.message == "nesting too deep for protobuf (max ≈ 31 levels)"


def test_nesting_found_by_wire_scan_too() -> None:
    # the scan is the fallback when the parser's message does not say "MaxDepth"
    raw = nested_model(32).SerializeToString()
    assert sfio._explain_decode_failure(raw, "Wire format was corrupt") == (
        "nesting too deep for protobuf (max ≈ 31 levels)"
    )


# --------------------------------------------------------------------------------------------
# load_model: required fields and opsets
# --------------------------------------------------------------------------------------------


def test_missing_graph() -> None:
    m = make_model()
    m.ClearField("graph")
    assert unreadable(load_model_bytes, m.SerializeToString()).message == "model has no graph"


def test_missing_ir_version() -> None:
    m = make_model()
    m.ClearField("ir_version")
    assert unreadable(load_model_bytes, m.SerializeToString()).message == "model has no ir_version"


def test_missing_default_opset() -> None:
    m = make_model()
    del m.opset_import[:]
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    assert unreadable(load_model_bytes, m.SerializeToString()).message == "no opset_import for ai.onnx"


@pytest.mark.parametrize(
    ("domain", "version"),
    [("", -1), ("", 0), ("", 2**62), ("", 1001), ("com.evil", 5000), ("ai.onnx.ml", -3)],
)
def test_invalid_opset_versions(domain: str, version: int) -> None:
    m = make_model()
    if domain:
        m.opset_import.append(helper.make_opsetid(domain, version))
    else:
        m.opset_import[0].version = version
    err = unreadable(load_model_bytes, m.SerializeToString())
    assert err.message == f"invalid opset version {version} for domain '{domain}'"


def test_conflicting_default_opsets() -> None:
    m = make_model()
    m.opset_import.append(helper.make_opsetid("ai.onnx", 17))
    err = unreadable(load_model_bytes, m.SerializeToString())
    assert err.message == "conflicting opset_import versions for ai.onnx (13, 17)"


def test_invalid_opset_in_function() -> None:
    m = make_model()
    fn = helper.make_function("local", "F", ["a"], ["b"], [helper.make_node("Identity", ["a"], ["b"])],
                              [helper.make_opsetid("", -5)])  # fmt: skip
    m.functions.append(fn)
    err = unreadable(load_model_bytes, m.SerializeToString())
    assert err.message == "invalid opset version -5 for domain '' in function 'local::F'"


# --------------------------------------------------------------------------------------------
# load_model: tensors whose dims do not match their data (RELIABILITY rows 31, 32)
# --------------------------------------------------------------------------------------------


def _raw_tensor(name: str, dtype: int, dims: list[int], raw: bytes) -> TensorProto:
    t = TensorProto()
    t.name, t.data_type = name, dtype
    t.dims.extend(dims)
    t.raw_data = raw
    return t


def _typed_tensor(name: str, dtype: int, dims: list[int], field: str, values: list[object]) -> TensorProto:
    t = TensorProto()
    t.name, t.data_type = name, dtype
    t.dims.extend(dims)
    getattr(t, field).extend(values)
    return t


def test_raw_data_size_mismatch() -> None:
    m = make_model(extra_inits=[_raw_tensor("w", TensorProto.FLOAT, [3, 2], b"12345")])
    err = unreadable(load_model_bytes, m.SerializeToString())
    assert err.message == "initializer 'w' raw_data is 5 bytes, expected 24"
    assert err.tensor == "w"


def test_huge_dims_without_data() -> None:
    m = make_model()
    axes = m.graph.initializer[0]
    axes.ClearField("raw_data")
    axes.ClearField("int64_data")
    del axes.dims[:]
    axes.dims.append(2**40)
    data = m.SerializeToString()
    with traced() as peak:
        err = unreadable(load_model_bytes, data)
    assert err.message == "initializer 'axes' declares 1099511627776 elements but holds 0 bytes"
    assert peak() < 16 << 20  # computed, never allocated (2^40 elements)


def test_constant_node_with_huge_dims() -> None:
    m = make_model()
    value = TensorProto()
    value.data_type = TensorProto.FLOAT
    value.dims.extend([2**31, 2**31])
    m.graph.node.insert(0, helper.make_node("Constant", [], ["c"], name="big", value=value))
    err = unreadable(load_model_bytes, m.SerializeToString())
    assert err.message == (
        "Constant node 'big' attribute 'value' declares 4611686018427387904 elements but holds 0 bytes"
    )


def test_subgraph_initializer_checked() -> None:
    bad = _raw_tensor("sw", TensorProto.INT64, [2], b"\x00" * 15)
    t_out = helper.make_tensor_value_info("t", TensorProto.INT64, [2])
    then = helper.make_graph([helper.make_node("Identity", ["sw"], ["t"])], "then", [], [t_out], initializer=[bad])
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["e"])], "else", [],
                              [helper.make_tensor_value_info("e", TensorProto.INT64, [2])])  # fmt: skip
    m = make_model()
    m.graph.node.append(helper.make_node("If", ["c"], ["r"], name="if1", then_branch=then, else_branch=other))
    err = unreadable(load_model_bytes, m.SerializeToString())
    assert err.message == "initializer 'sw' in main/if1.then_branch raw_data is 15 bytes, expected 16"


def test_function_constant_checked() -> None:
    value = TensorProto()
    value.data_type = TensorProto.INT64
    value.dims.append(4)
    value.int64_data.extend([1, 2])
    body = [helper.make_node("Constant", [], ["b"], value=value)]
    m = make_model()
    m.functions.append(helper.make_function("local", "F", [], ["b"], body, [helper.make_opsetid("", 13)]))
    err = unreadable(load_model_bytes, m.SerializeToString())
    assert err.message == (
        "Constant node '#0' attribute 'value' in function local::F declares 4 elements "
        "but holds 2 values in int64_data (expected 4)"
    )


def test_sparse_initializer_checked_not_densified() -> None:
    values = _raw_tensor("sp", TensorProto.FLOAT, [2], b"\x00" * 8)
    indices = _raw_tensor("sp_idx", TensorProto.INT64, [2], b"\x00" * 3)
    m = make_model()
    m.graph.sparse_initializer.append(helper.make_sparse_tensor(values, indices, [2**40]))
    err = unreadable(load_model_bytes, m.SerializeToString())
    assert err.message == "sparse initializer 'sp' indices raw_data is 3 bytes, expected 16"


@pytest.mark.parametrize(
    ("tensor", "message"),
    [
        (_raw_tensor("n", TensorProto.FLOAT, [-1], b""), "initializer 'n' has negative dim -1"),
        (_raw_tensor("i4", TensorProto.INT4, [3], b"\x00\x00\x00"), "initializer 'i4' raw_data is 3 bytes, expected 2"),
        (_typed_tensor("f", TensorProto.FLOAT, [3], "float_data", [1.0, 2.0]),
         "initializer 'f' declares 3 elements but holds 2 values in float_data (expected 3)"),
        (_typed_tensor("s", TensorProto.STRING, [3], "string_data", [b"a"]),
         "initializer 's' declares 3 elements but holds 1 values in string_data (expected 3)"),
        (_raw_tensor("bad\nname\x1b[31m", TensorProto.FLOAT, [1], b""),
         "initializer 'bad\\nname\\x1b[31m' raw_data is 0 bytes, expected 4"),
    ],
    ids=["negative-dim", "int4-packed", "typed-count", "strings", "hostile-name"],
)  # fmt: skip
def test_tensor_size_problems(tensor: TensorProto, message: str) -> None:
    m = make_model(extra_inits=[tensor])
    assert unreadable(load_model_bytes, m.SerializeToString()).message == message


@pytest.mark.parametrize(
    "tensor",
    [
        _raw_tensor("i4", TensorProto.INT4, [3], b"\x00\x00"),  # packed: 2 elements per byte
        _raw_tensor("empty", TensorProto.FLOAT, [0, 5], b""),
        _typed_tensor("c64", TensorProto.COMPLEX64, [2], "float_data", [1.0, 2.0, 3.0, 4.0]),
        helper.make_tensor("h", TensorProto.FLOAT16, [2], [1.0, 2.0]),
        helper.make_tensor("s", TensorProto.STRING, [2], [b"a", b"b"]),
        external_tensor("ext", [("location", "w.bin")], (2**40,)),  # data is elsewhere: not judged here
    ],
    ids=["int4", "zero-elements", "complex64", "float16", "strings", "external"],
)
def test_tensors_that_are_fine(tensor: TensorProto) -> None:
    m = make_model(extra_inits=[tensor])
    assert load_model_bytes(m.SerializeToString()).proto.graph.initializer[-1].name == tensor.name


# --------------------------------------------------------------------------------------------
# load_model never opens external data
# --------------------------------------------------------------------------------------------




def test_load_never_opens_external_data(tmp_path: Path) -> None:
    w = numpy_helper.from_array(np.arange(600, dtype=np.float32), "w")
    m = make_model(extra_inits=[w])
    path = tmp_path / "m.onnx"
    onnx.save_model(m, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="m.onnx.data", size_threshold=0)  # fmt: skip
    data = tmp_path / "m.onnx.data"
    assert data.exists()
    _RECORDER.paths.clear()
    _RECORDER.active = True
    try:
        loaded = load_model(path)
        problems = external_data_problems(loaded)
    finally:
        _RECORDER.active = False
    opened = [os.path.realpath(p) for p in _RECORDER.paths]
    assert os.path.realpath(path) in opened  # the hook works
    assert os.path.realpath(data) not in opened
    assert problems == []
    assert any(t.data_location == TensorProto.EXTERNAL for t in loaded.proto.graph.initializer)


# --------------------------------------------------------------------------------------------
# external_data_problems
# --------------------------------------------------------------------------------------------


def _problems(
    directory: Path, entries: list[tuple[str, str]], dims: tuple[int, ...] = (3,)
) -> list[ExternalDataProblem]:
    directory.mkdir(parents=True, exist_ok=True)
    if not (directory / "w.bin").exists():
        write(directory / "w.bin", bytes(12))
    path = write(directory / "m.onnx", model_with_external(entries, dims).SerializeToString())
    return external_data_problems(load_model(path))


def _only(problems: list[ExternalDataProblem], severity: str, fragment: str) -> ExternalDataProblem:
    assert len(problems) == 1, problems
    (p,) = problems
    assert p.severity == severity and fragment in p.message, p
    assert p.tensor == "w"
    return p


def test_external_clean(tmp_path: Path) -> None:
    assert _problems(tmp_path, [("location", "w.bin"), ("offset", "0"), ("length", "12")]) == []
    assert _problems(tmp_path, [("location", "./sub/../w.bin"), ("checksum", "abc")]) == []


@pytest.mark.parametrize(
    ("location", "fragment"),
    [
        ("", "location is empty"),
        ("/etc/passwd", "is an absolute path"),
        ("\\\\server\\share\\w.bin", "is an absolute path"),
        ("C:\\weights\\w.bin", "has a drive letter"),
        ("c:w.bin", "has a drive letter"),
        ("w\x00.bin", "contains a NUL byte"),
        ("../w.bin", "escapes the model folder"),
        ("sub/../../w.bin", "escapes the model folder"),
        ("..\\w.bin", "escapes the model folder"),
        ("*/_ORT_MEM_ADDR_/*", "reserved ORT marker in model file"),
        ("missing.bin", "not found"),
    ],
)
def test_external_bad_locations(tmp_path: Path, location: str, fragment: str) -> None:
    p = _only(_problems(tmp_path / "m", [("location", location)]), "error", fragment)
    assert p.location == location


def test_external_missing_location_key(tmp_path: Path) -> None:
    _only(_problems(tmp_path, [("offset", "0")]), "error", "location is empty")


def test_external_symlink_out(tmp_path: Path) -> None:
    model_dir, outside = tmp_path / "model", tmp_path / "outside"
    model_dir.mkdir()
    outside.mkdir()
    write(outside / "secret.bin", bytes(12))
    (model_dir / "link.bin").symlink_to(outside / "secret.bin")
    _only(_problems(model_dir, [("location", "link.bin")]), "error", "resolves outside the model folder via a symlink")


def test_external_parent_symlink_out(tmp_path: Path) -> None:
    model_dir, outside = tmp_path / "model", tmp_path / "outside"
    model_dir.mkdir()
    outside.mkdir()
    write(outside / "secret.bin", bytes(12))
    (model_dir / "dirlink").symlink_to(outside)
    _only(_problems(model_dir, [("location", "dirlink/secret.bin")]), "error", "resolves outside")


def test_external_symlink_inside_is_fine(tmp_path: Path) -> None:
    tmp_path.joinpath("real.bin").write_bytes(bytes(12))
    (tmp_path / "alias.bin").symlink_to(tmp_path / "real.bin")
    assert _problems(tmp_path, [("location", "alias.bin")]) == []


def test_external_hard_link_warns(tmp_path: Path) -> None:
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    write(tmp_path / "elsewhere.bin", bytes(12))
    os.link(tmp_path / "elsewhere.bin", model_dir / "hl.bin")
    _only(_problems(model_dir, [("location", "hl.bin")]), "warning", "is a hard link (2 links)")


def test_external_data_is_a_directory(tmp_path: Path) -> None:
    (tmp_path / "d.bin").mkdir()
    _only(_problems(tmp_path, [("location", "d.bin")]), "error", "is not a regular file (directory)")


@pytest.mark.parametrize(
    ("entries", "fragment"),
    [
        ([("offset", "-1")], "offset -1 is negative"),
        ([("offset", "abc")], "offset 'abc' is not an integer"),
        ([("length", "1e3")], "length '1e3' is not an integer"),
        ([("offset", "８")], "is not an integer"),  # fullwidth digit: int() would accept it
        ([("offset", "8"), ("length", "12")], "offset+length beyond data file size (12 B)"),
        ([("offset", "100")], "beyond data file size (12 B)"),
        ([("offset", "4")], "beyond data file size (12 B)"),  # 12 bytes needed, 8 left
        ([("length", "8")], "external data length 8 but the tensor declares 12 bytes"),
    ],
)
def test_external_bad_offsets(tmp_path: Path, entries: list[tuple[str, str]], fragment: str) -> None:
    _only(_problems(tmp_path, [("location", "w.bin"), *entries]), "error", fragment)


def test_external_unknown_and_duplicate_keys(tmp_path: Path) -> None:
    problems = _problems(tmp_path, [("location", "w.bin"), ("__class__", "x")])
    _only(problems, "warning", "unknown external data key '__class__'")
    problems = _problems(tmp_path / "d", [("location", "w.bin"), ("location", "../x")])
    assert [p.severity for p in problems] == ["error", "error"]
    assert "external data key 'location' given 2 times" in problems[0].message
    assert "escapes the model folder" in problems[1].message  # the copy onnx would use


def test_external_overlap_warns(tmp_path: Path) -> None:
    write(tmp_path / "w.bin", bytes(16))
    a = external_tensor("a", [("location", "w.bin"), ("offset", "0"), ("length", "12")])
    b = external_tensor("b", [("location", "w.bin"), ("offset", "4"), ("length", "12")])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])
    graph = helper.make_graph([helper.make_node("Add", ["a", "b"], ["y"])], "g", [], [y], initializer=[a, b])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    problems = external_data_problems(load_model(write(tmp_path / "m.onnx", m.SerializeToString())))
    assert [(p.severity, p.tensor) for p in problems] == [("warning", "b")]
    assert "overlaps 'a'" in problems[0].message


def test_external_overlap_nested_in_a_long_extent(tmp_path: Path) -> None:
    write(tmp_path / "w.bin", bytes(64))
    long = external_tensor("long", [("location", "w.bin"), ("offset", "0"), ("length", "48")], (12,))
    inner = [
        external_tensor(n, [("location", "w.bin"), ("offset", o), ("length", "12")])
        for n, o in (("p", "4"), ("q", "20"))
    ]
    tail = external_tensor("tail", [("location", "w.bin"), ("offset", "48"), ("length", "12")])
    graph = helper.make_graph([], "g", [], [], initializer=[long, *inner, tail])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    problems = external_data_problems(load_model(write(tmp_path / "m.onnx", m.SerializeToString())))
    assert sorted(p.tensor for p in problems) == ["p", "q"]
    assert all("overlaps 'long'" in p.message for p in problems)


def test_external_found_in_subgraphs_functions_and_sparse(tmp_path: Path) -> None:
    then = helper.make_graph([helper.make_node("Identity", ["sub_w"], ["t"])], "then", [],
                             [helper.make_tensor_value_info("t", TensorProto.FLOAT, [3])],
                             initializer=[external_tensor("sub_w", [("location", "../a")])])  # fmt: skip
    m = make_model()
    m.graph.node.append(helper.make_node("If", ["c"], ["r"], name="if1", then_branch=then, else_branch=then))
    fn_const = helper.make_node("Constant", [], ["b"], name="k", value=external_tensor("fw", [("location", "/abs")]))
    m.functions.append(helper.make_function("local", "F", [], ["b"], [fn_const], [helper.make_opsetid("", 13)]))
    values = external_tensor("sp", [("location", "C:x")], (2,))
    indices = helper.make_tensor("sp_i", TensorProto.INT64, [2], [0, 1])
    m.graph.sparse_initializer.append(helper.make_sparse_tensor(values, indices, [10]))
    problems = external_data_problems(load_model(write(tmp_path / "m.onnx", m.SerializeToString())))
    messages = sorted(p.message for p in problems)
    assert len(problems) == 4
    assert sum("initializer 'sub_w' in main/if1.then_branch" in s for s in messages) == 1
    assert sum("initializer 'sub_w' in main/if1.else_branch" in s for s in messages) == 1
    assert any("Constant node 'k' attribute 'value' in function local::F" in s and "absolute" in s for s in messages)
    assert any("sparse initializer 'sp' values" in s and "drive letter" in s for s in messages)
    assert all(p.severity == "error" for p in problems)


def test_external_hugging_face_cache_layout(tmp_path: Path) -> None:
    # snapshots/<rev>/model.onnx -> ../../blobs/<sha>; the data file is a sibling symlink too
    hub = tmp_path / "models--org--m"
    blobs, snap = hub / "blobs", hub / "snapshots" / "rev1"
    blobs.mkdir(parents=True)
    snap.mkdir(parents=True)
    write(blobs / "b1", model_with_external([("location", "model.onnx.data"), ("length", "12")]).SerializeToString())
    write(blobs / "b2", bytes(12))
    (snap / "model.onnx").symlink_to(Path("..") / ".." / "blobs" / "b1")
    (snap / "model.onnx.data").symlink_to(Path("..") / ".." / "blobs" / "b2")
    loaded = load_model(snap / "model.onnx")
    assert loaded.directory == os.path.realpath(snap)
    assert external_data_problems(loaded) == []
    # resolving next to the symlink target (blobs/) would have missed the data file
    assert not (blobs / "model.onnx.data").exists()


def test_external_from_bytes_is_string_checked_only() -> None:
    loaded = load_model_bytes(model_with_external([("location", "w.bin")]).SerializeToString())
    _only(external_data_problems(loaded), "warning", "not checked")
    loaded = load_model_bytes(model_with_external([("location", "../w.bin")]).SerializeToString())
    _only(external_data_problems(loaded), "error", "escapes the model folder")


def test_stray_external_entries_warn(tmp_path: Path) -> None:
    t = numpy_helper.from_array(np.zeros(3, dtype=np.float32), "w")
    e = t.external_data.add()
    e.key, e.value = "location", "w.bin"
    m = make_model(extra_inits=[t])
    problems = external_data_problems(load_model(write(tmp_path / "m.onnx", m.SerializeToString())))
    _only(problems, "warning", "data_location is not EXTERNAL")


# --------------------------------------------------------------------------------------------
# save_model
# --------------------------------------------------------------------------------------------


def test_save_bytes_byte_identical_and_input_untouched(tmp_path: Path) -> None:
    inp = model_file(tmp_path)
    before = fingerprint(inp)
    loaded = load_model(inp)
    out = tmp_path / "out.onnx"
    save_model(loaded.raw, out, input_path=inp)
    assert out.read_bytes() == inp.read_bytes()
    assert fingerprint(inp) == before
    assert listing(tmp_path) == ["m.onnx", "out.onnx"]  # no temp file left


def test_save_proto_roundtrip(tmp_path: Path) -> None:
    m = make_model()
    out = tmp_path / "out.onnx"
    save_model(m, out)
    assert onnx.load(str(out)) == m
    assert listing(tmp_path) == ["out.onnx"]


def test_save_new_file_mode(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    os.umask(umask)
    out = tmp_path / "out.onnx"
    save_model(b"abc", out)
    assert stat.S_IMODE(out.stat().st_mode) == 0o644 & ~umask


def test_save_force_keeps_existing_mode(tmp_path: Path) -> None:
    out = write(tmp_path / "out.onnx", b"old")
    out.chmod(0o600)
    save_model(b"new", out, force=True)
    assert out.read_bytes() == b"new"
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


def test_save_refuses_existing_output(tmp_path: Path) -> None:
    out = write(tmp_path / "out.onnx", b"old")
    with pytest.raises(UsageError) as info:
        save_model(b"new", out)
    assert info.value.message == f"output '{out}' exists; use --force"
    assert info.value.exit_code == EXIT_REJECTED
    assert out.read_bytes() == b"old"
    save_model(b"new", out, force=True)
    assert out.read_bytes() == b"new"
    assert listing(tmp_path) == ["out.onnx"]


def test_save_refuses_dangling_symlink_output(tmp_path: Path) -> None:
    (tmp_path / "out.onnx").symlink_to(tmp_path / "nowhere")
    with pytest.raises(UsageError, match="exists; use --force"):
        save_model(b"new", tmp_path / "out.onnx")
    assert not (tmp_path / "nowhere").exists()


def test_save_refuses_directory_output(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(UsageError, match="is a directory"):
        save_model(b"x", tmp_path / "d", force=True)


@pytest.mark.parametrize("how", ["same-path", "relative-path", "symlink", "hard-link"])
def test_save_refuses_to_overwrite_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    inp = model_file(tmp_path)
    before = fingerprint(inp)
    if how == "same-path":
        out = inp
    elif how == "relative-path":
        monkeypatch.chdir(tmp_path)
        out = Path("./sub/../m.onnx")
        (tmp_path / "sub").mkdir()
    elif how == "symlink":
        out = tmp_path / "alias.onnx"
        out.symlink_to(inp)
    else:
        out = tmp_path / "hl.onnx"
        os.link(inp, out)
    with pytest.raises(UsageError) as info:
        save_model(b"new", out, input_path=inp, force=True)  # --force does not cover the input
    assert info.value.message == f"refusing to overwrite input '{inp}'; use --in-place"
    assert fingerprint(inp) == before


def test_save_in_place(tmp_path: Path) -> None:
    inp = model_file(tmp_path)
    m = make_model()
    m.producer_name = "rewritten"
    save_model(m, inp, input_path=inp, in_place=True)
    assert onnx.load(str(inp)).producer_name == "rewritten"
    assert listing(tmp_path) == ["m.onnx"]


def test_save_failure_fsync_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_space(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(sfio.os, "fsync", no_space)
    with pytest.raises(WriteError) as info:
        save_model(b"data", tmp_path / "out.onnx", input_path=tmp_path / "in.onnx")
    # the errno by name and the output path (issue 11)
    assert info.value.message == f"write failed: no space left on device (ENOSPC) writing '{tmp_path / 'out.onnx'}'"
    assert info.value.file == str(tmp_path / "in.onnx")
    assert info.value.exit_code == EXIT_REJECTED
    assert listing(tmp_path) == []


def test_save_failure_replace_keeps_previous_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = write(tmp_path / "out.onnx", b"previous")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(sfio.os, "replace", broken_replace)
    with pytest.raises(WriteError, match=r"^.*write failed: input/output error \(EIO\) writing '.*out\.onnx'$"):
        save_model(b"new", out, force=True)
    assert out.read_bytes() == b"previous"
    assert listing(tmp_path) == ["out.onnx"]


def test_save_failure_link_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken_link(src: str, dst: str) -> None:
        raise OSError(errno.ENOSPC, "no space")

    monkeypatch.setattr(sfio.os, "link", broken_link)
    with pytest.raises(WriteError, match="no space left on device"):
        save_model(b"new", tmp_path / "out.onnx")
    assert listing(tmp_path) == []


def test_save_permission_denied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # running as root makes chmod ineffective, so simulate the directory refusing the temp file
    def denied(*args: object, **kw: object) -> tuple[int, str]:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(sfio.tempfile, "mkstemp", denied)
    with pytest.raises(WriteError) as info:
        save_model(b"x", tmp_path / "out.onnx")
    assert info.value.message == f"cannot write to {tmp_path}: permission denied"
    assert listing(tmp_path) == []


def test_save_into_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(WriteError, match="no such directory"):
        save_model(b"x", tmp_path / "nope" / "out.onnx")


def test_save_interrupted_write_removes_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(sfio.os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        save_model(b"x", tmp_path / "out.onnx")
    assert listing(tmp_path) == []


# --------------------------------------------------------------------------------------------
# save_model and external data
# --------------------------------------------------------------------------------------------


@pytest.fixture
def external_model(tmp_path: Path) -> tuple[Path, Path]:
    src = tmp_path / "src"
    src.mkdir()
    w = numpy_helper.from_array(np.arange(600, dtype=np.float32), "w")
    path = src / "m.onnx"
    onnx.save_model(make_model(extra_inits=[w]), str(path), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="m.onnx.data", size_threshold=1024)  # fmt: skip
    return path, src / "m.onnx.data"


def test_save_external_to_other_folder_refused(tmp_path: Path, external_model: tuple[Path, Path]) -> None:
    path, _ = external_model
    loaded = load_model(path)
    other = tmp_path / "other"
    other.mkdir()
    for payload in (loaded.proto, loaded.raw):
        with pytest.raises(UsageError) as info:
            save_model(payload, other / "out.onnx", input_path=path)
        assert info.value.message == (
            "model has external data; write the output next to the input (same folder) "
            "so its data references stay valid"
        )
    assert listing(other) == []
    with pytest.raises(UsageError, match="needs the input path"):
        save_model(loaded.proto, other / "out.onnx")


def test_save_external_same_folder_keeps_references(external_model: tuple[Path, Path]) -> None:
    path, data = external_model
    data_before = fingerprint(data)
    loaded = load_model(path)
    out = path.parent / "out.onnx"
    save_model(loaded.proto, out, input_path=path)
    assert fingerprint(data) == data_before
    reloaded = onnx.load(str(out))  # loads its data from its own folder
    w = next(t for t in reloaded.graph.initializer if t.name == "w")
    np.testing.assert_array_equal(numpy_helper.to_array(w), np.arange(600, dtype=np.float32))
    assert listing(path.parent) == ["m.onnx", "m.onnx.data", "out.onnx"]


def test_save_refuses_to_clobber_input_data_file(external_model: tuple[Path, Path]) -> None:
    path, data = external_model
    before = fingerprint(data)
    with pytest.raises(UsageError, match="refusing to overwrite external data file 'm.onnx.data'"):
        save_model(load_model(path).proto, data, input_path=path, force=True)
    assert fingerprint(data) == before


def _big_model() -> onnx.ModelProto:
    inits = [numpy_helper.from_array(np.full(1024, i, dtype=np.float32), f"big{i}") for i in range(3)]
    inits.append(numpy_helper.from_array(np.arange(8, dtype=np.float32), "small"))
    return make_model(extra_inits=inits)


def test_save_large_model_uses_external_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the mechanism is the same at 2 GiB; the threshold is lowered to keep the test cheap
    monkeypatch.setattr(sfio, "MAX_INLINE_MODEL_BYTES", 10_000)
    m = _big_model()
    expected = {t.name: numpy_helper.to_array(t).copy() for t in m.graph.initializer}
    out = tmp_path / "out.onnx"
    save_model(m, out)
    assert listing(tmp_path) == ["out.onnx", "out.onnx.data"]
    assert out.stat().st_size < 10_000
    written = onnx.load(str(out), load_external_data=False)
    external = {t.name: t for t in written.graph.initializer if t.data_location == TensorProto.EXTERNAL}
    assert sorted(external) == ["big0", "big1", "big2"]
    for t in external.values():
        entries = {e.key: e.value for e in t.external_data}
        assert entries["location"] == "out.onnx.data"
        assert int(entries["offset"]) % sfio.EXTERNAL_DATA_ALIGNMENT == 0
    onnx.checker.check_model(str(out))
    full = onnx.load(str(out))
    for t in full.graph.initializer:
        np.testing.assert_array_equal(numpy_helper.to_array(t), expected[t.name])
    assert external_data_problems(load_model(out)) == []


def test_save_large_model_refuses_existing_data_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sfio, "MAX_INLINE_MODEL_BYTES", 10_000)
    data = write(tmp_path / "out.onnx.data", b"someone else's")
    m = _big_model()
    before = m.SerializeToString()
    for force in (False, True):
        with pytest.raises(UsageError, match="output data file .* exists"):
            save_model(m, tmp_path / "out.onnx", force=force)
    assert data.read_bytes() == b"someone else's"
    assert listing(tmp_path) == ["out.onnx.data"]
    assert m.SerializeToString() == before


def test_save_large_model_failure_rolls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sfio, "MAX_INLINE_MODEL_BYTES", 10_000)
    m = _big_model()
    before = m.SerializeToString()
    real_link = os.link
    calls = []

    def link_then_fail(src: str, dst: str) -> None:
        calls.append(dst)
        if len(calls) == 2:  # the data file is in place; installing the model fails
            raise OSError(errno.ENOSPC, "full")
        real_link(src, dst)

    monkeypatch.setattr(sfio.os, "link", link_then_fail)
    with pytest.raises(WriteError, match="no space left on device"):
        save_model(m, tmp_path / "out.onnx")
    assert listing(tmp_path) == []  # the data file we created is removed again
    assert m.SerializeToString() == before  # tensors moved back into the proto


def test_save_too_large_even_with_external_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sfio, "MAX_INLINE_MODEL_BYTES", 50)
    m = _big_model()
    before = m.SerializeToString()
    with pytest.raises(WriteError, match="still .* bytes"):
        save_model(m, tmp_path / "out.onnx")
    assert listing(tmp_path) == []
    assert m.SerializeToString() == before


def test_save_without_hard_links_falls_back_to_checked_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def unsupported(src: str, dst: str) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(sfio.os, "link", unsupported)
    save_model(b"new", tmp_path / "out.onnx")
    assert (tmp_path / "out.onnx").read_bytes() == b"new"
    assert listing(tmp_path) == ["out.onnx"]
    with pytest.raises(UsageError, match="exists; use --force"):
        save_model(b"newer", tmp_path / "out.onnx")
    assert (tmp_path / "out.onnx").read_bytes() == b"new"


def test_save_never_clobbers_an_output_that_appears_meanwhile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_link = os.link

    def racing_link(src: str, dst: str) -> None:
        Path(dst).write_bytes(b"written by someone else")  # appears after our exists-check
        real_link(src, dst)

    monkeypatch.setattr(sfio.os, "link", racing_link)
    with pytest.raises(UsageError, match="exists; use --force"):
        save_model(b"ours", tmp_path / "out.onnx")
    assert (tmp_path / "out.onnx").read_bytes() == b"written by someone else"
    assert listing(tmp_path) == ["out.onnx"]
