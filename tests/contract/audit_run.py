"""Run the shapeflow CLI under a PEP 578 audit hook and log every file it touches.

    python audit_run.py LOG.json ARGV...

The hook is installed after ``shapeflow.cli`` and its command modules are imported (loading Python
modules is not the model's business; later lazy imports are logged and told apart by the test). Every ``open`` (the
builtin, ``io.open_code`` and ``os.open``) and every rename, link, remove, chmod and truncate
is recorded until ``main`` returns; then the log is written as JSON, once the hook stopped
recording (so that write is not in it).

A path relative to a directory descriptor (``dir_fd``: the lint cache opens its folder one
component at a time without following links) is logged resolved, through /proc/self/fd: the
``open`` audit event does not carry the descriptor, so ``os.open`` is wrapped to log it.
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
quiet = False  # inside the os.open wrapper, which logs the resolved path itself

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


# the position of the dir_fd argument(s) of each event, by the path argument they qualify
AT = {"os.rename": ((0, 2), (1, 3)), "os.link": ((0, 2), (1, 3)), "os.remove": ((0, 1),),
      "os.rmdir": ((0, 1),), "os.mkdir": ((0, 2),), "os.chmod": ((0, 2),), "os.symlink": ((1, 2),)}


def _at(path: object, dir_fd: object) -> object:
    if isinstance(dir_fd, int) and dir_fd >= 0 and isinstance(path, (str, bytes)) and \
            not os.path.isabs(os.fsdecode(path)):
        return os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), os.fsdecode(path))
    return path


def hook(event: str, args: tuple) -> None:
    global quiet
    if not recording or quiet:
        return
    if event == "open":
        path, mode, flags = args
        events.append(["open", _text(path), mode, flags])
    elif event in WATCHED:
        items = list(args)
        quiet = True
        try:
            for where, fd in AT.get(event, ()):
                if fd < len(items):
                    items[where] = _at(items[where], items[fd])
        finally:
            quiet = False
        events.append([event, *[_text(a) for a in items[:2]]])


_real_open = os.open


def _open(path, flags, mode=0o777, *, dir_fd=None):  # type: ignore[no-untyped-def]
    global quiet
    if dir_fd is None or not recording or quiet:
        return _real_open(path, flags, mode, dir_fd=dir_fd)
    quiet = True
    try:
        events.append(["open", _text(_at(path, dir_fd)), None, flags])
        return _real_open(path, flags, mode, dir_fd=dir_fd)
    finally:
        quiet = False


os.open = _open
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
