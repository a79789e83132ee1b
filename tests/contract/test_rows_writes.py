"""RELIABILITY.md 1.2 rows 46-49: writing the output.

Writes go to a temp file in the target folder, are fsynced and renamed into place: the output
appears complete or not at all, the input is never opened for writing, and an existing file is
never clobbered without ``--force``. Run for every command that writes (``infer -o``,
``optimize -o``, and ``lint --fix`` where the row applies).
"""

from __future__ import annotations

import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from .harness import WRITERS, assert_untouched, cli_env, find_line, require, run_cli, snapshot
from .models import cancelling_pair, ints, model, vi, write

REFUSE_INPUT = "refusing to overwrite input"


def model_in(tmp: Path) -> Path:
    return Path(write(cancelling_pair(), tmp / "m.onnx"))


def assert_one_line(run, *says: str) -> None:  # type: ignore[no-untyped-def]
    info = run.describe()
    assert "Traceback" not in run.output and "internal error" not in run.output, info
    assert find_line(run, says), f"no line says {says}\n{info}"
    err = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(err) == 1 and not run.stdout.strip(), f"expected one line on stderr only\n{info}"


# -- 46 output is the input --------------------------------------------------------------------------

@pytest.mark.parametrize("how", ["same-path", "other-spelling", "symlink", "hardlink"])
@pytest.mark.parametrize("cmd", WRITERS)
def test_46_output_is_the_input(cmd: str, how: str, tmp_path: Path) -> None:
    require(cmd)
    src = model_in(tmp_path)
    (tmp_path / "sub").mkdir()
    if how == "same-path":
        out = str(src)
    elif how == "other-spelling":
        out = str(tmp_path / "sub" / ".." / "." / "m.onnx")
    elif how == "symlink":
        os.symlink("m.onnx", tmp_path / "link.onnx")
        out = str(tmp_path / "link.onnx")
    else:
        os.link(src, tmp_path / "hard.onnx")
        out = str(tmp_path / "hard.onnx")
    before = snapshot(tmp_path)
    r = run_cli([cmd, str(src), "-o", out], cwd=tmp_path)
    assert r.returncode == 2, r.describe()
    assert_one_line(r, REFUSE_INPUT, "use --in-place")
    assert_untouched(before, snapshot(tmp_path))


# -- 47 output exists ----------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["file", "dangling-symlink", "symlink-to-other-file", "directory"])
@pytest.mark.parametrize("cmd", WRITERS)
def test_47_output_exists(cmd: str, kind: str, tmp_path: Path) -> None:
    require(cmd)
    src = model_in(tmp_path)
    out = tmp_path / "out.onnx"
    if kind == "file":
        out.write_bytes(b"keep me")
    elif kind == "dangling-symlink":
        os.symlink("nowhere.onnx", out)
    elif kind == "symlink-to-other-file":
        (tmp_path / "other.onnx").write_bytes(b"keep me too")
        os.symlink("other.onnx", out)
    else:
        out.mkdir()
    before = snapshot(tmp_path)
    r = run_cli([cmd, str(src), "-o", str(out)], cwd=tmp_path)
    assert r.returncode == 2, r.describe()
    if kind == "directory":  # a usage error, in click's usage-error form
        assert "is a directory" in r.stderr and "Traceback" not in r.output, r.describe()
    else:
        assert_one_line(r, "out.onnx", "exists; use --force")
    assert_untouched(before, snapshot(tmp_path))


@pytest.mark.parametrize("cmd", WRITERS)
def test_47_force_replaces_atomically(cmd: str, tmp_path: Path) -> None:
    require(cmd)
    src = model_in(tmp_path)
    out = tmp_path / "out.onnx"
    out.write_bytes(b"old output")
    os.chmod(out, 0o600)
    old_inode = out.stat().st_ino
    before = snapshot(tmp_path)
    r = run_cli([cmd, str(src), "-o", str(out), "--force"], cwd=tmp_path)
    assert r.returncode == 0, r.describe()
    assert_untouched(before, snapshot(tmp_path), allowed_changed=[str(out)])
    assert out.stat().st_ino != old_inode, "the output was rewritten in place, not replaced by a rename"
    assert out.stat().st_mode & 0o777 == 0o600, "replacing a private output made it readable to others"
    onnx.load(str(out))


# -- 48 the write fails ----------------------------------------------------------------------------------

def _fsize_limit(limit: int):  # type: ignore[no-untyped-def]
    def pre() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() fails with EFBIG instead of killing us
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return pre


def _lint_fix_argv(src: Path) -> list[str]:
    return ["lint", "--fix", "--show-info", "--isolated", str(src)]  # (the model's one finding is info)


WRITE_COMMANDS = [*WRITERS, "lint-fix"]


def _argv(cmd: str, src: Path, out: Path, force: bool = False) -> list[str]:
    if cmd == "lint-fix":
        return _lint_fix_argv(src)
    return [cmd, str(src), "-o", str(out)] + (["--force"] if force else [])


