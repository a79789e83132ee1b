"""Linting a fleet of models: files per second, serial, with ``-j``, on Ray, and from a warm cache.

    python benchmarks/bench_fleet.py [--models 300] [--jobs 2] [--no-ray] [--keep DIR]

Generates ``--models`` models of mixed sizes in a temp folder (``--keep DIR``: there, reused when
present) with ``tests/model_builders.py``: BERT- and GPT-2-like transformers of 1-4 layers, synthetic
Squeeze/Unsqueeze chains of 20 to 20,000 nodes, and a few lint fixtures with findings. Then times,
each a fresh ``python -m shapeflow lint`` over the whole folder (output to /dev/null):

    serial      -j 1 --no-cache
    in process  shapeflow.lint(paths) in this process (no start-up: compare with the running cluster)
    -j N        -j N --no-cache
    ray         --executor ray --no-cache   (a new local cluster: its start-up is in the time)
    ray (warm)  shapeflow.lint(paths, executor="ray") in a process already connected to a local
                cluster, so the start-up (printed apart) is not counted
    cold cache  -j 1 with an empty cache folder (lints and writes every entry)
    warm cache  -j 1 again (every file a hit)

and prints a table of seconds, files per second and speed-up over serial. The README's "Fleets"
section quotes a run on the 2-core development machine.
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
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, ROOT)


def generate(folder: str, count: int) -> list[str]:
    """``count`` models of mixed sizes in ``folder`` (kept when already there)."""
    import onnx

    from lint_fixtures import FIXTURES
    from model_builders import OPSETS, bert_like, gpt2_like, squeeze_unsqueeze_chain

    os.makedirs(folder, exist_ok=True)
    fixtures = [f for f in FIXTURES if f.text][:20]
    chain_sizes = (20, 50, 100, 200, 500, 1000, 2000, 5000, 20000)
    paths = []
    for k in range(count):
        path = os.path.join(folder, f"m{k:04d}.onnx")
        paths.append(path)
        if os.path.exists(path):
            continue
        kind = k % 5
        if kind == 0:
            model = bert_like(OPSETS[k % len(OPSETS)], layers=1 + k % 4, hidden=32 * (1 + k % 3), heads=4)
        elif kind == 1:
            model = gpt2_like(OPSETS[(k // 5) % len(OPSETS)], layers=1 + k % 3, hidden=32 * (1 + k % 2), heads=4)
        elif kind == 4 and fixtures:
            model = fixtures[(k // 5) % len(fixtures)].model()
        else:
            model = squeeze_unsqueeze_chain(chain_sizes[(k // 5) % len(chain_sizes)])
        model.doc_string = f"fleet model {k}"  # every file different: no two share a cache entry
        onnx.save(model, path)
    return paths


def timed(args: list[str], cwd: str) -> float:
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "shapeflow", "lint", "-q", *args], cwd=cwd, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    took = time.perf_counter() - start
    if proc.returncode not in (0, 1, 2):
        sys.exit(f"shapeflow lint {' '.join(args)} failed ({proc.returncode}): {proc.stderr.decode()[-500:]}")
    return took


def ray_in_process(paths: list[str], cpus: int) -> tuple[float, float] | None:
    """(cluster start-up, lint) seconds with the API on a local cluster; None without Ray."""
    try:
        import ray
    except ImportError:
        return None
    import shapeflow

    start = time.perf_counter()
    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
    shapeflow.lint(paths[:cpus], executor="ray")  # workers started and warm
    startup = time.perf_counter() - start
    start = time.perf_counter()
    shapeflow.lint(paths, executor="ray")
    took = time.perf_counter() - start
    ray.shutdown()
    return startup, took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", type=int, default=300)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--keep", metavar="DIR", help="write the models here (and reuse them)")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="shapeflow-fleet-")
    try:
        folder = args.keep or os.path.join(work, "models")
        started = time.perf_counter()
        paths = generate(folder, args.models)
        size = sum(os.path.getsize(p) for p in paths)
        print(f"{len(paths)} models, {size / 1e6:.1f} MB, in {folder} ({time.perf_counter() - started:.1f} s to make)")
        cache = os.path.join(work, "cache")
        rows: list[tuple[str, float]] = [
            ("serial (-j 1)", timed(["--no-cache", "-j", "1", "."], folder)),
            (f"-j {args.jobs}", timed(["--no-cache", "-j", str(args.jobs), "."], folder)),
        ]
        import shapeflow

        start = time.perf_counter()
        shapeflow.lint(paths)
        rows.append(("serial, in process (API)", time.perf_counter() - start))
        if not args.no_ray:
            try:
                import ray  # noqa: F401
                rows.append(("ray, new local cluster", timed(["--no-cache", "--executor", "ray", "."], folder)))
            except ImportError:
                print("ray is not installed: its rows are skipped (pip install -e '.[ray]')")
            warm = ray_in_process(paths, args.jobs)
            if warm is not None:
                print(f"ray local cluster start-up ({args.jobs} CPUs): {warm[0]:.1f} s")
                rows.append((f"ray, running cluster ({args.jobs} CPUs)", warm[1]))
        rows.append(("cold cache (-j 1)", timed(["--cache-dir", cache, "-j", "1", "."], folder)))
        rows.append(("warm cache (-j 1)", timed(["--cache-dir", cache, "-j", "1", "."], folder)))
        serial = rows[0][1]
        print(f"\n{'mode':<32} {'seconds':>8} {'files/s':>8} {'speed-up':>9}")
        for name, took in rows:
            print(f"{name:<32} {took:>8.2f} {len(paths) / took:>8.1f} {serial / took:>8.2f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
