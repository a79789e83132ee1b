"""Which files shapeflow opens, proved with a PEP 578 audit hook (``sys.addaudithook``).

For every command, on a model with external data inside its folder, with a location that escapes
it (``..``), with a data file that is a symlink out, and in the Hugging Face cache layout:

* the only file opened for reading is the model itself (plus Python's own module files, the
  process's umask in /proc/self/status, and a pyproject.toml for lint's settings);
* no external data file is ever opened, and nothing outside the model's folder;
* the only write is one temp file in the output folder, created with O_EXCL, then linked or
  renamed onto the output and removed (and the folder opened to fsync the rename); nothing else is
  created, renamed, removed or chmod-ed;
* no subprocess is started;
* lint's cache (README, "Fleets") is the one exception, and only inside its folder
  (``.shapeflow_cache`` in the model's folder here): entries are read there, and written as temp
  files created with O_EXCL, then renamed onto the entry; and the user's cache key, in its own
  folder (``$XDG_CACHE_HOME/shapeflow``, never the model's), read or created there. With
  ``--no-cache`` lint opens only the model, as the other commands do.
"""

from __future__ import annotations

import json
import os
import re
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from .harness import require, run_cli
from .models import cancelling_pair, external, weight_model, with_external_weight, write

AUDIT = Path(__file__).with_name("audit_run.py")
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
TEMP = re.compile(r"^\.out\.onnx\.[^/]+\.tmp$")


def _python_roots() -> list[str]:
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sysconfig.get_paths()["stdlib"],
             sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"],
             str(Path(__file__).resolve().parents[2] / "shapeflow")}
    return sorted(os.path.realpath(r) for r in roots)


PY_ROOTS = _python_roots()
MODULE_SUFFIXES = (".py", ".pyc", ".so", ".pth", ".json", ".txt", ".typed")


def _is_python_file(path: str) -> bool:
    real = os.path.realpath(path)
    return real.endswith(MODULE_SUFFIXES) and any(real.startswith(r + os.sep) for r in PY_ROOTS)


def _writes(mode: object, flags: object) -> bool:
    if isinstance(mode, str):
        return any(c in mode for c in "wax+")
    return isinstance(flags, int) and bool(flags & WRITE_FLAGS)


# -- scenarios ---------------------------------------------------------------------------------------

def inside(tmp: Path) -> tuple[Path, list[Path]]:
    d = tmp / "model"
    d.mkdir()
    path, data = with_external_weight(d, "weights.bin")
    return Path(path), [data]


def dotdot(tmp: Path) -> tuple[Path, list[Path]]:
    d = tmp / "model"
    d.mkdir()
    secret = tmp / "secret.bin"
    secret.write_bytes(np.arange(4, dtype=np.float32).tobytes())
    path, _ = with_external_weight(d, "../secret.bin", data_path=secret)
    return Path(path), [secret]


def symlink_out(tmp: Path) -> tuple[Path, list[Path]]:
    d = tmp / "model"
    d.mkdir()
    secret = tmp / "secret.bin"
    secret.write_bytes(np.arange(4, dtype=np.float32).tobytes())
    os.symlink("../secret.bin", d / "weights.bin")
    path, _ = with_external_weight(d, "weights.bin", data_path=d / "weights.bin")
    return Path(path), [secret, d / "weights.bin"]


def hf_cache(tmp: Path) -> tuple[Path, list[Path]]:
    repo = tmp / "hub" / "models--org--name"
    blobs, snap = repo / "blobs", repo / "snapshots" / "0123abc"
    blobs.mkdir(parents=True)
    snap.mkdir(parents=True)
    m, w = weight_model()
    external(m, "w", "model.onnx.data", offset="0", length="16")
    (blobs / "b1e2f3").write_bytes(m.SerializeToString())
    (blobs / "d4c5a6").write_bytes(w.tobytes())
    os.symlink("../../blobs/b1e2f3", snap / "model.onnx")
    os.symlink("../../blobs/d4c5a6", snap / "model.onnx.data")
    return snap / "model.onnx", [blobs / "d4c5a6", snap / "model.onnx.data"]


def plain(tmp: Path) -> tuple[Path, list[Path]]:
    d = tmp / "model"
    d.mkdir()
    return Path(write(cancelling_pair(), d / "m.onnx")), []


SCENARIOS = {"plain": plain, "data-inside": inside, "data-dotdot": dotdot, "data-symlink-out": symlink_out,
             "hugging-face-cache": hf_cache}


