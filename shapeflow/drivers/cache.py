"""The lint cache (README, "Fleets"): a file's lint result, reused while the file's bytes, the
settings it is linted under and the shapeflow version are unchanged.

An entry is one file, ``<dir>/lint-v2/<key[:2]>/<key>.json``; the key is a SHA-256 of the model's
bytes (those the linter reads anyway: no second read), of every setting that can change the
result (``LintOptions``: rules, severities, exit-zero, dims, assumptions, limits, markers) and of
the version. An entry holds what the renderers need, without the path: the result is rebuilt under
the path the user gives now, so a moved or copied model hits too. Writes go to a temp file in the
same folder, then ``os.replace``: a reader sees the old entry or the new one, never half of one.

The folder usually lies in the repository, where a pull request can write too, and the key is a
public hash anyone can compute. So an entry decides a verdict only if shapeflow wrote it on this
machine for this user (SPEC.md section 8, docs/threat-model.md): its first line is an HMAC-SHA256
of the key and the record under a secret of the user's own (``user_key``: 32 random bytes in
``$XDG_CACHE_HOME/shapeflow/key``, mode 0600, created on first use, never inside the repository
being linted). An entry whose MAC does not verify is a miss, and is never parsed; one that
verifies is then checked as before (version, key, fields) and anything odd is a miss too. Without
a usable key (a read-only home) the cache is off. JSON, not pickle: loading must not run code.

Paths: the folder and everything in it are opened one component at a time from a trusted anchor
(the folder of the config file or the current directory; the command line's ``--cache-dir``
itself) with ``O_NOFOLLOW``: a ``.shapeflow_cache`` that is a symbolic link, or a link planted
inside it, is never followed (the cache is then not used). shapeflow uses a folder it creates, or
one holding its ``CACHEDIR.TAG``, or an empty one given on the command line; any other folder is
left alone. ``clean`` removes only what shapeflow writes there (entries named by their key, its
temp files, the tag and ``.gitignore`` it created, the folders it made once empty), never anything
else, and never follows a link.

Not cached: runs with ``--fix`` (they write models), rejected files (SF001/SF002/SF006: nothing is
written on rejection, and a rejection is quick to find again), internal errors (their traceback
belongs to that run), models with external data (their checks look at the files beside them), and
results whose text names the path (they would not render identically under another one).
"""

from __future__ import annotations

import errno
import functools
import hashlib
import hmac
import importlib.util
import json
import os
import re
import secrets
import stat
import sys
from dataclasses import dataclass, field
from typing import Any

from .. import _version
from .config import find_config, load_config, project_root, vcs_root
from ..diagnostics import Diagnostic, Location, Severity
from ..errors import EXIT_REJECTED, UsageError, display_path
from .linter import FileResult, LintOptions

CACHE_DIR_NAME = ".shapeflow_cache"
FORMAT = 2  # the layout of an entry; bump when it changes (2: the MAC line)
_SUBDIR = f"lint-v{FORMAT}"
_TAG = ("Signature: 8a477f597d28d172789f06886806bc55\n"
        "# This file is a cache directory tag created by shapeflow.\n"
        "# For information about cache directory tags see https://bford.info/cachedir/\n")
# An empty folder the command line named: used and tagged, but ``clean`` leaves the folder itself.
_TAG_ADOPTED = ("Signature: 8a477f597d28d172789f06886806bc55\n"
                "# This file is a cache directory tag written by shapeflow in a folder it did not create.\n"
                "# For information about cache directory tags see https://bford.info/cachedir/\n")
_GITIGNORE = "# created by shapeflow\n*\n"
MAX_ENTRY_BYTES = 256 << 20
_ENTRY_NAME = re.compile(r"[0-9a-f]{64}\.json\Z")
_TEMP_NAME = re.compile(r"\.tmp-[0-9a-f]{32}\.json\Z")
_SHARD_NAME = re.compile(r"[0-9a-f]{2}\Z")
_LAYOUT_NAME = re.compile(r"lint-v[0-9]{1,3}\Z")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
# dir_fd everywhere it is needed (Linux, macOS); elsewhere the cache is off
SUPPORTED = {os.open, os.mkdir, os.unlink, os.rmdir, os.rename, os.stat} <= os.supports_dir_fd and _NOFOLLOW != 0


