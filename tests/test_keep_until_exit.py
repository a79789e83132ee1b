"""``cli.keep_until_exit``: a process of its own (``cli.run``) exits without freeing the last file's
graph object by object; a caller's process (``cli.main``) frees everything as before."""

from __future__ import annotations

import gc
import subprocess
import sys
import weakref
from pathlib import Path

import pytest

from shapeflow import cli

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


class Big:
    """Stands for a command's graph and report."""


def test_nothing_is_held_in_a_callers_process() -> None:
    assert cli._held is None  # (only run() holds: the tests call main() or the command itself)
    obj = Big()
    ref = weakref.ref(obj)
    cli.keep_until_exit(obj)
    del obj
    gc.collect()
    assert ref() is None


def test_a_process_of_its_own_holds_the_last_files_objects(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "_held", [])
    first, second = Big(), Big()
    r1, r2 = weakref.ref(first), weakref.ref(second)
    cli.keep_until_exit(first)
    del first
    gc.collect()
    assert r1() is not None  # held until the exit
    cli.keep_until_exit()  # the next file starts: the previous one's objects go
    gc.collect()
    assert r1() is None
    cli.keep_until_exit(second)
    del second
    gc.collect()
    assert r2() is not None


@pytest.mark.parametrize("args, code", [(["infer", "--format", "json"], 1), (["optimize", "--check"], 1),
                                        (["infer", "-q"], 1)])
def test_commands_exit_with_their_code_and_whole_output(args: list[str], code: int) -> None:
    """The objects held do not change what a run prints or its exit code (its output flushed)."""
    model = str(EXAMPLES / "axis_errors.onnx")
    real = subprocess.run([sys.executable, "-m", "shapeflow", *args, model], capture_output=True, text=True,
                          timeout=120)
    assert real.returncode == code, real.stderr
    if "json" in args:
        import json

        doc = json.loads(real.stdout)
        assert doc["diagnostics"] and doc["nodes"]
