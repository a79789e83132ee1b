"""Loading a model: the preflight of the file (kind, size, LFS pointer), one read from a checked file
descriptor, the parse without external data, and the structural checks nothing downstream repeats.

Every input is treated as hostile (RELIABILITY.md section 1).
"""

from __future__ import annotations

import errno
import os
import re
import stat
import time
from typing import Callable
from collections.abc import Iterable

from google.protobuf.message import DecodeError

from .._onnx import onnx
from ..errors import LimitExceededError, ModelUnreadableError
from ..limits import DEFAULT_LIMITS, Limits, deadline
from .memory import memory_room, require_memory
from .model import LoadedModel, _file_kind, _is_external, _is_within, _iter_tensors, _q, _tensor_size_problem
from .wire import (
    PARSE_WORST_PER_BYTE, UNIT_COST, CostExceeded, _explain_decode_failure, _non_utf8_problem,
    _utf8_checking_model, parse_cost, preflight,
)

# Protobuf cannot hold a message of 2 GiB or more; this is also the default --max-bytes.
PROTOBUF_MAX_BYTES = 2**31 - 1
# Opset versions outside this range are corrupt or hostile, not merely new.
_MAX_OPSET_VERSION = 1000
_DEFAULT_DOMAINS = ("", "ai.onnx")

_LFS_PREFIX = b"version https://git-lfs"


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


def _size_limit_message(size: int, limits: Limits) -> str:
    # Raising --max-bytes cannot help a file protobuf cannot hold, unless the user already
    # raised it past the protobuf limit (then their own limit is what stopped us).
    if size > PROTOBUF_MAX_BYTES and limits.max_bytes <= PROTOBUF_MAX_BYTES:
        return f"{size} bytes > protobuf 2 GiB limit; such models must use external data"
    return LimitExceededError("max-bytes", size, Limits.FLAGS["max_bytes"]).message


def _check_opsets(imports: Iterable[onnx.OperatorSetIdProto], shown: str, where: str) -> None:
    for op in imports:
        if not 1 <= op.version <= _MAX_OPSET_VERSION:
            raise ModelUnreadableError(
                f"invalid opset version {op.version} for domain {_q(op.domain)}{where}", file=shown
            )


def _uses_default_domain(graph: onnx.GraphProto | onnx.FunctionProto) -> bool:
    """Whether a node of ``graph`` (or a function's body) or of a body nested in it is an ai.onnx
    op (iterative: bodies nest as deep as protobuf allows)."""
    stack: list[onnx.GraphProto | onnx.FunctionProto] = [graph]
    while stack:
        g = stack.pop()
        for node in g.node:
            if node.domain in _DEFAULT_DOMAINS:
                return True
            for a in node.attribute:
                if a.HasField("g"):
                    stack.append(a.g)
                stack.extend(a.graphs)
    return False


def _check_structure(proto: onnx.ModelProto, shown: str) -> None:
    if not proto.HasField("graph"):
        raise ModelUnreadableError("model has no graph", file=shown)
    if not proto.HasField("ir_version"):
        raise ModelUnreadableError("model has no ir_version", file=shown)
    if proto.ir_version <= 0:
        raise ModelUnreadableError(f"invalid ir_version {proto.ir_version}", file=shown)
    default = [op.version for op in proto.opset_import if op.domain in _DEFAULT_DOMAINS]
    if not default and any(_uses_default_domain(body) for body in (proto.graph, *proto.functions)):
        # A model of ai.onnx.ml (or training) ops alone needs no ai.onnx import: onnx's checker
        # passes it and onnxruntime runs it.
        raise ModelUnreadableError("no opset_import for ai.onnx", file=shown)
    _check_opsets(proto.opset_import, shown, "")
    # "" and "ai.onnx" name the same domain; two different versions leave the op semantics
    # (and so every axis check) ambiguous.
    if len(set(default)) > 1:
        versions = ", ".join(str(v) for v in sorted(set(default)))
        raise ModelUnreadableError(f"conflicting opset_import versions for ai.onnx ({versions})", file=shown)
    for fn in proto.functions:
        _check_opsets(fn.opset_import, shown, f" in function {_q(fn.domain + '::' + fn.name)}")


