"""CONTRIBUTING.md's worked example is true: its rewrite file, put in a package of its own, is
found by the registry's discovery (the same function that builds ``shapeflow.rewrites``), its lint
rule and documentation are made from it, and its test file passes against it. Adding a rewrite is
those two files."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

from shapeflow import rewrites
from shapeflow.render.docs import rule_markdown, rule_text
from shapeflow.rules import ALL_CODES
from shapeflow.rules.rewrites import hint_rule

DOC = Path(__file__).resolve().parent.parent / "CONTRIBUTING.md"


def _block(first_line: str) -> str:
    """The ```python block of CONTRIBUTING.md whose first line is ``first_line``."""
    for body in re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S):
        if body.startswith(first_line + "\n"):
            return body
    raise AssertionError(f"CONTRIBUTING.md has no python block starting {first_line!r}")


@pytest.fixture
def example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """The doc's rewrite file, as module ``sfexample.sf222_double_negation`` of a package that holds
    nothing else; also importable under the name the doc's test uses."""
    package = tmp_path / "sfexample"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "sf222_double_negation.py").write_text(_block("# shapeflow/rewrites/sf222_double_negation.py"))
    monkeypatch.syspath_prepend(str(tmp_path))
    found = rewrites.discover("sfexample", [str(package)])
    assert [spec.__name__ for spec in found] == ["DoubleNegation"]
    module = sys.modules["sfexample.sf222_double_negation"]
    monkeypatch.setitem(sys.modules, "shapeflow.rewrites.sf222_double_negation", module)
    yield module
    for name in [n for n in sys.modules if n == "sfexample" or n.startswith("sfexample.")]:
        del sys.modules[name]


def test_the_example_is_discovered_with_its_identity(example: types.ModuleType) -> None:
    spec = example.DoubleNegation
    assert spec.code is not None and (spec.code.code, spec.name) == ("SF222", "double-negation")
    assert spec.roots == ("Neg",) and spec.after == frozenset({"Neg"})
    # its code is free: the example must not take a code the product uses
    assert spec.code.code not in {c.code for c in ALL_CODES}
    assert spec.name not in {c.name for c in ALL_CODES}


def test_its_lint_rule_and_docs_come_from_the_file(example: types.ModuleType) -> None:
    rule = hint_rule(example.DoubleNegation)
    assert (rule.code, rule.name, rule.severity.value, rule.fixable) == ("SF222", "double-negation", "info", True)
    text = rule_text(rule)
    assert text.startswith("SF222 double-negation (info, fixable)\n\nNeg(Neg(x)) is x.")
    markdown = rule_markdown(rule)
    for section in ("What it does", "Why is this bad?", "Example", "Fix", "When it does not fire"):
        assert f"### {section}" in markdown


def test_the_example_test_passes(example: types.ModuleType) -> None:
    namespace: dict[str, object] = {}
    exec(compile(_block("# tests/test_double_negation.py"), "test_double_negation.py", "exec"), namespace)
    tests = [f for name, f in namespace.items() if name.startswith("test_") and callable(f)]
    assert tests
    for test in tests:
        test()


def test_a_file_with_two_specs_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "sftwo"
    package.mkdir()
    (package / "__init__.py").write_text("")
    source = _block("# shapeflow/rewrites/sf222_double_negation.py")
    (package / "sf222_double_negation.py").write_text(source + "\n\nclass Again(DoubleNegation):\n    code = Code(\"SF222\", \"double-negation\", INFO)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError, match="exactly one"):
        rewrites.discover("sftwo", [str(package)])
    del sys.modules["sftwo.sf222_double_negation"], sys.modules["sftwo"]
