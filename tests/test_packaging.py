"""The wheel carries what users of the package need: the py.typed marker (PEP 561) and every
subpackage (io, render, rules, ...)."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

from helpers import build_dist

ROOT = Path(__file__).resolve().parent.parent


def test_py_typed_marker_exists() -> None:
    assert (ROOT / "shapeflow" / "py.typed").is_file()


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    # Built from a copy: setuptools leaves build/ and *.egg-info next to the sources it builds.
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "shapeflow", src / "shapeflow", ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("wheel")
    # with a setuptools that reads the license field (the environment's, or one pip fetches)
    wheel = build_dist(str(src), str(out), "wheel")
    with zipfile.ZipFile(wheel) as zf:
        return set(zf.namelist())


def test_wheel_ships_py_typed(wheel_names: set[str]) -> None:
    assert "shapeflow/py.typed" in wheel_names


def test_wheel_ships_every_subpackage(wheel_names: set[str]) -> None:
    packages = {p.parent.relative_to(ROOT).as_posix() for p in (ROOT / "shapeflow").rglob("__init__.py")}
    assert {"shapeflow/io", "shapeflow/render"} <= packages
    for pkg in packages:
        assert f"{pkg}/__init__.py" in wheel_names, pkg
