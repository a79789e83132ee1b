"""Issue 20: the verdict cannot be forged, and nothing is destroyed (docs/threat-model.md).

Each test is one finding of the red team, run the way it was found: a repository's files (config,
baseline, cache entries) and the model's own markers try to lower the verdict, to make shapeflow
read or write outside the project, or to hang or exhaust it. Hostile files live in private
temporary folders only; no test opens a real device (a link to /dev/zero is refused by ``stat``
before any open).
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import cli_process
import onnx
import pytest
from onnx import helper, parser

from helpers import read_cache_entry, write_cache_entry
from lint_fixtures import FIXTURES
from shapeflow import codes
from shapeflow.cli import main

ROOT = Path(__file__).resolve().parent.parent


# -- models -----------------------------------------------------------------------------------------

def refused_model() -> onnx.ModelProto:
    """A Concat with two ``axis`` attributes: SF009 duplicate-attribute, which onnxruntime refuses
    to load (test_refusal_codes_are_what_onnxruntime_refuses)."""
    m = parser.parse_model("""
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] x) => (float[?, ?] y)
{
    [cat] y = Concat <axis = 0> (x, x)
}
""")
    dup = helper.make_attribute("axis", 1)
    m.graph.node[0].attribute.append(dup)
    return m


SF104_TEXT = """
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3, 1] x) => (float[?, ?] y) <int64[2] ax = {1, 2}>
{
    [sq] y = Squeeze (x, ax)
}
"""


def sf104_model() -> onnx.ModelProto:
    """A Squeeze of a dim of 3: SF104, an error that is not a refusal code."""
    return parser.parse_model(SF104_TEXT)


def with_model_marker(m: onnx.ModelProto, value: str) -> onnx.ModelProto:
    entry = m.metadata_props.add()
    entry.key, entry.value = "shapeflow.ignore", value
    return m


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def cli(cwd: Path, *args: str, timeout: float = 120, **kw: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("SHAPEFLOW_DEBUG", None)
    return cli_process.shapeflow(*args, cwd=cwd, env=env, timeout=timeout, **kw)  # type: ignore[arg-type]


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err and len(lines) <= 2, err  # the message, and lint's summary line
    return lines[0]


def snapshot(folder: Path) -> dict[str, tuple[int, bytes | str]]:
    """Every entry under ``folder`` (links not followed): what a run must not change."""
    out: dict[str, tuple[int, bytes | str]] = {}
    for here, dirs, files in os.walk(folder):
        for name in dirs + files:
            p = os.path.join(here, name)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[p] = (st.st_mode, os.readlink(p))
            elif stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    out[p] = (st.st_mode, f.read())
            else:
                out[p] = (st.st_mode, b"")
    return out


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tmp/outside (a bystander folder with a file) and tmp/repo (a repository: ``.git``), the
    current directory, holding bad.onnx (SF009, refused by onnxruntime) and sf104.onnx."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep me")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    onnx.save(refused_model(), str(repo / "bad.onnx"))
    onnx.save(sf104_model(), str(repo / "sf104.onnx"))
    monkeypatch.chdir(repo)
    return repo


# -- 1. nothing is destroyed -------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["..", "../outside", "<absolute>", ".", ".git/cache", "sub/../.."])
def test_a_config_cache_dir_outside_the_project_is_refused(project: Path, capsys: pytest.CaptureFixture[str],
                                                           value: str) -> None:
    # (only folders of this test's own: a version with the bug would tag them and remove them)
    value = str(project.parent / "outside") if value == "<absolute>" else value
    (project / "shapeflow.toml").write_text(f"cache-dir = {json.dumps(value)}\n")
    before = snapshot(project.parent)
    for args in (("lint", "sf104.onnx"), ("clean",)):
        code, out, err = run(capsys, *args)
        assert code == 2 and out == "", err
        line = one_line(err)
        assert "shapeflow.toml" in line and "cache-dir" in line, line
    assert snapshot(project.parent) == before  # no tag, no .gitignore of *, nothing removed


def test_cache_dir_from_the_command_line_may_be_anywhere(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    elsewhere = project.parent / "outside" / "cache"
    code, _, _ = run(capsys, "lint", "--cache-dir", str(elsewhere), "sf104.onnx")
    assert code == 1 and list(elsewhere.rglob("*.json"))
    code, _, err = run(capsys, "clean", "--cache-dir", str(elsewhere))
    assert code == 0 and not elsewhere.exists() and (project.parent / "outside" / "precious.txt").exists(), err


def test_a_symlinked_cache_folder_is_not_followed(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outside = project.parent / "outside"
    os.symlink(outside, project / ".shapeflow_cache")
    before = snapshot(outside)
    code, out, _ = run(capsys, "lint", "sf104.onnx")
    assert code == 1 and "SF104" in out  # linted, without a cache
    assert snapshot(outside) == before
    code, _, err = run(capsys, "clean")
    assert code == 2 and "not followed" in one_line(err)
    assert snapshot(outside) == before and os.path.islink(project / ".shapeflow_cache")


def test_a_link_planted_inside_the_cache_is_not_followed(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outside = project.parent / "outside"
    run(capsys, "lint", "sf104.onnx")
    cache = project / ".shapeflow_cache"
    (entry,) = cache.rglob("*.json")
    shard = entry.parent
    for p in shard.iterdir():
        p.unlink()
    shard.rmdir()
    os.symlink(outside, shard)  # lint-v2/xx -> outside: a write would land there
    layout = shard.parent
    os.symlink(outside / "precious.txt", layout / "zz")
    before = snapshot(outside)
    code, _, _ = run(capsys, "lint", "sf104.onnx")
    assert code == 1
    code, _, err = run(capsys, "clean")
    assert code == 0, err
    assert snapshot(outside) == before
    assert "did not write" in err and os.path.islink(shard)  # a name it did not write is left


def test_clean_removes_only_what_shapeflow_wrote(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "lint", "sf104.onnx", "bad.onnx")
    cache = project / ".shapeflow_cache"
    entries = list(cache.rglob("*.json"))
    assert entries
    (cache / "notes.txt").write_text("mine")
    (cache / "lint-v2" / "00").mkdir(exist_ok=True)
    (cache / "lint-v2" / "00" / "data.bin").write_bytes(b"mine too")
    (cache / "lint-v2" / "00" / ("0" * 64 + ".json")).mkdir()  # named like an entry, but a folder
    code, _, err = run(capsys, "clean")
    assert code == 0, err
    assert not any(e.exists() for e in entries)
    assert (cache / "notes.txt").read_text() == "mine"
    assert (cache / "lint-v2" / "00" / "data.bin").read_bytes() == b"mine too"
    assert (cache / "lint-v2" / "00" / ("0" * 64 + ".json")).is_dir()
    assert "kept" in err
    # what shapeflow made and is now empty goes; nothing else does
    (cache / "notes.txt").unlink()
    (cache / "lint-v2" / "00" / "data.bin").unlink()
    (cache / "lint-v2" / "00" / ("0" * 64 + ".json")).rmdir()
    code, _, err = run(capsys, "clean")
    assert code == 0 and not cache.exists(), err


def test_a_folder_that_is_not_a_cache_is_never_used_or_cleaned(project: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    src = project / "src"
    src.mkdir()
    (src / "code.py").write_text("x = 1\n")
    (project / "shapeflow.toml").write_text('cache-dir = "src"\n')
    before = snapshot(src)
    code, _, _ = run(capsys, "lint", "sf104.onnx")
    assert code == 1 and snapshot(src) == before  # neither tagged nor written: not shapeflow's
    code, _, err = run(capsys, "clean")
    assert code == 2 and "not a shapeflow cache" in err and snapshot(src) == before


# -- 2. the model cannot vouch for itself -------------------------------------------------------------

def _rejected_models() -> dict[str, bytes]:
    """SF001 and SF002 (files rejected before any rule runs)."""
    undefined = parser.parse_model("""
