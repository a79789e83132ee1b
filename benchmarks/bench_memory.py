"""Peak memory of ``infer``, ``lint`` and ``optimize`` against the model's size (issue 11).

    python benchmarks/bench_memory.py [--sizes 100000,500000] [--big-gib 1.0] [--keep DIR]
                                      [--commands infer,lint,optimize]

Models:

* ``tests/model_builders.squeeze_unsqueeze_chain(N)`` for each size (the benchmark chain);
* a model of ``--big-gib`` GiB: a small valid graph plus one large unknown field (written sparse,
  so making it is instant) — the case where protobuf keeps a copy of bytes it does not know;
* a file of zeros of the same size, which must be rejected without being read whole.

Each command runs in a fresh ``python -m shapeflow`` process (output to /dev/null, ``-o`` into a
temporary folder for the writers); its peak RSS comes from ``wait4``. The table gives the peak, the
baseline of a process that loads a tiny model (interpreter, onnx, shapeflow), and the factor
``(peak - baseline) / file size``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

MiB = 1 << 20


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _build(code: str) -> bytes:
    """Run model-building ``code`` (which prints a model's bytes) in a child process: this process
    must stay small, because a child's peak RSS counts what it inherits before exec."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.join(ROOT, "tests"), ROOT])}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, check=True, env=env).stdout


def write_unknown_field_model(path: str, payload: int) -> None:
    """A valid cancelling-pair model followed by unknown field 1000 of ``payload`` zero bytes."""
    model = _build("import sys; from contract.models import cancelling_pair; "
                   "sys.stdout.buffer.write(cancelling_pair().SerializeToString())")
    head = model + varint((1000 << 3) | 2) + varint(payload)
    with open(path, "wb") as fh:
        fh.write(head)
        fh.truncate(len(head) + payload)  # a hole: the zeros are not written


def write_zeros(path: str, size: int) -> None:
    with open(path, "wb") as fh:
        fh.truncate(size)


def run(argv: list[str], cwd: str) -> tuple[int, int, float]:
    """(exit code, peak RSS in bytes, seconds) of ``python -m shapeflow ARGV``."""
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "shapeflow", *argv], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1, 2):
        print(f"  ! {' '.join(argv)} exited {code}: {err.strip()[-300:]}", file=sys.stderr)
    return code, usage.ru_maxrss * 1024, time.monotonic() - started


def argv_for(cmd: str, model: str, out_dir: str) -> list[str]:
    if cmd == "lint":
        return ["lint", "--isolated", "--no-cache", model]  # the lint itself, not a cache hit
    return [cmd, model, "-o", os.path.join(out_dir, "out.onnx"), "--force"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100000,500000")
    ap.add_argument("--big-gib", type=float, default=1.0)
    ap.add_argument("--commands", default="infer,lint,optimize")
    ap.add_argument("--keep", help="write the models here and reuse them")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="sf-mem-")
    os.makedirs(work, exist_ok=True)
    out_dir = tempfile.mkdtemp(prefix="sf-mem-out-")
    commands = [c for c in args.commands.split(",") if c]
    try:
        tiny = os.path.join(work, "tiny.onnx")
        with open(tiny, "wb") as fh:
            fh.write(_build("import sys; from contract.models import cancelling_pair; "
                            "sys.stdout.buffer.write(cancelling_pair().SerializeToString())"))
        models: list[tuple[str, str]] = []
        for n in [int(s) for s in args.sizes.split(",") if s]:
            path = os.path.join(work, f"chain_{n}.onnx")
            if not os.path.exists(path):
                with open(path, "wb") as fh:
                    fh.write(_build("import sys; from model_builders import squeeze_unsqueeze_chain; "
                                    f"sys.stdout.buffer.write(squeeze_unsqueeze_chain({n}).SerializeToString())"))
            models.append((f"chain {n:,} nodes", path))
        big = int(args.big_gib * (1 << 30))
        path = os.path.join(work, "unknown_field.onnx")
        if not os.path.exists(path) or os.path.getsize(path) < big:
            write_unknown_field_model(path, big)
        models.append((f"{args.big_gib:g} GiB unknown field", path))
        zeros = os.path.join(work, "zeros.onnx")
        if not os.path.exists(zeros):
            write_zeros(zeros, min(big, (2 << 30) - 1))
        models.append((f"{os.path.getsize(zeros) / (1 << 30):.2f} GiB of zeros (rejected)", zeros))

        base = {cmd: run(argv_for(cmd, tiny, out_dir), work)[1] for cmd in commands}
        print("baseline peak RSS (tiny model): " + ", ".join(f"{c} {base[c] / MiB:.0f} MiB" for c in commands))
        print()
        print("| model | file | command | exit | peak RSS | (peak - baseline) / file | seconds |")
        print("|---|---:|---|---:|---:|---:|---:|")
        for label, path in models:
            size = os.path.getsize(path)
            for cmd in commands:
                code, peak, secs = run(argv_for(cmd, path, out_dir), work)
                factor = (peak - base[cmd]) / size
                print(f"| {label} | {size / MiB:,.0f} MiB | {cmd} | {code} | {peak / MiB:,.0f} MiB | "
                      f"{factor:.2f}x | {secs:.1f} |", flush=True)
                for name in os.listdir(out_dir):
                    os.unlink(os.path.join(out_dir, name))
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
