"""Run the shapeflow CLI under a PEP 578 audit hook and log every file it touches.

    python audit_run.py LOG.json ARGV...

The hook is installed after ``shapeflow.cli`` and its command modules are imported (loading Python
modules is not the model's business; later lazy imports are logged and told apart by the test). Every ``open`` (the
builtin, ``io.open_code`` and ``os.open``) and every rename, link, remove, chmod and truncate
is recorded until ``main`` returns; then the log is written as JSON, once the hook stopped
recording (so that write is not in it).
"""

from __future__ import annotations

import json
import os
import sys

log_path, argv = sys.argv[1], sys.argv[2:]

import importlib  # noqa: E402

import shapeflow.cli  # noqa: E402

for _module, _ in shapeflow.cli.COMMANDS.values():  # the group imports them on first use
    importlib.import_module(f"shapeflow.cli.{_module}")

events: list[list[object]] = []
recording = True

WATCHED = {"os.rename", "os.link", "os.symlink", "os.remove", "os.rmdir", "os.truncate", "os.chmod",
           "os.chown", "os.mkdir", "os.utime", "shutil.copyfile", "shutil.rmtree", "os.listdir", "os.scandir",
           "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.fork", "ctypes.dlopen"}


def _text(x: object) -> object:
    if isinstance(x, (bytes, bytearray)):
        return os.fsdecode(bytes(x))
    if isinstance(x, (str, int)) or x is None:
        return x
    if isinstance(x, os.PathLike):
        return os.fsdecode(os.fspath(x))
    return repr(x)


def hook(event: str, args: tuple) -> None:
    if not recording:
        return
    if event == "open":
        path, mode, flags = args
        events.append(["open", _text(path), mode, flags])
    elif event in WATCHED:
        events.append([event, *[_text(a) for a in args[:2]]])


sys.addaudithook(hook)
code: object = 0
try:
    shapeflow.cli.main(argv)
except SystemExit as exc:
    code = exc.code
recording = False
with open(log_path, "w", encoding="utf-8") as fh:
    json.dump({"exit": code, "events": events}, fh)
sys.exit(code if isinstance(code, int) else 0)