<ir_version: 8, opset_import: ["" : 13]>
g (float[2] x) => (float[2] y)
{
    y = Add (x, GHOST)
}
""")
    return {"SF001": b"\x08\x07not a model", "SF002": undefined.SerializeToString()}


REFUSALS = sorted(c.code for c in codes.ALL_CODES if getattr(c, "refusal", False))


def test_the_refusal_codes() -> None:
    """The codes of findings that mean onnxruntime refuses the model (each checked below); more may
    be added, none of these may go."""
    assert set(REFUSALS) >= {"SF001", "SF002", "SF004", "SF005", "SF009", "SF010", "SF011", "SF012", "SF013",
                             "SF014", "SF015", "SF016", "SF017", "SF018", "SF108", "SF116", "SF117", "SF118",
                             "SF119", "SF120"}
    assert set(REFUSALS) == set(codes.REFUSAL_CODES)
    assert all(codes.BY_CODE[c].severity.value == "error" for c in REFUSALS)


@pytest.mark.parametrize("code", REFUSALS)
def test_refusal_codes_are_what_onnxruntime_refuses(code: str, tmp_path: Path) -> None:
    """``Code.refusal`` is true only of codes whose findings onnxruntime refuses to load: every
    finding of the code's fixture, alone in its model, fails ``InferenceSession``."""
    ort = pytest.importorskip("onnxruntime")
    from shapeflow.drivers.linter import LintOptions, lint_file

    so = ort.SessionOptions()
    so.log_severity_level = 4
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    models: list[bytes] = []
    if code in _rejected_models():
        models.append(_rejected_models()[code])
    for f in FIXTURES:
        if f.code != code:
            continue
        for place in sorted({p for c, p in f.expected if c == code and p}):
            m = _only_finding(f.model(), {p for c, p in f.expected if c == code and p} - {place})
            path = tmp_path / "m.onnx"
            path.write_bytes(m.SerializeToString())
            found = {(d.code, d.location.node or d.location.tensor, d.severity.value)
                     for d in lint_file(str(path), LintOptions()).diagnostics}
            if (code, place, "error") in found:  # a tensor's finding (SF016, SF017): no node to drop, the fixture whole
                models.append(m.SerializeToString())
    if not models:  # findings about the file or a function, with no place (SF005, SF018): the fixture whole
        for f in FIXTURES:
            if f.code == code:
                path = tmp_path / "m.onnx"
                path.write_bytes(f.model().SerializeToString())
                if any(d.code == code and d.severity.value == "error"
                       for d in lint_file(str(path), LintOptions()).diagnostics):
                    models.append(f.model().SerializeToString())
    assert models, f"no model with an error-level {code} finding to check"
    for data in models:
        with pytest.raises(Exception):
            ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])


