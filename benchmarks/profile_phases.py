"""Where the time of ``shapeflow infer`` and ``shapeflow optimize`` goes, phase by phase, on the
synthetic graphs of benchmarks/synthetic.py (issue 26's profile; docs/performance.md shows one run).

    python benchmarks/profile_phases.py [--sizes 100000,500000] [--kinds chain,mix]
                                        [--commands infer,infer-json,optimize] [--keep DIR]
                                        [--cprofile N] [--json out.json]

Every (kind, size, command) runs in a fresh process: the real command line (``shapeflow.cli``), with
stdout to /dev/null, and ``time.process_time`` wrappers put around the module functions it calls
(in this benchmark only: the product has no timing code). The clock is the process's CPU time, not
the wall clock: on a shared machine other processes stretch wall times, hardly CPU times (the
commands are single-threaded). Each wrapper counts the time spent in it minus the time of the
wrappers it calls, so the phases add up to the process's CPU time:

    start        interpreter start-up and imports (the process's CPU time before the command)
    load         io.load_model: read and parse the file
    index        graph.build_graph (the analysis's, and every optimize round's own)
    inference    inference._run, first pass; "proofs pass" = the second pass, run when the first
                 proved ranges (a -1 Reshape proves seq >= 1)
    rules        the lint rules (analysis._judge)
    render       infer's table or JSON (infer_cmd._print_result)
    carry        optimize: a round's inference carried over (passes.reinfer)
    context      optimize: a round's RoundContext.build
    rewrites     optimize: the rewrites of a round (passes.rounds.run_round)
    finish       optimize: sweep, write-back, and the another-round decision (fixpoint._finish_round)
    write        optimize: serialize and save (io.save_model)
    other        the rest of the command (counts, report, engine glue)

``--cprofile N`` also runs each under cProfile and prints its N functions of largest own time
(cProfile slows Python code 1.5-2x: its shares are rough, the phases are not).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
COMMANDS = ("infer", "infer-json", "optimize")
PHASES = ("start", "load", "index", "inference", "proofs pass", "rules", "render", "carry", "context",
          "rewrites", "finish", "write", "other")


# -- the child ---------------------------------------------------------------------------------------

class _Clock:
    """Exclusive time per phase: a phase's time excludes the timed phases it calls."""

    def __init__(self) -> None:
        self.own: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self.stack: list[list[float]] = []  # [start, time of timed callees]

    def wrap(self, name: str | None, fn, label=None):  # type: ignore[no-untyped-def]
        clock = self

        def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
            phase = label(clock) if label is not None else name
            frame = [time.process_time(), 0.0]
            clock.stack.append(frame)
            try:
                return fn(*args, **kwargs)
            finally:
                clock.stack.pop()
                spent = time.process_time() - frame[0]
                clock.own[phase] = clock.own.get(phase, 0.0) + spent - frame[1]
                clock.calls[phase] = clock.calls.get(phase, 0) + 1
                if clock.stack:
                    clock.stack[-1][1] += spent
        return wrapper


def _child(command: str, model: str, out: str, report: str, cprofile: int) -> None:
    started = time.perf_counter()
    from shapeflow import inference
    from shapeflow.cli import infer_cmd, optimize_cmd
    from shapeflow.drivers import analysis
    from shapeflow.passes import fixpoint

    clock = _Clock()
    infer_cmd.load_model = clock.wrap("load", infer_cmd.load_model)
    optimize_cmd.load_model = clock.wrap("load", optimize_cmd.load_model)
    analysis.build_graph = clock.wrap("index", analysis.build_graph)
    fixpoint.build_graph = clock.wrap("index", fixpoint.build_graph)
    runs = [0]

    def which_pass(_: _Clock) -> str:
        runs[0] += 1
        return "proofs pass" if runs[0] >= 2 else "inference"

    # inference.infer runs _run once, and again when it proved ranges: the second run of one
    # infer call is the proofs pass.
    real_infer = inference.infer

    def infer_marked(*args, **kwargs):  # type: ignore[no-untyped-def]
        runs[0] = 0
        return real_infer(*args, **kwargs)

    inference._run = clock.wrap(None, inference._run, which_pass)
    analysis.infer = infer_marked
    fixpoint.infer = infer_marked
    analysis._judge = clock.wrap("rules", analysis._judge)
    infer_cmd._print_result = clock.wrap("render", infer_cmd._print_result)
    fixpoint.carry_inference = clock.wrap("carry", fixpoint.carry_inference)
    build = fixpoint.RoundContext.build
    fixpoint.RoundContext.build = clock.wrap("context", build)  # type: ignore[method-assign]
    fixpoint.run_round = clock.wrap("rewrites", fixpoint.run_round)
    fixpoint._finish_round = clock.wrap("finish", fixpoint._finish_round)
    optimize_cmd.save_model = clock.wrap("write", optimize_cmd.save_model)
    imported = time.perf_counter() - started

    from shapeflow.cli import main as run_cli  # (cli.run would os._exit before the report)

    argv = {"infer": ["infer", model], "infer-json": ["infer", model, "--format", "json"],
            "optimize": ["optimize", model, "-o", out, "--force", "-q"]}[command]
    sys.argv = ["shapeflow", *argv]
    profiler = None
    if cprofile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    t0 = time.process_time()
    wall0 = time.perf_counter()
    try:
        run_cli()
    except SystemExit:
        pass
    total = time.process_time() - t0
    wall = time.perf_counter() - wall0
    if profiler is not None:
        profiler.disable()
        import io
        import pstats

        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(cprofile)
        sys.stderr.write(text.getvalue())
    own = dict(clock.own)
    own["other"] = total - sum(own.values())
    with open(report, "w") as f:
        json.dump({"imported": imported, "command": total, "start": t0, "command_wall": wall,
                   "phases": own, "calls": clock.calls}, f)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # as cli.run exits: without freeing the model object by object