# -- where the cache is ----------------------------------------------------------------------------

def cache_location(config: str | None = None, isolated: bool = False, start: str | None = None) -> tuple[str, str]:
    """(folder, anchor) of the cache: the config file's ``cache-dir`` (inside its project, which
    ``config.inside_project`` checked: the anchor is the project), or ``.shapeflow_cache`` next to
    the config file in force (the anchor is its folder); that file is ``config`` when given, else
    the nearest one from ``start`` (the current directory) up. The current directory's
    ``.shapeflow_cache`` when there is none (or with ``isolated``)."""
    here = os.path.abspath(start or os.getcwd())
    found = os.path.abspath(config) if config is not None else None if isolated else find_config(here)
    if found is None:
        return os.path.join(here, CACHE_DIR_NAME), here
    folder = os.path.dirname(found)
    chosen = load_config(found).cache_dir
    if chosen is None:
        return os.path.join(folder, CACHE_DIR_NAME), folder
    return chosen, project_root(folder)


def default_cache_dir(config: str | None = None, isolated: bool = False, start: str | None = None) -> str:
    """The folder of ``cache_location``."""
    return cache_location(config, isolated, start)[0]


def cache_for(cache_dir: str | None, config: str | None = None, isolated: bool = False) -> "LintCache | None":
    """The cache of a run: ``cache_dir`` from the command line (trusted as named), else where
    ``cache_location`` says. None when no key of the user's own can be had (the cache is off)."""
    if not SUPPORTED:
        return None
    secret = user_key()
    if not secret:
        return None
    if cache_dir is not None:
        return LintCache(os.path.abspath(cache_dir), secret=secret)
    folder, anchor = cache_location(config, isolated)
    return LintCache(folder, anchor=anchor, secret=secret)


def _onnx_version() -> str:
    """The installed onnx's version, without importing onnx when it is not imported yet (that
    takes 150 ms; lint often needs no onnx at all)."""
    mod = sys.modules.get("onnx")
    found = getattr(mod, "__version__", None)
    if isinstance(found, str):
        return found
    return _installed_onnx()


@functools.lru_cache(maxsize=1)
def _installed_onnx() -> str:
    """onnx's version from its installed distribution's folder name (``onnx-1.23.2.dist-info``),
    found without importing onnx or opening a file: a lint run opens nothing but its model."""
    spec = importlib.util.find_spec("onnx")
    if spec is None or not spec.origin:
        return "none"
    site = os.path.dirname(os.path.dirname(spec.origin))
    try:
        names = os.listdir(site)
    except OSError:
        return "unknown"
    found = sorted(n[len("onnx-"):-len(".dist-info")] for n in names
                   if n.startswith("onnx-") and n.endswith(".dist-info"))
    return ",".join(found) or "unknown"


def settings_digest(options: LintOptions) -> str:
    """What of ``options`` can change a file's result, as text. The progress callback cannot;
    ``repo_root`` only decides whether a path may be read, which is checked before the cache."""
    fields = (options.select, options.ignore, tuple((s, v.value) for s, v in options.severity),
              options.exit_zero, options.dims, options.assume, options.limits, options.fix, options.diff,
              options.markers, options.settings_exit_zero)
    return repr(fields)


# -- the user's key ---------------------------------------------------------------------------------

def key_path() -> str | None:
    """``$XDG_CACHE_HOME/shapeflow/key``, or ``~/.cache/shapeflow/key``; None without a home."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        home = os.path.expanduser("~")
        if not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, "shapeflow", "key")


def _read_key(path: str) -> bytes | None:
    """The key at ``path`` if it is a regular file of this user's, private (no group or other
    permission), holding 64 hex digits; None otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | _NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077 or st.st_size != 64:
            return None
        text = os.read(fd, 65)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        return bytes.fromhex(text.decode("ascii")) if len(text) == 64 else None
    except ValueError:
        return None


