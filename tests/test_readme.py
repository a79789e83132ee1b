"""The README's Python API example runs as written and passes ``mypy --strict`` (issue 12)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(REPO, "examples")


def api_example() -> str:
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("## Python API", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert blocks, "no python block in the README's Python API section"
    return "\n".join(blocks)


@pytest.fixture
def example(tmp_path):
    for name in ("axis_errors.onnx", "attention.onnx"):
        shutil.copy(os.path.join(EXAMPLES, name), tmp_path / name)
    (tmp_path / ".git").mkdir()  # a repository of its own: no config from above applies
    path = tmp_path / "readme_example.py"
    path.write_text(api_example())
    return path


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}


def test_readme_api_example_runs(example) -> None:
    proc = subprocess.run([sys.executable, str(example)], cwd=example.parent, capture_output=True, text=True,
                          env=env(), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "<Analysis 'axis_errors.onnx': 7 nodes, 6 Squeeze/Unsqueeze, 3 errors, 0 warnings, 0 info>" in proc.stdout  # batch=1: no SF105
    assert "axis_errors.onnx: node 'sq_non_unit_node' (Squeeze-13): error SF104 squeeze-non-unit-dim" in proc.stdout
    assert (example.parent / "attention.opt.onnx").exists()


def test_readme_api_example_passes_mypy_strict(example) -> None:
    pytest.importorskip("mypy")
    # --follow-imports=silent: the example (user code) is checked strictly against shapeflow's
    # annotations; shapeflow's own internals are not what this test judges.
    proc = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
                           "--no-incremental", "--cache-dir", os.devnull, str(example)],
                          cwd=example.parent, capture_output=True, text=True, env=env(), timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def readme_block(command: str) -> str:
    """The output the README shows under ``$ COMMAND`` (up to the end of its code block)."""
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        text = f.read()
    start = text.index(f"$ {command}\n") + len(command) + 3
    return text[start:text.index("```", start)]


def test_readme_infer_sample_is_current() -> None:
    proc = subprocess.run([sys.executable, "-m", "shapeflow", "infer", "examples/axis_errors.onnx"], cwd=REPO,
                          capture_output=True, text=True, env=env())
    assert proc.stdout == readme_block("shapeflow infer examples/axis_errors.onnx")


def test_readme_optimize_sample_is_current(tmp_path) -> None:
    pytest.importorskip("onnxruntime")
    os.mkdir(tmp_path / "examples")
    shutil.copy(os.path.join(EXAMPLES, "attention.onnx"), tmp_path / "examples" / "attention.onnx")
    command = "shapeflow optimize examples/attention.onnx -o attention.opt.onnx --verify"
    proc = subprocess.run([sys.executable, "-m", *command.split()], cwd=tmp_path, capture_output=True, text=True,
                          env=env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == readme_block(command)


def test_rule_codes_complete_in_the_shell() -> None:
    proc = subprocess.run([sys.executable, "-m", "shapeflow"], capture_output=True, text=True,
                          env={**env(), "_SHAPEFLOW_COMPLETE": "bash_complete", "COMP_WORDS": "shapeflow lint --select SF10",
                               "COMP_CWORD": "3"})
    assert "plain,SF104" in proc.stdout.splitlines() and "plain,SF201" not in proc.stdout.splitlines()


def test_no_reference_to_files_users_do_not_have() -> None:
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        text = f.read()
    proc = subprocess.run([sys.executable, "-m", "shapeflow", "lint", "--help"], capture_output=True, text=True,
                          env=env())
    for where in (text, proc.stdout):
        assert "../shared" not in where and "SPEC section" not in where


def test_readme_quiet_gate_sample_is_current() -> None:
    """The summary line the README quotes for `lint examples/attention.onnx` is what lint prints."""
    proc = subprocess.run([sys.executable, "-m", "shapeflow", "lint", "examples/attention.onnx"], cwd=REPO,
                          capture_output=True, text=True, env=env())
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        text = f.read()
    quoted = re.search(r"`(1 file: 0 errors, 0 warnings, \d+ info not shown; --show-info)`", text)
    assert quoted is not None and proc.stderr.startswith(quoted.group(1))
