"""``[tool.shapeflow]`` in pyproject.toml: the lint settings a repository keeps with its code.

Keys (all optional)::

    [tool.shapeflow]
    select = ["SF1", "SF2"]          # code prefixes or rule names; default: every rule
    ignore = ["SF110"]
    exit-zero = false                # findings never fail the run (rejected files still do)
    [tool.shapeflow.severity]
    SF105 = "error"                  # error | warning | info, by code, prefix or name

The file used is the nearest ``pyproject.toml`` with a ``[tool.shapeflow]`` table, looking in the
current directory and then its parents, up to the root of the repository (the first directory
holding ``.git``): a project's lint settings never come from outside its repository. Command-line
options win over the file.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

from .diagnostics import Severity
from .errors import UsageError
from .rules import resolve_selector

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

KEYS = ("select", "ignore", "severity", "exit-zero")


@dataclass(frozen=True)
class LintConfig:
    select: tuple[str, ...] | None = None  # None: not set (every rule)
    ignore: tuple[str, ...] = ()
    severity: dict[str, Severity] = field(default_factory=dict)
    exit_zero: bool | None = None  # None: not set
    source: str | None = None  # the pyproject.toml it came from


def find_pyproject(start: str | None = None) -> str | None:
    """The nearest pyproject.toml with a ``[tool.shapeflow]`` table, from ``start`` (default: the
    current directory) up to the repository root; None when there is none."""
    d = os.path.abspath(start or os.getcwd())
    while True:
        candidate = os.path.join(d, "pyproject.toml")
        if os.path.isfile(candidate):
            tool = _read_toml(candidate).get("tool")
            if isinstance(tool, dict) and "shapeflow" in tool:
                return candidate
        if os.path.exists(os.path.join(d, ".git")):
            return None  # the repository root: settings above it belong to someone else
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def _read_toml(path: str) -> dict:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"invalid TOML: {exc}", file=path) from None
    except OSError as exc:
        raise UsageError(f"cannot read: {exc.strerror or exc}", file=path) from None


def load_config(path: str | None = None, *, start: str | None = None) -> LintConfig:
    """The settings of ``path`` (or of the pyproject.toml ``find_pyproject`` finds), validated.
    An empty LintConfig when there is no file. Raises UsageError (exit 2) on a bad setting."""
    if path is None:
        path = find_pyproject(start)
        if path is None:
            return LintConfig()
    tool = _read_toml(path).get("tool")
    table = tool.get("shapeflow", {}) if isinstance(tool, dict) else {}
    return parse_config(table, path)


def parse_config(table: object, source: str) -> LintConfig:
    if not isinstance(table, dict):
        raise UsageError("[tool.shapeflow] must be a table", file=source)
    unknown = sorted(k for k in table if k.replace("_", "-") not in KEYS)
    if unknown:
        raise UsageError(f"unknown key {unknown[0]!r} in [tool.shapeflow] (known: {', '.join(KEYS)})", file=source)
    norm = {k.replace("_", "-"): v for k, v in table.items()}
    select = _selectors(norm["select"], "select", source) if "select" in norm else None
    ignore = _selectors(norm.get("ignore", []), "ignore", source)
    severity = parse_severities(norm.get("severity", {}), source)
    exit_zero = norm.get("exit-zero")
    if exit_zero is not None and not isinstance(exit_zero, bool):
        raise UsageError("exit-zero must be true or false", file=source)
    return LintConfig(select, ignore, severity, exit_zero, source)


def _selectors(value: object, key: str, source: str | None) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
        raise UsageError(f"{key} must be a list of rule codes or names", file=source)
    return split_selectors(items, key, source)


def split_selectors(values: list[str] | tuple[str, ...], key: str, source: str | None = None) -> tuple[str, ...]:
    """``["SF1,SF2", "SF003"]`` -> ``("SF1", "SF2", "SF003")``, each checked to name some rule."""
    out: list[str] = []
    for v in values:
        for part in v.split(","):
            part = part.strip()
            if not part:
                continue
            if not resolve_selector(part):
                raise UsageError(f"{key}: {part!r} names no rule (see `shapeflow rules`)", file=source)
            out.append(part)
    return tuple(out)


def parse_severities(value: object, source: str | None = None) -> dict[str, Severity]:
    """``{"SF105": "error"}`` (or ``["SF105=error"]`` from the command line) -> {selector: Severity}."""
    pairs: list[tuple[str, object]] = []
    if isinstance(value, dict):
        pairs = list(value.items())
    elif isinstance(value, (list, tuple)):
        for item in value:
            code, sep, level = str(item).partition("=")
            if not sep:
                raise UsageError(f"--severity expects CODE=LEVEL, got {item!r}", file=source)
            pairs.append((code.strip(), level.strip()))
    else:
        raise UsageError("severity must be a table of CODE = \"error\" | \"warning\" | \"info\"", file=source)
    out: dict[str, Severity] = {}
    for code, level in pairs:
        if not resolve_selector(code):
            raise UsageError(f"severity: {code!r} names no rule (see `shapeflow rules`)", file=source)
        try:
            out[code] = Severity(str(level).lower())
        except ValueError:
            raise UsageError(f"severity of {code}: {level!r} is not error, warning or info", file=source) from None
    return out


def merge(config: LintConfig, *, select: tuple[str, ...] | None, ignore: tuple[str, ...] | None,
          severity: dict[str, Severity], exit_zero: bool | None) -> LintConfig:
    """The file's settings overridden by the command line's (each option replaces the file's
    value when given; severities merge, the command line winning per code)."""
    return LintConfig(
        select=select if select is not None else config.select,
        ignore=ignore if ignore is not None else config.ignore,
        severity={**config.severity, **severity},
        exit_zero=exit_zero if exit_zero is not None else config.exit_zero,
        source=config.source,
    )
