"""Fleets (issue 15): the lint cache, ``--files-from``, ``--format jsonl`` and ``shapeflow clean``.

The cache is judged against fresh runs: every format's stdout, stderr and exit code must be the
same bytes with no cache, a cold one and a warm one. That a warm run really reads the cache is
shown by planting a valid entry with a changed message: it shows up exactly when the entry must
be trusted (same bytes, settings and version) and never otherwise.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import cli_process
import onnx
import pytest

import shapeflow
from helpers import read_cache_entry, write_cache_entry
from lint_fixtures import FIXTURES, external_data_model
from model_builders import bert_like, squeeze_unsqueeze_chain
from shapeflow import _version
from shapeflow.drivers.cache import CACHE_DIR_NAME, LintCache, default_cache_dir, settings_digest
from shapeflow.cli.lint_cmd import _JsonLines, jsonl_line
from shapeflow.drivers.executors import Task, run_task
from shapeflow.diagnostics import Severity
from shapeflow.drivers.linter import FileResult, Linter, LintOptions

ROOT = Path(__file__).resolve().parent.parent
BAD = ("sf003_unsorted", "sf101_axes_out_of_range", "sf104_squeeze_non_unit_dim", "sf105_squeeze_symbolic_dim")
FORMATS = ("text", "concise", "json", "jsonl", "sarif", "github")


@functools.lru_cache(maxsize=None)
def _bert() -> bytes:
    return bert_like(13).SerializeToString()


def make_corpus(folder: Path) -> list[str]:
    """Good models, models with findings, and hostile files (truncated, not a model, missing)."""
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    good = _bert()
    for name, data in (("good_bert.onnx", good), ("good_chain.onnx", squeeze_unsqueeze_chain(40).SerializeToString()),
                       ("truncated.onnx", good[: len(good) // 3]), ("not_a_model.onnx", b"\x08\x07hello, world\n")):
        (folder / name).write_bytes(data)
        names.append(name)
    for f in FIXTURES:
        if f.id in BAD:
            onnx.save(f.model(), str(folder / f"{f.id}.onnx"))
            names.append(f"{f.id}.onnx")
    names.append("missing.onnx")
    return names


def lint_cli(cwd: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("SHAPEFLOW_DEBUG", None)
    return cli_process.shapeflow("lint", *args, cwd=cwd, env=env, input=stdin, timeout=120)


def entries(cache: Path) -> list[Path]:
    return sorted(cache.rglob("*.json"))


def same(a: subprocess.CompletedProcess[str], b: subprocess.CompletedProcess[str]) -> None:
    assert (a.returncode, a.stdout, a.stderr) == (b.returncode, b.stdout, b.stderr)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    folder = tmp_path_factory.mktemp("fleet")
    return folder, make_corpus(folder)


@pytest.mark.parametrize("fmt", FORMATS)
def test_cached_output_is_byte_identical_in_every_format(corpus: tuple[Path, list[str]], tmp_path: Path,
                                                         fmt: str) -> None:
    folder, names = corpus
    args = ["--select", "SF", "--format", fmt, *names]
    fresh = lint_cli(folder, "--no-cache", *args)
    assert fresh.returncode == 2 and fresh.stdout  # findings and rejected files: a real mix
    cache = tmp_path / "c"
    cold = lint_cli(folder, "--cache-dir", str(cache), *args)
    stored = entries(cache)
    # every model is stored; files refused before their bytes are read (missing, or a protobuf the
    # preflight rejects) are not: there is nothing to hash
    assert len(stored) >= len(names) - 3
    warm = lint_cli(folder, "--cache-dir", str(cache), *args)
    same(fresh, cold)
    same(fresh, warm)
    assert entries(cache) == stored


def _plant(cache: Path, marker: str) -> int:
    """Rewrite every entry's messages to ``marker`` (still valid entries, signed with this user's
    key as shapeflow signs them); how many findings."""
    n = 0
    for e in entries(cache):
        doc = read_cache_entry(e)
        for d in doc["result"]["diagnostics"]:
            d[3] = marker
            n += 1
        write_cache_entry(e, doc)
    return n


def _run_planted(folder: Path, cache: Path, *args: str) -> str:
    return lint_cli(folder, "--cache-dir", str(cache), "--format", "json", *args).stdout


def test_a_warm_run_reads_the_cache_and_renders_the_current_path(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    make_corpus(folder)
    cache = tmp_path / "c"
    lint_cli(folder, "--cache-dir", str(cache), "--select", "SF", "sf104_squeeze_non_unit_dim.onnx")
    assert _plant(cache, "PLANTED") > 0
    out = json.loads(_run_planted(folder, cache, "--select", "SF", "sf104_squeeze_non_unit_dim.onnx"))
    assert {d["message"] for d in out["diagnostics"]} == {"PLANTED"}
    # the same bytes under another name hit, and are reported under that name
    (folder / "copy.onnx").write_bytes((folder / "sf104_squeeze_non_unit_dim.onnx").read_bytes())
    out = json.loads(_run_planted(folder, cache, "--select", "SF", "copy.onnx"))
    assert {d["message"] for d in out["diagnostics"]} == {"PLANTED"}
    assert {d["file"] for d in out["diagnostics"]} == {"copy.onnx"}


SF104 = "sf104_squeeze_non_unit_dim.onnx"


def _lint_cached(path: str, options: LintOptions, cache: Path) -> FileResult:
    return run_task(Task(path, options, LintCache(str(cache))))


def _view(r: FileResult) -> tuple[object, ...]:
    """Everything of a result that output or a baseline uses."""
    return (r.to_json(), r.anchors, r.assumptions, r.notes)


@pytest.mark.parametrize("change", ["content", "select", "severity", "dim", "exit-zero", "limits"])
def test_the_cache_is_invalidated_by_content_and_settings(tmp_path: Path, change: str) -> None:
    folder = tmp_path / "m"
    make_corpus(folder)
    cache = tmp_path / "c"
    path = str(folder / SF104)
    options = LintOptions(select=("SF104", "SF105"), ignore=())
    _lint_cached(path, options, cache)
    _plant(cache, "PLANTED")
    assert {d.message for d in _lint_cached(path, options, cache).diagnostics} == {"PLANTED"}
    if change == "content":
        model = onnx.load(path)
        model.doc_string = "edited"
        onnx.save(model, path)
    elif change == "select":
        options = replace(options, select=("SF104",))
    elif change == "severity":
        options = replace(options, severity=(("SF104", Severity.WARNING),))
    elif change == "dim":
        options = replace(options, dims=(("batch", 2),))
    elif change == "exit-zero":
        options = replace(options, exit_zero=True)
    else:
        options = replace(options, limits=shapeflow.Limits(max_nodes=1000))
    got = _lint_cached(path, options, cache)
    assert got.diagnostics and "PLANTED" not in {d.message for d in got.diagnostics}
    assert _view(got) == _view(Linter(options).run(path))


def test_the_cache_is_invalidated_by_the_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "m"
    make_corpus(folder)
    path = str(folder / SF104)
    options = LintOptions()
    first = _lint_cached(path, options, tmp_path / "c")
    _plant(tmp_path / "c", "PLANTED")
    assert {d.message for d in _lint_cached(path, options, tmp_path / "c").diagnostics} == {"PLANTED"}
    monkeypatch.setattr(_version, "__version__", "999.0.0")
    other = _lint_cached(path, options, tmp_path / "c")
    assert _view(other) == _view(first)  # a miss: linted afresh


DAMAGES = ["truncated", "garbage", "empty", "wrong-version", "wrong-key", "wrong-shape", "bad-severity",
           "bad-exit-code", "not-an-object"]


def _damaged(entry: bytes, damage: str) -> bytes:
    """The body of ``entry`` damaged (the caller signs it: the record's own checks are tested)."""
    text = entry.partition(b"\n")[2]
    doc = json.loads(text)
    doc["result"]["diagnostics"] = [[*d[:3], "PLANTED", *d[4:]] for d in doc["result"]["diagnostics"]]
    if damage == "truncated":
        return text[: len(text) // 2]
    if damage == "garbage":
        return os.urandom(200)
    if damage == "empty":
        return b""
    if damage == "wrong-version":
        return json.dumps({**doc, "version": "0.0.1"}).encode()
    if damage == "wrong-key":
        return json.dumps({**doc, "key": "0" * 64}).encode()
    if damage == "wrong-shape":
        return json.dumps({**doc, "result": {"diagnostics": "nope"}}).encode()
    if damage == "bad-severity":
        doc["result"]["diagnostics"] = [[*d[:2], "fatal", *d[3:]] for d in doc["result"]["diagnostics"]]
        return json.dumps(doc).encode()
    if damage == "not-an-object":
        return b"[1, 2, 3]"
    return json.dumps({**doc, "result": {**doc["result"], "exit_code": 7}}).encode()


def test_a_corrupt_or_foreign_entry_is_ignored_and_rewritten(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    make_corpus(folder)
    cache = tmp_path / "c"
    paths = [str(folder / n) for n in (SF104, "sf101_axes_out_of_range.onnx", "good_chain.onnx")]
    options = LintOptions(select=("SF1", "SF2"))
    fresh = [_view(Linter(options).run(p)) for p in paths]
    assert [_view(_lint_cached(p, options, cache)) for p in paths] == fresh
    stored = entries(cache)
    assert len(stored) == 3
    originals = {e: e.read_bytes() for e in stored}
    for damage in DAMAGES:
        for e in stored:
            write_cache_entry(e, _damaged(originals[e], damage))
        assert [_view(_lint_cached(p, options, cache)) for p in paths] == fresh, damage
        # each entry was rewritten with the fresh result, and nothing half-written is left
        assert {e: e.read_bytes() for e in entries(cache)} == originals, damage
    assert not [p for p in cache.rglob("*") if p.name.startswith(".tmp-")]


def test_a_corrupt_entry_does_not_change_the_command_output(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    make_corpus(folder)
    cache = tmp_path / "c"
    args = ["--select", "SF", "--format", "sarif", SF104, "good_chain.onnx"]
    fresh = lint_cli(folder, "--no-cache", *args)
    lint_cli(folder, "--cache-dir", str(cache), *args)
    for k, e in enumerate(entries(cache)):
        write_cache_entry(e, _damaged(e.read_bytes(), DAMAGES[k]))
    same(fresh, lint_cli(folder, "--cache-dir", str(cache), *args))


def test_cache_folder_location_tag_and_clean(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    sub = project / "models"
    make_corpus(sub)
    (project / ".git").mkdir()  # a repository: its settings apply below (outside one, only up to the cwd)
    (project / "pyproject.toml").write_text("[tool.shapeflow]\nignore = ['SF003']\n")
    lint_cli(sub, "-q", "good_chain.onnx")
    cache = project / CACHE_DIR_NAME  # next to the nearest config, not in the current directory
    assert default_cache_dir(start=str(sub)) == str(cache)
    assert not (sub / CACHE_DIR_NAME).exists()
    assert len(entries(cache)) == 1
    assert (cache / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert (cache / ".gitignore").read_text().splitlines()[-1] == "*"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = cli_process.shapeflow("clean", cwd=sub, env=env)
    assert done.returncode == 0 and not cache.exists() and "removed" in done.stderr
    # a folder that is not a cache is never removed
    (tmp_path / "precious").mkdir()
    (tmp_path / "precious" / "data.txt").write_text("keep")
    (tmp_path / "precious" / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n# other tool\n")
    refused = cli_process.shapeflow("clean", "--cache-dir", str(tmp_path / "precious"), cwd=sub, env=env)
    assert refused.returncode == 2 and "not a shapeflow cache" in refused.stderr
    assert (tmp_path / "precious" / "data.txt").read_text() == "keep"


def test_a_baseline_hides_the_same_findings_from_the_cache(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    names = make_corpus(folder)
    baseline = str(tmp_path / "baseline.json")
    assert lint_cli(folder, "--no-cache", "--write-baseline", baseline, *names[:6]).returncode == 2
    args = ["--baseline", baseline, "--format", "json", *names]
    fresh = lint_cli(folder, "--no-cache", *args)
    assert "in the baseline" in fresh.stderr
    cache = ["--cache-dir", str(tmp_path / "c")]
    same(fresh, lint_cli(folder, *cache, *args))
    same(fresh, lint_cli(folder, *cache, *args))


def test_a_planted_fifo_in_the_cache_is_a_miss(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    make_corpus(folder)
    path = str(folder / "good_chain.onnx")
    options = LintOptions()
    first = run_task(Task(path, options, LintCache(str(tmp_path / "c"))))
    (entry,) = entries(tmp_path / "c")
    entry.unlink()
    os.mkfifo(entry)
    again = run_task(Task(path, options, LintCache(str(tmp_path / "c"))))  # neither hangs nor fails
    assert again.to_json() == first.to_json()


def test_a_model_with_external_data_is_not_cached(tmp_path: Path) -> None:
    """Its findings depend on the files beside it (a data file that appears or goes), not only
    on its bytes."""
    folder = tmp_path / "m"
    folder.mkdir()
    path = folder / "ext.onnx"
    onnx.save(external_data_model(str(folder)), str(path))
    first = run_task(Task(str(path), LintOptions(), LintCache(str(tmp_path / "c"))))
    assert first.external and not first.rejected
    assert not entries(tmp_path / "c")


def test_ray_options_need_the_ray_executor(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    make_corpus(folder)
    for args, said in ((["--task-timeout", "5"], "--task-timeout needs --executor ray"),
                       (["--ray-address", "auto"], "--ray-address needs --executor ray"),
                       (["--executor", "ray", "--fix"], "--fix writes models in place")):
        run = lint_cli(folder, *args, "good_chain.onnx")
        assert run.returncode == 2 and said in run.stderr and run.stdout == "", run.stderr


def test_the_config_can_name_the_cache_folder(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    make_corpus(project / "models")
    (project / ".git").mkdir()  # a repository: its settings apply below (outside one, only up to the cwd)
    (project / "shapeflow.toml").write_text('cache-dir = "build/lint-cache"\n')
    lint_cli(project / "models", "-q", "good_chain.onnx")
    assert len(entries(project / "build" / "lint-cache")) == 1
    assert not (project / CACHE_DIR_NAME).exists()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = cli_process.shapeflow("clean", cwd=project / "models", env=env)
    assert done.returncode == 0 and not (project / "build" / "lint-cache").exists()
    (project / "shapeflow.toml").write_text("cache-dir = 3\n")
    bad = lint_cli(project / "models", "good_chain.onnx")
    assert bad.returncode == 2 and "cache-dir must be a folder name" in bad.stderr


def test_no_cache_writes_nothing_and_fix_bypasses_the_cache(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    make_corpus(folder)
    lint_cli(folder, "--no-cache", "good_chain.onnx")
    assert not (folder / CACHE_DIR_NAME).exists()
    lint_cli(folder, "--fix", "--diff", "good_chain.onnx")
    assert not entries(folder / CACHE_DIR_NAME)


def test_settings_digest_covers_what_changes_a_result() -> None:
    base = LintOptions()
    variants = [LintOptions(select=("SF104",)), LintOptions(ignore=("SF",)), LintOptions(exit_zero=True),
                LintOptions(dims=(("batch", 2),)), LintOptions(assume=(("seq", (3, None)),)),
                LintOptions(limits=shapeflow.Limits(max_nodes=10)), LintOptions(fix=True)]
    digests = {settings_digest(v) for v in variants}
    assert settings_digest(base) not in digests and len(digests) == len(variants)
    # neither the progress callback nor the repository root changes a result
    assert settings_digest(LintOptions(progress=lambda a, b: None, repo_root="/x")) == settings_digest(base)


def test_files_from_stdin_and_file_combine_with_positional_paths(corpus: tuple[Path, list[str]],
                                                                 tmp_path: Path) -> None:
    folder, names = corpus
    listing = tmp_path / "list.txt"
    listing.write_text("\n".join(names[2:5]) + "\n\n")
    direct = lint_cli(folder, "--no-cache", "--format", "json", *names)
    mixed = lint_cli(folder, "--no-cache", "--format", "json", names[0], "--files-from", "-",
                     "--files-from", str(listing), *names[5:], stdin="\n".join(names[1:2]) + "\r\n")
    # positional paths first, then each --files-from in turn
    reordered = lint_cli(folder, "--no-cache", "--format", "json", names[0], *names[5:], *names[1:5])
    same(mixed, reordered)
    assert json.loads(direct.stdout)["files"] == json.loads(mixed.stdout)["files"] == len(names)
    missing = lint_cli(folder, "--files-from", str(tmp_path / "nope.txt"))
    assert missing.returncode == 2 and "--files-from" in missing.stderr and "Traceback" not in missing.stderr


def test_jsonl_lines_are_the_per_file_objects_in_input_order(corpus: tuple[Path, list[str]]) -> None:
    folder, names = corpus
    order = list(reversed(names))
    run = lint_cli(folder, "--no-cache", "--select", "SF", "--format", "jsonl", "-j", "2", *order)
    report = json.loads(lint_cli(folder, "--no-cache", "--select", "SF", "--format", "json", *order).stdout)
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    assert [d["path"] for d in lines] == order
    assert [d for line in lines for d in line["diagnostics"]] == report["diagnostics"]
    assert {line["path"]: line["exit_code"] for line in lines}["missing.onnx"] == 2
    assert run.returncode == 2 and "files" in run.stderr  # the summary line as for every format
    results = shapeflow.lint([str(folder / n) for n in order if n != "missing.onnx"], select=["SF"])
    assert [jsonl_line(r) for r in results] == [json.dumps(r.to_json()) for r in results]
    unordered = lint_cli(folder, "--no-cache", "--select", "SF", "--format", "jsonl", "--unordered", "-j", "2", *order)
    assert sorted(unordered.stdout.splitlines()) == sorted(run.stdout.splitlines())
    assert unordered.returncode == run.returncode
    assert lint_cli(folder, "--unordered", *order).returncode == 2  # only with jsonl


def test_jsonl_lines_reach_a_pipe_while_later_files_are_linted(tmp_path: Path) -> None:
    """Each line is flushed when written: a reader of the pipe has the first file's line while the
    command is still busy with a large second file."""
    (tmp_path / "small.onnx").write_bytes(squeeze_unsqueeze_chain(20).SerializeToString())
    (tmp_path / "large.onnx").write_bytes(squeeze_unsqueeze_chain(60000).SerializeToString())
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "shapeflow", "lint", "--no-cache", "--format", "jsonl",
                             "small.onnx", "large.onnx"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    still_running = proc.poll() is None
    rest = proc.stdout.read()
    proc.wait(timeout=120)
    assert json.loads(first)["path"] == "small.onnx"
    assert still_running
    assert [json.loads(line)["path"] for line in rest.splitlines()] == ["large.onnx"]


def test_jsonl_writer_buffers_out_of_order_completions(capsys: pytest.CaptureFixture[str]) -> None:
    results = [FileResult(f"m{k}.onnx", exit_code=k % 2) for k in range(4)]
    ordered = _JsonLines(unordered=False)
    seen = []
    for k in (2, 0, 3, 1):
        ordered.add(k, results[k])
        seen.append([json.loads(line)["path"] for line in capsys.readouterr().out.splitlines()])
    # each line goes as soon as every earlier file is done, not at the end
    assert seen == [[], ["m0.onnx"], [], ["m1.onnx", "m2.onnx", "m3.onnx"]]
    unordered = _JsonLines(unordered=True)
    for k in (2, 0, 3, 1):
        unordered.add(k, results[k])
    assert [json.loads(line)["path"] for line in capsys.readouterr().out.splitlines()] == \
        ["m2.onnx", "m0.onnx", "m3.onnx", "m1.onnx"]


def test_urls_are_read_through_fsspec(tmp_path: Path) -> None:
    fsspec = pytest.importorskip("fsspec")
    folder = tmp_path / "m"
    make_corpus(folder)
    name = "sf104_squeeze_non_unit_dim.onnx"
    local = shapeflow.lint(str(folder / name), select=["SF"])[0]
    url = (folder / name).as_uri()
    by_url = shapeflow.lint(url, select=["SF"])[0]
    assert by_url.path == url and by_url.exit_code == local.exit_code == 1
    assert [(d.code, d.message) for d in by_url.diagnostics] == [(d.code, d.message) for d in local.diagnostics]
    with fsspec.open("memory://fleet/m.onnx", "wb") as f:
        f.write((folder / name).read_bytes())
    in_memory = shapeflow.lint("memory://fleet/m.onnx", select=["SF"], cache=tmp_path / "c")[0]
    assert [d.code for d in in_memory.diagnostics] == [d.code for d in local.diagnostics]
    gone = shapeflow.lint("memory://fleet/absent.onnx")[0]
    assert gone.rejected and gone.exit_code == 2 and "no such file" in gone.diagnostics[0].message


def test_unknown_executor_is_a_usage_error(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    make_corpus(folder)
    with pytest.raises(shapeflow.ShapeflowError) as info:
        shapeflow.lint(str(folder / "good_chain.onnx"), executor="dask")
    assert info.value.exit_code == 2