def user_key() -> bytes:
    """This user's cache key, created on first use; ``b""`` when there is none to be had (no home,
    a read-only one, a key file that is not private, or one inside the current repository, which a
    pull request could have written)."""
    path = key_path()
    if path is None:
        return b""
    here = vcs_root(os.getcwd())
    if here is not None and os.path.realpath(path).startswith(os.path.realpath(here).rstrip(os.sep) + os.sep):
        return b""
    found = _read_key(path)
    if found is not None:
        return found
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        tmp = os.path.join(folder, f".key-{secrets.token_hex(8)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | _NOFOLLOW, 0o600)
        try:
            os.write(fd, secrets.token_hex(32).encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # never replaces a key another process made meanwhile
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)
    except OSError:
        return b""
    return _read_key(path) or b""


# -- the folder, opened without following links ----------------------------------------------------

def _open_in(parent: int, name: str) -> int:
    return os.open(name, _DIR_FLAGS | _NOFOLLOW, dir_fd=parent)


def _tag_of(fd: int) -> str | None:
    """The text of the folder's CACHEDIR.TAG when it is a regular file (not a link), else None."""
    try:
        tag = os.open("CACHEDIR.TAG", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | _NOFOLLOW, dir_fd=fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(tag).st_mode):
            return None
        return os.read(tag, 4096).decode("utf-8", "replace")
    finally:
        os.close(tag)


def _write_new(fd: int, name: str, text: str) -> None:
    try:
        out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | _NOFOLLOW, 0o644, dir_fd=fd)
    except FileExistsError:
        return
    try:
        os.write(out, text.encode("utf-8"))
    finally:
        os.close(out)


def _empty(fd: int) -> bool:
    try:
        return not os.listdir(fd)
    except OSError:
        return False


# (folder, anchor, process) -> a descriptor of the checked cache folder (LintCache._shard)
_ROOTS: dict[tuple[str, str | None, int], int] = {}


def _alive(fd: int) -> bool:
    """Whether the folder open on ``fd`` is still in the file system (a removed one has no link)."""
    try:
        return os.fstat(fd).st_nlink > 0
    except OSError:
        return False