@pytest.mark.parametrize("previous", [False, True], ids=["fresh", "previous-output-kept"])
@pytest.mark.parametrize("cmd", WRITE_COMMANDS)
def test_48_write_fails_file_too_large(cmd: str, previous: bool, tmp_path: Path) -> None:
    require(cmd.split("-")[0])
    if cmd == "lint-fix" and previous:
        pytest.skip("lint --fix writes in place: the input is the previous output")
    src = model_in(tmp_path)
    out = tmp_path / "out.onnx"
    if previous:
        out.write_bytes(b"previous output")
    before = snapshot(tmp_path)
    r = run_cli(_argv(cmd, src, out, force=previous), cwd=tmp_path, preexec=_fsize_limit(64))
    assert r.returncode == 2, r.describe()
    assert "write failed: file too large" in r.output, r.describe()
    assert "Traceback" not in r.output and "internal error" not in r.output, r.describe()
    assert_untouched(before, snapshot(tmp_path))


def _unshare_ok() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                            "mount -t tmpfs -o size=4k tmpfs /mnt"], capture_output=True)
    return probe.returncode == 0


UNSHARE = pytest.mark.skipif(not _unshare_ok(), reason="needs unshare -m and mount (root in a container)")


def _padded_model() -> onnx.ModelProto:
    """cancelling pair plus a 6 KiB weight, so the output needs two more 4 KiB pages."""
    m = cancelling_pair()
    w = numpy_helper.from_array(np.zeros(1536, dtype=np.float32), "pad")
    m.graph.initializer.append(w)
    m.graph.node.append(helper.make_node("Identity", ["pad"], ["pad_out"], name="pad_id"))
    m.graph.output.append(vi("pad_out", [1536]))
    return m


@UNSHARE
@pytest.mark.parametrize("cmd", WRITE_COMMANDS)
def test_48_no_space_left(cmd: str, tmp_path: Path) -> None:
    """A 12 KiB tmpfs (in a private mount namespace) holds the model but not a second copy."""
    require(cmd.split("-")[0])
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    data = _padded_model().SerializeToString()
    (tmp_path / "src.onnx").write_bytes(data)
    script = ('mount -t tmpfs -o size=12k tmpfs "$0" && cp "$1" "$0/m.onnx" && touch -d @1000000000 "$0/m.onnx" '
              '&& shift && "$@"; rc=$?; cd "$MNT" && for f in .* *; do [ -f "$f" ] && '
              'echo "LISTING $f $(stat -c %s:%Y:%i "$f")"; done; exit $rc')
    src, out = mnt / "m.onnx", mnt / "out.onnx"
    r = run_cli(_argv(cmd, src, out), cwd=tmp_path, env={"MNT": str(mnt)},
                prefix=["unshare", "-m", "--propagation", "private", "sh", "-c", script, str(mnt),
                        str(tmp_path / "src.onnx")])
    assert r.returncode == 2, r.describe()
    assert "write failed: no space left on device" in r.output, r.describe()
    assert "Traceback" not in r.output, r.describe()
    listing = [line.split()[1:] for line in r.stdout.splitlines() if line.startswith("LISTING ")]
    names = sorted(f for f, _ in listing)
    assert names == ["m.onnx"], f"files left in the full folder: {names}\n{r.describe()}"
    assert listing[0][1].startswith(f"{len(data)}:1000000000:"), f"input changed: {listing}"


def _big_model() -> onnx.ModelProto:
    w = numpy_helper.from_array(np.zeros((8, 1 << 20), dtype=np.float32), "w")  # 32 MiB: a write worth killing
    nodes = [helper.make_node("Unsqueeze", ["x", "axes"], ["u"], name="unsq"),
             helper.make_node("Squeeze", ["u", "axes"], ["s"], name="sq"),
             helper.make_node("Add", ["s", "w"], ["y"], name="add")]
    return model(nodes, [vi("x", [8, 1 << 20])], [vi("y", [8, 1 << 20])], [w, ints("axes", [0])])


@pytest.mark.parametrize("cmd", WRITERS)
def test_48_kill_9_during_write(cmd: str, tmp_path: Path) -> None:
    """SIGKILL at random moments: the input and a previous output survive, and what is at the
    output path is either the previous output or a complete new one. A killed process cannot
    remove its temp file; it must be a hidden ``.out.onnx.*.tmp`` that never blocks a rerun."""
    require(cmd)
    src = Path(write(_big_model(), tmp_path / "m.onnx"))
    out = tmp_path / "out.onnx"
    previous = b"previous output"
    rng = random.Random(48)
    argv = [sys.executable, "-m", "shapeflow", cmd, str(src), "-o", str(out), "--force"]
    t0 = time.monotonic()
    done = subprocess.run(argv, capture_output=True, env=cli_env(), timeout=120)
    full = time.monotonic() - t0
    assert done.returncode == 0, done.stderr
    complete = out.read_bytes()
    # the write is the last part of a run: kill mostly late, where a temp file exists
    for attempt, fraction in enumerate((0.5, 0.75, 0.85, 0.95)):
        out.write_bytes(previous)
        before = snapshot(tmp_path)
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=cli_env())
        time.sleep(full * fraction * rng.uniform(0.95, 1.05))
        p.send_signal(signal.SIGKILL)
        p.wait(60)
        after = snapshot(tmp_path)
        now = out.read_bytes()
        assert now in (previous, complete), f"attempt {attempt}: a partial output is in place"
        temps = [p for p in set(after) - set(before) if os.path.basename(p).startswith(".out.onnx.")
                 and p.endswith(".tmp")]
        for t in temps:
            os.unlink(t)
        assert_untouched({k: v for k, v in before.items() if k != str(out)},
                         {k: v for k, v in after.items() if k not in temps and k != str(out)})
    r = run_cli([cmd, str(src), "-o", str(out), "--force"], cwd=tmp_path, timeout=120)
    assert r.returncode == 0 and out.read_bytes() == complete, r.describe()