def _only_finding(m: onnx.ModelProto, drop: set[str]) -> onnx.ModelProto:
    """``m`` without the nodes in ``drop``, and what then reads nothing (graph outputs included)."""
    out = onnx.ModelProto()
    out.CopyFrom(m)
    g = out.graph
    keep = [n for n in g.node if n.name not in drop]
    while True:
        defined = {i.name for i in g.input} | {t.name for t in g.initializer} | {o for n in keep for o in n.output}
        kept = [n for n in keep if all(not i or i in defined for i in n.input)]
        if len(kept) == len(keep):
            break
        keep = kept
    del g.node[:]
    g.node.extend(keep)
    defined = {i.name for i in g.input} | {t.name for t in g.initializer} | {o for n in keep for o in n.output}
    outputs = [o for o in g.output if o.name in defined]
    del g.output[:]
    g.output.extend(outputs)
    return out


MARKERS = ["SF009", "SF0", "SF00", "SF", "sf", "S", "duplicate-attribute", "SF0,SF1,SF2", " SF009 ",
           "SF1,SF009"]


@pytest.mark.parametrize("where", ["model", "node-metadata", "doc-string"])
@pytest.mark.parametrize("isolated", [False, True])
def test_a_model_cannot_suppress_what_onnxruntime_refuses(project: Path, capsys: pytest.CaptureFixture[str],
                                                          where: str, isolated: bool) -> None:
    for value in MARKERS:
        m = refused_model()
        if where == "model":
            with_model_marker(m, value)
        elif where == "node-metadata":
            m.ir_version = 10
            e = m.graph.node[0].metadata_props.add()
            e.key, e.value = "shapeflow.ignore", value
        else:
            m.graph.node[0].doc_string = f"exported; shapeflow: ignore[{value}]"
        onnx.save(m, "marked.onnx")
        code, out, err = run(capsys, "lint", *(["--isolated"] if isolated else []), "--show-info", "marked.onnx")
        assert code == 1 and "SF009" in out, (value, out, err)


def test_the_marker_grammar(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Codes, prefixes of one or two digits and rule names suppress; a bare SF, another case, a
    prefix of a name do not, and SF008 says so."""
    for value, hidden in (("SF104", True), ("SF10", True), ("SF1", True), ("squeeze-non-unit-dim", True),
                          (" SF104 ,", True), ("SF", False), ("sf104", False), ("Squeeze-Non-Unit-Dim", False),
                          ("squeeze", False), ("SF1040", False), ("SF１04", False)):
        onnx.save(with_model_marker(sf104_model(), value), "m.onnx")
        code, out, _ = run(capsys, "lint", "--show-info", "m.onnx")
        assert (code == 0) == hidden, (value, out)
        if not hidden:
            assert "names no rule" in out, (value, out)


def test_isolated_ignores_in_model_markers(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    onnx.save(with_model_marker(sf104_model(), "SF104"), "m.onnx")
    assert run(capsys, "lint", "m.onnx")[0] == 0
    code, out, _ = run(capsys, "lint", "--isolated", "m.onnx")
    assert code == 1 and "SF104" in out
    assert run(capsys, "infer", "m.onnx")[0] == 0
    assert run(capsys, "infer", "--isolated", "m.onnx")[0] == 1


@pytest.mark.parametrize("config", [
    'ignore = ["SF009"]', 'extend-ignore = ["SF0"]', 'select = ["SF1"]', 'severity = { SF009 = "info" }',
    'severity = { SF0 = "warning" }', 'exit-zero = true', 'per-file-ignores = { "*.onnx" = ["duplicate-attribute"] }',
])
def test_settings_cannot_hide_what_onnxruntime_refuses(project: Path, capsys: pytest.CaptureFixture[str],
                                                       config: str) -> None:
    (project / "shapeflow.toml").write_text(config + "\n")
    code, out, err = run(capsys, "lint", "bad.onnx")
    assert code == 1 and "error SF009" in out, (config, out, err)
    # the command line is trusted: it may
    assert run(capsys, "lint", "--ignore", "SF009", "bad.onnx")[0] == 0
    assert run(capsys, "lint", "--exit-zero", "bad.onnx")[0] == 0


def test_settings_still_apply_to_other_errors(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for config in ('ignore = ["SF104"]', 'severity = { SF104 = "info" }', "exit-zero = true"):
        (project / "shapeflow.toml").write_text(config + "\n")
        assert run(capsys, "lint", "sf104.onnx")[0] == 0, config


def test_a_baseline_cannot_hide_what_onnxruntime_refuses(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "lint", "--write-baseline", "baseline.json", "bad.onnx", "sf104.onnx")
    assert code == 0, err
    assert {e["code"] for e in json.loads(Path("baseline.json").read_text())["entries"]} >= {"SF009", "SF104"}
    code, out, _ = run(capsys, "lint", "--baseline", "baseline.json", "bad.onnx", "sf104.onnx")
    assert code == 1 and "SF009" in out and "SF104" not in out


# -- 3. cache entries decide nothing unless this user's shapeflow wrote them ---------------------------

def _entry_of(cache: Path) -> Path:
    (entry,) = cache.rglob("*.json")
    return entry


def test_a_committed_cache_entry_is_not_trusted(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The red team's forgery: the key is public, so a pull request commits an entry that says
    "clean" for its broken model. Without this user's MAC it is a miss."""
    variants = ((), ("--isolated",))
    for args in variants:
        run(capsys, "lint", *args, "bad.onnx")  # the entries' real names (their keys)
    stored = sorted((project / ".shapeflow_cache").rglob("*.json"))
    assert len(stored) == 2
    genuine = {e: e.read_bytes() for e in stored}
    for what in ("unsigned", "random MAC", "MAC of the real record"):
        for entry in stored:
            doc = read_cache_entry(entry)
            doc["result"].update(diagnostics=[], exit_code=0)
            body = json.dumps(doc).encode()
            entry.write_bytes({"unsigned": body, "random MAC": b"0" * 64 + b"\n" + body,
                               "MAC of the real record": genuine[entry].partition(b"\n")[0] + b"\n" + body}[what])
        for args in variants:
            code, out, _ = run(capsys, "lint", *args, "bad.onnx")
            assert code == 1 and "SF009" in out, what
        assert {e: e.read_bytes() for e in stored} == genuine  # rewritten with the real results
    # the same record signed with this user's key is used: the MAC is what decides
    for entry in stored:
        doc = read_cache_entry(entry)
        doc["result"].update(diagnostics=[], exit_code=0)
        write_cache_entry(entry, doc)
    assert [run(capsys, "lint", *args, "bad.onnx")[0] for args in variants] == [0, 0]


def test_an_old_format_entry_is_not_trusted(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "lint", "bad.onnx")
    entry = _entry_of(project / ".shapeflow_cache")
    doc = read_cache_entry(entry)
    doc["result"].update(diagnostics=[], exit_code=0)
    doc["format"] = 1
    old = project / ".shapeflow_cache" / "lint-v1" / entry.parent.name / entry.name
    old.parent.mkdir(parents=True)
    old.write_text(json.dumps(doc))
    assert run(capsys, "lint", "bad.onnx")[0] == 1


def test_another_users_key_is_another_cache(project: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    run(capsys, "lint", "bad.onnx")
    entry = _entry_of(project / ".shapeflow_cache")
    doc = read_cache_entry(entry)
    doc["result"].update(diagnostics=[], exit_code=0)
    write_cache_entry(entry, doc)  # under the first user's key
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "other-user"))
    assert run(capsys, "lint", "bad.onnx")[0] == 1


