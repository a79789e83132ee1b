"""The pre-commit hook, run by the real ``pre-commit`` tool on a temporary git repository: a commit of a
bad model is refused with the finding printed, a commit of a good one passes."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

yaml = pytest.importorskip("yaml")  # comes with pre-commit

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(REPO, "examples")

pytestmark = pytest.mark.skipif(
    shutil.which("git") is None or importlib.util.find_spec("pre_commit") is None,
    reason="needs git and pre-commit",
)


def manifest_hook() -> dict:
    with open(os.path.join(REPO, ".pre-commit-hooks.yaml"), encoding="utf-8") as f:
        (hook,) = yaml.safe_load(f)
    return hook


def test_manifest_declares_the_hook() -> None:
    hook = manifest_hook()
    assert hook["id"] == "shapeflow-lint"
    assert hook["entry"] == "shapeflow lint" and hook["language"] == "python"
    assert hook["files"] == r"\.onnx$"
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "validate-manifest",
                           os.path.join(REPO, ".pre-commit-hooks.yaml")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.fixture
def repo(tmp_path):
    """A git repository whose pre-commit config runs this checkout's shapeflow as a local hook,
    with the manifest's id, name and file pattern."""
    root = tmp_path / "repo"
    root.mkdir()
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    env.pop("GIT_DIR", None)
    env.pop("GIT_INDEX_FILE", None)

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, text=True)

    assert git("init", "-q").returncode == 0
    git("config", "user.email", "ci@example.com")
    git("config", "user.name", "CI")
    git("config", "commit.gpgsign", "false")
    hook = manifest_hook()
    config = {"repos": [{"repo": "local", "hooks": [{
        "id": hook["id"],
        "name": hook["name"],
        "entry": f"{sys.executable} -m shapeflow lint",
        "language": "system",
        "files": hook["files"],
    }]}]}
    (root / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    install = subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=root, env=env,
                             capture_output=True, text=True)
    assert install.returncode == 0, install.stdout + install.stderr
    git("add", ".pre-commit-config.yaml")
    assert git("commit", "-q", "-m", "config").returncode == 0
    return root, git


def test_good_model_commits_and_bad_model_is_refused(repo) -> None:
    root, git = repo
    shutil.copy(os.path.join(EXAMPLES, "opset11_attribute_axes.onnx"), root / "good.onnx")
    git("add", "good.onnx")
    good = git("commit", "-m", "add a good model")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "shapeflow lint" in good.stdout + good.stderr and "Passed" in good.stdout + good.stderr

    shutil.copy(os.path.join(EXAMPLES, "paddle_squeeze.onnx"), root / "bad.onnx")
    git("add", "bad.onnx")
    bad = git("commit", "-m", "add a bad model")
    output = bad.stdout + bad.stderr
    assert bad.returncode != 0, output
    assert "Failed" in output
    assert "bad.onnx: node 'squeeze_0' (Squeeze-13): error SF104 squeeze-non-unit-dim" in output
    log = git("log", "--format=%s")
    assert log.stdout.split("\n")[:2] == ["add a good model", "config"]  # the bad commit did not happen
