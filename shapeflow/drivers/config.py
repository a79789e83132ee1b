"""Lint settings a repository keeps with its models, resolved like ruff's.

Keys (all optional), in ``[tool.shapeflow]`` of a ``pyproject.toml``, or at the top level (or in a
``[tool.shapeflow]`` table) of a ``shapeflow.toml``::

    select = ["SF0", "SF1"]          # code prefixes or rule names; default: every rule
    extend-select = ["SF203"]        # added to select (or to the default)
    ignore = ["SF110"]
    extend-ignore = ["SF106"]
    per-file-ignores = { "legacy/**/*.onnx" = ["SF105"] }   # globs relative to the config file
    exclude = ["third_party/**"]     # files and directories never searched
    exit-zero = false                # findings never fail the run (rejected files still do)
    baseline = "shapeflow-baseline.json"  # report only findings not recorded in it
    assume = ["seq>=3"]              # facts about symbols (issue 9; see SPEC.md)
    [tool.shapeflow.severity]
    SF105 = "error"                  # error | warning | info, by code, prefix or name

Which file: for each model, the nearest directory from the model's folder upwards holding a
``shapeflow.toml`` (which wins) or a ``pyproject.toml`` with a ``[tool.shapeflow]`` table, up to the
root of the repository (the first directory holding ``.git``, ``.hg`` or ``.svn``): a project's
settings never come from outside its repository. Outside a repository the search goes up to the
current directory when the model is below it, and reads only the model's own folder otherwise;
it never reads a folder that is not the user's own or that others may write to (a shared
``/tmp``). ``--config FILE`` names one file for every model; ``--isolated`` reads none.

What a settings file may decide is bounded (docs/threat-model.md): it is read as a model is (a
regular file, at most 1 MiB, UTF-8 TOML); ``baseline`` and ``cache-dir`` must stay inside the
project (the repository, or the config file's folder outside one); and it cannot hide an
error-level finding whose code means onnxruntime refuses the model (``codes.REFUSAL_CODES``):
such rules run whatever ``select`` and ``ignore`` say, keep their error level, and fail the run
under the file's ``exit-zero``. Only the command line can turn them off.

Precedence (a later line wins over an earlier one)::

    default             every rule, default severities
    config file         select (replaces the default) + extend-select - ignore - extend-ignore,
                        then per-file-ignores for the model's path
    command line        --select replaces everything above (config ignores included);
                        --extend-select adds (even a code the config ignores); --ignore and
                        --extend-ignore remove; --severity wins over the file's severity per code

So a code named on the command line (``--select`` / ``--extend-select``) is reported even if the
config ignores it. In-model suppressions and the baseline apply after all of this.
"""

from __future__ import annotations

import fnmatch
import os
import sys
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

from ..codes import REFUSAL_CODES
from ..diagnostics import Severity
from ..errors import UsageError, display_path
from ..io.files import MAX_CONFIG_BYTES, decode_text, read_small_file
from ..rules import ALL_RULES, resolve_selector

KEYS = ("select", "extend-select", "ignore", "extend-ignore", "per-file-ignores", "exclude", "severity",
        "exit-zero", "baseline", "assume", "cache-dir")
CONFIG_NAMES = ("shapeflow.toml", "pyproject.toml")  # in one directory, the first found wins
VCS_MARKERS = (".git", ".hg", ".svn")  # a folder holding one is a repository's root
DEFAULT_EXCLUDE = (".git", ".hg", ".svn", ".venv", "venv", "node_modules", "__pycache__", ".tox", ".nox",
                   "build", "dist")
# Globs a settings file may list in ``exclude`` and in ``per-file-ignores``: every file found is
# matched against each (fnmatch keeps 32,768 compiled patterns; past that each match compiles
# anew). 80,000 globs in a 1 MiB file made ``lint .`` on two models run past five minutes.
MAX_GLOBS = 1000


@dataclass(frozen=True)
class Settings:
    """The settings of one config file (or none), validated. Paths are absolute."""

    select: tuple[str, ...] | None = None  # None: not set (every rule)
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    extend_ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (glob, selectors)
    exclude: tuple[str, ...] = ()
    severity: dict[str, Severity] = field(default_factory=dict)
    exit_zero: bool | None = None  # None: not set
    baseline: str | None = None  # absolute path of the baseline file
    # issue 9 (the lead wires its meaning): facts such as "seq>=3", passed through as written
    assume: tuple[str, ...] = ()
    source: str | None = None  # the file they came from
    root: str | None = None  # its directory: globs and relative paths are relative to it
    cache_dir: str | None = None  # absolute path of lint's cache folder (cache.py); None: the default

    def __hash__(self) -> int:  # severity is a dict: hash the rest (equal settings, equal hash)
        return hash((self.select, self.extend_select, self.ignore, self.extend_ignore, self.per_file_ignores,
                     self.exclude, tuple(sorted(self.severity.items())), self.exit_zero, self.baseline,
                     self.assume, self.source))


