"""tests/cli_process.py: a run forked from a started interpreter is what ``python -m shapeflow``
started afresh gives (exit code, stdout, stderr byte for byte), for each exit code, for input on
stdin, with the environment and folder the caller gives, and under an address-space limit."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import cli_process
import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

pytestmark = pytest.mark.skipif(cli_process.real_processes(), reason="every run is a real subprocess here")


def real(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
         input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "shapeflow", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, input=input, stdin=None if input is not None else subprocess.DEVNULL, timeout=120)


def same(a: subprocess.CompletedProcess[str], b: subprocess.CompletedProcess[str]) -> None:
    def timeless(text: str) -> str:  # (infer's summary says how long it took)
        return re.sub(r" in \d+\.\d+ s\)", " in T s)", text)

    assert (a.returncode, a.stdout, timeless(a.stderr)) == (b.returncode, b.stdout, timeless(b.stderr))


def test_each_exit_code_and_both_streams_are_a_real_start_s(tmp_path: Path) -> None:
    (tmp_path / "broken.onnx").write_bytes(b"not a model")
    for args in (["lint", str(EXAMPLES / "attention.onnx")],  # 0
                 ["infer", str(EXAMPLES / "axis_errors.onnx")],  # 1
                 ["lint", "broken.onnx"],  # 2, a relative path
                 ["lint", "--no-such-option"],  # 2, click's usage error
                 ["--version"]):
        forked = cli_process.shapeflow(*args, cwd=tmp_path)
        same(forked, real(*args, cwd=tmp_path))
    assert {cli_process.shapeflow(*a, cwd=tmp_path).returncode for a in
            (["lint", str(EXAMPLES / "attention.onnx")], ["infer", str(EXAMPLES / "axis_errors.onnx")],
             ["lint", "broken.onnx"])} == {0, 1, 2}


def test_stdin_environment_and_written_files(tmp_path: Path) -> None:
    listed = str(EXAMPLES / "attention.onnx") + "\n"
    same(cli_process.shapeflow("lint", "--files-from", "-", input=listed), real("lint", "--files-from", "-", input=listed))
    env = {**os.environ, "SHAPEFLOW_DEBUG": "1"}
    same(cli_process.shapeflow("lint", "--no-such-option", env=env), real("lint", "--no-such-option", env=env))
    out = tmp_path / "o.onnx"
    done = cli_process.shapeflow("optimize", str(EXAMPLES / "attention.onnx"), "-o", str(out))
    assert done.returncode == 0 and out.exists(), done.stderr
    fresh = tmp_path / "r.onnx"
    assert real("optimize", str(EXAMPLES / "attention.onnx"), "-o", str(fresh)).returncode == 0
    assert out.read_bytes() == fresh.read_bytes()


def test_a_run_is_a_process_of_its_own(tmp_path: Path) -> None:
    """The address-space limit applies to the run (64 MiB: less than the interpreter already maps),
    and nothing of one run reaches the next."""
    out = str(tmp_path / "o.onnx")
    tight = cli_process.run(["optimize", str(EXAMPLES / "attention.onnx"), "-o", out], memory=64 << 20)
    assert tight.returncode != 0 and not os.path.exists(out)
    again = cli_process.run(["optimize", str(EXAMPLES / "attention.onnx"), "-o", out])
    assert again.returncode == 0, again.stderr
    assert again.max_rss > 0 and not again.timed_out