def audited(cmd: str, model: Path, tmp: Path, extra: tuple[str, ...] = ()) -> tuple[dict, object]:
    log = tmp / "audit.json"
    argv = [cmd, *extra, str(model)]
    if cmd in ("infer", "optimize"):
        argv += ["-o", str(model.parent / "out.onnx")]
    r = run_cli(argv, cwd=model.parent, module=[str(AUDIT), str(log)])
    assert "Traceback" not in r.output, r.describe()
    assert log.exists(), r.describe()
    return json.loads(log.read_text()), r


def _in(path: str, folder: str | None) -> bool:
    return folder is not None and os.path.abspath(path).startswith(folder + os.sep)


def _key_folder() -> str:
    """Where lint keeps the user's cache key (shapeflow/cache.py, key_path): the test runs' own."""
    from shapeflow.drivers.cache import key_path

    return os.path.dirname(key_path() or "/nonexistent/key")


@dataclass
class _Audit:
    """The walk of one audit log: what it has seen, and what it found wrong."""

    folder: str  # the model's folder, where the output goes
    model: str
    forbidden: set[str]  # the external data files (never to be opened)
    cache: str | None
    key_folder: str | None  # where lint keeps the user's cache key
    found: list[str] = field(default_factory=list)
    temps: set[str] = field(default_factory=set)
    cache_temps: set[str] = field(default_factory=set)
    reads: list[str] = field(default_factory=list)

    def opened(self, path: object, mode: object, flags: object) -> None:
        if isinstance(path, int):
            return  # os.fdopen of a descriptor opened (and logged) just before
        folder, cache = self.folder, self.cache
        absolute = os.path.abspath(os.path.join(folder, str(path)))
        is_dir = isinstance(flags, int) and bool(flags & os.O_DIRECTORY)
        if absolute in self.forbidden or os.path.realpath(absolute) in self.forbidden:
            self.found.append(f"opened external data {path}")
        elif _in(absolute, self.key_folder):
            pass  # the user's cache key (read, or created once with O_EXCL and linked into place)
        elif absolute == cache and is_dir:
            pass  # the cache folder itself, opened to open what is in it
        elif absolute == folder and cache is not None and is_dir:
            pass  # the folder the cache folder is opened from, without following links
        elif _in(absolute, cache):
            if _writes(mode, flags):
                if not (isinstance(flags, int) and flags & os.O_EXCL) and not (isinstance(mode, str) and "x" in mode):
                    self.found.append(f"cache file opened for writing without O_EXCL: {path}")
                self.cache_temps.add(absolute)
        elif _writes(mode, flags):
            if os.path.dirname(absolute) != folder or not TEMP.match(os.path.basename(absolute)):
                self.found.append(f"wrote something other than a temp file in the output folder: {path}")
            elif not (isinstance(flags, int) and flags & os.O_EXCL):
                self.found.append(f"temp file opened without O_EXCL: {path}")
            self.temps.add(absolute)
        elif absolute == self.model:
            self.reads.append(absolute)
        elif absolute == folder and is_dir:
            pass  # the output folder itself, to fsync the rename
        elif absolute == "/proc/self/status" or os.path.basename(absolute) == "pyproject.toml":
            pass  # the umask (io._current_umask); lint's [tool.shapeflow] settings
        elif not _is_python_file(absolute):
            self.found.append(f"opened a file that is not the model: {path}")

    def changed(self, ev: list[Any]) -> None:
        """Anything but an open: renames, removals, processes."""
        kind, cache, folder, key_folder = ev[0], self.cache, self.folder, self.key_folder
        if kind in ("os.rename", "os.link"):
            src, dst = (os.path.abspath(os.path.join(folder, x)) for x in ev[1:3])
            if src in self.cache_temps and _in(dst, cache) and dst.endswith(".json"):
                return  # a cache entry, written whole then renamed into place
            if kind == "os.link" and _in(src, key_folder) and _in(dst, key_folder):
                return  # the user's cache key, created once
            if src not in self.temps or dst != os.path.join(folder, "out.onnx"):
                self.found.append(f"{kind} {src} -> {dst}")
        elif kind == "os.remove":
            removed = os.path.abspath(os.path.join(folder, ev[1]))
            if removed not in self.temps and not _in(removed, key_folder):
                self.found.append(f"removed {ev[1]}")
        elif kind == "os.chmod":
            if not isinstance(ev[1], int) and os.path.abspath(ev[1]) not in self.temps:
                self.found.append(f"chmod {ev[1]}")
        elif kind == "os.mkdir" and (_in(ev[1], cache) or (cache is not None and os.path.abspath(ev[1]) == cache)):
            pass  # the cache folder and its subfolders
        elif kind == "os.mkdir" and key_folder is not None and \
                (_in(ev[1], key_folder) or key_folder.startswith(os.path.abspath(ev[1]))):
            pass  # the folder of the user's cache key
        elif kind in ("os.truncate", "os.symlink", "os.rmdir", "os.mkdir", "os.utime", "os.chown",
                      "shutil.copyfile", "shutil.rmtree"):
            self.found.append(f"unexpected {kind} {ev[1:]}")
        elif kind in ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.fork"):
            self.found.append(f"started a process: {ev}")


