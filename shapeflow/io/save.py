"""Saving a model: atomic writes (temp file in the target folder, fsync, rename) that never clobber
the input or any data file, and the switch to external data for a model protobuf cannot hold."""

from __future__ import annotations

import errno
import os
import stat
import sys
import tempfile

from google.protobuf.message import DecodeError, EncodeError

from .._onnx import onnx
from ..errors import LimitExceededError, UsageError, WriteError
from ..limits import DEFAULT_LIMITS, Limits
from .load import PROTOBUF_MAX_BYTES
from .memory import require_memory
from .model import _file_kind, _is_external, _iter_tensors, _q

# ``-o -``: the model goes to standard output.
STDOUT = "-"

# save_model switches to external data above this serialized size. A module constant rather
# than a literal so tests can exercise the mechanism without writing 2 GiB.
MAX_INLINE_MODEL_BYTES = PROTOBUF_MAX_BYTES
# Initializers whose raw_data is larger than this move to the data file (onnx's own default).
EXTERNAL_MIN_TENSOR_BYTES = 1024
# Tensor offsets in a data file we write are page-aligned so runtimes can mmap them.
EXTERNAL_DATA_ALIGNMENT = 4096


# --------------------------------------------------------------------------------------------
# Saving
# --------------------------------------------------------------------------------------------


def _max_inline_bytes() -> int:
    """MAX_INLINE_MODEL_BYTES as the package exports it: ``shapeflow.io.MAX_INLINE_MODEL_BYTES`` is
    the one callers and tests tune (to exercise the switch without writing 2 GiB)."""
    from shapeflow import io

    return int(io.MAX_INLINE_MODEL_BYTES)


def _current_umask() -> int:
    # /proc avoids os.umask's set-and-restore, which briefly changes process-wide state.
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def _same_file(a: str, b: str) -> bool:
    if os.path.abspath(a) == os.path.abspath(b):
        return True
    try:
        sa, sb = os.stat(a), os.stat(b)
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def _write_error(exc: OSError, directory: str, shown: str, out: str) -> WriteError:
    """One line for a failed write: what failed, the errno by name, and the output path."""
    code = exc.errno
    name = f" ({errno.errorcode[code]})" if code is not None and code in errno.errorcode else ""
    if code in (errno.EACCES, errno.EPERM):
        msg = f"cannot write to {directory}: permission denied"
    elif code == errno.EROFS:
        msg = f"cannot write to {directory}: read-only file system"
    elif code in (errno.ENOENT, errno.ENOTDIR):
        msg = f"cannot write to {directory}: no such directory"
    elif code == errno.ENOSPC:
        msg = f"write failed: no space left on device{name} writing {_q(out)}"
    elif code == errno.EDQUOT:
        msg = f"write failed: disk quota exceeded{name} writing {_q(out)}"
    else:
        reason = (os.strerror(code) if code else str(exc)).lower()
        msg = f"write failed: {reason}{name} writing {_q(out)}"
    return WriteError(msg, file=shown)


def check_output_path(
    out: str, *, input_path: str | None = None, in_place: bool = False, force: bool = False
) -> bool:
    """Refuse an output path before any work (UsageError, exit 2); whether it replaces a file.

    An existing path that is not a regular file (a device such as /dev/null, a FIFO, a socket,
    a directory, or a link to one) is refused with or without --force: the atomic rename would
    swap the node itself out for a regular file, and as root that replaces /dev/null.
    """
    shown = input_path if input_path is not None else out
    if not out:
        raise UsageError("the output path is empty (-o ''); name a file, or '-' for stdout", file=shown)
    if input_path is not None and _same_file(input_path, out) and not in_place:
        raise UsageError(f"refusing to overwrite input {_q(input_path)}; use --in-place", file=shown)
    if not os.path.lexists(out):
        kernel = _kernel_dir(out)
        if kernel is not None:  # a new name there is refused too: /dev/<typo> is never a file to create
            raise UsageError(f"output {_q(out)} is in {kernel}, not a regular file (use -o - for stdout)",
                             file=shown)
        return False
    kind = _special_kind(out)
    if kind is not None:
        raise UsageError(f"output {_q(out)} is {kind}; refusing to replace it", file=shown)
    if not (force or in_place):
        raise UsageError(f"output {_q(out)} exists; use --force", file=shown)
    return True


# Kernel file systems: a name there (``/dev/stdout``, ``/proc/self/fd/1``) stands for a stream or a
# device even when what it resolves to right now is a regular file, and replacing it as root
# replaces the system's node.
_KERNEL_DIRS = ("/dev", "/proc", "/sys")


