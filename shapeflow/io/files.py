"""The files beside a model (settings, baselines, cache entries, lists of paths) read and written
with the model's treatment: they come from the same unvetted repository (docs/threat-model.md).

- reading: a regular file only (checked by ``stat`` before the open and by ``fstat`` after it,
  opened ``O_NONBLOCK``: a FIFO never blocks, a device is never opened), at most ``max_bytes``,
  in one read of exactly its size, so ``/dev/zero`` or a growing file cannot feed the process;
- writing: a temporary file in the target's folder, fsynced and renamed over the target; a target
  that is a symbolic link is replaced through it (the link stays, its target gets the bytes), and
  one that is not a regular file (or is a name in ``/dev``, ``/proc``, ``/sys``) is refused.

Errors are ``UsageError`` (exit 2) or ``WriteError`` naming the file, one line each.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile

from ..errors import UsageError, WriteError, display_path
from .model import _file_kind
from .save import _current_umask, _kernel_dir

# Bounds of the small files: a settings file is a few hundred bytes, a baseline a few MiB.
MAX_CONFIG_BYTES = 1 << 20
MAX_BASELINE_BYTES = 256 << 20

def _reason(exc: OSError) -> str:
    if exc.errno == errno.ENOENT:
        return "no such file"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if exc.errno == errno.ELOOP:
        return "too many levels of symbolic links"
    if exc.errno == errno.ENXIO:
        return "not a regular file (socket)"
    return exc.strerror or str(exc)


def read_small_file(path: str, max_bytes: int, what: str) -> bytes:
    """The bytes of the regular file ``path``, refused (UsageError naming ``what``: "config file",
    "baseline") when it is not a regular file, is larger than ``max_bytes`` or cannot be read.
    FileNotFoundError is raised as it is, for callers that treat a missing file apart."""
    try:
        pre = os.stat(path)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise UsageError(f"cannot read {what}: {_reason(exc)}", file=path) from None
    if not stat.S_ISREG(pre.st_mode):
        raise UsageError(f"{what} is not a regular file ({_file_kind(pre.st_mode)})", file=path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise UsageError(f"cannot read {what}: {_reason(exc)}", file=path) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"{what} is not a regular file ({_file_kind(st.st_mode)})", file=path)
        if st.st_size > max_bytes:
            raise UsageError(f"{what} is {st.st_size:,} bytes, more than the {max_bytes:,} a {what} may have",
                             file=path)
        chunks = []
        left = st.st_size + 1  # one byte more: a file that grew meanwhile is refused, not read on
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 24))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > st.st_size:
            raise UsageError(f"{what} changed size while being read", file=path)
        return data
    except OSError as exc:
        raise UsageError(f"cannot read {what}: {_reason(exc)}", file=path) from None
    finally:
        os.close(fd)


def decode_text(data: bytes, path: str, what: str) -> str:
    """``data`` as UTF-8 text; a UsageError naming the first bad byte otherwise."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{what} is not UTF-8 text (byte {exc.start})", file=path) from None


def write_small_file(path: str, data: bytes, what: str, *, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` atomically (temp file in the folder, fsync, rename). A link at
    ``path`` is written through (its target is replaced, the link stays); a target that is not a
    regular file, or a name in a kernel folder, is refused (UsageError). ``mode``: the new file's
    permissions (default: the user's umask applied to 0o666; an existing file keeps its own)."""
    target = os.path.realpath(path) if os.path.islink(path) else os.path.abspath(path)
    kernel = _kernel_dir(path) or _kernel_dir(target)
    if kernel is not None:
        raise UsageError(f"{what} {display_path(path)} is in {kernel}, not a regular file; refusing to write it",
                         file=path)
    try:
        st = os.stat(target)
    except OSError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise UsageError(f"{what} is a {_file_kind(st.st_mode)}, not a regular file; refusing to replace it",
                         file=path)
    if st is not None:
        mode = stat.S_IMODE(st.st_mode)
    elif mode is None:
        mode = 0o666 & ~_current_umask()
    folder = os.path.dirname(target)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise WriteError(f"cannot write {what}: {_reason(exc)}", file=path) from None
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), mode)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException as exc:  # a failed write, Ctrl-C, SIGTERM (cli): the temp file goes too
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise WriteError(f"cannot write {what}: {_reason(exc)}", file=path) from None
        raise