@dataclass(frozen=True)
class LintCache:
    """A cache folder. Plain data: it goes to worker processes and Ray tasks with each file (the
    key with it: the workers of one run write and read under the user's key)."""

    directory: str
    version: str = field(default_factory=lambda: _version.__version__)  # read at creation (tests patch it)
    # the folder every component below is opened from without following links; None: the
    # directory itself is trusted as named (the command line's --cache-dir)
    anchor: str | None = None
    secret: bytes = field(default_factory=user_key, repr=False)

    def key(self, data: bytes, settings: str) -> str:
        h = hashlib.sha256()
        h.update(hashlib.sha256(data).digest())
        h.update(settings.encode("utf-8", "surrogatepass"))
        h.update(b"\0" + self.version.encode())
        # Ops without a shapeflow rule are inferred by onnx's own shape inference (ops/fallback.py):
        # an onnx upgrade may change a result.
        h.update(b"\0" + _onnx_version().encode())
        return h.hexdigest()

    def _mac(self, key: str, body: bytes) -> bytes:
        return hmac.new(self.secret, key.encode("ascii") + b"\0" + body, hashlib.sha256).hexdigest().encode("ascii")

    def _root(self, create: bool) -> int | None:
        """A descriptor of the cache folder, or None when it is not there (and not ``create``d)
        or is not one to use: a link anywhere below the anchor, a folder that is neither new,
        tagged as shapeflow's nor (on the command line) empty."""
        if not SUPPORTED or not self.secret:
            return None
        made = adopted = False
        try:
            if self.anchor is None:
                try:
                    fd = os.open(self.directory, _DIR_FLAGS)
                except FileNotFoundError:
                    if not create:
                        return None
                    os.makedirs(self.directory, exist_ok=True)
                    fd = os.open(self.directory, _DIR_FLAGS)
                    made = True
                adopted = not made
            else:
                rel = os.path.relpath(self.directory, self.anchor)
                parts = [p for p in rel.split(os.sep) if p not in ("", ".")]
                if not parts or ".." in parts:
                    return None
                fd = os.open(self.anchor, _DIR_FLAGS)
                for k, part in enumerate(parts):
                    try:
                        nxt = _open_in(fd, part)
                    except FileNotFoundError:
                        if not create:
                            os.close(fd)
                            return None
                        try:
                            os.mkdir(part, 0o755, dir_fd=fd)
                            made = k == len(parts) - 1
                        except FileExistsError:
                            pass
                        nxt = _open_in(fd, part)
                    except OSError:
                        os.close(fd)
                        return None  # a link (ELOOP), a file (ENOTDIR), no permission
                    os.close(fd)
                    fd = nxt
        except OSError:
            return None
        if _tag_of(fd) in (_TAG, _TAG_ADOPTED):
            return fd
        if create and (made or (adopted and _empty(fd))):
            try:
                _write_new(fd, ".gitignore", _GITIGNORE)
                _write_new(fd, "CACHEDIR.TAG", _TAG if made else _TAG_ADOPTED)
            except OSError:
                os.close(fd)
                return None
            return fd
        os.close(fd)
        return None

    def _shard(self, key: str, create: bool) -> int | None:
        # The folder is checked (opened without links, tagged) once per process: each entry then
        # costs the opens below it. The descriptor stays open for the process's life.
        where = (self.directory, self.anchor, os.getpid())
        root_fd = _ROOTS.get(where)
        if root_fd is not None and not _alive(root_fd):
            del _ROOTS[where]  # removed since (``shapeflow clean``): look again
            os.close(root_fd)
            root_fd = None
        if root_fd is None:
            root_fd = self._root(create)
            if root_fd is None:
                return None
            _ROOTS[where] = root_fd
        try:
            fd = os.dup(root_fd)
        except OSError:
            return None
        try:
            for part in (_SUBDIR, key[:2]):
                try:
                    nxt = _open_in(fd, part)
                except FileNotFoundError:
                    if not create:
                        raise
                    try:
                        os.mkdir(part, 0o755, dir_fd=fd)
                    except FileExistsError:
                        pass
                    nxt = _open_in(fd, part)
                os.close(fd)
                fd = nxt
        except OSError:
            os.close(fd)
            return None
        return fd

    def get(self, key: str, path: str) -> FileResult | None:
        """The cached result for ``key``, rendered under ``path``; None on a miss: no entry, or one
        that is not a regular file, is too large, does not carry this user's MAC, or is
        another version's or key's, or does not have the expected fields (it is then overwritten)."""
        if not _ENTRY_NAME.match(key + ".json"):
            return None
        shard = self._shard(key, create=False)
        if shard is None:
            return None
        try:
            # O_NONBLOCK and a regular-file check: a FIFO or device planted in the folder must not
            # hang or feed the run
            fd = os.open(key + ".json", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY | _NOFOLLOW,
                         dir_fd=shard)
        except OSError:
            return None
        finally:
            os.close(shard)
        try:
            with os.fdopen(fd, "rb") as f:
                st = os.fstat(f.fileno())
                if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_ENTRY_BYTES:
                    return None
                raw = f.read(MAX_ENTRY_BYTES + 1)
            mac, sep, body = raw.partition(b"\n")
            if not sep or not hmac.compare_digest(mac, self._mac(key, body)):
                return None  # not written by this user's shapeflow: never parsed
            doc = json.loads(body)
            if not isinstance(doc, dict) or doc.get("version") != self.version or doc.get("key") != key \
                    or doc.get("format") != FORMAT:
                return None
            return _result_from(doc["result"], path)
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
            return None

    def put(self, key: str, result: FileResult) -> None:
        """Store ``result`` when it may be reused (module docstring); a cache that cannot be written
        (read-only, full, not ours) is skipped silently: it only saves time."""
        record = _record(result)
        if record is None or not _ENTRY_NAME.match(key + ".json"):
            return
        text = json.dumps({"format": FORMAT, "version": self.version, "key": key, "result": record},
                          separators=(",", ":"), ensure_ascii=True).encode("ascii")
        if len(text) > MAX_ENTRY_BYTES:
            return
        shard = self._shard(key, create=True)
        if shard is None:
            return
        tmp = f".tmp-{secrets.token_hex(16)}.json"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | _NOFOLLOW, 0o600, dir_fd=shard)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(self._mac(key, text) + b"\n" + text)
                os.replace(tmp, key + ".json", src_dir_fd=shard, dst_dir_fd=shard)
            except BaseException:
                try:
                    os.unlink(tmp, dir_fd=shard)
                except OSError:
                    pass
                raise
        except OSError:
            return
        finally:
            os.close(shard)


