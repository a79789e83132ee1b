"""Run the real ``shapeflow`` CLI in a subprocess and check the RELIABILITY.md section 1.1 contract.

Every bad-input row (RELIABILITY.md section 1.2) is a :class:`Row`: a builder that lays out files in
a fresh folder, and what each command (``infer``, ``lint``, ``optimize``) must do with them. The
check is the same for every row:

* the documented exit code, within a timeout and under ``RLIMIT_AS`` (a hang or an OOM fails);
* the expected message on one line that names the file (and the node / tensor when it matters);
* no Python traceback, no "internal error" (unless exit 3 is what the row documents);
* nothing written for exit codes 2 and 3 (no output, no temp file, no data file), and otherwise
  nothing but the output;
* every file that was there before keeps its bytes (sha256), mtime and inode, and every symlink
  its target.

A command that does not exist yet (``lint``, ``optimize`` while they are being written) is
skipped, not failed.
"""

from __future__ import annotations

import functools
import hashlib
import os
import resource
import signal
import stat
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

import cli_process
import onnx
import pytest

COMMANDS = ("infer", "lint", "optimize")
# Commands that take ``-o OUT``: the contract runs them with an output so "nothing written" is
# tested on the write path too.
WRITERS = ("infer", "optimize")
OUTPUT_NAME = "out.onnx"

# SPEC.md section 2 and RELIABILITY.md 1.1: exit 1 means error-level findings; a warning alone
# exits 0. (RELIABILITY.md 1.2 writes "1 (warn)" in a few rows; see tests/contract/README.md.)
WARNING_EXIT = 0

MEMORY_LIMIT = 2 << 30  # RLIMIT_AS of every CLI run
DEFAULT_TIMEOUT = 60.0  # seconds; a row that hangs fails instead of blocking the suite
BIG_FILE = 64 << 20  # files above this are fingerprinted by their ends, not hashed whole

ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------------------------------
# Which commands exist
# --------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def available_commands() -> frozenset[str]:
    """Commands the installed CLI has (a module per command in shapeflow/cli/)."""
    names = set()
    for cmd in COMMANDS:
        if (ROOT / "shapeflow" / "cli" / f"{cmd}_cmd.py").exists():
            names.add(cmd)
    if not names:
        return frozenset()
    r = subprocess.run([sys.executable, "-m", "shapeflow", "--help"], capture_output=True, text=True,
                       timeout=120, env=cli_env())
    listed = {line.split()[0] for line in r.stdout.splitlines() if line.startswith("  ") and line.split()}
    return frozenset(names & listed)


def require(cmd: str) -> None:
    if cmd not in available_commands():
        pytest.skip(f"command not available yet: shapeflow {cmd}")


# --------------------------------------------------------------------------------------------------
# Running the CLI
# --------------------------------------------------------------------------------------------------