def _kernel_dir(path: str) -> str | None:
    """The kernel folder ``path`` names a file in (through links of the path or its folders)."""
    folder = os.path.dirname(os.path.abspath(path))
    where = [folder, os.path.realpath(folder)]
    if os.path.islink(path):
        where.append(os.path.dirname(os.path.join(folder, os.readlink(path))))
        where.append(os.path.dirname(os.path.realpath(path)))
    for place in where:
        for root in _KERNEL_DIRS:
            if place == root or place.startswith(root + "/"):
                return root
    return None


def _special_kind(path: str) -> str | None:
    """Why ``path`` (or the file a link there points at) is not a regular file to replace, e.g.
    "a FIFO, not a regular file"; None for a regular file, a dangling link or a path that is gone."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return f"a {_file_kind(st.st_mode)}, not a regular file"
    kernel = _kernel_dir(path)
    if kernel is not None:
        return f"in {kernel}, not a regular file (use -o - for stdout)"
    return None


def _out_of_memory(shown: str) -> LimitExceededError:
    return LimitExceededError("max-memory", "out of memory while serializing", Limits.FLAGS["max_memory"],
                              file=shown)


def _byte_size(model: onnx.ModelProto, shown: str) -> int:
    """``model.ByteSize()``, which encodes the model to measure it: out of memory, protobuf says
    ``EncodeError`` and nothing of memory."""
    try:
        return int(model.ByteSize())
    except (EncodeError, MemoryError):
        raise _out_of_memory(shown) from None


def _serialize(model: onnx.ModelProto, max_memory: int, shown: str, size: int | None = None) -> bytes:
    """``model.SerializeToString()`` once it is known to fit: the serializer holds the encoded
    model twice at its peak (its buffer, then the bytes object). ``size``: its ByteSize() when
    the caller has it (measuring encodes the whole model)."""
    require_memory(2 * (size if size is not None else _byte_size(model, shown)), max_memory, shown)
    try:
        return bytes(model.SerializeToString())
    except (EncodeError, MemoryError):
        raise _out_of_memory(shown) from None


def write_to_stdout(model: onnx.ModelProto | bytes, *, input_path: str | None = None,
                    max_memory: int = DEFAULT_LIMITS.max_memory) -> None:
    """``-o -``: the serialized model on standard output, which must not be a terminal.

    A model with external data is refused: its data references are relative to a folder, and
    a stream has none.
    """
    shown = input_path if input_path is not None else "<stdout>"
    if os.isatty(1):
        raise UsageError("refusing to write a binary model to a terminal; redirect stdout or give -o FILE", file=shown)
    proto = model if isinstance(model, onnx.ModelProto) else None
    if proto is not None:
        if _external_locations(proto):
            raise UsageError("model has external data; -o - cannot carry it, write to a file", file=shown)
        if _byte_size(proto, shown) > PROTOBUF_MAX_BYTES:
            raise UsageError("model is over 2 GiB and needs external data; -o - cannot carry it", file=shown)
    payload = model if isinstance(model, bytes) else _serialize(proto, max_memory, shown)  # type: ignore[arg-type]
    sys.stdout.flush()
    view = memoryview(payload)
    try:
        while view:
            done = os.write(1, view[: 1 << 24])
            view = view[done:]
    except OSError as exc:
        if exc.errno == errno.EPIPE:
            raise BrokenPipeError(exc.errno, exc.strerror) from None
        raise _write_error(exc, "<stdout>", shown, "<stdout>") from None


def _external_locations(model: onnx.ModelProto) -> list[str]:
    locations = []
    for ref in _iter_tensors(model):
        if _is_external(ref.tensor):
            loc = ""
            for entry in ref.tensor.external_data:
                if entry.key == "location":
                    loc = entry.value
            locations.append(loc)
    return locations


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        # Best effort: the file is complete and fsynced and the rename is done; some
        # filesystems cannot fsync a directory, and the output must not vanish over it.
        pass
    finally:
        os.close(fd)


def _write_temp(directory: str, base: str, mode: int, chunks: list[bytes] | bytes) -> str:
    """Write a complete, fsynced temp file in ``directory``; returns its path."""
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{base}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            # mkstemp creates 0o600; give the output a normal file's permissions
            os.fchmod(fh.fileno(), mode)
            for chunk in [chunks] if isinstance(chunks, bytes) else chunks:
                fh.write(chunk)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        _remove_quietly(tmp)
        raise
    return tmp


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _install(tmp: str, dest: str, overwrite: bool, exists_message: str, shown: str) -> None:
    """Move a finished temp file to ``dest`` atomically.

    Without ``overwrite``, link() instead of rename(): it fails if ``dest`` appeared since we
    checked, so a concurrent file is never clobbered (the O_EXCL of RELIABILITY row 47).
    """
    if overwrite:
        # checked again at the last moment: a device node put here since must not be swapped out
        kind = _special_kind(dest)
        if kind is not None:
            raise UsageError(f"output {_q(dest)} is {kind}; refusing to replace it", file=shown)
        os.replace(tmp, dest)
        return
    try:
        os.link(tmp, dest)
    except FileExistsError:
        raise UsageError(exists_message, file=shown) from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
            raise
        # filesystem without hard links: fall back to a checked rename
        if os.path.lexists(dest):
            raise UsageError(exists_message, file=shown) from None
        os.replace(tmp, dest)
        return
    os.unlink(tmp)


def save_model(
    model: onnx.ModelProto | bytes,
    out_path: str | os.PathLike[str],
    *,
    input_path: str | os.PathLike[str] | None = None,
    in_place: bool = False,
    force: bool = False,
    max_memory: int = DEFAULT_LIMITS.max_memory,
) -> None:
    """Write ``model`` to ``out_path`` atomically, or raise UsageError / WriteError (exit 2)
    having written nothing.

    Bytes are written as given (a no-op run stays byte-identical). A ModelProto over
    MAX_INLINE_MODEL_BYTES is written with its initializers above 1 KiB in a new
    ``<out>.data``; in that case the proto is left pointing at that file (as onnx.save_model
    does), because restoring 2 GiB of tensors would double peak memory.
    """
    out = os.fsdecode(os.fspath(out_path))
    inp = os.fsdecode(os.fspath(input_path)) if input_path is not None else None
    shown = inp if inp is not None else out
    out_abs = os.path.abspath(out)
    out_dir = os.path.dirname(out_abs)

    overwrite = check_output_path(out, input_path=inp, in_place=in_place, force=force)
    # In place through a symbolic link: the file the link points at gets the new bytes, and the
    # link stays (replacing the link by a regular file would leave the real model unchanged).
    # Data references are checked against the link's folder, where readers resolve them.
    write_abs = os.path.realpath(out) if in_place and overwrite and os.path.islink(out) else out_abs

    proto: onnx.ModelProto | None
    if isinstance(model, onnx.ModelProto):
        proto = model
    else:
        proto = None
        # Bytes are written unchanged, but their data references must stay valid too; only
        # parse them when a check below needs it.
        need_refs = overwrite or inp is None or not _same_dir(inp, out_dir)
        if need_refs:
            try:
                proto = onnx.ModelProto.FromString(bytes(model))
            except (DecodeError, ValueError, RuntimeError):
                proto = None  # not a model we can inspect: written as given
    _check_data_references(_external_locations(proto) if proto is not None else [], inp, out, out_dir, overwrite,
                           shown)
    mode = _new_file_mode()
    if overwrite:
        try:
            existing = os.stat(out)
            if stat.S_ISREG(existing.st_mode):
                # keep a private model private when replacing it
                mode = stat.S_IMODE(existing.st_mode) & 0o777
        except OSError:
            pass

    size = _byte_size(model, shown) if isinstance(model, onnx.ModelProto) else len(model)
    if isinstance(model, onnx.ModelProto) and size > _max_inline_bytes():
        if write_abs != out_abs:
            raise UsageError("model needs external data, which cannot be written in place through a symbolic "
                             "link (its data file would not be next to the link); write to a file with -o",
                             file=shown)
        _save_with_external_data(model, out_abs, out, overwrite, mode, shown, max_memory)
        return

    payload = bytes(model) if not isinstance(model, onnx.ModelProto) else _serialize(model, max_memory, shown, size)
    write_dir = os.path.dirname(write_abs)
    tmp = None
    try:
        tmp = _write_temp(write_dir, os.path.basename(write_abs), mode, payload)
        _install(tmp, write_abs, overwrite, f"output {_q(out)} exists; use --force", shown)
        tmp = None
        _fsync_dir(write_dir)
    except OSError as exc:
        raise _write_error(exc, write_dir, shown, out) from None
    finally:
        if tmp is not None:
            _remove_quietly(tmp)


def _check_data_references(locations: list[str], inp: str | None, out: str, out_dir: str, overwrite: bool,
                           shown: str) -> None:
    """Refuse a write that would leave the model's external data references dangling (the output
    elsewhere than the input's folder) or overwrite one of the input's data files."""
    if not locations:
        return
    if inp is None:
        raise UsageError(
            "model has external data; save_model needs the input path to keep its data references valid",
            file=shown,
        )
    if not _same_dir(inp, out_dir):
        raise UsageError(
            "model has external data; write the output next to the input (same folder) "
            "so its data references stay valid",
            file=shown,
        )
    if overwrite:
        for loc in locations:
            data_file = os.path.join(os.path.dirname(os.path.abspath(inp)), loc)
            if loc and _same_file(data_file, out):
                raise UsageError(f"refusing to overwrite external data file {_q(loc)} of the input", file=shown)


def _same_dir(inp: str, out_dir: str) -> bool:
    in_dir = os.path.realpath(os.path.dirname(os.path.abspath(inp)))
    return in_dir == os.path.realpath(out_dir)


def _new_file_mode() -> int:
    return 0o644 & ~_current_umask()


def _save_with_external_data(
    model: onnx.ModelProto, out_abs: str, out: str, overwrite: bool, mode: int, shown: str, max_memory: int
) -> None:
    out_dir = os.path.dirname(out_abs)
    data_name = os.path.basename(out_abs) + ".data"
    data_path = os.path.join(out_dir, data_name)
    if os.path.lexists(data_path):
        # never append to, or replace, a data file: it may belong to another model
        raise UsageError(f"output data file {_q(data_path)} exists; remove it first", file=shown)

    moved: list[tuple[onnx.TensorProto, int, int, bool]] = []  # tensor, offset, length, had location
    data_tmp = model_tmp = None
    data_created = False
    try:
        fd, data_tmp = tempfile.mkstemp(dir=out_dir, prefix=f".{data_name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), mode)
            offset = 0
            for ref in _iter_tensors(model):
                t = ref.tensor
                if not ref.is_initializer or _is_external(t) or not t.HasField("raw_data"):
                    continue
                raw = t.raw_data
                if len(raw) <= EXTERNAL_MIN_TENSOR_BYTES:
                    continue
                pad = -offset % EXTERNAL_DATA_ALIGNMENT
                if pad:
                    fh.write(b"\0" * pad)
                    offset += pad
                fh.write(raw)
                moved.append((t, offset, len(raw), t.HasField("data_location")))
                offset += len(raw)
            fh.flush()
            os.fsync(fh.fileno())

        for t, off, length, _ in moved:
            t.ClearField("raw_data")
            t.data_location = onnx.TensorProto.EXTERNAL
            del t.external_data[:]
            for key, value in (("location", data_name), ("offset", str(off)), ("length", str(length))):
                entry = t.external_data.add()
                entry.key, entry.value = key, value
        size = _byte_size(model, shown)
        if size > _max_inline_bytes():
            raise WriteError(
                f"model is still {size} bytes with its large initializers in external data; "
                "protobuf cannot hold it",
                file=shown,
            )
        model_tmp = _write_temp(out_dir, os.path.basename(out_abs), mode, _serialize(model, max_memory, shown, size))
        # data first: a model file must never point at a data file that is not there yet
        _install(data_tmp, data_path, False, f"output data file {_q(data_path)} exists; remove it first", shown)
        data_tmp = None
        data_created = True
        _install(model_tmp, out_abs, overwrite, f"output {_q(out)} exists; use --force", shown)
        model_tmp = None
        _fsync_dir(out_dir)
    except BaseException as exc:
        try:
            # the bytes are read back from the data file we wrote in this run, whichever
            # name it has by now
            _restore_tensors(moved, data_path if data_created else data_tmp)
        except OSError:
            pass  # keep the original error; the proto may stay pointing at the lost data file
        if data_created:
            _remove_quietly(data_path)
        for path in (model_tmp, data_tmp):
            if path is not None:
                _remove_quietly(path)
        if isinstance(exc, OSError):
            raise _write_error(exc, out_dir, shown, out) from None
        raise


def _restore_tensors(moved: list[tuple[onnx.TensorProto, int, int, bool]], data_file: str | None) -> None:
    """Undo the move to external data after a failed save."""
    if not moved or data_file is None:
        return
    with open(data_file, "rb") as fh:
        for t, off, length, had_location in moved:
            if not _is_external(t):
                continue  # failed before this tensor was rewritten
            fh.seek(off)
            t.raw_data = fh.read(length)
            del t.external_data[:]
            if had_location:
                t.data_location = onnx.TensorProto.DEFAULT
            else:
                t.ClearField("data_location")