# -- the parent --------------------------------------------------------------------------------------

def run_one(command: str, model: str, workdir: str, cprofile: int) -> dict[str, object]:
    report = os.path.join(workdir, "report.json")
    out = os.path.join(workdir, "out.onnx")
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", command, model, out, report,
                             str(cprofile)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, err = proc.communicate()
    wall = time.perf_counter() - start
    if not os.path.exists(report):
        raise SystemExit(f"{command} {model} failed: {err.decode(errors='replace')[-2000:]}")
    with open(report) as f:
        rep = json.load(f)
    os.remove(report)
    rep["wall"] = wall
    rep["cpu"] = rep["start"] + rep["command"]
    rep["phases"]["start"] = rep["start"]
    if cprofile:
        rep["cprofile"] = err.decode(errors="replace")
    return rep


def table(results: dict[str, dict[str, object]]) -> str:
    """One row per run: µs of CPU time per node in each phase, the total, and the seconds."""
    used = [p for p in PHASES if any(r["phases"].get(p, 0) >= 5e-4 for r in results.values())]  # type: ignore[attr-defined]
    lines = ["µs of CPU time per node, by phase (exclusive times: a row adds up to the process's CPU time)", "",
             "| run | " + " | ".join(used) + " | **total** | CPU s | wall s | rounds |",
             "|---|" + "---:|" * (len(used) + 4)]
    for key, r in results.items():
        n = int(key.split()[1].replace(",", ""))
        phases: dict[str, float] = r["phases"]  # type: ignore[assignment]
        cells = ["" if phases.get(p, 0) < 5e-4 else f"{phases[p] / n * 1e6:.1f}" for p in used]
        rounds = r["calls"].get("rewrites", "")  # type: ignore[attr-defined]
        lines.append(f"| {key} | " + " | ".join(cells) + f" | **{r['cpu'] / n * 1e6:.1f}** | "  # type: ignore[operator]
                     f"{r['cpu']:.1f} | {r['wall']:.0f} | {rounds} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100000,500000")
    ap.add_argument("--kinds", default="chain,mix")
    ap.add_argument("--commands", default=",".join(COMMANDS))
    ap.add_argument("--keep", help="folder for the models (kept and reused)")
    ap.add_argument("--cprofile", type=int, default=0, metavar="N", help="also print the top N functions")
    ap.add_argument("--json", help="write the measurements here")
    ap.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        command, model, out, report, top = args.child
        _child(command, model, out, report, int(top))
        return 0
    workdir = args.keep or tempfile.mkdtemp(prefix="profile_phases_")
    os.makedirs(workdir, exist_ok=True)
    results: dict[str, dict[str, object]] = {}
    for kind in args.kinds.split(","):
        for n in (int(s) for s in args.sizes.split(",")):
            model = os.path.join(workdir, f"{kind}_{n}.onnx")
            if not os.path.exists(model):
                subprocess.run([sys.executable, os.path.join(HERE, "synthetic.py"), kind, str(n), model], check=True)
            for command in args.commands.split(","):
                print(f"{kind} {n:,} {command} ...", file=sys.stderr, flush=True)
                rep = run_one(command, model, workdir, args.cprofile)
                results[f"{kind} {n:,} {command}"] = rep
                if args.cprofile:
                    print(f"--- {kind} {n:,} {command}\n{rep['cprofile']}")
    print(table(results))
    print(f"\nload average (1 min) at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
