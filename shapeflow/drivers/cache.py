"""The lint cache (README, "Fleets"): a file's lint result, reused while the file's bytes, the
settings it is linted under and the shapeflow version are unchanged.

An entry is one JSON file, ``<dir>/lint-v1/<key[:2]>/<key>.json``; the key is a SHA-256 of the
model's bytes (those the linter reads anyway: no second read), of every setting that can change
the result (``LintOptions``: rules, severities, exit-zero, dims, assumptions, limits) and of the
version. An entry holds what the renderers need, without the path: the result is rebuilt under
the path the user gives now, so a moved or copied model hits too. An entry is trusted only when
it parses, names the same version and key and has the expected fields; anything else is a miss,
and the fresh result overwrites it. Writes go to a temp file in the same folder, then
``os.replace``: a reader sees the old entry or the new one, never half of one. JSON, not pickle:
a cache folder is data anyone may have written, and loading it must not run code.

Not cached: runs with ``--fix`` (they write models), rejected files (SF001/SF002/SF006: nothing is
written on rejection, and a rejection is quick to find again), internal errors (their traceback
belongs to that run), models with external data (their checks look at the files beside them), and
results whose text names the path (they would not render identically under another one).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any

from .. import _version
from .config import find_config, load_config
from ..diagnostics import Diagnostic, Location, Severity
from ..errors import EXIT_REJECTED, display_path
from .linter import FileResult, LintOptions

CACHE_DIR_NAME = ".shapeflow_cache"
FORMAT = 1  # the layout of an entry; bump when it changes
_SUBDIR = f"lint-v{FORMAT}"
_TAG = ("Signature: 8a477f597d28d172789f06886806bc55\n"
        "# This file is a cache directory tag created by shapeflow.\n"
        "# For information about cache directory tags see https://bford.info/cachedir/\n")


def default_cache_dir(config: str | None = None, isolated: bool = False, start: str | None = None) -> str:
    """The config file's ``cache-dir``, or ``.shapeflow_cache`` next to it; the config file in
    force is ``config`` when given, else the nearest one from ``start`` (the current directory)
    up. The current directory's ``.shapeflow_cache`` when there is none (or with ``isolated``)."""
    here = os.path.abspath(start or os.getcwd())
    found = os.path.abspath(config) if config is not None else None if isolated else find_config(here)
    if found is None:
        return os.path.join(here, CACHE_DIR_NAME)
    chosen = load_config(found).cache_dir
    return chosen if chosen is not None else os.path.join(os.path.dirname(found), CACHE_DIR_NAME)


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
              options.exit_zero, options.dims, options.assume, options.limits, options.fix, options.diff)
    return repr(fields)


@dataclass(frozen=True)
class LintCache:
    """A cache folder. Plain data: it goes to worker processes and Ray tasks with each file."""

    directory: str
    version: str = field(default_factory=lambda: _version.__version__)  # read at creation (tests patch it)

    def key(self, data: bytes, settings: str) -> str:
        h = hashlib.sha256()
        h.update(hashlib.sha256(data).digest())
        h.update(settings.encode("utf-8", "surrogatepass"))
        h.update(b"\0" + self.version.encode())
        # Ops without a shapeflow rule are inferred by onnx's own shape inference (ops/fallback.py):
        # an onnx upgrade may change a result.
        h.update(b"\0" + _onnx_version().encode())
        return h.hexdigest()

    def _entry(self, key: str) -> str:
        return os.path.join(self.directory, _SUBDIR, key[:2], key + ".json")

    def get(self, key: str, path: str) -> FileResult | None:
        """The cached result for ``key``, rendered under ``path``; None on a miss, and for an entry
        that is unreadable, corrupt or another version's or key's (it is then overwritten)."""
        try:
            # O_NONBLOCK and a regular-file check: a FIFO or device planted in the folder must not
            # hang or feed the run
            fd = os.open(self._entry(key), os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
            with os.fdopen(fd, "rb") as f:
                if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                    return None
                doc = json.loads(f.read())
            if not isinstance(doc, dict) or doc.get("version") != self.version or doc.get("key") != key \
                    or doc.get("format") != FORMAT:
                return None
            return _result_from(doc["result"], path)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def put(self, key: str, result: FileResult) -> None:
        """Store ``result`` when it may be reused (module docstring); a cache that cannot be written
        (read-only, full) is skipped silently: it only saves time."""
        record = _record(result)
        if record is None:
            return
        entry = self._entry(key)
        text = json.dumps({"format": FORMAT, "version": self.version, "key": key, "result": record},
                          separators=(",", ":"), ensure_ascii=True)
        try:
            folder = os.path.dirname(entry)
            if not os.path.isdir(folder):
                self._create()
                os.makedirs(folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(text.encode("ascii"))
                os.replace(tmp, entry)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
        except OSError:
            return

    def _create(self) -> None:
        """The folder, with a CACHEDIR.TAG (backup tools skip it) and a .gitignore of ``*``."""
        os.makedirs(self.directory, exist_ok=True)
        for name, text in (("CACHEDIR.TAG", _TAG), (".gitignore", "# created by shapeflow\n*\n")):
            try:
                with open(os.path.join(self.directory, name), "x", encoding="utf-8") as f:
                    f.write(text)
            except FileExistsError:
                pass


def clean(directory: str) -> bool:
    """Remove a cache folder; whether there was one. Refuses a folder that is not a cache."""
    if not os.path.isdir(directory):
        return False
    try:
        with open(os.path.join(directory, "CACHEDIR.TAG"), encoding="utf-8", errors="replace") as f:
            ours = "created by shapeflow" in f.read(4096)
    except OSError:
        ours = False
    if not ours:
        from ..errors import UsageError

        raise UsageError(f"{display_path(directory)}: not a shapeflow cache (no CACHEDIR.TAG of shapeflow's); "
                         "not removed")
    shutil.rmtree(directory)
    return True


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