def test_the_key_is_private_and_a_shared_one_is_refused(project: Path, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from shapeflow.drivers.cache import key_path, user_key

    home = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    assert len(user_key()) == 32
    key = Path(key_path() or "")
    assert key.parent == home / "shapeflow" and stat.S_IMODE(key.stat().st_mode) == 0o600
    key.chmod(0o644)  # readable by others: not a secret any more, so no cache at all
    assert user_key() == b""
    code, _, _ = run(capsys, "lint", "sf104.onnx")
    assert code == 1 and not (project / ".shapeflow_cache").exists()
    # a key inside the repository being linted (a pull request could have committed it) is not used
    monkeypatch.setenv("XDG_CACHE_HOME", str(project / "xdg"))
    assert user_key() == b""


# -- 4. linear marker parsing, inside the time limit ---------------------------------------------------

def test_doc_markers_read_as_the_regular_expression_did() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from shapeflow.drivers.suppress import doc_markers

    old = re.compile(r"shapeflow:\s*ignore\[([^\]]*)\]")
    pieces = st.sampled_from(["shapeflow:", " ", "\t", "ignore[", "]", "SF104", ",", "x", "shapeflow: ignore["])

    @settings(max_examples=300, deadline=None)
    @given(st.lists(pieces, max_size=12))
    def check(parts: list[str]) -> None:
        text = "".join(parts)
        assert doc_markers(text) == [m.group(1) for m in old.finditer(text)]

    check()


def test_unclosed_markers_are_read_in_linear_time(project: Path) -> None:
    """720 KB of ``shapeflow: ignore[`` took 190 s (quadratic); 2 MB is a moment now. The subprocess
    timeout is the failure signal, far above the linear time."""
    m = sf104_model()
    m.graph.node[0].doc_string = "shapeflow: ignore[" * 110_000  # 2 MB
    onnx.save(m, "slow.onnx")
    done = cli(project, "lint", "--no-cache", "slow.onnx", timeout=240)
    assert done.returncode == 1 and "SF104" in done.stdout, done.stderr


def test_the_suppression_phase_keeps_the_time_limit() -> None:
    from shapeflow.errors import LimitExceededError
    from shapeflow.io import load_model_bytes
    from shapeflow.drivers.suppress import Deadline, apply

    nodes = [helper.make_node("Relu", [f"t{k}"], [f"t{k + 1}"], doc_string="shapeflow: ignore[SF104]")
             for k in range(5000)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("t0", 1, [2])],
                          [helper.make_tensor_value_info("t5000", 1, [2])])
    loaded = load_model_bytes(helper.make_model(g).SerializeToString())
    with pytest.raises(LimitExceededError, match="timeout"):
        apply("m.onnx", loaded.proto, loaded.raw, [], {"SF008"}, {}, deadline=Deadline(0.0, "m.onnx",
                                                                                            started=0.0))


