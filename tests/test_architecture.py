"""The data flow is a line, not a ring: a module imports only from its own layer or the layers
below it. The imports are read from the source (ast), function-local and TYPE_CHECKING imports
included, ``from . import x`` resolved to the module ``x``.

    base -> io -> graph -> inference/ops -> passes (the rewrite engine) -> rewrites (the specs)
         -> rules (judge; the SF2xx rules come from the specs) -> drivers (analysis, lint, optimize,
         api) -> render -> cli

Above ``inference`` every layer is a package of its own; below it, the modules are few and small.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "shapeflow"

# The layers, lowest first. A module not listed by name belongs to the layer of its nearest listed
# package (``shapeflow.ops.squeeze`` -> ``shapeflow.ops``); a new top-level module must be added.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    # Records, limits, errors, the pure axis algebra, the code table, version tables: no model yet.
    ("base", ("shapeflow._onnx", "shapeflow._schema_data", "shapeflow._schema_sigs", "shapeflow._version",
              "shapeflow.assume", "shapeflow.axes", "shapeflow.codes", "shapeflow.diagnostics", "shapeflow.dimexpr",
              "shapeflow.dims",
              "shapeflow.errors", "shapeflow.limits", "shapeflow.opsets", "shapeflow.results",
              "shapeflow.schema_table", "shapeflow.signatures")),
    ("io", ("shapeflow.io",)),
    ("graph", ("shapeflow.graph",)),
    ("inference", ("shapeflow.facts", "shapeflow.tensorinfo", "shapeflow.ops", "shapeflow.inference",
                   "shapeflow.declared")),
    # The rewrite engine transforms and judges nothing; the rewrites are specs it runs, one per file;
    # the lint rules judge, and report what the rewrites would do (rules/rewrites.py).
    ("passes", ("shapeflow.passes",)),
    ("rewrites", ("shapeflow.rewrites",)),
    ("rules", ("shapeflow.rules",)),
    # Drivers (a package): one model's analysis, lint over files (config, discovery, suppressions,
    # baselines, cache, executors), optimize, verify, the API, and what is built from an analysis
    # on request (annotated model, networkx graph, shape diff, rewrite diff).
    ("drivers", ("shapeflow.drivers",)),
    # Renderers (a package): text, JSON, SARIF, GitHub, the concise format, pictures, the rule docs.
    ("render", ("shapeflow.render",)),
    # The command line, and the package itself, whose lazy attributes are the API.
    ("cli", ("shapeflow.cli", "shapeflow.__main__", "shapeflow._start", "shapeflow")),
]
RANK = {name: k for k, (name, _) in enumerate(LAYERS)}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> str | None:
    """The layer of ``module``: the one listing it or its nearest package."""
    best: tuple[int, str] | None = None
    for name, members in LAYERS:
        for m in members:
            # (the package itself is listed for its own __init__, not as every module's package)
            if module == m or (m != "shapeflow" and module.startswith(m + ".")):
                if best is None or len(m) > best[0]:
                    best = (len(m), name)
    return best[1] if best is not None else None


def imports_of(module: str, path: Path, known: set[str]) -> set[str]:
    """Every shapeflow module ``module`` imports, anywhere in the file."""
    is_package = path.name == "__init__.py"
    package = module.split(".") if is_package else module.split(".")[:-1]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == "shapeflow")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "shapeflow":
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out.add(sub if sub in known else target)  # ``from . import x``: the module x
    out.discard(module)
    return out


def edges() -> list[tuple[str, str]]:
    found = modules()
    known = set(found)
    return sorted((m, dep) for m, path in found.items() for dep in imports_of(m, path, known))


def test_every_module_has_a_layer() -> None:
    missing = [m for m in modules() if layer_of(m) is None]
    assert not missing, f"add these modules to LAYERS in tests/test_architecture.py: {missing}"


def test_imports_follow_the_layers() -> None:
    wrong = []
    for module, dep in edges():
        a, b = layer_of(module), layer_of(dep)
        if a is None or b is None:
            continue  # (test_every_module_has_a_layer names them)
        if RANK[b] > RANK[a]:
            wrong.append(f"{module} ({a}) imports {dep} ({b})")
    assert not wrong, "imports against the data flow:\n" + "\n".join(wrong)


def test_passes_import_neither_rules_nor_drivers() -> None:
    """The edges of issue 10, by name: the engine judges nothing and calls no driver back; nor does
    a rewrite spec, and the engine runs the specs it is given (it imports none)."""
    bad = [(m, d) for m, d in edges() if m.startswith(("shapeflow.passes", "shapeflow.rewrites"))
           and (d.startswith("shapeflow.rules") or d in ("shapeflow.drivers.analysis", "shapeflow.drivers.linter",
                                                          "shapeflow.drivers.optimizer", "shapeflow.drivers.api"))]
    assert bad == []
    assert [(m, d) for m, d in edges() if m.startswith("shapeflow.passes") and d.startswith("shapeflow.rewrites")] == []


# The symbolic algebra (a package in the base layer), lowest first: each module imports only those
# before it. One exception: canonical's ``Sym.__str__`` prints through text (imported at its end).
DIMS_ORDER = ["shapeflow.dims.canonical", "shapeflow.dims.text", "shapeflow.dims.domain", "shapeflow.dims.zeros",
              "shapeflow.dims.algebra", "shapeflow.dims"]


def test_dims_modules_follow_their_order() -> None:
    found = {m for m in modules() if m == "shapeflow.dims" or m.startswith("shapeflow.dims.")}
    assert found == set(DIMS_ORDER), f"add the new module to DIMS_ORDER: {found - set(DIMS_ORDER)}"
    rank = {m: k for k, m in enumerate(DIMS_ORDER)}
    wrong = [(m, d) for m, d in edges() if m in rank and d in rank and rank[d] > rank[m]
             and (m, d) != ("shapeflow.dims.canonical", "shapeflow.dims.text")]
    assert wrong == []


def test_only_the_cli_imports_click() -> None:
    users = []
    for module, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            if any(n.split(".")[0] == "click" for n in names):
                users.append(module)
    assert users and all(layer_of(m) == "cli" for m in users), users


@pytest.mark.parametrize("source, expected", [
    ("from .. import codes", {"shapeflow.codes"}),
    ("from . import base", {"shapeflow.rules.base"}),
    ("from .. import __version__", {"shapeflow"}),
    ("from .base import Rule", {"shapeflow.rules.base"}),
    ("def f():\n    from ..passes import find_candidates", {"shapeflow.passes"}),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..drivers.analysis import Analysis",
     {"shapeflow.drivers.analysis"}),
    ("import shapeflow.drivers.linter", {"shapeflow.drivers.linter"}),
])
def test_the_walk_sees_every_kind_of_import(tmp_path, source, expected) -> None:
    """The checker itself: local, relative, TYPE_CHECKING and ``from . import`` imports count."""
    path = tmp_path / "shapeflow" / "rules" / "probe.py"
    path.parent.mkdir(parents=True)
    path.write_text(source, encoding="utf-8")
    known = set(modules())
    found = imports_of("shapeflow.rules.probe", path, known)
    assert found == expected
    # and such an edge from the rules up to a driver is what the layer test rejects
    for dep in found:
        if dep.startswith(("shapeflow.drivers.analysis", "shapeflow.drivers.linter")):
            assert RANK[layer_of(dep)] > RANK["rules"]  # type: ignore[index]


def test_no_function_is_longer_than_80_lines() -> None:
    """A function past 80 lines does several things: split it (ruff's C901 bounds the branches)."""
    long = []
    for module, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > 80:
                    long.append(f"{module}.{node.name}: {lines} lines")
    assert long == []