LintConfig = Settings  # the earlier name


@dataclass(frozen=True)
class CommandLine:
    """What the command line says about rule selection; None / empty: not given."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    extend_ignore: tuple[str, ...] = ()
    severity: dict[str, Severity] = field(default_factory=dict)
    exit_zero: bool | None = None
    baseline: str | None = None
    assume: tuple[str, ...] = ()

    @property
    def named(self) -> tuple[str, ...]:
        """Selectors the command line names as wanted: these win over any ignore in a config."""
        return (*(self.select or ()), *self.extend_select)


@dataclass(frozen=True)
class Resolved:
    """The settings for one model file: what the lint driver needs."""

    codes: frozenset[str]  # rules to run
    severity: tuple[tuple[str, Severity], ...]  # (selector, level): the file's, then the command line's
    exit_zero: bool
    baseline: str | None
    assume: tuple[str, ...]
    source: str | None
    # exit-zero came from the settings file, not the command line: refusal-level errors still fail
    settings_exit_zero: bool = False
    # Codes a select or extend-select (config or command line) names, by code, prefix or name,
    # rather than the default "every rule": an info finding of such a code is reported like an
    # error or a warning (machine formats, --fix), not only counted.
    named: frozenset[str] = frozenset()


# -- finding and reading files -------------------------------------------------------------------------

def _read_toml(path: str) -> dict[str, object]:
    """A settings file, parsed: read as a model is (``io.files``), UTF-8, TOML; anything else is one
    line and exit 2."""
    # imported when a file is read: most runs of infer have no config file to read
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    try:
        data = read_small_file(path, MAX_CONFIG_BYTES, "config file")
    except FileNotFoundError:
        raise UsageError("cannot read config file: no such file", file=path) from None
    text = decode_text(data, path, "config file")
    try:
        return dict(tomllib.loads(text))
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"invalid TOML: {exc}", file=path) from None
    except RecursionError:
        raise UsageError("invalid TOML: arrays or tables nested too deep", file=path) from None
    except (ValueError, MemoryError) as exc:  # e.g. an integer of more digits than Python converts
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UsageError(f"invalid TOML: {first}", file=path) from None


def _table_of(path: str, data: Mapping[str, object]) -> dict[str, object] | None:
    """The shapeflow table of a parsed file, or None when it has none. A ``shapeflow.toml`` may
    hold the keys at its top level (as ruff.toml does)."""
    tool = data.get("tool")
    if isinstance(tool, dict) and "shapeflow" in tool:
        table = tool["shapeflow"]
        if not isinstance(table, dict):
            raise UsageError("[tool.shapeflow] must be a table", file=path)
        return table
    if os.path.basename(path) == "shapeflow.toml":
        return dict(data)
    return None


def vcs_root(start: str) -> str | None:
    """The nearest folder from ``start`` up holding ``.git``, ``.hg`` or ``.svn``, or None."""
    d = os.path.abspath(start)
    while True:
        if any(os.path.lexists(os.path.join(d, m)) for m in VCS_MARKERS):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def project_root(folder: str) -> str:
    """The project a settings file in ``folder`` belongs to: its repository, else the folder."""
    return vcs_root(folder) or os.path.abspath(folder)


def _is_within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _own_folder(d: str) -> bool:
    """Whether ``d`` belongs to the user and no other user may write to it (outside a repository
    a settings file is read only from such folders: not from a shared ``/tmp``)."""
    try:
        st = os.stat(d)
    except OSError:
        return False
    return st.st_uid == os.geteuid() and not st.st_mode & 0o002


def find_config(start: str | None = None) -> str | None:
    """The nearest config file (``shapeflow.toml``, or a ``pyproject.toml`` with ``[tool.shapeflow]``)
    from the directory ``start`` (default: the current directory) up to the repository root; outside
    a repository up to the current directory when ``start`` is below it, else ``start`` only, and
    only through folders of the user's own (module docstring)."""
    cwd = os.path.abspath(os.getcwd())
    d = os.path.abspath(start or cwd)
    top = vcs_root(d)
    in_repo = top is not None
    if top is None:
        top = cwd if _is_within(d, cwd) else d
    while True:
        if not in_repo and not _own_folder(d):
            return None
        for name in CONFIG_NAMES:
            candidate = os.path.join(d, name)
            if os.path.isfile(candidate) and _table_of(candidate, _read_toml(candidate)) is not None:
                return candidate
        if d == top:
            return None  # the repository root: settings above it belong to someone else
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