@dataclass
class Cleaned:
    """What ``clean`` did: files removed, and the names it left because shapeflow did not write them."""

    removed: int = 0
    kept: list[str] = field(default_factory=list)
    folder_removed: bool = False


def _open_cache_folder(directory: str, anchor: str | None) -> int | None:
    """A descriptor of ``directory`` opened below ``anchor`` without following links (as named when
    ``anchor`` is None); None when it does not exist. A link or a file on the way is a UsageError."""
    fd = None
    try:
        if anchor is None:
            return os.open(directory, _DIR_FLAGS)
        rel = os.path.relpath(directory, anchor)
        parts = [p for p in rel.split(os.sep) if p not in ("", ".")]
        if not parts or ".." in parts:
            raise UsageError(f"{display_path(directory)}: not inside {display_path(anchor)}; not removed")
        fd = os.open(anchor, _DIR_FLAGS)
        for part in parts:
            nxt = _open_in(fd, part)
            os.close(fd)
            fd = nxt
        return fd
    except FileNotFoundError:
        if fd is not None:
            os.close(fd)
        return None
    except OSError as exc:
        if fd is not None:
            os.close(fd)
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise UsageError(f"{display_path(directory)}: a symbolic link or not a folder; not followed, "
                             "not removed") from None
        raise UsageError(f"{display_path(directory)}: {exc.strerror or exc}; not removed") from None


def clean(directory: str, anchor: str | None = None) -> Cleaned | None:
    """Remove what shapeflow wrote in the cache folder ``directory`` (module docstring), and the
    folder itself when shapeflow created it and nothing else is left; None when there is no
    folder. A folder without shapeflow's tag, or reached through a link below ``anchor``, is
    refused (UsageError, exit 2) and left as it is."""
    if not SUPPORTED:
        raise UsageError("the lint cache is not supported on this platform; nothing to clean")
    fd = _open_cache_folder(directory, anchor)
    if fd is None:
        return None
    done = Cleaned()
    try:
        tag = _tag_of(fd)
        if tag not in (_TAG, _TAG_ADOPTED):
            raise UsageError(f"{display_path(directory)}: not a shapeflow cache (no CACHEDIR.TAG of shapeflow's); "
                             "not removed")
        for name in sorted(os.listdir(fd)):
            if _LAYOUT_NAME.match(name) and _is_dir(fd, name):
                _clean_layout(fd, name, done)
            elif name not in ("CACHEDIR.TAG", ".gitignore"):
                done.kept.append(name)
        if not done.kept:
            _unlink_if(fd, ".gitignore", _GITIGNORE, done)
        if not done.kept:
            os.unlink("CACHEDIR.TAG", dir_fd=fd)
            done.removed += 1
    finally:
        os.close(fd)
    if not done.kept and tag == _TAG:
        try:
            # only an empty folder goes (rmdir), and rmdir never follows a link; the folder was
            # reached without links just above
            os.rmdir(directory)
            done.folder_removed = True
        except OSError:
            pass
    return done


def _is_dir(fd: int, name: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _unlink_if(fd: int, name: str, text: str, done: Cleaned) -> None:
    """Remove ``name`` when it is a regular file holding exactly ``text`` (what shapeflow wrote)."""
    try:
        f = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | _NOFOLLOW, dir_fd=fd)
    except OSError:
        return
    try:
        same = stat.S_ISREG(os.fstat(f).st_mode) and os.read(f, len(text) + 1) == text.encode("utf-8")
    finally:
        os.close(f)
    if same:
        os.unlink(name, dir_fd=fd)
        done.removed += 1
    else:
        done.kept.append(name)


