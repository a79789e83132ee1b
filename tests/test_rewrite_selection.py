"""One code = one rewrite = one name, everywhere a rewrite is named: ``optimize --rules`` takes
codes, prefixes and names as ``lint --select`` does; a former name (a code that used to cover two
rewrites, or SF207's lint name) still works, means every rewrite it covered, and warns."""

from __future__ import annotations

import json
import subprocess
import warnings
from pathlib import Path

import cli_process
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from shapeflow import rewrites
from shapeflow.errors import DeprecatedNameWarning, UsageError
from shapeflow.rules import resolve_selector


def _model() -> onnx.ModelProto:
    """An Unsqueeze/Squeeze pair (SF201) and a Squeeze/Unsqueeze pair (SF216), each before a Relu."""
    nodes = [
        helper.make_node("Unsqueeze", ["x", "ax"], ["u1"], name="u1"),
        helper.make_node("Squeeze", ["u1", "ax"], ["s1"], name="s1"),
        helper.make_node("Relu", ["s1"], ["a"], name="relu_a"),
        helper.make_node("Squeeze", ["w", "ax"], ["s2"], name="s2"),
        helper.make_node("Unsqueeze", ["s2", "ax"], ["u2"], name="u2"),
        helper.make_node("Relu", ["u2"], ["b"], name="relu_b"),
    ]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                                       helper.make_tensor_value_info("w", TensorProto.FLOAT, [1, 3])],
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3]),
                           helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 3])],
                          [numpy_helper.from_array(np.array([0], np.int64), "ax")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return cli_process.shapeflow(*args)


def _fired(tmp_path: Path, rules: str) -> tuple[dict[str, int], str]:
    path = tmp_path / "m.onnx"
    path.write_bytes(_model().SerializeToString())
    proc = _run("optimize", str(path), "--dry-run", "--format", "json", "--rules", rules)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["rewrites"], proc.stderr


def test_rules_by_code_name_and_prefix_agree(tmp_path: Path) -> None:
    by_code, _ = _fired(tmp_path, "SF201")
    by_name, _ = _fired(tmp_path, "cancel-unsqueeze-squeeze")
    assert by_code == by_name == {"cancel-unsqueeze-squeeze": 1}
    both, _ = _fired(tmp_path, "SF201,SF216")
    assert both == {"cancel-unsqueeze-squeeze": 1, "cancel-squeeze-unsqueeze": 1}
    assert _fired(tmp_path, "SF2")[0] == both  # a prefix: every rewrite


def test_a_former_name_means_what_it_covered_and_warns(tmp_path: Path) -> None:
    fired, err = _fired(tmp_path, "cancelling-pair")
    assert fired == {"cancel-unsqueeze-squeeze": 1, "cancel-squeeze-unsqueeze": 1}
    assert "shapeflow: warning: rule name 'cancelling-pair' is deprecated" in err
    assert "SF201 cancel-unsqueeze-squeeze and SF216 cancel-squeeze-unsqueeze" in err


@pytest.mark.parametrize("rules, says", [
    ("SF205", "not a rule to select"), ("dead-nodes", "not a rule to select"),
    ("SF1", "unknown rule 'SF1'"), ("no-such-rule", "unknown rule 'no-such-rule'"),
])
def test_what_is_no_rewrite_is_a_usage_error(tmp_path: Path, rules: str, says: str) -> None:
    path = tmp_path / "m.onnx"
    path.write_bytes(_model().SerializeToString())
    proc = _run("optimize", str(path), "--dry-run", "--rules", rules)
    assert proc.returncode == 2 and says in proc.stderr


def test_lint_selects_by_the_same_names(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    path.write_bytes(_model().SerializeToString())

    def codes(*args: str) -> tuple[set[str], str]:
        proc = _run("lint", "--isolated", "--no-cache", "--format", "json", *args, str(path))
        return {d["code"] for d in json.loads(proc.stdout)["diagnostics"]}, proc.stderr

    assert codes("--select", "SF2")[0] == {"SF201", "SF216"}
    assert codes("--select", "cancel-squeeze-unsqueeze")[0] == {"SF216"}
    found, err = codes("--select", "cancelling-pair")
    assert found == {"SF201", "SF216"} and "deprecated" in err
    # SF201 is one rewrite now: ignoring it leaves the other cancel
    assert codes("--select", "SF2", "--ignore", "SF201")[0] == {"SF216"}


def test_former_names_in_settings_keep_working(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.shapeflow]\nignore = ["mergeable-chain", "common-subexpression"]\n')
    path = tmp_path / "m.onnx"
    path.write_bytes(_model().SerializeToString())
    proc = cli_process.shapeflow("lint", "--no-cache", "--show-settings", str(path), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    chosen = proc.stdout
    for gone in ("SF202", "SF217", "SF207"):
        assert f'"{gone}"' not in chosen.split("rules = ")[1].splitlines()[0]
    assert '"SF201"' in chosen


def test_the_registry_names_each_rewrite_once() -> None:
    names = [r.name for r in rewrites.REWRITES]
    codes = [r.code.code for r in rewrites.REWRITES if r.code]
    assert len(set(names)) == len(names) == len(set(codes)) == len(codes)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert [r.name for r in rewrites.select(["foldable-constant"])] == ["fold-constant", "fold-known-value"]
        assert sorted(resolve_selector("common-subexpression")) == ["SF207"]
    assert sum(issubclass(w.category, DeprecatedNameWarning) for w in seen) == 2
    with pytest.raises(UsageError):
        rewrites.select(["SF104"])  # a repair of lint --fix, not an optimize rewrite
