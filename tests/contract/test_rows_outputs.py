"""Output paths (issue 11): a device, FIFO, socket or directory at ``-o`` is refused with or without
``--force`` and left as it was; ``-o -`` writes the model to stdout (never to a terminal); a write
that fails mid-way (ENOSPC, EDQUOT, EIO) leaves no temp file and names the path and the errno.

These run as root in CI containers: a regression would replace the node, so the device nodes are
made in the test's own folder (``mknod``), and the real ``/dev/null`` is used only inside a private
mount namespace with a tmpfs over ``/dev``.
"""

from __future__ import annotations

import os
import pty
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import onnx
import pytest

from .harness import (
    WRITERS,
    E,
    Row,
    Setup,
    assert_untouched,
    check_row,
    cli_env,
    params,
    run_cli,
    snapshot,
)
from .models import cancelling_pair, write

REFUSED = "not a regular file; refusing to replace it"


def _refused(*says: str) -> dict:
    return {cmd: E(2, *says, REFUSED, writes=None) for cmd in WRITERS}


def _special(make):  # type: ignore[no-untyped-def]
    """A row builder: the model, and at the output path whatever ``make(path)`` puts there."""

    def build(tmp: Path, force: bool) -> Setup:
        write(cancelling_pair(), tmp / "m.onnx")
        out = make(tmp)
        extra = ["--force"] if force else []
        return Setup(str(tmp / "m.onnx"), output=out, args={cmd: list(extra) for cmd in WRITERS}, timeout=30)

    return build


def _null_device(tmp: Path) -> str:
    if os.geteuid() != 0:
        pytest.skip("mknod needs root")
    p = tmp / "null"
    os.mknod(p, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    return str(p)


def _fifo(tmp: Path) -> str:
    p = tmp / "out.fifo"
    os.mkfifo(p)
    return str(p)


def _directory(tmp: Path) -> str:
    p = tmp / "out.onnx"
    p.mkdir()
    (p / "keep").write_bytes(b"inside")
    return str(p)


_SOCKETS: list[socket.socket] = []


def _socket(tmp: Path) -> str:
    short = tempfile.mkdtemp(prefix="sfo", dir="/tmp")  # AF_UNIX paths are short
    p = os.path.join(short, "out.sock")
    s = socket.socket(socket.AF_UNIX)
    s.bind(p)
    _SOCKETS.append(s)
    link = tmp / "out.onnx"
    os.symlink(p, link)  # through a link in the watched folder: the socket itself is elsewhere
    return str(link)


def _link_to_device(tmp: Path) -> str:
    dev = _null_device(tmp)
    os.symlink(os.path.basename(dev), tmp / "out.onnx")
    return str(tmp / "out.onnx")


def _link_to_proc_fd(tmp: Path) -> str:
    # like /dev/stdout: a name that stands for a stream whatever it resolves to right now
    os.symlink("/proc/self/fd/1", tmp / "out.onnx")
    return str(tmp / "out.onnx")


KINDS = {
    "char-device": (_null_device, "character device"),
    "fifo": (_fifo, "FIFO"),
    "directory": (_directory, "directory"),
    "socket": (_socket, "socket"),
    "link-to-device": (_link_to_device, "character device"),
}

ROWS = [
    Row(f"60-output-{name}{'-force' if force else ''}",
        (lambda make, force: lambda tmp: _special(make)(tmp, force))(make, force), _refused(kind))
    for name, (make, kind) in KINDS.items() for force in (False, True)
]
ROWS.append(Row("60-output-proc-fd-link-force", lambda tmp: _special(_link_to_proc_fd)(tmp, True),
                {cmd: E(2, "refusing to replace it", writes=None) for cmd in WRITERS}))


@pytest.mark.parametrize("row, cmd", params(ROWS))
def test_row(row: Row, cmd: str, tmp_path: Path) -> None:
    check_row(row, cmd, tmp_path)


def _unshare_dev_ok() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                            "mount -t tmpfs tmpfs /dev && mknod /dev/null c 1 3"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not _unshare_dev_ok(), reason="needs root, unshare -m and mount")
@pytest.mark.parametrize("target", ["/dev/null", "/dev/full", "/dev/stdout"])
@pytest.mark.parametrize("cmd", WRITERS)
def test_61_real_dev_paths_are_refused(cmd: str, target: str, tmp_path: Path) -> None:
    """The paths of the report (``-o /dev/null --force``), in a private /dev: after the run the
    node is still a character device (or the link still a link)."""
    src = write(cancelling_pair(), tmp_path / "m.onnx")
    script = ('mount -t tmpfs tmpfs /dev && mknod -m 666 /dev/null c 1 3 && mknod -m 666 /dev/full c 1 7 '
              '&& ln -s /proc/self/fd/1 /dev/stdout && "$@"; rc=$?; '
              'if [ -c /dev/null ] && [ -c /dev/full ] && [ -L /dev/stdout ]; then echo NODES-KEPT >&2; fi; exit $rc')
    before = snapshot(tmp_path)
    r = run_cli([cmd, src, "-o", target, "--force"], cwd=tmp_path,
                prefix=["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh"])
    assert r.returncode == 2, r.describe()
    assert "NODES-KEPT" in r.stderr, r.describe()
    lines = [line for line in r.stderr.splitlines() if line.strip() and line != "NODES-KEPT"]
    assert len(lines) == 1 and target in lines[0] and "refusing to replace it" in lines[0], r.describe()
    assert "Traceback" not in r.output and not r.stdout.strip(), r.describe()
    assert_untouched(before, snapshot(tmp_path))