def violations(events: list[Any], model: Path, data_files: list[Path], wrote: bool,
               cache: str | None = None) -> list[str]:
    """What the audit log shows shapeflow doing that it must not (empty when all is well).
    ``cache``: lint's cache folder, where entries may be read and atomically written."""
    forbidden = {os.path.realpath(p) for p in data_files} | {os.path.abspath(p) for p in data_files}
    audit = _Audit(os.path.abspath(model.parent), os.path.abspath(model), forbidden, cache,
                   _key_folder() if cache is not None else None)
    for ev in events:
        if ev[0] == "open":
            audit.opened(ev[1], ev[2], ev[3])
        else:
            audit.changed(ev)
    found, temps = audit.found, audit.temps
    if not audit.reads:
        found.append("the model was never opened (is the hook working?)")
    if wrote and len(temps) != 1:
        found.append(f"expected exactly one temp file, saw {sorted(temps)}")
    if not wrote and temps:
        found.append(f"nothing should have been written, saw {sorted(temps)}")
    return found


@pytest.mark.parametrize("scenario", list(SCENARIOS))
@pytest.mark.parametrize("cmd", ["infer", "lint", "optimize"])
def test_opens_only_the_model_and_writes_only_its_temp(cmd: str, scenario: str, tmp_path: Path) -> None:
    require(cmd)
    model, data_files = SCENARIOS[scenario](tmp_path)
    log, run = audited(cmd, model, tmp_path)
    # infer -o writes with findings too (exit 1); optimize writes only when it exits 0
    wrote = cmd == "infer" and run.returncode <= 1 or cmd == "optimize" and run.returncode == 0
    cache = os.path.join(os.path.abspath(model.parent), ".shapeflow_cache") if cmd == "lint" else None
    found = violations(log["events"], model, data_files, wrote, cache)
    assert not found, "\n".join(found) + "\n" + run.describe() + "\n" + "\n".join(map(str, log["events"]))
    assert os.path.exists(model.parent / "out.onnx") == wrote, run.describe()
    if cmd == "lint":
        # a second run reads what the first wrote, under the same rules
        log, run = audited(cmd, model, tmp_path)
        found = violations(log["events"], model, data_files, wrote, cache)
        assert not found, "\n".join(found) + "\n" + run.describe()


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_lint_without_cache_opens_only_the_model(scenario: str, tmp_path: Path) -> None:
    require("lint")
    model, data_files = SCENARIOS[scenario](tmp_path)
    log, run = audited("lint", model, tmp_path, ("--no-cache",))
    found = violations(log["events"], model, data_files, wrote=False)
    assert not found, "\n".join(found) + "\n" + run.describe() + "\n" + "\n".join(map(str, log["events"]))
    assert not (model.parent / ".shapeflow_cache").exists()


def test_the_audit_check_is_not_vacuous(tmp_path: Path) -> None:
    """The checker flags what it is there to catch (a log that shapeflow must never produce)."""
    model, data = inside(tmp_path)
    folder = str(model.parent)
    temp = os.path.join(folder, ".out.onnx.abc.tmp")
    good = [["open", str(model), None, os.O_RDONLY],
            ["open", temp, None, os.O_RDWR | os.O_CREAT | os.O_EXCL],
            ["os.link", temp, os.path.join(folder, "out.onnx")], ["os.remove", temp]]
    assert violations(good, model, data, wrote=True) == []
    bad = good + [["open", str(data[0]), "rb", 0],
                  ["open", "/etc/passwd", "r", 0],
                  ["open", str(model), "r+b", os.O_RDWR],
                  ["os.rename", str(model), os.path.join(folder, "out.onnx")],
                  ["subprocess.Popen", "sh", ["sh"]]]
    found = violations(bad, model, data, wrote=True)
    assert len(found) == 5, found
