"""The source distribution carries what its tests need, and they run from it unpacked (issue 12).

Building copies the tree to a temporary folder first, so the checkout gets no build debris. The
default run collects every test of the unpacked sdist (a missing helper module is a collection
error) and runs a quick subset; ``SHAPEFLOW_SDIST_FULL=1`` runs the whole suite from it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile

import pytest

from helpers import build_dist

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUICK = ["tests/test_api.py"]  # (collection covers every helper module; SHAPEFLOW_SDIST_FULL=1 runs all)


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory) -> str:
    work = tmp_path_factory.mktemp("sdist")
    src = work / "src"
    if shutil.which("git") and os.path.exists(os.path.join(REPO, ".git")):
        # what is committed or about to be (a tree with build debris would hide a missing file)
        files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                               capture_output=True, check=True).stdout.decode().split("\0")
        for rel in filter(None, files):
            if os.path.isfile(os.path.join(REPO, rel)):
                os.makedirs(src / os.path.dirname(rel), exist_ok=True)
                shutil.copy2(os.path.join(REPO, rel), src / rel)
    else:  # already an unpacked sdist
        shutil.copytree(REPO, src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    out = work / "dist"
    # with a setuptools that reads the license field (the environment's, or one pip fetches)
    name = build_dist(str(src), str(out), "sdist")
    with tarfile.open(name) as tar:
        tar.extractall(work / "unpacked", filter="data")
    (root,) = os.listdir(work / "unpacked")
    return str(work / "unpacked" / root)


def run_pytest(root: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": root}
    env.pop("SHAPEFLOW_SDIST_FULL", None)
    # one process: this test already runs beside the suite's other workers
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", *args],
                          cwd=root,
                          capture_output=True, text=True, env=env, timeout=3600)


def test_sdist_has_the_files_its_tests_read(unpacked) -> None:
    for rel in ("tests/helpers.py", "tests/model_builders.py", "tests/lint_fixtures.py", "tests/contract/harness.py",
                "tests/golden/lint.txt", "examples/axis_errors.onnx", "docs/rules.md", "README.md",
                ".pre-commit-hooks.yaml", "shapeflow/py.typed"):
        assert os.path.isfile(os.path.join(unpacked, rel)), rel


def test_sdist_tests_collect_and_run(unpacked) -> None:
    # one run collects every test (a module that fails to import is an error: exit 2) and runs the
    # quick subset (the rest deselected)
    quick = " or ".join(os.path.basename(q) for q in QUICK)
    args = [] if os.environ.get("SHAPEFLOW_SDIST_FULL") else ["-k", f"({quick}) and not sdist"]
    proc = run_pytest(unpacked, *args)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    summary = proc.stdout.splitlines()[-1]
    assert "error" not in summary and " passed" in summary and (not args or " deselected" in summary), summary
