"""The pre-commit hook, run by the real ``pre-commit`` tool on a temporary git repository: a commit of a
bad model is refused with the finding printed, a commit of a good one passes."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
import shutil
import subprocess
import sys

import cli_process
import pytest

yaml = pytest.importorskip("yaml")  # comes with pre-commit

CLEAN = """
<ir_version: 8, opset_import: ["" : 13]>
clean (float[batch, 3] x) => (float[batch, 3] y)
{
    [relu] y = Relu (x)
}
"""


def write_clean(path) -> None:
    """A model with nothing for either hook to say."""
    from onnx import parser

    path.write_bytes(parser.parse_model(CLEAN).SerializeToString())


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(REPO, "examples")

pytestmark = pytest.mark.skipif(
    shutil.which("git") is None or importlib.util.find_spec("pre_commit") is None,
    reason="needs git and pre-commit",
)


def manifest_hooks() -> list[dict]:
    with open(os.path.join(REPO, ".pre-commit-hooks.yaml"), encoding="utf-8") as f:
        return yaml.safe_load(f)


def manifest_hook(hook_id: str = "shapeflow-lint") -> dict:
    return next(h for h in manifest_hooks() if h["id"] == hook_id)


def test_manifest_declares_the_hooks() -> None:
    assert [h["id"] for h in manifest_hooks()] == ["shapeflow-lint", "shapeflow-lint-fix", "shapeflow-optimize-check"]
    # pre-commit names files explicitly: every hook applies the config's exclude to them
    entries = ["shapeflow lint --force-exclude", "shapeflow lint --force-exclude --fix",
               "shapeflow optimize --check --force-exclude"]
    for hook, entry in zip(manifest_hooks(), entries):
        assert hook["entry"] == entry and hook["language"] == "python"
        assert hook["files"] == r"\.onnx$"
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "validate-manifest",
                           os.path.join(REPO, ".pre-commit-hooks.yaml")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.fixture
def repo(tmp_path):
    """A git repository whose pre-commit config runs this checkout's shapeflow as a local hook,
    with the manifest's id, name, entry and file pattern (shapeflow-lint, shapeflow-optimize-check)."""
    return make_repo(tmp_path, ["shapeflow-lint", "shapeflow-optimize-check"])


def make_repo(tmp_path, hook_ids: list[str], files: dict[str, bytes] | None = None):
    """The repository of ``repo``, with the hooks ``hook_ids`` and ``files`` committed with the
    config (pre-commit works offline: a local hook, no environment to build)."""
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
    # the manifest's hooks, with this checkout's shapeflow as the entry
    config = {"repos": [{"repo": "local", "hooks": [{
        "id": hook["id"],
        "name": hook["name"],
        "entry": hook["entry"].replace("shapeflow", f"{sys.executable} -m shapeflow", 1),
        "language": "system",
        "files": hook["files"],
    } for hook in manifest_hooks() if hook["id"] in hook_ids]}]}
    (root / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    for name, data in (files or {}).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    install = subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=root, env=env,
                             capture_output=True, text=True)
    assert install.returncode == 0, install.stdout + install.stderr
    git("add", ".")
    assert git("commit", "-q", "--no-verify", "-m", "config").returncode == 0

    def pre_commit(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=root, env=env,
                              capture_output=True, text=True, timeout=900)

    git.pre_commit = pre_commit  # type: ignore[attr-defined]
    return root, git


def test_good_model_commits_and_bad_model_is_refused(repo) -> None:
    root, git = repo
    write_clean(root / "good.onnx")
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


def test_both_hooks_with_two_staged_models(repo) -> None:
    """Two models staged at once: both hooks get both files (pre-commit passes them in one call)."""
    root, git = repo
    write_clean(root / "a.onnx")
    write_clean(root / "b.onnx")
    git("add", "a.onnx", "b.onnx")
    ok = git("commit", "-m", "two clean models")
    output = ok.stdout + ok.stderr
    assert ok.returncode == 0, output
    assert "shapeflow lint" in output and "shapeflow optimize --check" in output
    assert output.count("Passed") >= 2

    # attention.onnx is lint-clean (info only) but has chains optimize would rewrite
    shutil.copy(os.path.join(EXAMPLES, "attention.onnx"), root / "c.onnx")
    shutil.copy(os.path.join(EXAMPLES, "attention.onnx"), root / "d.onnx")
    git("add", "c.onnx", "d.onnx")
    bad = git("commit", "-m", "two models with rewritable chains")
    output = bad.stdout + bad.stderr
    assert bad.returncode != 0, output
    lint_line = next(line for line in output.splitlines() if line.startswith("shapeflow lint"))
    check_line = next(line for line in output.splitlines() if line.startswith("shapeflow optimize --check"))
    assert "Passed" in lint_line and "Failed" in check_line
    assert "c.onnx" in output and "d.onnx" in output and "--check: the model would change" in output
    assert git("log", "--format=%s").stdout.split("\n")[0] == "two clean models"