# -- 5. hostile settings files -------------------------------------------------------------------------

def test_a_fifo_baseline_or_config_does_not_hang(project: Path) -> None:
    os.mkfifo(project / "fifo.json")
    os.mkfifo(project / "fifo.toml")
    for args in (("--baseline", "fifo.json"), ("--config", "fifo.toml")):
        done = cli(project, "lint", "--no-cache", *args, "sf104.onnx", timeout=60)
        assert done.returncode == 2 and "not a regular file (FIFO)" in one_line(done.stderr), done.stderr
    (project / "shapeflow.toml").write_text('baseline = "fifo.json"\n')
    done = cli(project, "lint", "--no-cache", "sf104.onnx", timeout=60)
    assert done.returncode == 2 and "not a regular file (FIFO)" in done.stderr


def test_a_link_to_a_device_is_refused_before_it_is_opened(project: Path) -> None:
    os.symlink("/dev/zero", project / "zero.json")  # refused by stat(): never opened
    # (in a child under ulimit -v and a timeout: a version that reads it must not take the machine)
    code, output, _ = measured(project, ["lint", "--no-cache", "--baseline", "zero.json", "sf104.onnx"], 2 << 30)
    assert code == 2 and "not a regular file (character device)" in one_line(output), output


def test_oversized_and_malformed_settings_files_are_one_line(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    big = project / "big.json"
    with open(big, "wb") as f:
        f.truncate(300 << 20)  # sparse: no disk used
    cases = {
        "big.json": ("--baseline", "is 314,572,800 bytes"),
        "deep.json": ("--baseline", "nested too deep"),
        "latin1.json": ("--baseline", "not UTF-8"),
        "deep.toml": ("--config", "nested too deep"),
        "latin1.toml": ("--config", "not UTF-8"),
        "digits.toml": ("--config", "invalid TOML"),
        "huge.toml": ("--config", "more than the 1,048,576"),
    }
    (project / "deep.json").write_text("[" * 200_000)
    (project / "latin1.json").write_bytes(b'{"entries": ["\xe9"]}')
    (project / "deep.toml").write_text("[tool.shapeflow]\nassume = " + "[" * 100_000)
    (project / "latin1.toml").write_bytes(b"[tool.shapeflow]\nselect = ['\xe9']\n")
    (project / "digits.toml").write_text("[tool.shapeflow]\nx = " + "1" * 5000 + "\n")
    (project / "huge.toml").write_text("[tool.shapeflow]\n" + "#" * (2 << 20) + "\n")
    for name, (flag, said) in cases.items():
        code, out, err = run(capsys, "lint", "--no-cache", flag, name, "sf104.onnx")
        assert code == 2 and out == "", (name, err)
        assert said in one_line(err) and name in err, (name, err)


def test_write_baseline_never_replaces_an_input_of_the_run(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "pyproject.toml").write_text("[tool.shapeflow]\nignore = ['SF003']\n")
    os.symlink("sf104.onnx", project / "link.onnx")
    os.link(project / "sf104.onnx", project / "hard.onnx")
    before = {p: p.read_bytes() for p in project.iterdir() if p.is_file()}
    for target in ("sf104.onnx", "link.onnx", "hard.onnx", "pyproject.toml"):
        code, out, err = run(capsys, "lint", "--write-baseline", target, "sf104.onnx")
        assert code == 2 and "which this run reads" in one_line(err), (target, err)
    assert {p: p.read_bytes() for p in project.iterdir() if p.is_file()} == before


def test_write_baseline_through_a_link_keeps_the_link(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "baselines").mkdir()
    (project / "baselines" / "real.json").write_text("{}")
    os.symlink("baselines/real.json", project / "baseline.json")
    code, _, err = run(capsys, "lint", "--write-baseline", "baseline.json", "sf104.onnx")
    assert code == 0, err
    assert os.path.islink(project / "baseline.json")
    assert json.loads((project / "baselines" / "real.json").read_text())["entries"]


def test_settings_paths_stay_inside_the_project(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outside = project.parent / "outside"
    (outside / "b.json").write_text('{"entries": []}')
    os.symlink(outside, project / "out")
    for value in ("../outside/b.json", str(outside / "b.json"), "out/b.json"):
        (project / "shapeflow.toml").write_text(f"baseline = {json.dumps(value)}\n")
        code, _, err = run(capsys, "lint", "sf104.onnx")
        assert code == 2 and "leaves the project" in one_line(err), value
    # named on the command line, it is the user's choice
    (project / "shapeflow.toml").unlink()
    assert run(capsys, "lint", "--baseline", str(outside / "b.json"), "sf104.onnx")[0] == 1


def test_config_discovery_outside_a_repository_stops_at_the_current_directory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The red team's case: a shapeflow.toml two folders up applied, outside any repository."""
    top = tmp_path / "a"
    models = top / "b" / "c"
    models.mkdir(parents=True)
    (top / "shapeflow.toml").write_text('ignore = ["SF104"]\nexit-zero = true\n')
    onnx.save(sf104_model(), str(models / "m.onnx"))
    monkeypatch.chdir(models)
    assert run(capsys, "lint", "m.onnx")[0] == 1
    monkeypatch.chdir(top)  # run from the project's top, its settings apply
    assert run(capsys, "lint", "b/c/m.onnx")[0] == 0


def test_config_discovery_skips_folders_others_may_write(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    shared = tmp_path / "shared"
    models = shared / "me"
    models.mkdir(parents=True)
    (shared / "shapeflow.toml").write_text('ignore = ["SF104"]\n')
    shared.chmod(0o777)
    onnx.save(sf104_model(), str(models / "m.onnx"))
    monkeypatch.chdir(tmp_path)
    try:
        assert run(capsys, "lint", "shared/me/m.onnx")[0] == 1
    finally:
        shared.chmod(0o755)
    assert run(capsys, "lint", "shared/me/m.onnx")[0] == 0


# -- 6. in-place writers and links ----------------------------------------------------------------------

CANCELLING = """
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] x) => (float[2, 3] y) <int64[1] ax = {0}>
{
    u = Unsqueeze (x, ax)
    s = Squeeze (u, ax)
    y = Relu (s)
}
"""


@pytest.mark.parametrize("command", ["optimize", "infer", "fix", "add-ignore"])
def test_in_place_writers_write_through_a_link(project: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    real = project / "store" / "model.onnx"
    real.parent.mkdir()
    text = SF104_TEXT if command in ("fix", "add-ignore") else CANCELLING
    onnx.save(parser.parse_model(text), str(real))
    link = project / "link.onnx"
    os.symlink("store/model.onnx", link)
    before = real.read_bytes()
    args = {"optimize": ("optimize", "--in-place", "link.onnx"), "infer": ("infer", "--in-place", "link.onnx"),
            "fix": ("lint", "--fix", "link.onnx"), "add-ignore": ("lint", "--add-ignore", "link.onnx")}[command]
    code, _, err = run(capsys, *args)
    assert code in (0, 1), err
    assert os.path.islink(link) and os.readlink(link) == "store/model.onnx"
    after = real.read_bytes()
    assert after != before, command
    m = onnx.load(str(real))
    if command == "optimize":
        assert [n.op_type for n in m.graph.node] == ["Relu"]
    elif command == "infer":
        assert m.graph.value_info
    elif command == "add-ignore":
        assert any(p.key == "shapeflow.ignore" for n in m.graph.node for p in n.metadata_props) or \
            any("shapeflow: ignore[" in n.doc_string for n in m.graph.node)
    assert not [p for p in real.parent.iterdir() if p.name.startswith(".")]  # no temp file left


def test_a_new_name_in_dev_is_refused() -> None:
    from shapeflow.errors import UsageError
    from shapeflow.io import check_output_path

    with pytest.raises(UsageError, match="is in /dev"):
        check_output_path("/dev/shapeflow-no-such-output.onnx")  # checked only: nothing is written


def test_an_empty_output_path_is_a_usage_error(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for args in (("optimize", "sf104.onnx", "-o", ""), ("infer", "sf104.onnx", "-o", "")):
        code, _, err = run(capsys, *args)
        assert code == 2 and "output path is empty" in one_line(err), err


# -- 7. memory bounded by design -------------------------------------------------------------------------

def _empty_nodes(n: int) -> bytes:
    """A model of ``n`` empty nodes: two bytes each on the wire, about 150 parsed and 1.6 KiB indexed."""
    def varint(v: int) -> bytes:
        out = bytearray()
        while True:
            b, v = v & 0x7F, v >> 7
            out.append(b | 0x80 if v else b)
            if not v:
                return bytes(out)
    graph = b"\x0a\x00" * n
    return b"\x08\x08" + b"\x42\x02\x10\x0d" + b"\x3a" + varint(len(graph)) + graph


# A forked child's ru_maxrss starts at its parent's resident size (Linux records the old mm's
# high-water mark at exec), so a child of a large pytest process would report pytest's memory.
# A small launcher process spawns the command and reports the grandchild's own peak.
_LAUNCHER = """
import os, resource, subprocess, sys, time
max_as, deadline, report = int(sys.argv[1]), time.monotonic() + 300, sys.argv[2]
def limit():
    resource.setrlimit(resource.RLIMIT_AS, (max_as, max_as))
proc = subprocess.Popen(sys.argv[3:], stdout=sys.stdout, stderr=subprocess.STDOUT, preexec_fn=limit)
while True:
    pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
    if pid:
        break
    if time.monotonic() > deadline:
        proc.kill()
    time.sleep(0.05)
with open(report, "w") as f:
    f.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss * 1024}")
"""


def measured(cwd: Path, args: list[str], max_as: int) -> tuple[int, str, int]:
    """(exit code, stdout and stderr, peak RSS in bytes) of ``shapeflow ARGS`` under ``ulimit -v max_as``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open(cwd / "out.txt", "wb") as out:
        subprocess.run([sys.executable, "-c", _LAUNCHER, str(max_as), str(cwd / "report.txt"),
                        sys.executable, "-m", "shapeflow", *args],
                       cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=400, check=True)
    code, peak = (int(v) for v in (cwd / "report.txt").read_text().split())
    return code, (cwd / "out.txt").read_text(), peak


def test_many_tiny_messages_are_refused_before_the_parse(tmp_path: Path) -> None:
    """57 MB of empty nodes peaked at 4.8 GB under --max-memory 2G; 9.5 MB under ulimit -v 1000000
    ended in exit 3. The same kind of file, smaller, under tighter bounds: refused before the
    parse, in a few tens of MB."""
    (tmp_path / "tiny.onnx").write_bytes(_empty_nodes(3_000_000))  # 6 MB: 2x its size passed before
    for args, max_as in ((["--max-memory", "400M"], 3 << 30), ([], 1 << 30)):
        code, output, peak = measured(tmp_path, ["lint", "--no-cache", *args, "tiny.onnx"], max_as)
        assert code == 2 and "Traceback" not in output, output
        line = output.splitlines()[0]  # the finding (its hint and lint's summary follow)
        assert "SF006" in line and "max-memory" in line, line
        assert peak < 300 << 20, peak


def test_a_real_model_passes_the_count(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    from model_builders import squeeze_unsqueeze_chain
    from shapeflow.io import load as load_module
    from shapeflow.io.memory import memory_in_use

    onnx.save(squeeze_unsqueeze_chain(20_000), str(tmp_path / "chain.onnx"))
    counted = []
    real_cost = load_module.parse_cost
    monkeypatch.setattr(load_module, "parse_cost", lambda *a: counted.append(real_cost(*a)) or counted[-1])
    # 500 MB more than this process holds: less than the worst case of a file this size (so its
    # messages are counted) and far more than it costs
    budget = memory_in_use()[0] + (500 << 20)
    code, _, err = run(capsys, "lint", "--no-cache", "--max-memory", str(budget), str(tmp_path / "chain.onnx"))
    assert code == 0 and len(counted) == 1 and counted[0] < 100 << 20, (err, counted)


def test_the_count_matches_what_the_parse_costs() -> None:
    """The estimate of ``parse_cost`` is within a factor of two of upb's real allocation, measured
    in a fresh process per kind (docs/threat-model.md records the factors)."""
    from shapeflow.io.wire import NODE_COST, parse_cost

    code = (
        "import sys, onnx\n"
        "from shapeflow.io.memory import memory_in_use\n"
        "data = sys.stdin.buffer.read()\n"
        "base = memory_in_use()[0]\n"
        "model = onnx.ModelProto.FromString(data)\n"
        "print(memory_in_use()[0] - base)\n")
    data = _empty_nodes(1_000_000)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    real = int(subprocess.run([sys.executable, "-c", code], input=data, capture_output=True, check=True,
                              env=env).stdout)
    estimate = parse_cost(data, 0, 1 << 60) - len(data)  # (max_nodes 0: the parse alone)
    assert real / 2 < estimate < real * 2, (real, estimate)
    assert parse_cost(data, 10, 1 << 60) - parse_cost(data, 0, 1 << 60) == 10 * NODE_COST


# -- 9. the small ones ------------------------------------------------------------------------------------

def test_ctrl_c_during_start_up_prints_no_traceback(tmp_path: Path) -> None:
    code = (
        "import sys, runpy\n"
        "class Interrupt:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'click':\n"
        "            raise KeyboardInterrupt\n"
        "        return None\n"
        "sys.meta_path.insert(0, Interrupt())\n"
        "sys.argv = ['shapeflow', 'lint', 'm.onnx']\n"
        "runpy.run_module('shapeflow', run_name='__main__')\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 130 and "Traceback" not in done.stderr, done.stderr


def test_graphml_keeps_control_characters_in_names() -> None:
    import networkx as nx

    from shapeflow.drivers.netx import from_graphml, graphml_text

    names = ["a\x01b", "tab\there", "line\nbreak", "cr\rhere", "\ue000starts-with-the-mark", "plain", "\x7fdel",
             "sur\ud800rogate"]
    g = nx.MultiDiGraph(title="t\x02")
    for k, name in enumerate(names):
        g.add_node(name, label=name, index=k)
    for a, b in zip(names, names[1:]):
        g.add_edge(a, b, key=f"{a}->{b}", tensor=a + b)
    back = from_graphml(nx.read_graphml(__import__("io").BytesIO(graphml_text(g).encode("utf-8", "surrogatepass")),
                                        force_multigraph=True))
    assert set(back.nodes) == set(names)
    assert {n: a["label"] for n, a in back.nodes(data=True)} == {n: n for n in names}
    assert {(u, v, k, a["tensor"]) for u, v, k, a in back.edges(keys=True, data=True)} == \
        {(a, b, f"{a}->{b}", a + b) for a, b in zip(names, names[1:])}
    assert back.graph["title"] == "t\x02"


def test_a_ray_task_timeout_says_timeout() -> None:
    from shapeflow.drivers.executors import _timed_out

    r = _timed_out("m.onnx", 5.0)
    (d,) = r.diagnostics
    assert r.exit_code == 2 and d.code == "SF006" and "limit task-timeout exceeded (value 5 s" in d.message
    assert "--task-timeout" in d.message and "loadable" not in d.hint


def test_an_optimize_timeout_names_the_limit_that_was_set(monkeypatch: pytest.MonkeyPatch) -> None:
    from shapeflow.errors import LimitExceededError
    from shapeflow.io import load_model_bytes
    from shapeflow.limits import Limits
    from shapeflow.drivers.optimizer import optimize_model
    from shapeflow.passes import fixpoint

    class Clock:
        now = 0.0

        def monotonic(self) -> float:
            self.now += 7.0  # the analysis takes a while; the rewrite rounds see what is left
            return self.now

    monkeypatch.setattr(fixpoint, "time", Clock())
    loaded = load_model_bytes(parser.parse_model(CANCELLING).SerializeToString(), "m.onnx")
    with pytest.raises(LimitExceededError) as exc:
        optimize_model(loaded, limits=Limits(timeout=5.0))
    assert "(value 5 s)" in str(exc.value), str(exc.value)


def test_around_can_name_a_node_with_a_comma(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    m = sf104_model()
    m.graph.node[0].name = "a,b"
    onnx.save(m, "comma.onnx")
    code, out, err = run(capsys, "infer", "comma.onnx", "--format", "dot", "--around", "a\\,b")
    assert code == 1 and "a,b" in out, err
    code, _, err = run(capsys, "infer", "comma.onnx", "--format", "dot", "--around", "a,b")
    assert code == 2 and "'a'" in err  # split at the comma: no node 'a'


def test_infer_with_stdout_closed_says_so(project: Path) -> None:
    done = cli(project, "infer", "sf104.onnx", preexec_fn=lambda: os.close(1))
    assert done.returncode == 2 and "standard output is closed" in done.stderr, done.stderr


# -- the untrusted pull request recipe (README, "Safety") --------------------------------------------

def hostile_repository(root: Path) -> tuple[Path, Path]:
    """A checkout of a hostile pull request, and a bystander folder beside it: every file of the
    checkout tries to lower the verdict on a model onnxruntime refuses, or to reach outside."""
    victim = root / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep me")
    pr = root / "pr"
    (pr / ".git").mkdir(parents=True)
    m = with_model_marker(refused_model(), "SF,SF0,SF009,duplicate-attribute")
    m.graph.node[0].doc_string = "shapeflow: ignore[SF009]" + "shapeflow: ignore[" * 50_000
    onnx.save(m, str(pr / "model.onnx"))
    config = ('cache-dir = ".."\nexit-zero = true\nignore = ["SF0", "SF1"]\nbaseline = "baseline.json"\n'
              'severity = { SF009 = "info" }\nper-file-ignores = { "**" = ["SF009"] }\n')
    (pr / "shapeflow.toml").write_text(config)
    (pr / "pyproject.toml").write_text("[tool.shapeflow]\n" + config)
    (pr / "baseline.json").write_text(json.dumps({"entries": [{"file": "model.onnx", "code": "SF009",
                                                               "fingerprint": "0" * 16}] * 10}))
    return pr, victim


def readme_recipe() -> list[str]:
    """The command of the README's untrusted pull request recipe, as written there."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("<!-- untrusted-pr-recipe -->", 2)[1]
    lines = [line.strip() for line in block.splitlines() if line.strip().startswith("shapeflow lint")]
    assert len(lines) == 1, lines
    return lines[0].split("#")[0].split()[1:]


@pytest.mark.parametrize("cache", ["forged entries", "a link out"])
def test_the_untrusted_pr_recipe_keeps_its_verdict(tmp_path: Path, cache: str) -> None:
    from shapeflow.drivers.cache import LintCache, user_key

    pr, victim = hostile_repository(tmp_path)
    if cache == "a link out":
        os.symlink(victim, pr / ".shapeflow_cache")
    before = snapshot(victim), sorted(os.listdir(tmp_path))
    args = readme_recipe()
    assert "--isolated" in args

    def verdict() -> None:
        done = cli(pr, *args, timeout=300)
        assert done.returncode == 1, done.stderr
        assert "error SF009" in done.stdout and "Traceback" not in done.stderr

    verdict()
    verdict()  # (the second run would read what the first one wrote)
    if cache == "forged entries":
        # what a pull request would commit: an entry under the model's real (public) key saying "clean"
        stored = sorted((pr / ".shapeflow_cache").rglob("*.json"))
        assert stored
        for entry in stored:
            doc = read_cache_entry(entry)
            doc["result"].update(diagnostics=[], exit_code=0)
            entry.write_bytes(b"f" * 64 + b"\n" + json.dumps(doc).encode())
        verdict()
        for entry in stored:  # the forgery was looked up (same key) and replaced by the real result
            mac, _, body = entry.read_bytes().partition(b"\n")
            assert mac == LintCache("x", secret=user_key())._mac(entry.name[:-5], body)
            assert read_cache_entry(entry)["result"]["exit_code"] == 1
    assert (snapshot(victim), sorted(os.listdir(tmp_path))) == before
    assert not (tmp_path / "CACHEDIR.TAG").exists()
    # and without --isolated, the same repository still cannot pass its model
    done = cli(pr, "lint", ".", timeout=300)
    assert done.returncode in (1, 2) and "Traceback" not in done.stderr
    assert (snapshot(victim), sorted(os.listdir(tmp_path))) == before


def test_add_ignore_does_not_mark_what_it_cannot_hide(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "lint", "--add-ignore", "bad.onnx", "sf104.onnx")
    assert code == 0 and "1 finding onnxruntime refuses left unmarked" in err, err
    assert "shapeflow: ignore[SF104]" in onnx.load("sf104.onnx").graph.node[0].doc_string
    assert "SF009" not in onnx.load("bad.onnx").graph.node[0].doc_string
    assert run(capsys, "lint", "bad.onnx", "sf104.onnx")[0] == 1
