"""RELIABILITY.md 1.2 rows 1-7: files that are not models (empty, special, huge, foreign, cut)."""

from __future__ import annotations

import os
import random
import shutil
import socket
import tempfile
from pathlib import Path

import pytest

from .harness import E, Row, Setup, check_row, params
from .models import cancelling_pair, write

ALL2 = "infer", "lint", "optimize"


def rejected(*says: str, **kw: object) -> dict:
    return {cmd: E(2, *says, code="SF001", writes=False, **kw) for cmd in ALL2}


# -- 1 ---------------------------------------------------------------------------------------------

def empty(tmp: Path) -> Setup:
    return Setup(write(b"", tmp / "m.onnx"))


# -- 2 ---------------------------------------------------------------------------------------------

def fifo(tmp: Path) -> Setup:
    p = tmp / "m.onnx"
    os.mkfifo(p)
    return Setup(str(p), timeout=20)  # never block on a FIFO: a hang fails after 20 s


def directory(tmp: Path) -> Setup:
    p = tmp / "m.onnx"
    p.mkdir()
    return Setup(str(p))


_SOCKETS: list[socket.socket] = []


def unix_socket(tmp: Path) -> Setup:
    # AF_UNIX paths are limited to ~107 bytes: bind in a short folder and watch it too
    short = tempfile.mkdtemp(prefix="sf", dir="/tmp")
    p = os.path.join(short, "m.onnx")
    s = socket.socket(socket.AF_UNIX)
    s.bind(p)
    s.listen(1)
    _SOCKETS.append(s)
    return Setup(p, watch=[short])


def char_device(tmp: Path) -> Setup:
    return Setup("/dev/null")


# -- 3 ---------------------------------------------------------------------------------------------

def symlink_out_of_repo(tmp: Path) -> Setup:
    """pre-commit in ``repo`` passes ``m.onnx``, a link to a model outside the repository."""
    repo, outside = tmp / "repo", tmp / "outside"
    (repo / ".git").mkdir(parents=True)
    outside.mkdir()
    write(cancelling_pair(), outside / "m.onnx")
    os.symlink("../outside/m.onnx", repo / "m.onnx")
    return Setup("m.onnx", cwd=str(repo), output=str(repo / "out.onnx"))


def symlink_to_dev_zero(tmp: Path) -> Setup:
    os.symlink("/dev/zero", tmp / "m.onnx")
    return Setup(str(tmp / "m.onnx"), timeout=20)


# -- 4 ---------------------------------------------------------------------------------------------

def over_2gib(tmp: Path) -> Setup:
    p = tmp / "m.onnx"
    with open(p, "wb") as fh:
        fh.write(cancelling_pair().SerializeToString())
    os.truncate(p, 2**31)  # sparse: costs no disk, and must never be read
    return Setup(str(p))


# -- 5, 6, 7 ---------------------------------------------------------------------------------------

FOREIGN = {
    "png": b"\x89PNG\r\n\x1a\n" + bytes(range(256)),
    "html": b"<!DOCTYPE html>\n<html><head><title>404</title></head><body>Not found</body></html>\n",
    "random": random.Random(0).randbytes(4096),
    "torch-zip": b"PK\x03\x04" + bytes(100),
    "tflite": b"\x1c\x00\x00\x00TFL3" + bytes(64),
}


def foreign(kind: str):  # type: ignore[no-untyped-def]
    def build(tmp: Path) -> Setup:
        return Setup(write(FOREIGN[kind], tmp / "m.onnx"))
    return build


def lfs_pointer(tmp: Path) -> Setup:
    text = (b"version https://git-lfs.github.com/spec/v1\n"
            b"oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n")
    return Setup(write(text, tmp / "m.onnx"))


def truncated(fraction: float):  # type: ignore[no-untyped-def]
    def build(tmp: Path) -> Setup:
        data = cancelling_pair().SerializeToString()
        # cut inside the graph field (the largest one): the parse must fail, not yield half a model
        cut = max(int(len(data) * fraction), 1)
        return Setup(write(data[:cut], tmp / "m.onnx"))
    return build


ROWS = [
    Row("01-empty", empty, rejected("empty file (0 bytes); not an ONNX model")),
    Row("02-fifo", fifo, rejected("not a regular file (FIFO)")),
    Row("02-directory", directory, rejected("not a regular file (directory)")),
    Row("02-socket", unix_socket, rejected("not a regular file (socket)")),
    Row("02-char-device", char_device, rejected("not a regular file (character device)")),
    Row("03-symlink-out-of-repo", symlink_out_of_repo, {
        # containment is for the pre-commit gate (lint); the other commands read what the user names
        "infer": E(0, writes=True),
        "lint": E(2, "symlink points outside the repository", code="SF001"),
        "optimize": E(0, writes=True),
    }),
    Row("03-symlink-to-dev-zero", symlink_to_dev_zero, rejected("not a regular file (character device)")),
    Row("04-over-2GiB", over_2gib, rejected("2147483648 bytes > protobuf 2 GiB limit; such models must use external data")),
    *[Row(f"05-{kind}", foreign(kind), rejected("not an ONNX protobuf (parse failed at byte 0")) for kind in FOREIGN],
    Row("06-git-lfs-pointer", lfs_pointer, rejected("git-lfs pointer, run `git lfs pull`")),
    *[Row(f"07-truncated-{int(f * 100)}pct", truncated(f), rejected("truncated or corrupt protobuf"))
      for f in (0.5, 0.9, 0.99)],
]