find_pyproject = find_config  # the earlier name


def load_config(path: str | None = None, *, start: str | None = None) -> Settings:
    """The settings of ``path`` (or of the file ``find_config(start)`` finds), validated; empty
    Settings when there is none. A named file without a shapeflow table is a usage error (exit 2):
    a typo in ``--config`` must not lint with the defaults."""
    explicit = path is not None
    if path is None:
        path = find_config(start)
        if path is None:
            return Settings()
    path = os.path.abspath(path)
    table = _table_of(path, _read_toml(path))
    if table is None:
        if explicit:
            raise UsageError("no [tool.shapeflow] table (a shapeflow.toml may hold the keys at its top level)",
                             file=path)
        return Settings()
    return parse_config(table, path)


def parse_config(table: object, source: str) -> Settings:
    if not isinstance(table, dict):
        raise UsageError("[tool.shapeflow] must be a table", file=source)
    unknown = sorted(k for k in table if k.replace("_", "-") not in KEYS)
    if unknown:
        raise UsageError(f"unknown key {unknown[0]!r} in [tool.shapeflow] (known: {', '.join(KEYS)})", file=source)
    norm = {k.replace("_", "-"): v for k, v in table.items()}
    root = os.path.dirname(os.path.abspath(source))
    select = _selectors(norm["select"], "select", source) if "select" in norm else None
    exit_zero = norm.get("exit-zero")
    if exit_zero is not None and not isinstance(exit_zero, bool):
        raise UsageError("exit-zero must be true or false", file=source)
    baseline = norm.get("baseline")
    if baseline is not None and (not isinstance(baseline, str) or not baseline):
        raise UsageError("baseline must be a file name", file=source)
    cache_dir = norm.get("cache-dir")
    if cache_dir is not None and (not isinstance(cache_dir, str) or not cache_dir):
        raise UsageError("cache-dir must be a folder name", file=source)
    project = project_root(root) if isinstance(baseline, str) or isinstance(cache_dir, str) else root
    if isinstance(baseline, str):
        baseline = inside_project(baseline, root, project, "baseline", source)
    if isinstance(cache_dir, str):
        cache_dir = inside_project(cache_dir, root, project, "cache-dir", source)
    return Settings(
        select=select,
        extend_select=_selectors(norm.get("extend-select", []), "extend-select", source),
        ignore=_selectors(norm.get("ignore", []), "ignore", source),
        extend_ignore=_selectors(norm.get("extend-ignore", []), "extend-ignore", source),
        per_file_ignores=_globs(_per_file(norm.get("per-file-ignores", {}), source), "per-file-ignores", source),
        exclude=_globs(_strings(norm.get("exclude", []), "exclude", source), "exclude", source),
        severity=parse_severities(norm.get("severity", {}), source),
        exit_zero=exit_zero,
        baseline=baseline if isinstance(baseline, str) else None,
        assume=_strings(norm.get("assume", []), "assume", source),
        source=source,
        root=root,
        cache_dir=cache_dir if isinstance(cache_dir, str) else None,
    )


def inside_project(value: str, root: str, project: str, key: str, source: str) -> str:
    """The absolute path a settings file's ``key`` names (relative to the file's folder ``root``),
    refused (exit 2, one line) unless it stays inside ``project``, through links too. A cache
    folder must also not be the project itself, a folder above the settings file or a repository's
    own folder (``.git``): ``shapeflow clean`` and the cache's ``.gitignore`` act on it."""
    path = os.path.normpath(os.path.join(root, value))
    real_project = os.path.realpath(project)
    flag = "--cache-dir" if key == "cache-dir" else "--baseline"
    if "\0" in value or not _is_within(path, project) or not _is_within(os.path.realpath(path), real_project):
        raise UsageError(f"{key} {display_path(repr(value))} leaves the project {display_path(project)}; "
                         f"a path outside it can only be given on the command line ({flag})", file=source)
    if key == "cache-dir":
        parts = os.path.relpath(path, project).split(os.sep)
        if path == project or _is_within(root, path) or any(p in VCS_MARKERS for p in parts):
            raise UsageError(f"cache-dir {display_path(repr(value))} names a folder that holds the project's "
                             "files; give the cache a folder of its own (e.g. \".shapeflow_cache\")", file=source)
    return path


