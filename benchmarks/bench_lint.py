"""How much linting adds to inference, on the 500k-node benchmark model.

    python benchmarks/bench_lint.py [--nodes N] [--repeat R] [--keep DIR]

Builds ``tests/model_builders.squeeze_unsqueeze_chain(N)`` (default 500,000 nodes), then times, the
same way for both (a fresh ``python -m shapeflow`` process, output to /dev/null, best of R runs):

    shapeflow infer MODEL
    shapeflow lint MODEL

and prints the ratio lint / infer, which the lint issue bounds at 1.5. It also prints an in-process
breakdown (load, inference alone, each rule) so that a slow rule is easy to find.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, ROOT)

LIMIT = 1.5


def timed_command(args: list[str], repeat: int) -> tuple[float, float, int]:
    """Best wall time and best CPU time (user + system, which a busy machine disturbs less) of
    ``python -m shapeflow ARGS`` over ``repeat`` runs, and its exit code."""
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    best_wall = best_cpu = float("inf")
    code = 0
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "shapeflow", *args], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, env=env)
        best_wall = min(best_wall, time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        best_cpu = min(best_cpu, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
        code = proc.returncode
        if code not in (0, 1):
            sys.exit(f"shapeflow {' '.join(args)} failed ({code}): {proc.stderr.decode()[-500:]}")
    return best_wall, best_cpu, code


def breakdown(path: str) -> list[tuple[str, float]]:
    from shapeflow.graph import build_graph
    from shapeflow.inference import infer
    from shapeflow.io import load_model
    from shapeflow.rules import LintContext, select_rules

    rows = []
    start = time.perf_counter()
    loaded = load_model(path)
    rows.append(("load", time.perf_counter() - start))
    start = time.perf_counter()
    graph = build_graph(loaded)
    rows.append(("graph index", time.perf_counter() - start))
    start = time.perf_counter()
    inference = infer(graph)
    rows.append(("inference", time.perf_counter() - start))
    ctx = LintContext(path, graph, inference)
    for rule in select_rules():
        start = time.perf_counter()
        n = sum(1 for _ in rule.diagnostics(ctx))
        rows.append((f"{rule.code} {rule.name} ({n} findings)", time.perf_counter() - start))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500_000)
    parser.add_argument("--repeat", type=int, default=1, help="runs per command; the best counts")
    parser.add_argument("--keep", help="write the model into this folder (and reuse it if present)")
    args = parser.parse_args()

    import onnx
    from model_builders import squeeze_unsqueeze_chain

    folder = args.keep or tempfile.mkdtemp(prefix="shapeflow-bench-")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"chain_{args.nodes}.onnx")
    if not os.path.exists(path):
        print(f"building {args.nodes:,}-node model ...", file=sys.stderr)
        onnx.save(squeeze_unsqueeze_chain(args.nodes), path)
    print(f"model: {path} ({os.path.getsize(path) / 1e6:.1f} MB)")

    infer_s, infer_cpu, _ = timed_command(["infer", path], args.repeat)
    lint_s, lint_cpu, lint_code = timed_command(["lint", path], args.repeat)
    print(f"shapeflow infer: {infer_s:8.2f} s wall, {infer_cpu:8.2f} s CPU")
    print(f"shapeflow lint:  {lint_s:8.2f} s wall, {lint_cpu:8.2f} s CPU (exit {lint_code})")
    ratio = lint_s / infer_s
    print(f"lint / infer ratio: {ratio:.2f} wall, {lint_cpu / infer_cpu:.2f} CPU (limit {LIMIT})")

    print("\nin-process breakdown:")
    for label, seconds in breakdown(path):
        print(f"  {seconds:8.3f} s  {label}")
    if not args.keep:
        os.remove(path)
        os.rmdir(folder)
    return 0 if ratio <= LIMIT else 1


if __name__ == "__main__":
    sys.exit(main())
