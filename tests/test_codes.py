"""One code table (shapeflow/codes.py): every rule takes its identity from it, and every rewrite
of the engine has a lint code whose rule reports exactly its candidates (issue 10)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from shapeflow import codes
from shapeflow.passes import ALL_RULES as REWRITES
from shapeflow.passes import FIX_RULES
from shapeflow.rules import ALL_RULES, BY_CODE, Rule

RULES_DIR = Path(__file__).resolve().parent.parent / "shapeflow" / "rules"


def test_every_lint_rule_is_its_table_entry() -> None:
    for rule in ALL_RULES:
        entry = codes.lookup(rule.code)
        assert (rule.name, rule.severity, rule.fixable) == (entry.name, entry.severity, entry.fixable)


@pytest.mark.parametrize("path", sorted(RULES_DIR.glob("sf*.py")), ids=lambda p: p.name)
def test_rule_modules_do_not_restate_their_identity(path: Path) -> None:
    """Only the code is written in a rule class: name, severity and fixable live in the table."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ClassDef):
            assigned = {t.id for stmt in node.body if isinstance(stmt, ast.Assign)
                        for t in stmt.targets if isinstance(t, ast.Name)}
            assert not assigned & {"name", "severity", "fixable"}, (path.name, node.name)


def test_codes_and_names_are_unique_and_well_formed() -> None:
    assert len(codes.BY_CODE) == len(codes.ALL_CODES) == len(codes.BY_NAME)
    for c in codes.ALL_CODES:
        assert c.code[:2] == "SF" and len(c.code) == 5 and c.code[2:].isdigit()
        assert c.name == c.name.lower() and " " not in c.name
    assert codes.REWRITE_CODES == {c.code for c in codes.ALL_CODES if c.code.startswith("SF2")}


def test_every_rewrite_has_a_lint_code_with_a_rule() -> None:
    """SF2xx = every rewrite: each rule of the engine names a code of the table, and each rewrite
    code but the dead-node sweep's (which has no findings of its own) has its lint rule."""
    for rewrite in REWRITES:
        assert rewrite.code in codes.REWRITE_CODES, rewrite.name
        assert rewrite.code in BY_CODE and BY_CODE[rewrite.code].fixable
    for code in codes.REWRITE_CODES - {codes.DEAD_NODES.code}:
        assert any(r.code == code for r in REWRITES), code
    for repair in FIX_RULES:  # the repairs of lint --fix belong to fixable error rules
        assert BY_CODE[repair.code].fixable and BY_CODE[repair.code].severity.value == "error"
        assert repair.name == BY_CODE[repair.code].name


def test_a_rule_with_a_code_outside_the_table_is_refused() -> None:
    with pytest.raises(KeyError, match="SF999"):
        type("Stray", (Rule,), {"code": "SF999"})
