"""What a fleet lint reads that a pull request can write: cache entries of the right shape but
wrong types are misses, not trusted; ``--files-from`` splits only at line ends; the cache key
changes with onnx's version. (Found by a red team, issue 15.)"""

from __future__ import annotations

import json
import os
from pathlib import Path

import cli_process
import onnx
import pytest

from helpers import read_cache_entry, write_cache_entry
from lint_fixtures import FIXTURES
from shapeflow.drivers.cache import LintCache
from shapeflow.drivers.executors import Task, run_task
from shapeflow.drivers.linter import Linter, LintOptions

ROOT = Path(__file__).resolve().parent.parent
SF105 = next(f for f in FIXTURES if f.id == "sf105_squeeze_symbolic_dim")


def _view(r: object) -> tuple[object, ...]:
    return (r.to_json(), r.anchors, r.assumptions, r.notes, r.rejected)  # type: ignore[attr-defined]


# (what is damaged, how): each keeps the entry valid JSON with the same key, version and format
DAMAGES = (
    ("notes a string", lambda res: res.__setitem__("notes", "abc")),
    ("notes not strings", lambda res: res.__setitem__("notes", [1, [2]])),
    ("assumptions a string", lambda res: res.__setitem__("assumptions", "xy")),
    ("assumptions not strings", lambda res: res.__setitem__("assumptions", [3])),
    ("rejected true", lambda res: res.__setitem__("rejected", True)),
    ("rejected a string", lambda res: res.__setitem__("rejected", "no")),
    ("exit code 2", lambda res: res.__setitem__("exit_code", 2)),
    ("fixable a string", lambda res: res["diagnostics"][0].__setitem__(5, "false")),
    ("anchors a string", lambda res: res.__setitem__("anchors", ["abc"])),
    ("anchor not strings", lambda res: res.__setitem__("anchors", [[1, 2, 3]])),
)


@pytest.mark.parametrize("what,damage", DAMAGES, ids=[d[0] for d in DAMAGES])
def test_a_well_formed_entry_with_wrong_types_is_a_miss(tmp_path: Path, what: str, damage: object) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(SF105.model(), str(path))
    options = LintOptions()
    fresh = _view(Linter(options).run(str(path)))
    cache = tmp_path / "c"
    assert _view(run_task(Task(str(path), options, LintCache(str(cache))))) == fresh
    (entry,) = sorted(cache.rglob("*.json"))
    doc = read_cache_entry(entry)
    assert doc["result"]["diagnostics"], "the fixture has a finding"
    damage(doc["result"])  # type: ignore[operator]
    write_cache_entry(entry, doc)  # signed as this user's shapeflow signs: the record's checks decide
    assert _view(run_task(Task(str(path), options, LintCache(str(cache))))) == fresh, what


def test_files_from_splits_only_at_line_ends(tmp_path: Path) -> None:
    """A path may hold characters that ``str.splitlines`` splits at (form feed, U+2028); a list
    file with CRLF ends and blank lines still lists each path once."""
    names = ["a\x0cb.onnx", "c\u2028d.onnx", "plain.onnx"]
    for n in names:
        onnx.save(SF105.model(), str(tmp_path / n))
    (tmp_path / "list.txt").write_bytes("\r\n".join([*names, "", ""]).encode("utf-8"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = cli_process.shapeflow("lint", "--no-cache", "--format", "jsonl", "--files-from", "list.txt",
                                 cwd=tmp_path, env=env, timeout=60)
    paths = [json.loads(line)["path"] for line in done.stdout.splitlines() if line.strip()]
    assert paths == names, done.stderr
    assert done.returncode == 0, done.stderr


def test_the_cache_key_changes_with_the_onnx_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import onnx as real_onnx

    before = LintCache(str(tmp_path)).key(b"model", "settings")
    monkeypatch.setattr(real_onnx, "__version__", real_onnx.__version__ + ".post1")
    assert LintCache(str(tmp_path)).key(b"model", "settings") != before