def _check_tensors(proto: onnx.ModelProto, shown: str) -> bool:
    """Raise for a tensor whose data does not match its dims; whether any tensor is external."""
    external = False
    for ref in _iter_tensors(proto):
        problem = _tensor_size_problem(ref.tensor)
        if problem is not None:
            raise ModelUnreadableError(f"{ref.label} {problem}", file=shown, tensor=ref.name)
        external = external or _is_external(ref.tensor) or len(ref.tensor.external_data) > 0
    return external


def _time_check(limits: Limits, shown: str) -> Callable[[], None]:
    """A check that raises the time limit (SF006 timeout) once the file's ``--timeout`` is spent."""
    at = deadline(limits)

    def check() -> None:
        if time.monotonic() > at:
            raise LimitExceededError("timeout", f"{limits.timeout:g} s", Limits.FLAGS["timeout"], file=shown)

    return check


def _require_parse_memory(data: bytes, shown: str, limits: Limits) -> None:
    """Refuse (SF006 max-memory, exit 2) a file whose parse and node index would not fit in memory,
    before the parse: a file of many tiny messages costs up to ``PARSE_WORST_PER_BYTE`` times its
    size to parse, and ``UNIT_COST`` per node or subgraph/function body after (``--max-nodes``
    counts both). When even that worst case fits, nothing is
    counted; otherwise the messages are counted on the wire (``wire.parse_cost``), within the
    file's ``--timeout``."""
    size = len(data)
    room, flag = memory_room(limits.max_memory)
    worst = size * PARSE_WORST_PER_BYTE + min(size // 2, limits.max_nodes) * UNIT_COST
    if worst <= room:
        return
    try:
        parse_cost(data, limits.max_nodes, max(room, 0), _time_check(limits, shown))
    except CostExceeded as exc:
        raise LimitExceededError("max-memory", f"{exc.estimate:,} bytes to parse and index, {max(room, 0):,} left",
                                 flag, file=shown) from None


def _parse_checked(data: bytes, shown: str, limits: Limits) -> tuple[onnx.ModelProto, bool]:
    """The parsed and checked model, and whether it has external data (see LoadedModel.external)."""
    size = len(data)
    if size == 0:
        raise ModelUnreadableError("empty file (0 bytes); not an ONNX model", file=shown)
    if size > limits.max_bytes:
        raise ModelUnreadableError(_size_limit_message(size, limits), file=shown)
    if data.startswith(_LFS_PREFIX):
        raise ModelUnreadableError("git-lfs pointer, run `git lfs pull`", file=shown)
    _require_parse_memory(data, shown, limits)  # (the checking parse below costs as much as the real one)
    # Every string of an ASCII file is UTF-8; otherwise the checking parse tells (see above).
    not_utf8 = not data.isascii()
    checking = _utf8_checking_model() if not_utf8 else None
    if checking is not None:
        try:
            checking.FromString(data)
            not_utf8 = False
        except Exception:  # a bad string, or a file the real parse below rejects anyway
            pass
    try:
        proto = onnx.ModelProto.FromString(data)
    except (DecodeError, ValueError, RuntimeError) as exc:
        if size > PROTOBUF_MAX_BYTES:
            msg = f"{size} bytes > protobuf 2 GiB limit; such models must use external data"
        else:
            msg = _explain_decode_failure(data, str(exc))
        raise ModelUnreadableError(msg, file=shown) from None
    if not_utf8:
        problem = _non_utf8_problem(proto, _time_check(limits, shown))
        if problem is not None:
            raise ModelUnreadableError(problem, file=shown)
    _check_structure(proto, shown)
    return proto, _check_tensors(proto, shown)


def _open_error(exc: OSError, path: str) -> str:
    if exc.errno == errno.ENOENT:
        return "no such file"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if exc.errno == errno.ENXIO:
        # open() on a Unix socket fails with ENXIO; say what it is
        try:
            return f"not a regular file ({_file_kind(os.stat(path).st_mode)})"
        except OSError:
            pass
    if exc.errno == errno.ELOOP:
        return "too many levels of symbolic links"
    return f"cannot open: {exc.strerror or exc}"


# Memory a model costs while it is processed, per byte of file: the bytes read and the parsed
# model (about as large; a string- or weight-heavy model a little less), at the peak of a
# parse; bench_memory.py measures the real factors. Plus a margin for what is not the file.
MEMORY_PER_BYTE = 2
MEMORY_MARGIN = 64 << 20


def _read_exact(fd: int, size: int) -> bytes | None:
    """Read exactly ``size`` bytes from ``fd``; None if the file changed size meanwhile.

    One read when the kernel gives the whole file at once (a regular file under 2 GiB): reading in
    pieces and joining them would hold the file twice at the peak."""
    first = os.read(fd, size)
    if len(first) == size:
        return None if os.read(fd, 1) else first
    if not first:
        return None
    chunks: list[bytes] = [first]
    remaining = size - len(first)
    while remaining:
        chunk = os.read(fd, min(remaining, 1 << 26))
        if not chunk:
            return None
        chunks.append(chunk)
        remaining -= len(chunk)
    if os.read(fd, 1):
        return None
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def load_model(
    path: str | os.PathLike[str],
    limits: Limits = DEFAULT_LIMITS,
    *,
    repo_root: str | None = None,
) -> LoadedModel:
    """Read and parse one model file, without external data.

    Raises ModelUnreadableError (SF001, exit 2) with a one-line reason for anything that is not a
    readable ONNX model.
    """
    shown = os.fsdecode(os.fspath(path))
    return parse_model_file(shown, read_model_file(shown, limits, repo_root=repo_root), limits)


def parse_model_file(shown: str, data: bytes, limits: Limits = DEFAULT_LIMITS, *,
                     source: str | None = None) -> LoadedModel:
    """The second half of ``load_model``: parse and check the bytes ``read_model_file`` returned for
    ``shown`` (the lint cache hashes them in between). ``source``: where they were read, when not
    at ``shown`` (a Ray worker has another current directory): external data is looked up there."""
    proto, external = _parse_checked(data, shown, limits)
    where = source if source is not None else shown
    if is_url(where):
        return LoadedModel(path=shown, proto=proto, raw=data, directory="", external=external)
    # The directory of the path *as given* (not of the symlink target): external data is
    # resolved next to the name the user sees (Hugging Face cache layout, RELIABILITY row 50).
    directory = os.path.realpath(os.path.dirname(os.path.abspath(where)))
    return LoadedModel(path=shown, proto=proto, raw=data, directory=directory, external=external)


_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+://")


def is_url(path: str) -> bool:
    """Whether ``path`` names a model by URL (``s3://``, ``https://``, ``file://``): read with
    fsspec when it is installed. A local file that exists under that name stays a file."""
    return _URL.match(path) is not None and not os.path.lexists(path)


def _read_url(url: str, limits: Limits) -> bytes:
    """The bytes of the model at ``url``, through fsspec; only that object, never external data."""
    try:
        import fsspec  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        raise ModelUnreadableError("a URL needs fsspec (pip install fsspec)", file=url) from None
    try:
        fs, where = fsspec.core.url_to_fs(url)
        info = fs.info(where)
        size = info.get("size")
        if info.get("type") not in (None, "file"):
            raise ModelUnreadableError(f"not a regular file ({info.get('type')})", file=url)
        if isinstance(size, int):
            if size == 0:
                raise ModelUnreadableError("empty file (0 bytes); not an ONNX model", file=url)
            if size > limits.max_bytes:
                raise ModelUnreadableError(_size_limit_message(size, limits), file=url)
            require_memory(size * MEMORY_PER_BYTE + MEMORY_MARGIN, limits.max_memory, url)
        with fs.open(where, "rb") as f:
            data = f.read(limits.max_bytes + 1)  # one byte more: a size the listing did not tell
    except ModelUnreadableError:
        raise
    except FileNotFoundError:
        raise ModelUnreadableError("no such file", file=url) from None
    except ImportError as exc:  # the filesystem's own package (s3fs, gcsfs) is missing
        raise ModelUnreadableError(f"cannot open: {exc}", file=url) from None
    except Exception as exc:  # whatever the remote store raises: this file cannot be read
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ModelUnreadableError(f"cannot open: {first}", file=url) from None
    if len(data) > limits.max_bytes:
        raise ModelUnreadableError(_size_limit_message(len(data), limits), file=url)
    return bytes(data)


def read_model_file(shown: str, limits: Limits = DEFAULT_LIMITS, *, repo_root: str | None = None) -> bytes:
    """The first half of ``load_model``: the checks of the file and its one read (exactly its
    bytes). Raises ModelUnreadableError like ``load_model``."""
    if is_url(shown):
        return _read_url(shown, limits)
    if repo_root is not None:
        # checked before opening: a pre-commit hook must not read what a link in the repo
        # points at
        root = os.path.realpath(repo_root)
        if not _is_within(os.path.realpath(shown), root):
            if _is_within(os.path.realpath(os.path.dirname(os.path.abspath(shown))), root):
                raise ModelUnreadableError("symlink points outside the repository", file=shown)
            raise ModelUnreadableError(f"path is outside the repository {_q(root)}", file=shown)

    try:
        # Refuse special files before opening them: opening some devices acts (a tape
        # rewinds, a watchdog arms). The fstat below still decides, in case of a swap.
        pre = os.stat(shown)
    except OSError as exc:
        raise ModelUnreadableError(_open_error(exc, shown), file=shown) from None
    if not stat.S_ISREG(pre.st_mode):
        raise ModelUnreadableError(f"not a regular file ({_file_kind(pre.st_mode)})", file=shown)
    try:
        # O_NONBLOCK: opening a FIFO for reading would otherwise block until a writer appears;
        # O_NOCTTY: a terminal must never become our controlling terminal
        fd = os.open(shown, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as exc:
        raise ModelUnreadableError(_open_error(exc, shown), file=shown) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ModelUnreadableError(f"not a regular file ({_file_kind(st.st_mode)})", file=shown)
        if st.st_size == 0:
            raise ModelUnreadableError("empty file (0 bytes); not an ONNX model", file=shown)
        if st.st_size > limits.max_bytes:
            raise ModelUnreadableError(_size_limit_message(st.st_size, limits), file=shown)
        try:
            head = os.pread(fd, len(_LFS_PREFIX), 0)
            if head == _LFS_PREFIX:
                raise ModelUnreadableError("git-lfs pointer, run `git lfs pull`", file=shown)
            # before the read: a file that cannot parse is refused without being held in memory
            problem = preflight(fd, st.st_size)
            if problem is not None:
                raise ModelUnreadableError(problem, file=shown)
            require_memory(st.st_size * MEMORY_PER_BYTE + MEMORY_MARGIN, limits.max_memory, shown)
            data = _read_exact(fd, st.st_size)
        except OSError as exc:
            raise ModelUnreadableError(f"read failed: {exc.strerror or exc}", file=shown) from None
        if data is None:
            raise ModelUnreadableError("file changed size while being read", file=shown)
    finally:
        os.close(fd)
    return data


def load_model_bytes(data: bytes, name: str = "<bytes>", limits: Limits = DEFAULT_LIMITS) -> LoadedModel:
    """Parse a model held in memory with the same checks as load_model.

    ``directory`` is "" because there is no folder to resolve external data against.
    """
    data = bytes(data)
    proto, external = _parse_checked(data, name, limits)
    return LoadedModel(path=name, proto=proto, raw=data, directory="", external=external)