@pytest.mark.parametrize("row, cmd", params(ROWS))
def test_row(row: Row, cmd: str, tmp_path: Path) -> None:
    try:
        check_row(row, cmd, tmp_path)
    finally:
        while _SOCKETS:
            s = _SOCKETS.pop()
            path = s.getsockname()
            s.close()
            shutil.rmtree(os.path.dirname(path), ignore_errors=True)


# -- file names are input too -------------------------------------------------------------------------

HOSTILE_NAME = "evil\nname\x1b]0;pwned\x07.onnx"  # a newline, and an escape that retitles a terminal


@pytest.mark.parametrize("cmd, content", [
    ("infer", "empty"),  # a ShapeflowError: errors.display_path escapes the name
    ("optimize", "empty"),
    ("lint", "empty"),  # a rejection diagnostic: render.format_diagnostic escapes it too
    ("infer", "finding"),
    ("lint", "finding"),
    ("optimize", "finding"),
])
def test_hostile_file_name_stays_on_one_line(cmd: str, content: str, tmp_path: Path) -> None:
    """pre-commit passes whatever names the repository holds: a name with a newline must not
    split a message in two (a forged second line), and no escape sequence may reach a terminal.
    (Fixed: render.format_diagnostic and the summary lines of infer, lint and optimize printed
    file names raw.)"""
    from .harness import assert_untouched, require, run_cli, snapshot
    from .models import single

    require(cmd)
    data = b"" if content == "empty" else single("Squeeze", [2, 3], [1]).SerializeToString()
    src = tmp_path / HOSTILE_NAME
    src.write_bytes(data)
    before = snapshot(tmp_path)
    extra = ["-o", str(tmp_path / "out.onnx")] if cmd != "lint" else []
    r = run_cli([cmd, str(src), *extra], cwd=tmp_path)
    assert r.returncode == (2 if content == "empty" else 1), r.describe()
    assert "\x1b" not in r.output and "\x07" not in r.output, r.describe()
    for line in r.output.splitlines():
        assert not line.startswith("name"), f"a file name split a line in two\n{r.describe()}"
    assert "evil\\nname" in r.output, r.describe()
    # infer -o writes the annotated model whatever it found (only exit 2 and 3 write nothing)
    written = [str(tmp_path / "out.onnx")] if cmd == "infer" and r.returncode < 2 else []
    assert_untouched(before, snapshot(tmp_path), allowed_new=written)


@pytest.mark.parametrize("cmd, args", [
    ("optimize", ["-o", "out.onnx"]),  # the report and summary of a written model
    ("optimize", ["--check"]),
    # (the model's one finding is info: shown, so that it is reported and its fix applied)
    ("lint", ["--format", "github", "--show-info"]),  # the runner's escaping, then what it has no escape for
    ("lint", ["--fix", "--diff", "--show-info"]),  # the diff headers
])
def test_hostile_file_name_in_every_text_output(cmd: str, args: list[str], tmp_path: Path) -> None:
    from .harness import require, run_cli

    require(cmd)
    src = tmp_path / HOSTILE_NAME
    src.write_bytes(cancelling_pair().SerializeToString())
    r = run_cli([cmd, str(src), *args], cwd=tmp_path)
    assert r.returncode in (0, 1), r.describe()
    assert "\x1b" not in r.output and "\x07" not in r.output, r.describe()
    for line in r.output.splitlines():
        assert not line.startswith("name"), f"a file name split a line in two\n{r.describe()}"
    assert ("evil%0Aname" if "github" in args else "evil\\nname") in r.output, r.describe()


def test_hostile_node_name_stays_on_one_line(tmp_path: Path) -> None:
    """The same for names inside the model: a finding is one line (and its hint) whatever the node
    is called."""
    from .harness import require, run_cli
    from .models import single

    require("lint")
    m = single("Squeeze", [2, 3], [1], name="sq\nforged line\x1b]0;pwned\x07")
    (tmp_path / "m.onnx").write_bytes(m.SerializeToString())
    r = run_cli(["lint", "m.onnx"], cwd=tmp_path)
    assert r.returncode == 1, r.describe()
    assert "\x1b" not in r.output and "\x07" not in r.output, r.describe()
    assert not any(line.startswith("forged") for line in r.output.splitlines()), r.describe()
    assert "node 'sq\\nforged line" in r.stdout, r.describe()


@pytest.mark.parametrize("cmd", ["infer", "lint", "optimize"])
def test_json_keeps_the_real_file_name(cmd: str, tmp_path: Path) -> None:
    """JSON escapes what it must by itself: the name a script reads back is the file's."""
    import json

    from .harness import require, run_cli
    from .models import single

    require(cmd)
    src = tmp_path / HOSTILE_NAME
    src.write_bytes(single("Squeeze", [2, 3], [1]).SerializeToString())
    extra = ["-o", str(tmp_path / "out.onnx")] if cmd == "optimize" else []
    r = run_cli([cmd, str(src), "--format", "json", *extra], cwd=tmp_path)
    assert r.returncode == 1, r.describe()
    doc = json.loads(r.stdout)
    files = [d["file"] for d in doc["diagnostics"]]
    assert files and set(files) == {str(src)}, r.describe()