def _clean_layout(root: int, layout: str, done: Cleaned) -> None:
    """Entries and temp files in ``<layout>/<shard>/``; then the folders, when empty."""
    try:
        lfd = _open_in(root, layout)
    except OSError:
        done.kept.append(layout)
        return
    try:
        for shard in sorted(os.listdir(lfd)):
            if not (_SHARD_NAME.match(shard) and _is_dir(lfd, shard)):
                done.kept.append(f"{layout}/{shard}")
                continue
            try:
                sfd = _open_in(lfd, shard)
            except OSError:
                done.kept.append(f"{layout}/{shard}")
                continue
            try:
                for name in sorted(os.listdir(sfd)):
                    ours = _ENTRY_NAME.match(name) or _TEMP_NAME.match(name) or _OLD_TEMP.match(name)
                    try:
                        regular = stat.S_ISREG(os.stat(name, dir_fd=sfd, follow_symlinks=False).st_mode)
                    except OSError:
                        regular = False
                    if ours and regular:
                        os.unlink(name, dir_fd=sfd)
                        done.removed += 1
                    else:
                        done.kept.append(f"{layout}/{shard}/{name}")
            finally:
                os.close(sfd)
            try:
                os.rmdir(shard, dir_fd=lfd)
            except OSError:
                pass
    finally:
        os.close(lfd)
    try:
        os.rmdir(layout, dir_fd=root)
    except OSError:
        pass


_OLD_TEMP = re.compile(r"\.tmp-[A-Za-z0-9_]{8}\.json\Z")  # tempfile.mkstemp's names (format 1)


# -- the record ------------------------------------------------------------------------------------

def _record(r: FileResult) -> dict[str, Any] | None:
    if r.rejected or r.exit_code >= EXIT_REJECTED or r.details is not None or r.changed or r.diff or r.fixed \
            or r.external:
        return None
    record: dict[str, Any] = {
        "exit_code": r.exit_code, "rejected": r.rejected, "error": r.error, "notes": list(r.notes),
        "assumptions": list(r.assumptions),
        "anchors": [[g, n, a] for (g, n), a in r.anchors.items()],
        "diagnostics": [[d.code, d.name, d.severity.value, d.message, d.hint, d.fixable, d.location.graph,
                         d.location.node, d.location.op_type, d.location.since_version, d.location.tensor]
                        for d in r.diagnostics],
    }
    if any(d.file != r.path for d in r.diagnostics):
        return None  # a finding about another file: not this file's alone
    # The path is rendered anew on a hit; text that names it would keep the old one.
    names = {r.path, display_path(r.path), os.path.basename(r.path)} - {""}
    texts = [r.error or "", *r.notes, *(t for d in r.diagnostics for t in (d.message, d.hint))]
    if any(n in t for n in names for t in texts):
        return None
    return record


def _result_from(doc: dict[str, Any], path: str) -> FileResult:
    """The FileResult a record describes, its findings about ``path``; raises (KeyError,
    TypeError, ValueError) on a record that does not have the expected shape or types (a record
    of ``_record`` is never rejected and never exits 2 or more; its lists hold strings)."""
    diags = []
    for item in _list(doc["diagnostics"]):
        code, name, severity, message, hint, fixable, graph, node, op_type, since, tensor = _list(item)
        for text in (code, name, message, hint, graph):
            if not isinstance(text, str):
                raise TypeError("bad record")
        if not isinstance(fixable, bool):
            raise TypeError("bad record")
        diags.append(Diagnostic(code, name, Severity(severity), path, message, hint, fixable,
                                Location(graph, _opt(node, str), _opt(op_type, str), _opt(since, int),
                                         _opt(tensor, str))))
    exit_code = doc["exit_code"]
    if not isinstance(exit_code, int) or isinstance(exit_code, bool) or not 0 <= exit_code < EXIT_REJECTED:
        raise ValueError("bad exit code")
    if doc["rejected"] is not False:
        raise ValueError("a rejection is never stored")
    anchors = {}
    for item in _list(doc["anchors"]):
        g, n, a = _strings(item)
        anchors[(g, n)] = a
    return FileResult(path, diagnostics=diags, exit_code=exit_code, rejected=False,
                      error=_opt(doc["error"], str), notes=list(_strings(doc["notes"])), anchors=anchors,
                      assumptions=_strings(doc["assumptions"]))


def _list(value: object) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError("bad record")
    return value


def _strings(value: object) -> tuple[str, ...]:
    items = _list(value)
    if not all(isinstance(v, str) for v in items):
        raise TypeError("bad record")
    return tuple(items)


def _opt(value: object, kind: type) -> Any:
    if value is None or (isinstance(value, kind) and not isinstance(value, bool)):
        return value
    raise TypeError("bad record")
