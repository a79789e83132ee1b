"""``python -m shapeflow ARGS`` as a process of its own, without paying the interpreter's start and
the command's imports on every run (about 0.4 s of CPU each, a quarter of the suite's time).

A *starter* is a Python process that imported what ``python -m shapeflow CMD`` imports before it
parses its arguments (``shapeflow._start``, ``shapeflow.cli`` and ``shapeflow.cli.CMD_cmd``: the
same modules, in the same order), then waits. Each run is a ``fork`` of it that takes the run's
standard streams, folder, environment, session and ``RLIMIT_AS``, and executes
``shapeflow/__main__.py`` as ``-m`` does. So a run is still its own process: its exit code (or the
signal that ended it), its file descriptors, what it writes to stderr (a traceback included), its
peak RSS and its address-space limit are its own, and nothing one run changes reaches the next.

What a fork cannot reproduce, so those tests start a real interpreter (``subprocess``) and must keep
doing so: the start itself (what gets imported, ``KeyboardInterrupt`` during imports, the console
script), signals sent from outside, terminals, closed or inherited descriptors, and the hash seed
(runs of one starter share one; a starter exists per worker and per command). A starter is keyed
by what Python reads when it starts (``PYTHON*``, ``LC_*``, ``LANG`` variables) and by the
importable files in the run's folder (``-m`` puts that folder first on ``sys.path``), so those
never differ from a real start either.

``SHAPEFLOW_TESTS_SUBPROCESS=1`` runs every call as a real subprocess (the comparison run).
"""

from __future__ import annotations

import atexit
import json
import locale
import os
import selectors
import socket
import subprocess
import sys
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

COMMANDS = ("clean", "diff", "infer", "lint", "optimize", "rules")
_STARTUP_VARS = ("LANG", "LANGUAGE")  # with every PYTHON* and LC_* variable
_MAX_STARTERS = 8  # per test process: the least recently used one stops beyond this
_MAX_MESSAGE = 1 << 20


@dataclass
class Finished:
    returncode: int  # negative: the signal that ended the run
    stdout: bytes
    stderr: bytes
    elapsed: float
    max_rss: int  # bytes
    timed_out: bool


# --------------------------------------------------------------------------------------------------
# The starter (runs in its own interpreter: this file's SERVE source is all it executes)
# --------------------------------------------------------------------------------------------------

SERVE = r'''
import gc, importlib, json, os, resource, select, signal, socket, sys, time
fd, command = int(sys.argv[1]), sys.argv[2]
sys.argv = sys.argv[:1]
sys.path[0] = os.getcwd()  # as -m puts it
try:
    import shapeflow._start
    import shapeflow.cli
    if command:
        importlib.import_module("shapeflow.cli." + command + "_cmd")
except BaseException:
    pass  # the run imports it again and fails as a real start would
sock = socket.socket(fileno=fd)
gc.collect()
gc.freeze()  # what the fork shares is not copied by the collector's bookkeeping


def child(req, fds):
    code = 70
    try:
        sock.close()
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if req["memory"] is not None:
            resource.setrlimit(resource.RLIMIT_AS, (req["memory"], req["memory"]))
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        sys.path[0] = os.getcwd()
        gc.unfreeze()
        import runpy
        sys.argv = ["-m", *req["argv"]]
        try:
            runpy.run_module("shapeflow", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as exc:  # as the interpreter maps it
            if exc.code is None:
                code = 0
            elif isinstance(exc.code, int):
                code = exc.code & 0xFF
            else:
                print(exc.code, file=sys.stderr)
                code = 1
        except KeyboardInterrupt:
            import traceback
            traceback.print_exc()
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGINT)
        except BaseException:
            import traceback
            traceback.print_exc()
            code = 1
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        try:
            import atexit
            atexit._run_exitfuncs()
        except BaseException:
            pass
    finally:
        os._exit(code)


while True:
    try:
        msg, fds, _, _ = socket.recv_fds(sock, ''' + str(_MAX_MESSAGE) + r''', 3)
    except OSError:
        break
    if not msg:
        break
    req = json.loads(msg)
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        child(req, fds)
    for f in fds:
        os.close(f)
    pidfd = os.pidfd_open(pid)
    ready, _, _ = select.select([pidfd], [], [], req["timeout"])
    timed_out = not ready
    if timed_out:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    _, status, usage = os.wait4(pid, 0)
    os.close(pidfd)
    sock.send(json.dumps({"status": status, "max_rss": usage.ru_maxrss * 1024, "timed_out": timed_out,
                          "elapsed": time.monotonic() - started}).encode())
'''


class _Starter:
    def __init__(self, env: Mapping[str, str], cwd: str, command: str) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock = ours
        self.proc = subprocess.Popen([sys.executable, "-c", SERVE, str(theirs.fileno()), command],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, cwd=cwd, env=dict(env),
                                     pass_fds=(theirs.fileno(),))
        theirs.close()

    def stop(self) -> None:
        self.sock.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


_starters: dict[tuple[object, ...], _Starter] = {}


@atexit.register
def stop_all() -> None:
    while _starters:
        _starters.popitem()[1].stop()