# -- 49 read-only folder / permission denied -------------------------------------------------------------------

@pytest.mark.parametrize("cmd", WRITE_COMMANDS)
def test_49_read_only_folder(cmd: str, tmp_path: Path) -> None:
    require(cmd.split("-")[0])
    d = tmp_path / "ro"
    d.mkdir()
    src = Path(write(cancelling_pair(), d / "m.onnx"))
    out = d / "out.onnx"
    before = snapshot(tmp_path)
    if os.geteuid() == 0:
        if not _unshare_ok():
            pytest.skip("running as root without unshare: cannot make a folder unwritable")
        # root ignores permissions: a read-only bind mount in a private mount namespace
        prefix = ["unshare", "-m", "--propagation", "private", "sh", "-c",
                  'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" "$0" && exec "$@"', str(d)]
        expected = f"cannot write to {d}: read-only file system"
    else:
        os.chmod(d, 0o555)
        prefix = []
        expected = f"cannot write to {d}: permission denied"
    try:
        r = run_cli(_argv(cmd, src, out), cwd=tmp_path, prefix=prefix)
    finally:
        os.chmod(d, 0o755)
    assert r.returncode == 2, r.describe()
    assert expected in r.output, r.describe()
    assert "Traceback" not in r.output and "internal error" not in r.output, r.describe()
    assert_untouched(before, snapshot(tmp_path))


# -- models over 2 GiB are written with external data ------------------------------------------------------------

# The real CLI with io's switch-over point lowered from 2 GiB to 16 KiB: the mechanism end to end,
# without writing 2 GiB (tests/test_io.py covers save_model itself).
SMALL_SWITCH = ["-c", "import shapeflow.io as io; io.MAX_INLINE_MODEL_BYTES = 16 << 10; "
                      "from shapeflow.cli import main; main()"]


def _weighty_model() -> tuple[onnx.ModelProto, np.ndarray]:
    w = np.arange(16384, dtype=np.float32)  # 64 KiB: over the lowered switch-over point
    m = cancelling_pair()
    m.graph.initializer.append(numpy_helper.from_array(w, "w"))
    m.graph.node.append(helper.make_node("Identity", ["w"], ["w_out"], name="w_id"))
    m.graph.output.append(vi("w_out", [16384]))
    return m, w


@pytest.mark.parametrize("cmd", WRITERS)
def test_large_output_is_written_with_external_data(cmd: str, tmp_path: Path) -> None:
    require(cmd)
    m, w = _weighty_model()
    src = Path(write(m, tmp_path / "m.onnx"))
    out = tmp_path / "out.onnx"
    before = snapshot(tmp_path)
    r = run_cli([cmd, str(src), "-o", str(out)], cwd=tmp_path, module=SMALL_SWITCH)
    assert r.returncode == 0, r.describe()
    assert_untouched(before, snapshot(tmp_path), allowed_new=[str(out), str(out) + ".data"])
    data = Path(str(out) + ".data")
    assert data.exists() and out.stat().st_size < 16 << 10, r.describe()
    loaded = onnx.load(str(out))  # resolves out.onnx.data next to the output: no dangling reference
    got = {t.name: numpy_helper.to_array(t) for t in loaded.graph.initializer}
    assert got["w"].tobytes() == w.tobytes()
    for t in onnx.load(str(out), load_external_data=False).graph.initializer:
        if t.data_location == onnx.TensorProto.EXTERNAL:
            entries = {e.key: e.value for e in t.external_data}
            assert entries["location"] == "out.onnx.data" and int(entries["offset"]) % 4096 == 0


@pytest.mark.parametrize("cmd", WRITERS)
def test_47_output_data_file_exists_is_never_appended_to(cmd: str, tmp_path: Path) -> None:
    require(cmd)
    m, _ = _weighty_model()
    src = Path(write(m, tmp_path / "m.onnx"))
    out = tmp_path / "out.onnx"
    Path(str(out) + ".data").write_bytes(b"someone else's weights")
    before = snapshot(tmp_path)
    r = run_cli([cmd, str(src), "-o", str(out), "--force"], cwd=tmp_path, module=SMALL_SWITCH)
    assert r.returncode == 2, r.describe()
    assert_one_line(r, "out.onnx.data", "exists")
    assert_untouched(before, snapshot(tmp_path))
