"""Which model files a command works on: files as named, directories searched for ``*.onnx``.

A directory is searched recursively; what its config's ``exclude`` names is skipped, and so are
version-control and virtual-environment folders (``DEFAULT_EXCLUDE``). Inside a git repository
the files git ignores (``.gitignore``, ``.git/info/exclude``, the global excludes) are skipped too:
the list comes from ``git ls-files --cached --others --exclude-standard``. A file named on the
command line is used as named (so is a directory named ``*.onnx``, reported as not a regular
file, SF001), unless ``force_exclude`` (``--force-exclude``, as ruff's): then ``exclude`` and the
default excluded folders apply to it too. pre-commit names every staged file (every tracked one
with ``--all-files``), so its hooks pass ``--force-exclude`` to check the files ``lint .`` checks.

Who excludes decides how much (docs/threat-model.md). The default folders and the command line's
``--exclude`` globs remove a file entirely. A settings file is the repository's, which a pull
request can write: a file its ``exclude`` covers is still found (``Found.excluded_by``), and lint
judges it for the codes that mean onnxruntime refuses the model, and nothing else.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from typing import Callable, Sequence

from .config import DEFAULT_EXCLUDE, Settings, glob_match, relative_to_root
from ..errors import UsageError

SUFFIX = ".onnx"


def _git_listing(directory: str) -> list[str] | None:
    """Files under ``directory`` that git does not ignore (absolute paths), or None when it is not
    inside a git work tree (or git is unavailable)."""
    git = shutil.which("git")
    if git is None:
        return None
    import subprocess  # (only for directories: start-up time of the one-file case)
    try:
        proc = subprocess.run([git, "-C", directory, "ls-files", "-z", "--cached", "--others",
                               "--exclude-standard", "--", "."], capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    names = [n for n in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if n]
    return [os.path.join(directory, n) for n in names]


@dataclass(frozen=True)
class Found:
    """A model file to work on. ``excluded_by``: the settings file whose ``exclude`` covers it
    (lint still judges it for refusals; optimize leaves it alone); None: not excluded."""

    path: str
    excluded_by: str | None = None


def _settings_excluded(path: str, settings: Settings) -> bool:
    rel = relative_to_root(path, settings.root or os.getcwd())
    return any(glob_match(rel, pattern) for pattern in settings.exclude)


def _absolutely_excluded(path: str, cli_exclude: Sequence[str], root: str | None = None) -> bool:
    """In a default excluded folder (below ``root``, the folder searched), or covered by a
    command-line ``--exclude`` glob (relative to the current directory)."""
    rel = relative_to_root(path, root or os.getcwd())
    return any(p in DEFAULT_EXCLUDE for p in rel.split("/")[:-1]) or _cli_excluded(path, cli_exclude)


def _cli_excluded(path: str, cli_exclude: Sequence[str]) -> bool:
    if not cli_exclude:
        return False
    here = relative_to_root(path, os.getcwd())
    return any(glob_match(here, pattern) for pattern in cli_exclude)


def _excluded(path: str, settings: Settings) -> bool:
    """Covered by the default folders or the settings' ``exclude`` (what optimize skips)."""
    return _absolutely_excluded(path, (), settings.root) or _settings_excluded(path, settings)


def _walk(directory: str, cli_exclude: Sequence[str]) -> list[str]:
    # Folders a settings file excludes are searched too: their models are still judged for
    # refusals (lint); only the default folders and the command line's globs are pruned.
    found: list[str] = []
    for here, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if d not in DEFAULT_EXCLUDE
                         and not _cli_excluded(os.path.join(here, d), cli_exclude))
        found.extend(os.path.join(here, f) for f in sorted(files) if f.endswith(SUFFIX))
    return found


def find_models(args: Sequence[str], settings_for: Callable[[str], Settings], *, use_git: bool = True,
                force_exclude: bool = False, cli_exclude: Sequence[str] = ()) -> tuple[list[Found], int]:
    """The model files named by ``args``, in order, each once, and how many named files
    ``--force-exclude`` dropped. Directories are expanded (sorted); a path that does not exist is
    kept (the command reports it as unreadable). A file in a default excluded folder or covered by
    ``cli_exclude`` is left out (a named one only with ``force_exclude``); a file the settings'
    ``exclude`` covers is kept with ``excluded_by`` set (a named one only with ``force_exclude``).
    Raises UsageError (exit 2, one line) when no model file was found at all: a glob that matched
    nothing must not pass CI."""
    out: list[Found] = []
    seen: set[str] = set()
    dropped = 0

    def add(p: str, settings: Settings, check: bool) -> None:
        key = os.path.normcase(os.path.abspath(p))
        if key not in seen:
            seen.add(key)
            by = settings.source if check and _settings_excluded(p, settings) else None
            out.append(Found(p, by))

    for arg in args:
        # a directory named like a model is taken as meant for one: reported as not a file (SF001)
        if not os.path.isdir(arg) or arg.rstrip("/" + os.sep).endswith(SUFFIX):
            shown = os.path.normpath(arg)
            settings = settings_for(arg)
            if force_exclude and _absolutely_excluded(shown, cli_exclude, settings.root):
                dropped += 1
            else:
                add(arg, settings, force_exclude)
            continue
        settings = settings_for(os.path.join(arg, "x" + SUFFIX))
        listing = _git_listing(arg) if use_git else None
        if listing is None:
            candidates = _walk(arg, cli_exclude)
        else:
            candidates = sorted((p for p in listing if p.endswith(SUFFIX) and os.path.isfile(p)),
                                key=lambda p: p.split(os.sep))
        for p in candidates:
            shown = os.path.normpath(p)
            if not _absolutely_excluded(shown, cli_exclude, settings.root):
                add(shown, settings, True)
    if not out and not dropped:
        named = " ".join(args) if args else ""
        raise UsageError(f"no model files found in {named}" if named else
                         "no model files given (name .onnx files or directories)")
    return out, dropped


def model_files(args: Sequence[str], settings_for: Callable[[str], Settings], *, use_git: bool = True,
                force_exclude: bool = False) -> list[str]:
    """The model files ``args`` name that no exclusion covers (``find_models``): what a command
    that writes (optimize) works on. Raises UsageError when none was found (files found and all
    dropped by ``--force-exclude`` give an empty list)."""
    found, dropped = find_models(args, settings_for, use_git=use_git, force_exclude=force_exclude)
    out = [f.path for f in found if f.excluded_by is None]
    if not out and not dropped and not any(f.path in args for f in found):  # (named, excluded: dropped)
        named = " ".join(args)
        raise UsageError(f"no model files found in {named}")
    return out