def cli_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHAPEFLOW_")}
    env.update({"PYTHONDONTWRITEBYTECODE": "1", "COLUMNS": "200", "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "0"})
    if extra:
        env.update(extra)
    return env


@dataclass
class Run:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    elapsed: float
    max_rss: int  # bytes
    timed_out: bool

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def lines(self) -> list[str]:
        return [line for line in self.output.splitlines() if line.strip()]

    def describe(self) -> str:
        return (f"$ shapeflow {' '.join(self.argv)}\nexit {self.returncode} in {self.elapsed:.2f} s, "
                f"max RSS {self.max_rss >> 20} MiB{' (TIMED OUT)' if self.timed_out else ''}\n"
                f"--- stdout ---\n{self.stdout[-3000:]}\n--- stderr ---\n{self.stderr[-3000:]}")


def run_cli(argv: Sequence[str], *, cwd: str | os.PathLike[str] | None = None, timeout: float = DEFAULT_TIMEOUT,
            memory: int | None = MEMORY_LIMIT, env: Mapping[str, str] | None = None,
            preexec: Callable[[], None] | None = None, python_args: Sequence[str] = (),
            module: Sequence[str] = ("-m", "shapeflow"), prefix: Sequence[str] = ()) -> Run:
    """``python -m shapeflow ARGV`` in a process of its own, under ``RLIMIT_AS`` and a wall-clock
    timeout: forked from a started interpreter (``tests/cli_process.py``) unless a prefix, Python
    flags, another module or ``preexec`` ask for a fresh start.

    ``prefix`` wraps the command (``unshare ... sh -c '...; exec "$@"'``). The child is reaped
    with ``wait4`` so its peak RSS is known."""

    def limit() -> None:
        if memory is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if preexec is not None:
            preexec()

    if preexec is None and not prefix and not python_args and tuple(module) == ("-m", "shapeflow") \
            and not cli_process.real_processes():
        # forked from a started interpreter (tests/cli_process.py): still a process of its own, under
        # the same limit, session, environment and folder, without the start-up and import time
        done = cli_process.run(argv, cwd=cwd if cwd is not None else os.getcwd(), env=cli_env(env),
                               timeout=timeout, memory=memory)
        return Run(list(argv), done.returncode, done.stdout.decode("utf-8", "replace"),
                   done.stderr.decode("utf-8", "replace"), done.elapsed, done.max_rss, done.timed_out)
    cmd = [*prefix, sys.executable, *python_args, *module, *argv]
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=cwd, env=cli_env(env), preexec_fn=limit, start_new_session=True)
    chunks: dict[str, list[bytes]] = {"out": [], "err": []}

    def drain(stream, key: str) -> None:  # type: ignore[no-untyped-def]
        for block in iter(lambda: stream.read(65536), b""):
            chunks[key].append(block)

    readers = [threading.Thread(target=drain, args=(proc.stdout, "out"), daemon=True),
               threading.Thread(target=drain, args=(proc.stderr, "err"), daemon=True)]
    for t in readers:
        t.start()
    timed_out = threading.Event()

    def kill() -> None:
        timed_out.set()
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass

    timer = threading.Timer(timeout, kill)
    timer.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    for t in readers:
        t.join(10)
    for stream in (proc.stdout, proc.stderr):
        stream.close()  # type: ignore[union-attr]
    return Run(list(argv), proc.returncode, b"".join(chunks["out"]).decode("utf-8", "replace"),
               b"".join(chunks["err"]).decode("utf-8", "replace"), time.monotonic() - started,
               usage.ru_maxrss * 1024, timed_out.is_set())


# --------------------------------------------------------------------------------------------------
# Snapshots of a folder: listing, bytes, mtime, inode
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    kind: str  # "file" | "link" | "dir" | "other"
    digest: str  # sha256 of a file (of its ends for big files), target of a link, "" otherwise
    size: int
    mtime_ns: int
    inode: int


def _digest(path: str, size: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        if size <= BIG_FILE:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        else:
            h.update(fh.read(1 << 20))
            fh.seek(size - (1 << 20))
            h.update(fh.read(1 << 20))
    return h.hexdigest()


def snapshot(*roots: str | os.PathLike[str]) -> dict[str, Entry]:
    """Every entry under ``roots`` (not following links), keyed by absolute path. Lint's cache
    folder is not an output and is left out: test_audit.py holds it to its own rules (written only
    inside it, atomically; nothing for a rejected file)."""
    out: dict[str, Entry] = {}
    stack = [os.path.abspath(r) for r in roots if os.path.lexists(r)]
    while stack:
        path = stack.pop()
        if os.path.basename(path) == ".shapeflow_cache":
            continue
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            out[path] = Entry("link", os.readlink(path), st.st_size, st.st_mtime_ns, st.st_ino)
        elif stat.S_ISDIR(st.st_mode):
            out[path] = Entry("dir", "", 0, 0, st.st_ino)  # a dir's mtime changes with its entries
            try:
                stack.extend(os.path.join(path, n) for n in os.listdir(path))
            except PermissionError:
                pass
        elif stat.S_ISREG(st.st_mode):
            digest = _digest(path, st.st_size) if os.access(path, os.R_OK) else "?"
            out[path] = Entry("file", digest, st.st_size, st.st_mtime_ns, st.st_ino)
        else:
            out[path] = Entry("other", "", 0, st.st_mtime_ns, st.st_ino)
    return out


def is_temp_name(path: str) -> bool:
    name = os.path.basename(path)
    return name.endswith(".tmp") or name.startswith(".") and ".onnx" in name


def assert_untouched(before: Mapping[str, Entry], after: Mapping[str, Entry], *,
                     allowed_new: Iterable[str] = (), allowed_changed: Iterable[str] = ()) -> None:
    """Everything in ``before`` is in ``after`` unchanged, and nothing new appeared except
    ``allowed_new`` (and nothing that looks like a temp file, ever)."""
    allowed_new = {os.path.abspath(p) for p in allowed_new}
    allowed_changed = {os.path.abspath(p) for p in allowed_changed}
    gone = sorted(set(before) - set(after))
    assert not gone, f"files disappeared: {gone}"
    changed = [p for p, e in before.items() if after[p] != e and p not in allowed_changed]
    assert not changed, "files changed: " + "; ".join(f"{p}: {before[p]} -> {after[p]}" for p in changed)
    new = sorted(set(after) - set(before))
    temps = [p for p in new if is_temp_name(p)]
    assert not temps, f"temp files left behind: {temps}"
    unexpected = [p for p in new if p not in allowed_new]
    assert not unexpected, f"unexpected files written: {unexpected}"


# --------------------------------------------------------------------------------------------------
# Rows
# --------------------------------------------------------------------------------------------------


@dataclass
class Setup:
    """What a row's builder laid out."""

    model: str  # the path given to the command
    watch: list[str] = field(default_factory=list)  # extra folders to snapshot (besides the tmp dir)
    cwd: str | None = None
    output: str | None = None  # -o target of writers (default: OUTPUT_NAME next to the model)
    args: dict[str, list[str]] = field(default_factory=dict)  # extra arguments per command
    timeout: float = DEFAULT_TIMEOUT
    memory: int | None = MEMORY_LIMIT


@dataclass(frozen=True)
class Expect:
    exit: int
    says: tuple[str, ...] = ()  # fragments that must all be on one output line
    names: tuple[str, ...] = ()  # names that same line must carry (node, tensor)
    code: str | None = None  # diagnostic code on that line (SF001, SF104, ...)
    severity: str | None = None  # "error" / "warning" / "info" on that line
    writes: bool | None = None  # True: the output must exist (and load); False: it must not
    identical: bool = False  # the output is a byte copy of the input (nothing to rewrite)
    check: Callable[[Setup, Run], None] | None = None  # a row-specific extra check
    xfail: str | None = None  # reason (strict xfail) when shapeflow does not meet the row yet
    # (no time limit: a row's time is a budget of benchmarks/bench_budgets.py, against a peer)
    max_rss: int | None = None


def E(exit: int, *says: str, **kw: object) -> Expect:  # noqa: N802 - reads like the table
    return Expect(exit, tuple(says), **kw)  # type: ignore[arg-type]


@dataclass
class Row:
    id: str  # "01-empty"
    build: Callable[[Path], Setup]
    expect: dict[str, Expect]  # per command; a command missing here does not apply to the row

    @property
    def number(self) -> int:
        return int(self.id.split("-", 1)[0])


def params(rows: Sequence[Row]) -> list:
    """(row, command) pytest params: skipped when the command does not exist yet, strict xfail
    when the row documents a known gap."""
    out = []
    for row in rows:
        for cmd in COMMANDS:
            exp = row.expect.get(cmd)
            if exp is None:
                continue
            marks = []
            if exp.xfail:
                marks.append(pytest.mark.xfail(strict=True, reason=exp.xfail))
            out.append(pytest.param(row, cmd, id=f"{row.id}-{cmd}", marks=marks))
    return out


def argv_for(cmd: str, setup: Setup, output: str | None) -> list[str]:
    argv = [cmd, setup.model]
    if cmd == "lint":
        argv.append("--show-info")  # rows assert info findings too; the text format hides them by default
    if cmd in WRITERS and output is not None:
        argv += ["-o", output]
    return argv + setup.args.get(cmd, [])


def find_line(run: Run, says: Sequence[str]) -> list[str]:
    return [line for line in run.lines() if all(s in line for s in says)]


def model_path(setup: Setup, tmp: Path) -> str:
    """The model's absolute path as the child process sees it (relative to its cwd)."""
    return os.path.join(setup.cwd or str(tmp), setup.model)


def check_row(row: Row, cmd: str, tmp: Path) -> Run:
    require(cmd)
    exp = row.expect[cmd]
    setup = row.build(tmp)
    setup.cwd = setup.cwd or str(tmp)
    output = setup.output
    if output is None and cmd in WRITERS:
        # next to the model (outputs of models with external data must be), if that is ours
        parent = os.path.dirname(model_path(setup, tmp))
        output = os.path.join(parent if parent.startswith(str(tmp)) else str(tmp), OUTPUT_NAME)
    roots = [str(tmp), *setup.watch]
    before = snapshot(*roots)
    run = run_cli(argv_for(cmd, setup, output), cwd=setup.cwd or str(tmp), timeout=setup.timeout,
                  memory=setup.memory)
    after = snapshot(*roots)
    check_run(run, exp, setup, cmd, output, before, after)
    return run


def check_run(run: Run, exp: Expect, setup: Setup, cmd: str, output: str | None,
              before: Mapping[str, Entry], after: Mapping[str, Entry]) -> None:
    info = run.describe()
    assert not run.timed_out, f"hung (killed after {setup.timeout} s)\n{info}"
    assert "Traceback" not in run.output, f"traceback printed\n{info}"
    if exp.exit != 3:
        assert "internal error" not in run.output, f"internal error\n{info}"
    assert run.returncode >= 0, f"killed by signal {-run.returncode} (crash or OOM)\n{info}"
    assert run.returncode == exp.exit, f"exit {run.returncode}, expected {exp.exit}\n{info}"

    if exp.says or exp.names or exp.code:
        says = list(exp.says) + ([exp.code] if exp.code else []) + ([exp.severity] if exp.severity else [])
        lines = find_line(run, says)
        assert lines, f"no line says {says}\n{info}"
        # the file is named on the line (by the path as given, or its base name)
        base = os.path.basename(setup.model)
        named = [line for line in lines if setup.model in line or base in line]
        assert named, f"the line {lines[0]!r} does not name the file {setup.model}\n{info}"
        for name in exp.names:
            assert any(name in line for line in named), f"no line names {name!r}: {named}\n{info}"
    if exp.exit >= 2 and cmd in WRITERS:
        # rejected: the one line on stderr, nothing on stdout
        err = [line for line in run.stderr.splitlines() if line.strip()]
        assert len(err) == 1, f"expected one line on stderr\n{info}"
        assert not run.stdout.strip(), f"expected nothing on stdout\n{info}"

    allowed: list[str] = []
    if run.returncode < 2 and output is not None and cmd in WRITERS:
        allowed = [output, output + ".data"]
    out_path = os.path.abspath(output) if output else None
    assert_untouched(before, after, allowed_new=allowed)
    if exp.writes is not None and out_path is not None and cmd in WRITERS:
        assert os.path.exists(out_path) == exp.writes, (
            f"output {'missing' if exp.writes else 'written'}: {out_path}\n{info}")
    if out_path is not None and os.path.exists(out_path) and out_path not in before:
        # the output loads from its own folder, data references included
        onnx.load(out_path, load_external_data=False)
        if exp.identical:
            with open(os.path.join(setup.cwd or "", setup.model), "rb") as a, open(out_path, "rb") as b:
                assert a.read() == b.read(), f"output is not a byte copy of the input\n{info}"
    if exp.max_rss is not None:
        assert run.max_rss <= exp.max_rss, f"peak RSS {run.max_rss >> 20} MiB > {exp.max_rss >> 20} MiB\n{info}"
    if exp.check is not None:
        exp.check(setup, run)
