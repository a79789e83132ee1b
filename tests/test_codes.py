"""One code table: every judging rule takes its identity from shapeflow/codes.py, every rewrite
from its spec, and the two parts together have no code or name twice. Every code of the table has
its rule, and every rule its documentation (``shapeflow rules CODE``)."""

from __future__ import annotations

import ast
from pathlib import Path

import cli_process
import pytest

from shapeflow import codes
from shapeflow.render.docs import rule_text
from shapeflow.passes.sweep import DeadNodes
from shapeflow.rewrites import REPAIRS, REWRITES
from shapeflow.rules import ALL_CODES, ALL_RULES, BY_CODE, Rule

RULES_DIR = Path(__file__).resolve().parent.parent / "shapeflow" / "rules"


def test_every_lint_rule_is_its_table_entry() -> None:
    table = {c.code: c for c in ALL_CODES}
    for rule in ALL_RULES:
        entry = table[rule.code]
        assert (rule.name, rule.severity, rule.fixable) == (entry.name, entry.severity, entry.fixable)
    for c in codes.ALL_CODES:  # the judging rules' part is codes.py
        assert table[c.code] is c


@pytest.mark.parametrize("path", sorted(RULES_DIR.glob("sf*.py")), ids=lambda p: p.name)
def test_rule_modules_do_not_restate_their_identity(path: Path) -> None:
    """Only the code is written in a rule class: name, severity and fixable live in the table."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ClassDef):
            assigned = {t.id for stmt in node.body if isinstance(stmt, ast.Assign)
                        for t in stmt.targets if isinstance(t, ast.Name)}
            assert not assigned & {"name", "severity", "fixable"}, (path.name, node.name)


def test_codes_and_names_are_unique_and_well_formed() -> None:
    assert len({c.code for c in ALL_CODES}) == len({c.name for c in ALL_CODES}) == len(ALL_CODES)
    for c in ALL_CODES:
        assert c.code[:2] == "SF" and len(c.code) == 5 and c.code[2:].isdigit()
        assert c.name == c.name.lower() and " " not in c.name
    assert {r.code for r in ALL_RULES} == {c.code for c in ALL_CODES}  # every code has its rule


def test_one_code_one_rewrite_one_name() -> None:
    """SF2xx = the rewrites and the sweep, each with one code and one name, the same in lint and
    in the engine; the repairs of lint --fix belong to fixable error rules."""
    sf2 = {c.code for c in ALL_CODES if c.code.startswith("SF2")}
    assert sf2 == {r.code.code for r in REWRITES if r.code} | {"SF205"}
    for rewrite in REWRITES:
        assert rewrite.code is not None
        rule = BY_CODE[rewrite.code.code]
        assert rule.name == rewrite.name and rule.fixable and rule.severity.value == "info"
    assert [r for r in REWRITES if r.code and r.code.code == "SF205"] == [] and DeadNodes.name == "dead-nodes"
    for repair in REPAIRS:
        assert repair.code is not None
        assert BY_CODE[repair.code.code].fixable and BY_CODE[repair.code.code].severity.value == "error"
        assert repair.name == BY_CODE[repair.code.code].name


@pytest.mark.parametrize("code", [c.code for c in ALL_CODES])
def test_every_code_is_documented(code: str) -> None:
    text = rule_text(BY_CODE[code])
    assert text.startswith(f"{code} ") and "## What it does" in text and "## Fix" in text


def test_shapeflow_rules_documents_the_sweep() -> None:
    """SF205 was in the table but ``shapeflow rules SF205`` said "unknown rule"."""
    out = cli_process.shapeflow("rules", "SF205")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("SF205 dead-nodes (info, fixable)")


def test_a_rule_with_a_code_outside_the_table_is_refused() -> None:
    with pytest.raises(KeyError, match="SF999"):
        type("Stray", (Rule,), {"code": "SF999"})