# -- -o - ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("cmd", WRITERS)
def test_62_dash_writes_the_model_to_stdout(cmd: str, tmp_path: Path) -> None:
    src = write(cancelling_pair(), tmp_path / "m.onnx")
    before = snapshot(tmp_path)
    argv = [sys.executable, "-m", "shapeflow", cmd, src, "-o", "-"]
    r = subprocess.run(argv, capture_output=True, cwd=tmp_path, env=cli_env(), timeout=120)
    assert r.returncode == 0, r.stderr
    m = onnx.ModelProto.FromString(r.stdout)  # stdout holds the model and nothing else
    onnx.checker.check_model(m)
    ops = [n.op_type for n in m.graph.node]
    if cmd == "optimize":
        assert "Squeeze" not in ops and "Unsqueeze" not in ops, ops
    else:
        assert {vi.name for vi in m.graph.value_info} >= {"u", "s"}, "infer -o - lost the shapes"
    assert b"Traceback" not in r.stderr and r.stderr.strip(), "the report goes to stderr"
    assert_untouched(before, snapshot(tmp_path))


@pytest.mark.parametrize("cmd", WRITERS)
def test_62_dash_refuses_a_terminal(cmd: str, tmp_path: Path) -> None:
    src = write(cancelling_pair(), tmp_path / "m.onnx")
    before = snapshot(tmp_path)
    master, slave = pty.openpty()
    try:
        p = subprocess.run([sys.executable, "-m", "shapeflow", cmd, src, "-o", "-"], stdout=slave,
                           stderr=subprocess.PIPE, cwd=tmp_path, env=cli_env(), timeout=120)
    finally:
        os.close(slave)
    os.set_blocking(master, False)
    try:
        shown = os.read(master, 1 << 16)
    except (BlockingIOError, OSError):
        shown = b""
    os.close(master)
    assert p.returncode == 2, p.stderr
    err = [line for line in p.stderr.decode().splitlines() if line.strip()]
    assert len(err) == 1 and "refusing to write a binary model to a terminal" in err[0], err
    assert "m.onnx" in err[0], err
    assert len(shown) < 200, f"bytes reached the terminal: {shown[:80]!r}"
    assert_untouched(before, snapshot(tmp_path))


# -- a write that fails mid-way ------------------------------------------------------------------------------

def _inject(errno_name: str, call: str) -> list[str]:
    """``python -c``: the CLI with ``os.<call>`` failing with ``errno_name`` (as a full disk, a
    quota or a dying disk make it fail)."""
    return ["-c", f"import errno, os\n"
                  f"def fail(*a, **k):\n    raise OSError(errno.{errno_name}, os.strerror(errno.{errno_name}))\n"
                  f"os.{call} = fail\n"
                  "from shapeflow.cli import main\nmain()"]


@pytest.mark.parametrize("errno_name", ["ENOSPC", "EDQUOT", "EIO"])
@pytest.mark.parametrize("call", ["fsync", "replace"])
@pytest.mark.parametrize("cmd", WRITERS)
def test_63_failed_write_leaves_nothing_and_names_path_and_errno(cmd: str, call: str, errno_name: str,
                                                                 tmp_path: Path) -> None:
    src = write(cancelling_pair(), tmp_path / "m.onnx")
    out = tmp_path / "out.onnx"
    force: list[str] = []
    if call == "replace":  # replace() is the --force path: a previous output must survive
        out.write_bytes(b"previous output")
        force = ["--force"]
    before = snapshot(tmp_path)
    r = run_cli([cmd, src, "-o", str(out), *force], cwd=tmp_path, module=_inject(errno_name, call))
    assert r.returncode == 2, r.describe()
    err = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(err) == 1 and not r.stdout.strip(), r.describe()
    assert f"({errno_name})" in err[0] and "out.onnx" in err[0] and "write failed" in err[0], r.describe()
    assert "Traceback" not in r.output and "internal error" not in r.output, r.describe()
    assert_untouched(before, snapshot(tmp_path))