def _strings(value: object, key: str, source: str | None) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
        raise UsageError(f"{key} must be a list of strings", file=source)
    return tuple(items)


def _globs(items: tuple[Any, ...], key: str, source: str) -> tuple[Any, ...]:
    if len(items) > MAX_GLOBS:
        raise UsageError(f"{key} lists {len(items):,} globs, more than the {MAX_GLOBS:,} a settings file may have",
                         file=source)
    return items


def _per_file(value: object, source: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise UsageError('per-file-ignores must be a table of "glob" = ["CODE", ...]', file=source)
    return tuple((str(glob), _selectors(codes, f"per-file-ignores[{glob!r}]", source))
                 for glob, codes in value.items())


def _selectors(value: object, key: str, source: str | None) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
        raise UsageError(f"{key} must be a list of rule codes or names", file=source)
    return split_selectors(items, key, source)


def split_selectors(values: Sequence[str], key: str, source: str | None = None) -> tuple[str, ...]:
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
            name, sep, text = str(item).partition("=")
            if not sep:
                raise UsageError(f"--severity expects CODE=LEVEL, got {item!r}", file=source)
            pairs.append((name.strip(), text.strip()))
    else:
        raise UsageError("severity must be a table of CODE = \"error\" | \"warning\" | \"info\"", file=source)
    out: dict[str, Severity] = {}
    for key, level in pairs:
        code = str(key)
        if not resolve_selector(code):
            raise UsageError(f"severity: {code!r} names no rule (see `shapeflow rules`)", file=source)
        try:
            out[code] = Severity(str(level).lower())
        except ValueError:
            raise UsageError(f"severity of {code}: {level!r} is not error, warning or info", file=source) from None
    return out


# -- resolving the settings of one model ------------------------------------------------------------

def _codes(selectors: Sequence[str]) -> set[str]:
    return {code for s in selectors for code in resolve_selector(s)}


def relative_to_root(path: str, root: str | None) -> str:
    """``path`` relative to ``root`` with ``/`` separators (what globs match), or as given."""
    absolute = os.path.abspath(path)
    if root is not None:
        rel = os.path.relpath(absolute, root)
        if not rel.startswith(".."):
            return rel.replace(os.sep, "/")
    return path.replace(os.sep, "/")


def glob_match(rel: str, pattern: str) -> bool:
    """ruff-like globs: ``*`` within a name, ``**`` any depth; a pattern without ``/`` matches a
    file name (or any directory name on the way) anywhere."""
    pattern = pattern.replace(os.sep, "/").rstrip("/")
    if pattern.startswith("./"):
        pattern = pattern[2:]
    if "/" not in pattern:
        return any(fnmatch.fnmatchcase(part, pattern) for part in rel.split("/"))
    if fnmatch.fnmatchcase(rel, pattern):  # fnmatch's * crosses '/': ** and * both do
        return True
    if pattern.startswith("**/") and fnmatch.fnmatchcase(rel, pattern[3:]):
        return True
    if "/**/" in pattern and fnmatch.fnmatchcase(rel, pattern.replace("/**/", "/")):  # ** is also no folder
        return True
    # a directory pattern matches what is under it
    parts = rel.split("/")
    return any(fnmatch.fnmatchcase("/".join(parts[:k]), pattern) for k in range(1, len(parts)))


def severity_table(overrides: Sequence[tuple[str, Severity]]) -> dict[str, Severity]:
    """Code -> overridden severity. The most specific selector wins (``SF104`` over ``SF1``), and
    among equally specific ones the later (the command line's, after the config file's)."""
    best: dict[str, tuple[int, int, Severity]] = {}
    for order, (selector, level) in enumerate(overrides):
        codes = resolve_selector(selector)
        for code in codes:
            rank = (-len(codes), order)
            if code not in best or rank >= best[code][:2]:
                best[code] = (rank[0], rank[1], level)
    return {code: level for code, (_, _, level) in best.items()}


def resolve(settings: Settings, cli: CommandLine, path: str) -> Resolved:
    """The rules, severities and switches for the model at ``path`` (the table in the module doc)."""
    if settings.select is not None:
        codes = _codes(settings.select)
    else:
        codes = {r.code for r in ALL_RULES}
    codes |= _codes(settings.extend_select)
    codes -= _codes(settings.ignore) | _codes(settings.extend_ignore)
    if settings.per_file_ignores:
        rel = relative_to_root(path, settings.root)
        for pattern, selectors in settings.per_file_ignores:
            if glob_match(rel, pattern):
                codes -= _codes(selectors)
    # A settings file cannot turn off what makes onnxruntime refuse the model (module docstring).
    codes |= {r.code for r in ALL_RULES if r.code in REFUSAL_CODES}
    named = _codes(settings.select or ()) | _codes(settings.extend_select)
    if cli.select is not None:
        codes = _codes(cli.select)
        named = _codes(cli.select)
    codes |= _codes(cli.extend_select)
    named |= _codes(cli.extend_select)
    codes -= _codes(cli.ignore) | _codes(cli.extend_ignore)
    severity = (*settings.severity.items(), *cli.severity.items())
    if settings.severity:
        # ... nor lower their level: the level of each such code is the command line's, or error
        from_file = severity_table(tuple(settings.severity.items()))
        lowered = sorted(c for c, level in from_file.items() if c in REFUSAL_CODES and level is not Severity.ERROR)
        if lowered:
            from_cli = severity_table(tuple(cli.severity.items()))
            severity += tuple((c, from_cli.get(c, Severity.ERROR)) for c in lowered)
    settings_exit_zero = cli.exit_zero is None and bool(settings.exit_zero)
    return Resolved(
        codes=frozenset(codes),
        severity=severity,
        exit_zero=bool(cli.exit_zero if cli.exit_zero is not None else settings.exit_zero),
        baseline=cli.baseline if cli.baseline is not None else settings.baseline,
        assume=cli.assume or settings.assume,
        source=settings.source,
        settings_exit_zero=settings_exit_zero,
        named=frozenset(named & codes),
    )


def merge(config: Settings, *, select: tuple[str, ...] | None, ignore: tuple[str, ...] | None,
          severity: dict[str, Severity], exit_zero: bool | None) -> Settings:
    """The file's settings overridden by explicit values (each replaces the file's value when
    given; severities merge, the explicit value winning per code)."""
    return replace(
        config,
        select=select if select is not None else config.select,
        ignore=ignore if ignore is not None else config.ignore,
        severity={**config.severity, **severity},
        exit_zero=exit_zero if exit_zero is not None else config.exit_zero,
    )


class ConfigCache:
    """The settings of each model's nearest config file, each file read once."""

    def __init__(self, explicit: str | None = None, isolated: bool = False) -> None:
        self.explicit = load_config(explicit) if explicit is not None else None
        self.isolated = isolated
        self._by_dir: dict[str, Settings] = {}
        self._by_file: dict[str, Settings] = {}

    def for_path(self, path: str) -> Settings:
        if self.isolated:
            return Settings()
        if self.explicit is not None:
            return self.explicit
        d = os.path.dirname(os.path.abspath(path))
        found = self._by_dir.get(d)
        if found is None:
            source = find_config(d)
            if source is None:
                found = Settings()
            else:
                found = self._by_file.get(source)
                if found is None:
                    found = self._by_file[source] = load_config(source)
            self._by_dir[d] = found
        return found


def settings_text(settings: Settings, resolved: Resolved, path: str | None = None) -> str:
    """``--show-settings``: the resolved settings and where they came from, one key a line."""
    lines = [f"# settings for {path}" if path else "# settings", f"source = {settings.source or '(none: defaults)'}"]
    lines.append("rules = [" + ", ".join(f'"{c}"' for c in sorted(resolved.codes)) + "]")
    for key, value in (("select", settings.select), ("extend-select", settings.extend_select),
                       ("ignore", settings.ignore), ("extend-ignore", settings.extend_ignore),
                       ("exclude", settings.exclude), ("assume", resolved.assume)):
        if value is not None:
            lines.append(f"{key} = [" + ", ".join(f'"{v}"' for v in value) + "]")
    if settings.per_file_ignores:
        lines.append("per-file-ignores = { " + ", ".join(
            f'"{g}" = [' + ", ".join(f'"{c}"' for c in codes) + "]" for g, codes in settings.per_file_ignores) + " }")
    lines.append("severity = { " + ", ".join(f'{k} = "{v.value}"' for k, v in resolved.severity) + " }")
    lines.append(f"exit-zero = {'true' if resolved.exit_zero else 'false'}")
    lines.append(f"baseline = {resolved.baseline!r}" if resolved.baseline else "baseline = (none)")
    return "\n".join(lines)
