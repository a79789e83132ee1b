"""``lint --executor ray`` and ``shapeflow.lint(paths, executor="ray")`` (issue 15): the same bytes,
order and exit code as ``-j 1``, on good, bad and hostile files; a task whose worker dies or that
runs past its time limit is reported for its file and the others finish.

One local Ray cluster serves the whole module (starting one takes seconds); the command-line
runs join it by its address.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest
from click.testing import CliRunner

import shapeflow
from shapeflow.cli import cli
from shapeflow.drivers.executors import Task, run_ray, run_task
from shapeflow.drivers.linter import FileResult, LintOptions
from test_fleet import ROOT, lint_cli, make_corpus

ray = pytest.importorskip("ray", reason="the 'ray' extra is not installed (pip install -e '.[ray]')")


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    if ray.is_initialized():
        ray.shutdown()
    context = ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield context.address_info["gcs_address"]
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    folder = tmp_path_factory.mktemp("fleet_ray")
    return folder, make_corpus(folder)


def test_ray_command_is_byte_identical_to_one_process(cluster: str, corpus: tuple[Path, list[str]]) -> None:
    """The command itself, in a process of its own, joining the cluster by its address."""
    folder, names = corpus
    args = ["--select", "SF", "--format", "jsonl", *names]
    serial = lint_cli(folder, "--no-cache", "-j", "1", *args)
    assert serial.returncode == 2 and serial.stdout
    on_ray = lint_cli(folder, "--no-cache", "--executor", "ray", "--ray-address", cluster, *args)
    assert (on_ray.returncode, on_ray.stdout) == (serial.returncode, serial.stdout)
    assert on_ray.stderr.splitlines()[-1] == serial.stderr.splitlines()[-1]  # the summary line


def _invoke(folder: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str, str]:
    """``shapeflow lint`` in this process (its Ray job, whose workers are warm: seconds saved)."""
    monkeypatch.chdir(folder)
    result = CliRunner().invoke(cli, ["lint", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("fmt", ["text", "concise", "json", "jsonl", "sarif", "github"])
def test_ray_output_is_byte_identical_in_every_format(cluster: str, corpus: tuple[Path, list[str]],
                                                      tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      fmt: str) -> None:
    folder, names = corpus
    args = ["--select", "SF", "--format", fmt, *names]
    serial = _invoke(folder, monkeypatch, "--no-cache", "-j", "1", *args)
    assert serial[0] == 2 and serial[1]
    on_ray = _invoke(folder, monkeypatch, "--no-cache", "--executor", "ray", *args)
    assert on_ray == serial
    # through the cache: cold, then warm
    cache = ["--cache-dir", str(tmp_path / "c"), "--executor", "ray"]
    assert _invoke(folder, monkeypatch, *cache, *args) == serial
    assert list((tmp_path / "c").rglob("*.json"))
    assert _invoke(folder, monkeypatch, *cache, *args) == serial


def test_api_on_ray_matches_the_local_run(cluster: str, corpus: tuple[Path, list[str]]) -> None:
    folder, names = corpus
    paths = [str(folder / n) for n in names]
    local = shapeflow.lint(paths, select=["SF"])
    on_ray = shapeflow.lint(paths, select=["SF"], executor="ray")
    assert [(r.to_json(), r.anchors, r.assumptions) for r in on_ray] == \
        [(r.to_json(), r.anchors, r.assumptions) for r in local]
    assert ray.is_initialized()  # the caller's cluster is left running


def test_a_file_url_on_ray(cluster: str, corpus: tuple[Path, list[str]]) -> None:
    pytest.importorskip("fsspec")
    folder, _ = corpus
    path = folder / "sf104_squeeze_non_unit_dim.onnx"
    local = shapeflow.lint(str(path), select=["SF"])[0]
    remote = shapeflow.lint(path.as_uri(), select=["SF"], executor="ray")[0]
    assert remote.exit_code == local.exit_code == 1
    assert [(d.code, d.message) for d in remote.diagnostics] == [(d.code, d.message) for d in local.diagnostics]


def _tasks(folder: Path, names: list[str]) -> list[Task]:
    return [Task(str(folder / n), LintOptions(select=("SF104", "SF101", "SF003"), ignore=())) for n in names]


def _collect(tasks: list[Task], **kwargs: object) -> list[FileResult]:
    out: list[FileResult | None] = [None] * len(tasks)

    def done(k: int, r: FileResult) -> None:
        assert out[k] is None  # each file reported once
        out[k] = r

    run_ray(tasks, done, **kwargs)  # type: ignore[arg-type]
    assert all(r is not None for r in out)
    return [r for r in out if r is not None]


def test_a_dying_worker_is_reported_for_its_file_and_the_rest_finish(cluster: str,
                                                                     corpus: tuple[Path, list[str]]) -> None:
    folder, names = corpus
    victim = "sf104_squeeze_non_unit_dim.onnx"

    def dies_on_victim(task: Task) -> FileResult:  # pickled by value: Ray ships it to the worker
        if task.path.endswith(victim):
            os._exit(1)  # the worker process dies, every time Ray retries
        return run_task(task)

    tasks = _tasks(folder, names)
    results = _collect(tasks, fn=dies_on_victim, max_retries=1)
    expected = [run_task(t) for t in tasks]
    for t, got, want in zip(tasks, results, expected):
        if t.path.endswith(victim):
            assert got.rejected and got.exit_code == 2 and [d.code for d in got.diagnostics] == ["SF001"]
            assert "Ray task failed" in got.diagnostics[0].message and got.diagnostics[0].file == t.path
        else:
            assert got.to_json() == want.to_json()


def test_a_task_past_its_time_limit_is_cancelled_and_reported(cluster: str,
                                                              corpus: tuple[Path, list[str]]) -> None:
    folder, names = corpus
    slow = "good_chain.onnx"

    def hangs_on_slow(task: Task) -> FileResult:
        if task.path.endswith(slow):
            import time

            time.sleep(600)
        return run_task(task)

    tasks = _tasks(folder, names)
    _collect(tasks)  # workers started (a timeout counts from submission)
    results = _collect(tasks, fn=hangs_on_slow, timeout=5.0)
    for t, got in zip(tasks, results):
        if t.path.endswith(slow):
            assert got.rejected and got.exit_code == 2
            # a limit hit (SF006), not "not a loadable ONNX model" (SF001's hint; issue 20)
            (d,) = got.diagnostics
            assert d.code == "SF006" and "limit task-timeout exceeded (value 5 s" in d.message
            assert "--task-timeout" in d.message and "loadable" not in d.hint
        else:
            assert got.to_json() == run_task(t).to_json()


def test_executor_ray_without_ray_is_one_usage_line(tmp_path: Path) -> None:
    make_corpus(tmp_path)
    code = ("import sys; sys.modules['ray'] = None; sys.argv = ['shapeflow', 'lint', '--executor', 'ray', "
            "'good_chain.onnx']; from shapeflow.cli import main; main()")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == ["error: --executor ray needs Ray: pip install -e '.[ray]'"]
    missing_ray = lint_cli(tmp_path, "--ray-address", "auto", "good_chain.onnx")
    assert missing_ray.returncode == 2 and "needs --executor ray" in missing_ray.stderr

