"""Which model files a command works on: files as named, directories searched for ``*.onnx``.

A directory is searched recursively; what its config's ``exclude`` names is skipped, and so are
version-control and virtual-environment folders (``DEFAULT_EXCLUDE``). Inside a git repository
the files git ignores (``.gitignore``, ``.git/info/exclude``, the global excludes) are skipped too:
the list comes from ``git ls-files --cached --others --exclude-standard``. A file named on the
command line is used as named (so is a directory named ``*.onnx``, reported as not a regular
file, SF001), unless ``force_exclude`` (``--force-exclude``, as ruff's): then ``exclude`` and the
default excluded folders apply to it too. pre-commit names every staged file (every tracked one
with ``--all-files``), so its hooks pass ``--force-exclude`` to check the files ``lint .`` checks.
"""

from __future__ import annotations

import os
import shutil
from typing import Callable, Sequence

from .config import DEFAULT_EXCLUDE, Settings, glob_match, relative_to_root
from .errors import UsageError

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


def _excluded(path: str, settings: Settings) -> bool:
    rel = relative_to_root(path, settings.root or os.getcwd())
    parts = rel.split("/")
    if any(p in DEFAULT_EXCLUDE for p in parts[:-1]):
        return True
    return any(glob_match(rel, pattern) for pattern in settings.exclude)


def _walk(directory: str, settings: Settings) -> list[str]:
    found: list[str] = []
    for here, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if d not in DEFAULT_EXCLUDE
                         and not any(glob_match(relative_to_root(os.path.join(here, d), settings.root or os.getcwd()),
                                                p) for p in settings.exclude))
        found.extend(os.path.join(here, f) for f in sorted(files) if f.endswith(SUFFIX))
    return found


def model_files(args: Sequence[str], settings_for: Callable[[str], Settings], *, use_git: bool = True,
                force_exclude: bool = False) -> list[str]:
    """The model files named by ``args``, in order, each once. Directories are expanded (sorted);
    a path that does not exist is kept (the command reports it as unreadable). With
    ``force_exclude``, a named file that ``exclude`` covers is dropped too. Raises UsageError
    (exit 2, one line) when no model file was found at all: a glob that matched nothing must not
    pass CI; files found and all excluded give an empty list."""
    out: list[str] = []
    seen: set[str] = set()
    dropped = 0

    def add(p: str) -> None:
        key = os.path.normcase(os.path.abspath(p))
        if key not in seen:
            seen.add(key)
            out.append(p)

    for arg in args:
        # a directory named like a model is taken as meant for one: reported as not a file (SF001)
        if not os.path.isdir(arg) or arg.rstrip("/" + os.sep).endswith(SUFFIX):
            if force_exclude and _excluded(os.path.normpath(arg), settings_for(arg)):
                dropped += 1
            else:
                add(arg)
            continue
        settings = settings_for(os.path.join(arg, "x" + SUFFIX))
        listing = _git_listing(arg) if use_git else None
        if listing is None:
            candidates = _walk(arg, settings)
        else:
            candidates = sorted((p for p in listing if p.endswith(SUFFIX) and os.path.isfile(p)),
                                key=lambda p: p.split(os.sep))
        for p in candidates:
            shown = os.path.normpath(p)
            if not _excluded(shown, settings):
                add(shown)
    if not out and not dropped:
        named = " ".join(args) if args else ""
        raise UsageError(f"no model files found in {named}" if named else
                         "no model files given (name .onnx files or directories)")
    return out