def test_repository_with_exclude_baseline_and_the_fix_hook(tmp_path) -> None:
    """The adoption path of a repository full of existing models (issue 23): settings with an
    ``exclude`` and a baseline written by ``lint .``, and the --fix hook. ``pre-commit run
    --all-files`` passes and changes no byte: the excluded folder (a model with axis errors
    onnxruntime still loads) is judged only for refusals although pre-commit names it (an
    unreadable file there would fail: test_trust_attacks.py); the baselined SF104 is not "fixed"; the
    info-only model keeps every rewrite lint does not report. Then a newly broken model is
    caught: the fixable one is repaired (and the commit stops on the modified file), the one with
    errors --fix cannot repair is refused with its findings printed."""
    paddle = (Path(EXAMPLES) / "paddle_squeeze.onnx").read_bytes()
    files = {
        "pyproject.toml": b'[tool.shapeflow]\nexclude = ["third_party"]\nbaseline = "shapeflow-baseline.json"\n',
        "models/good.onnx": _clean_bytes(),
        "models/attention.onnx": (Path(EXAMPLES) / "attention.onnx").read_bytes(),
        "models/legacy.onnx": paddle,
        "third_party/vendor.onnx": (Path(EXAMPLES) / "axis_errors.onnx").read_bytes(),
    }
    root, git = make_repo(tmp_path, ["shapeflow-lint-fix"], files)
    # the baseline, as a user writes it: from the repository's root, with `lint .`
    made = cli_process.shapeflow("lint", ".", "--write-baseline", "shapeflow-baseline.json", cwd=root,
                                 env={**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")})
    assert made.returncode == 0, made.stderr
    baseline = (root / "shapeflow-baseline.json").read_text()
    assert "SF104" in baseline and "SF2" not in baseline and "third_party" not in baseline
    git("add", "shapeflow-baseline.json")
    assert git("commit", "-q", "--no-verify", "-m", "baseline").returncode == 0
    before = {p: (root / p).read_bytes() for p in files}

    first = git.pre_commit("run", "--all-files")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "Passed" in first.stdout
    assert {p: (root / p).read_bytes() for p in files} == before
    assert git("status", "--porcelain").stdout == ""

    # a new model with the Paddle squeeze: repaired by the hook, and pre-commit stops the commit
    (root / "models" / "new.onnx").write_bytes(paddle)
    git("add", "models/new.onnx")
    fixed = git.pre_commit("run", "--all-files")
    assert fixed.returncode != 0, fixed.stdout + fixed.stderr
    assert "files were modified by this hook" in fixed.stdout
    assert (root / "models" / "new.onnx").read_bytes() != paddle
    assert (root / "models" / "legacy.onnx").read_bytes() == paddle  # the baselined one is not touched
    git("add", "models/new.onnx")
    assert git.pre_commit("run", "--all-files").returncode == 0

    # a new model whose errors --fix cannot repair: refused, with the findings
    (root / "models" / "broken.onnx").write_bytes((Path(EXAMPLES) / "axis_errors.onnx").read_bytes())
    git("add", "models/broken.onnx")
    refused = git("commit", "-m", "a broken model")
    output = refused.stdout + refused.stderr
    assert refused.returncode != 0, output
    assert "models/broken.onnx: node 'unsq_duplicate_node' (Unsqueeze-13): error SF102" in output
    assert "legacy.onnx" not in output and "third_party" not in output
    assert git("log", "--format=%s").stdout.split("\n")[0] == "baseline"


def _clean_bytes() -> bytes:
    from onnx import parser

    return parser.parse_model(CLEAN).SerializeToString()
