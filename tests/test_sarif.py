"""``lint --format sarif`` against the SARIF 2.1.0 schema and what GitHub code scanning needs, and
the GitHub Actions annotations of ``--format github``."""

from __future__ import annotations

import json
import os

import jsonschema
import pytest

from shapeflow.diagnostics import Diagnostic, Location, Severity
from shapeflow.render.docs import plain, rule_markdown
from shapeflow.render.github import annotation, escape_data, escape_property
from shapeflow.drivers.linter import LintOptions, lint_paths
from shapeflow.rules import ALL_RULES
from shapeflow.render.sarif import artifact_uri, relative_path, sarif_log

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(REPO, "examples")
SCHEMA = os.path.join(REPO, "tests", "data", "sarif-schema-2.1.0.json")


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft4Validator:
    with open(SCHEMA, encoding="utf-8") as f:
        schema = json.load(f)
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)


@pytest.fixture
def log(tmp_path, monkeypatch) -> dict:
    """A run over the examples plus an unreadable file, with paths relative to the current directory."""
    monkeypatch.chdir(REPO)
    junk = os.path.relpath(tmp_path / "junk.onnx")
    (tmp_path / "junk.onnx").write_bytes(b"junk")
    paths = ["examples/axis_errors.onnx", "examples/paddle_squeeze.onnx", "examples/attention.onnx", junk]
    results = lint_paths(paths, LintOptions())
    diags = [d for r in results for d in r.diagnostics]
    return json.loads(json.dumps(sarif_log(diags, version="1.2.3")))


def test_validates_against_the_sarif_2_1_0_schema(log, validator) -> None:
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.path))
    assert not errors, errors[0].message


def test_github_required_rule_properties(log) -> None:
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [r.code for r in ALL_RULES]
    for r in rules:
        assert r["shortDescription"]["text"].strip()
        assert r["fullDescription"]["text"].strip()
        assert r["help"]["text"].strip() and r["help"]["markdown"].strip()
        assert r["defaultConfiguration"]["level"] in {"error", "warning", "note"}


def test_rule_docs_come_from_the_docstrings(log) -> None:
    rules = {r["id"]: r for r in log["runs"][0]["tool"]["driver"]["rules"]}
    for rule in ALL_RULES:
        d = rules[rule.code]
        assert d["name"] == rule.name
        assert d["help"]["markdown"] == rule_markdown(rule)
        assert d["shortDescription"]["text"] == plain(rule.summary())
        assert {"error": "error", "warning": "warning", "info": "note"}[rule.severity.value] == \
            d["defaultConfiguration"]["level"]


def test_results_have_locations_github_accepts(log) -> None:
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert run["results"]
    for res in run["results"]:
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"]
        assert res["message"]["text"]
        (loc,) = res["locations"]
        phys = loc["physicalLocation"]
        uri = phys["artifactLocation"]["uri"]
        assert not uri.startswith("/") and "\\" not in uri and "://" not in uri
        assert phys["region"]["startLine"] >= 1
        assert res["partialFingerprints"]["primaryLocationLineHash"]
    fingerprints = [r["partialFingerprints"]["primaryLocationLineHash"] for r in run["results"]]
    assert len(set(fingerprints)) == len(fingerprints)


def test_logical_locations_name_the_node(log) -> None:
    results = log["runs"][0]["results"]
    sq = next(r for r in results if r["ruleId"] == "SF104" and "paddle" in
              r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"])
    assert sq["level"] == "error"
    assert sq["locations"][0]["logicalLocations"] == [
        {"name": "squeeze_0", "fullyQualifiedName": "main/squeeze_0", "kind": "function"}]
    junk = next(r for r in results if r["ruleId"] == "SF001")
    assert "logicalLocations" not in junk["locations"][0]


def test_info_findings_are_notes() -> None:
    d = Diagnostic("SF110", "axes-not-constant", Severity.INFO, "m.onnx", "axes are computed at run time",
                   location=Location("main", "u", "Unsqueeze", 13))
    res = sarif_log([d], version="0")["runs"][0]["results"][0]
    assert res["level"] == "note"


def test_uris(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert artifact_uri("models/a b.onnx") == "models/a%20b.onnx"
    assert artifact_uri(str(tmp_path / "sub" / "m.onnx")) == "sub/m.onnx"
    assert artifact_uri("./x/../m.onnx") == "m.onnx"
    assert relative_path(str(tmp_path / "sub" / "m.onnx")) == "sub/m.onnx"
    assert artifact_uri("/elsewhere/m.onnx").startswith("file:///elsewhere/")


def test_subgraph_paths_in_logical_locations() -> None:
    d = Diagnostic("SF104", "squeeze-non-unit-dim", Severity.ERROR, "m.onnx", "axis 1 has dim 3, not 1",
                   location=Location("main/if_node.then_branch", "then_sq", "Squeeze", 13))
    res = sarif_log([d], version="0")["runs"][0]["results"][0]
    assert res["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] == "main/if_node.then_branch/then_sq"
    assert res["message"]["text"].startswith("main/if_node.then_branch: node 'then_sq' (Squeeze-13): ")


# -- GitHub Actions annotations ------------------------------------------------------------------


def test_escaping() -> None:
    assert escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext"
    assert escape_property("a:b,c%") == "a%3Ab%2Cc%25"


def test_annotation_levels_and_escaping() -> None:
    d = Diagnostic("SF104", "squeeze-non-unit-dim", Severity.ERROR, "models/m,1:2.onnx", "axis 3 has dim 5, not 1",
                   hint="drop it, 100%", location=Location("main", "sq", "Squeeze", 13))
    assert annotation(d) == ("::error file=models/m%2C1%3A2.onnx,title=SF104 squeeze-non-unit-dim::"
                             "node 'sq' (Squeeze-13): axis 3 has dim 5, not 1%0Ahint: drop it, 100%25")
    warn = Diagnostic("SF105", "squeeze-symbolic-dim", Severity.WARNING, "m.onnx", "x")
    info = Diagnostic("SF110", "axes-not-constant", Severity.INFO, "m.onnx", "x")
    assert annotation(warn).startswith("::warning file=m.onnx,title=SF105 squeeze-symbolic-dim::")
    assert annotation(info).startswith("::notice ")
