"""How much linting adds to inference, on the 500k-node benchmark model.

    python benchmarks/bench_lint.py [--sizes 10000,100000,500000] [--repeat R] [--keep DIR]
                                    [--no-breakdown]

Builds ``tests/model_builders.squeeze_unsqueeze_chain(N)`` for each size (default 500,000 nodes;
with ``--keep DIR`` the models are written there and reused when present), then times, the same way
for both (a fresh ``python -m shapeflow`` process, output to /dev/null):

    shapeflow infer MODEL
    shapeflow lint MODEL

The two run back to back in every round (the machine is shared, so each ratio compares runs taken
close together), and each command's best of R rounds counts. Lint reports every rewrite
``optimize`` would make (SF201-SF204): on this model, about 0.43 findings per node.

The bar (the lint issue): lint / infer <= 1.5 on the 500k-node model. It is judged on CPU time
(user + system, which other processes on a busy machine disturb less); the wall-time verdict is
printed next to it. The exit status is 1 when the CPU bar is not met at the largest size.

An in-process breakdown of the largest model follows (load, index, inference, the rewrite
candidate search, each rule, rendering), so that a slow rule is easy to find.
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

LIMIT = 1.5  # lint / infer on the 500k-node model
DEFAULT_SIZES = "500000"


def run_once(args: list[str]) -> tuple[float, float, int]:
    """Wall time, CPU time (user + system) and exit code of ``python -m shapeflow ARGS``."""
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "shapeflow", *args], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        sys.exit(f"shapeflow {' '.join(args)} failed ({proc.returncode}): {proc.stderr.decode()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.returncode


def measure(path: str, repeat: int) -> dict[str, tuple[float, float]]:
    """Best wall and best CPU time of infer and of lint, run back to back in every round."""
    best = {cmd: (float("inf"), float("inf")) for cmd in ("infer", "lint")}
    for _ in range(repeat):
        for cmd in best:
            # --no-cache: every round lints (a warm cache would answer from round 2 on; bench_fleet.py times it)
            wall, cpu, _ = run_once([cmd, "--no-cache", path] if cmd == "lint" else [cmd, path])
            best[cmd] = (min(best[cmd][0], wall), min(best[cmd][1], cpu))
    return best


def breakdown(path: str) -> list[tuple[str, float]]:
    """CPU time of each step of ``lint`` in this process, as ``analysis.analyze`` and the lint
    command do them."""
    from shapeflow.drivers.analysis import gc_paused, rewrite_candidates
    from shapeflow.graph import build_graph
    from shapeflow.inference import infer
    from shapeflow.io import load_model
    from shapeflow.render import format_diagnostic
    from shapeflow.rules import LintContext, rewrites, select_rules

    rows: list[tuple[str, float]] = []
    clock = time.process_time

    def step(label: str, start: float) -> None:
        rows.append((label, clock() - start))

    start = clock()
    loaded = load_model(path)
    step("load", start)
    with gc_paused():  # as analyze runs them
        start = clock()
        graph = build_graph(loaded)
        step("graph index", start)
        start = clock()
        inference = infer(graph)
        step("inference", start)
        ctx = LintContext(path, graph, inference)
        reported: dict[str, list] = {}
        diags = []
        searched = False
        for rule in select_rules():
            if rule.code in rewrites.CODES and not searched:  # the engine's search the SF2xx rules share
                searched = True
                start = clock()
                found = ctx.cache[rewrites.CANDIDATES] = rewrite_candidates(ctx, reported)
                step(f"rewrite candidates for SF201-SF204 ({len(found)})", start)
            start = clock()
            reported[rule.code] = list(rule.diagnostics(ctx))
            diags.extend(reported[rule.code])
            step(f"{rule.code} {rule.name} ({len(reported[rule.code])} findings)", start)
        start = clock()
        diags.sort(key=lambda d: d.sort_key())
        step("sort", start)
    start = clock()
    text = "\n".join(format_diagnostic(d) for d in diags)
    step(f"render text ({len(text) / 1e6:.1f} MB)", start)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help=f"node counts, comma-separated (default {DEFAULT_SIZES})")
    parser.add_argument("--nodes", type=int, help="one size (same as --sizes N)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds per size; the best counts (default 3)")
    parser.add_argument("--keep", help="write the models into this folder (and reuse them if present)")
    parser.add_argument("--no-breakdown", action="store_true", help="skip the in-process breakdown")
    args = parser.parse_args()
    sizes = [args.nodes] if args.nodes else [int(n) for n in args.sizes.split(",") if n.strip()]

    import onnx
    from model_builders import squeeze_unsqueeze_chain

    folder = args.keep or tempfile.mkdtemp(prefix="shapeflow-bench-")
    os.makedirs(folder, exist_ok=True)
    print(f"best of {args.repeat} rounds; infer and lint back to back in each round; bar: lint / infer "
          f"<= {LIMIT} at the largest size, judged on CPU time")
    met_cpu = True
    path = ""
    for n in sizes:
        path = os.path.join(folder, f"chain_{n}.onnx")
        if not os.path.exists(path):
            print(f"building {n:,}-node model ...", file=sys.stderr)
            onnx.save(squeeze_unsqueeze_chain(n), path)
        best = measure(path, args.repeat)
        (iw, ic), (lw, lc) = best["infer"], best["lint"]
        cpu_ratio, wall_ratio = lc / ic, lw / iw
        met_cpu = cpu_ratio <= LIMIT
        print(f"\n{n:,} nodes: {path} ({os.path.getsize(path) / 1e6:.1f} MB)")
        print(f"  shapeflow infer  {iw:8.2f} s wall  {ic:8.2f} s CPU")
        print(f"  shapeflow lint   {lw:8.2f} s wall  {lc:8.2f} s CPU")
        print(f"  lint / infer     {wall_ratio:8.2f}x wall  {cpu_ratio:7.2f}x CPU   (bar {LIMIT}x: "
              f"{'MET' if met_cpu else 'NOT MET'} on CPU, {'met' if wall_ratio <= LIMIT else 'not met'} on wall)")

    if not args.no_breakdown:
        print(f"\nin-process breakdown of lint, {os.path.basename(path)} (CPU s):")
        for label, seconds in breakdown(path):
            print(f"  {seconds:8.3f}  {label}")
    if not args.keep:
        for n in sizes:
            os.remove(os.path.join(folder, f"chain_{n}.onnx"))
        os.rmdir(folder)
    return 0 if met_cpu else 1


if __name__ == "__main__":
    sys.exit(main())