def _importables(folder: str) -> tuple[str, ...]:
    """What ``import NAME`` could find in ``folder`` (first on ``sys.path`` under ``-m``)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return ("?",)
    found = []
    for name in names:
        if name.endswith((".py", ".pyc", ".so", ".pth")) or os.path.isfile(os.path.join(folder, name, "__init__.py")):
            found.append(name)
    return tuple(sorted(found))


def _command(argv: Sequence[str]) -> str:
    for arg in argv:
        if not arg.startswith("-"):
            return arg if arg in COMMANDS else ""
    return ""


def _starter(env: Mapping[str, str], cwd: str, argv: Sequence[str]) -> _Starter:
    startup = tuple(sorted((k, v) for k, v in env.items()
                           if k.startswith(("PYTHON", "LC_")) or k in _STARTUP_VARS))
    shadow = _importables(cwd)
    home = cwd if shadow else os.path.dirname(os.path.abspath(__file__))
    command = _command(argv)
    key = (startup, shadow, home if shadow else "", command)
    starter = _starters.pop(key, None)
    if starter is None or starter.proc.poll() is not None:
        starter = _Starter(env, home, command)
    _starters[key] = starter  # most recently used last
    while len(_starters) > _MAX_STARTERS:
        _starters.pop(next(iter(_starters))).stop()
    return starter


def real_processes() -> bool:
    return bool(os.environ.get("SHAPEFLOW_TESTS_SUBPROCESS")) or not hasattr(os, "pidfd_open") \
        or not hasattr(socket, "send_fds")


def run(argv: Sequence[str], *, cwd: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None,
        input: bytes | None = None, timeout: float | None = None, memory: int | None = None) -> Finished:
    """``python -m shapeflow ARGV`` forked from a starter: stdin ``input`` (else /dev/null), stdout
    and stderr pipes read to the end, killed (with its session) after ``timeout`` seconds, under
    ``RLIMIT_AS = memory`` when given."""
    env = dict(os.environ if env is None else env)
    where = os.path.abspath(os.fspath(cwd) if cwd is not None else os.getcwd())
    request = json.dumps({"argv": list(argv), "cwd": where, "env": env, "timeout": timeout,
                          "memory": memory}).encode()
    if len(request) >= _MAX_MESSAGE:
        raise ValueError("command line and environment too large for a starter")
    starter = _starter(env, where, argv)
    in_r, in_w = os.pipe() if input else (os.open(os.devnull, os.O_RDONLY), -1)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        socket.send_fds(starter.sock, [request], [in_r, out_w, err_w])
    finally:
        for fd in (in_r, out_w, err_w):
            os.close(fd)
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    pending = memoryview(input or b"")
    sel = selectors.DefaultSelector()
    sel.register(out_r, selectors.EVENT_READ)
    sel.register(err_r, selectors.EVENT_READ)
    sel.register(starter.sock, selectors.EVENT_READ)
    if in_w >= 0:
        os.set_blocking(in_w, False)
        sel.register(in_w, selectors.EVENT_WRITE)
    reply = None
    reading = {out_r, err_r}
    try:
        while reply is None or reading:
            for key, _ in sel.select():
                fd = key.fd
                if fd == in_w:
                    try:
                        pending = pending[os.write(in_w, pending[:65536]):]
                    except BrokenPipeError:
                        pending = pending[:0]
                    if not pending:
                        sel.unregister(in_w)
                        os.close(in_w)
                        in_w = -1
                elif key.fileobj is starter.sock:
                    data = starter.sock.recv(65536)
                    sel.unregister(starter.sock)
                    if not data:
                        raise RuntimeError("the shapeflow starter process died")
                    reply = json.loads(data)
                else:
                    block = os.read(fd, 65536)
                    if block:
                        chunks[fd].append(block)
                    else:
                        sel.unregister(fd)
                        reading.discard(fd)
            if reply is not None and in_w >= 0:  # the run ended without reading all its input
                sel.unregister(in_w)
                os.close(in_w)
                in_w = -1
    finally:
        sel.close()
        for fd in (out_r, err_r, in_w):
            if fd >= 0:
                os.close(fd)
    return Finished(os.waitstatus_to_exitcode(reply["status"]), b"".join(chunks[out_r]), b"".join(chunks[err_r]),
                    reply["elapsed"], reply["max_rss"], reply["timed_out"])


def _text(data: bytes) -> str:
    # as subprocess decodes with text=True: the locale's encoding, universal newlines
    return data.decode(locale.getpreferredencoding(False)).replace("\r\n", "\n").replace("\r", "\n")


def shapeflow(*args: str, cwd: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None,
              input: str | None = None, timeout: float | None = None,
              text: bool = True, **popen: Any) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
    """What ``subprocess.run([sys.executable, "-m", "shapeflow", *args], capture_output=True,
    text=text, ...)`` returns (``TimeoutExpired`` included), from a forked run. Other arguments of
    ``subprocess.run`` (``preexec_fn``...) ask for a real process: this is one."""
    cmd = [sys.executable, "-m", "shapeflow", *args]
    if popen or real_processes():
        if input is None:
            popen.setdefault("stdin", subprocess.DEVNULL)
        return subprocess.run(cmd, cwd=cwd, env=None if env is None else dict(env), input=input, timeout=timeout,
                              capture_output=True, text=text, **popen)
    data = None if input is None else input.encode(locale.getpreferredencoding(False)) if text else input
    done = run(args, cwd=cwd, env=env, input=data, timeout=timeout)  # type: ignore[arg-type]
    out, err = (_text(done.stdout), _text(done.stderr)) if text else (done.stdout, done.stderr)
    if done.timed_out:
        raise subprocess.TimeoutExpired(cmd, timeout or 0, out, err)
    return subprocess.CompletedProcess(cmd, done.returncode, out, err)

