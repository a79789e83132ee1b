"""``shapeflow infer`` against onnx's and onnxruntime's shape inference, on 10k to 500k nodes.

    python benchmarks/bench_infer.py [--sizes 10000,100000,500000] [--kinds chain,mix] [--skip-ort]
                                     [--skip-osi] [--format text|json|both] [--repeat N] [--timeout S]
                                     [--out results.json] [--keep DIR]

The models are the two kinds of ``benchmarks/synthetic.py``, input ``x: [batch, seq, 8]``, every
shape symbolic: ``chain`` = ``tests/model_builders.squeeze_unsqueeze_chain(N)`` (shape chains
Shape -> Gather -> Unsqueeze -> Concat -> Reshape and Squeeze/Unsqueeze chains, opset 13) and
``mix`` = ``synthetic.mixed_graph(N)`` (shape arithmetic, elementwise ops, reductions, Reshape and
Transpose round trips, opset 17).

Every tool runs in a fresh process on the saved file; a process's wall time, CPU time and peak RSS
(``os.wait4``, per child) are measured from outside, and the child reports the time of its own
load + inference (without interpreter start-up and imports) from inside:

    shapeflow       the real CLI, ``python -m shapeflow infer MODEL`` with stdout to /dev/null,
                    text output; ``shapeflow-json`` the same with ``--format json`` (--format both,
                    the default, runs the two)
    shapeflow-api   in-process breakdown of the same work: load, graph index, inference, lint
                    rules (each rule timed), rendering; not part of the bars
    onnx            ``onnx.load`` + ``onnx.shape_inference.infer_shapes`` (C++)
    onnxruntime     ``onnx.load`` + ``SymbolicShapeInference.infer_shapes`` (--skip-ort)
    osi             ``onnx_ir.load`` + ``onnx_shape_inference.infer_symbolic_shapes`` (--skip-osi)

Each measurement is the best of --repeat runs (default 3, and 2 at 500k nodes). The machine is
shared and noisy, so the tools of one model run interleaved, one after the other in every round:
every ratio compares measurements taken back to back. A run over --timeout (default 600 s) is
killed and reported as "> T" (and not repeated).

Bars (issue 26), per graph kind and output format: shapeflow within 1.5x of onnx at 500k nodes,
peak RSS at or below onnx's, cost growing linearly (time at 500k / time at 100k <= 5.5); at least
5x faster than onnxruntime (issue 5, when it runs). They are judged on the CLI's process times
against the peers' process times (both include interpreter start-up and imports); the in-process
ratios are printed next to them.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

ONNX_BAR = 1.5
ORT_BAR = 5.0
GROWTH_BAR = 5.5

TOOLS = ("shapeflow", "shapeflow-json", "shapeflow-api", "onnx", "onnxruntime", "osi")
KINDS = ("chain", "mix")


# -- children ----------------------------------------------------------------------------------------

def _child(tool: str, path: str, fmt: str, report: str) -> None:
    """Run one tool on ``path`` in this (fresh) process and write its inner timings to ``report``."""
    times: dict[str, float] = {}
    extra: dict[str, object] = {}
    start = time.perf_counter()
    if tool == "onnx":
        import onnx

        times["import"] = time.perf_counter() - start
        t = time.perf_counter()
        model = onnx.load(path)
        times["load"] = time.perf_counter() - t
        t = time.perf_counter()
        onnx.shape_inference.infer_shapes(model)
        times["infer"] = time.perf_counter() - t
    elif tool == "onnxruntime":
        import onnx
        from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

        times["import"] = time.perf_counter() - start
        t = time.perf_counter()
        model = onnx.load(path)
        times["load"] = time.perf_counter() - t
        t = time.perf_counter()
        SymbolicShapeInference.infer_shapes(model)
        times["infer"] = time.perf_counter() - t
    elif tool == "osi":
        import onnx_ir as ir
        from onnx_shape_inference import infer_symbolic_shapes

        times["import"] = time.perf_counter() - start
        t = time.perf_counter()
        model = ir.load(path)
        times["load"] = time.perf_counter() - t
        t = time.perf_counter()
        infer_symbolic_shapes(model)
        times["infer"] = time.perf_counter() - t
    elif tool == "shapeflow-api":
        extra = _shapeflow_stages(path, fmt, times, start)
    else:
        raise SystemExit(f"unknown tool {tool}")
    times["inner"] = sum(v for k, v in times.items() if k != "import")
    with open(report, "w") as f:
        json.dump({"times": times, **extra}, f)


def _shapeflow_stages(path: str, fmt: str, times: dict[str, float], start: float) -> dict[str, object]:
    """What ``shapeflow infer`` does, in process, with each stage timed. ``analyze`` is the real one;
    its graph and inference steps are timed by wrapping the module functions it calls, and each lint
    rule by wrapping its ``diagnostics``."""
    from shapeflow.drivers import analysis
    from shapeflow.io import load_model
    from shapeflow.render import infer_text
    from shapeflow.render.json import infer_json_text
    from shapeflow.rules.base import Rule

    times["import"] = time.perf_counter() - start

    def timed(name: str, fn):  # type: ignore[no-untyped-def]
        def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                times[name] = times.get(name, 0.0) + time.perf_counter() - t0
        return wrapper

    analysis.build_graph = timed("graph", analysis.build_graph)
    analysis.infer = timed("infer", analysis.infer)
    rule_times: dict[str, float] = {}
    diagnostics = Rule.diagnostics

    def timed_rule(self, ctx):  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        out = list(diagnostics(self, ctx))
        rule_times[self.code] = rule_times.get(self.code, 0.0) + time.perf_counter() - t0
        return out

    Rule.diagnostics = timed_rule  # type: ignore[method-assign]  # analyze keeps its own rule set

    t = time.perf_counter()
    loaded = load_model(path)
    times["load"] = time.perf_counter() - t
    t = time.perf_counter()
    result = analysis.analyze(loaded)
    times["rules"] = time.perf_counter() - t - times["graph"] - times["infer"]
    t = time.perf_counter()
    with analysis.gc_paused():
        text = infer_json_text(result) if fmt == "json" else infer_text(result)
    times["render"] = time.perf_counter() - t
    return {"nodes": result.graph.node_count(), "axis_nodes": len(result.inference.axis_nodes),
            "diagnostics": len(result.diagnostics), "output_chars": len(text), "rule_times": rule_times}


# -- measuring ---------------------------------------------------------------------------------------

def measure(argv: list[str], timeout: float, report: str | None = None,
            stdout: int | None = subprocess.DEVNULL) -> dict[str, object]:
    """Run ``argv``; its wall time, CPU time and peak RSS (this child's own, from ``os.wait4``), exit
    code, whether it timed out, and the inner report it wrote, if any.

    Linux carries the parent's RSS high-water mark into a child across fork and exec, so the peak
    RSS of a child is at least this process's RSS: this process never imports onnx or builds a
    model itself, so that floor (about 15 MB) stays below every tool's real peak."""
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.PIPE,
                            env=env, start_new_session=True)
    fired = threading.Event()

    def kill() -> None:
        fired.set()
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    timer = threading.Timer(timeout, kill)
    timer.start()
    # Read stderr on a thread so a chatty child cannot block on a full pipe.
    err_chunks: list[bytes] = []
    reader = threading.Thread(target=lambda: err_chunks.append(proc.stderr.read()))  # type: ignore[union-attr]
    reader.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    timer.cancel()
    reader.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    result: dict[str, object] = {
        "wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_bytes": usage.ru_maxrss * 1024,
        "exit": proc.returncode, "timed_out": fired.is_set(),
        "stderr": b"".join(err_chunks).decode(errors="replace")[-2000:],
    }
    if report is not None and os.path.exists(report) and not fired.is_set():
        with open(report) as f:
            result["report"] = json.load(f)
        os.remove(report)
    return result


def run_tool(tool: str, path: str, fmt: str, timeout: float, workdir: str) -> dict[str, object]:
    if tool in ("shapeflow", "shapeflow-json"):
        argv = [sys.executable, "-m", "shapeflow", "infer", path] + (["--format", "json"] if tool == "shapeflow-json" else [])
        r = measure(argv, timeout)
        if not r["timed_out"] and r["exit"] not in (0, 1):
            raise SystemExit(f"shapeflow infer failed ({r['exit']}): {r['stderr']}")
        return r
    report = os.path.join(workdir, f"report-{tool}.json")
    r = measure([sys.executable, os.path.abspath(__file__), "--child", tool, path, "--format", fmt, "--report", report],
                timeout, report)
    if not r["timed_out"] and r["exit"] != 0:
        r["error"] = r["stderr"].strip().splitlines()[-1] if r["stderr"].strip() else f"exit {r['exit']}"
    return r


def best(runs: list[dict[str, object]]) -> dict[str, object]:
    """The fastest completed run (its RSS is the highest seen, to be safe); a timeout if none completed."""
    done = [r for r in runs if not r["timed_out"] and "error" not in r]
    if not done:
        return runs[0]
    fastest = dict(min(done, key=lambda r: r["wall"]))
    fastest["rss_bytes"] = max(r["rss_bytes"] for r in done)
    fastest["cpu"] = min(r["cpu"] for r in done)
    inner = [r["report"]["times"]["inner"] for r in done if "report" in r]  # type: ignore[index]
    if inner:
        fastest["inner"] = min(inner)
    fastest["runs"] = len(runs)
    return fastest


# -- report ------------------------------------------------------------------------------------------

def _secs(r: dict[str, object] | None, key: str = "wall") -> str:
    if r is None:
        return "-"
    if r.get("timed_out"):
        return f"> {r['timeout']:g}"
    if "error" in r:
        return "error"
    v = r.get(key)
    return "-" if v is None else f"{v:.2f}"


def _ratio(a: dict[str, object] | None, b: dict[str, object] | None, key: str = "wall") -> str:
    if a is None or b is None or "error" in a or "error" in b or a.get(key) is None or b.get(key) is None:
        return "-"
    if a.get("timed_out"):
        return f"> {a['timeout'] / b[key]:.1f}"  # type: ignore[operator]
    if b.get("timed_out"):
        return "-"
    return f"{a[key] / b[key]:.2f}"  # type: ignore[operator]


Results = dict[tuple[str, int], dict[str, dict[str, object]]]  # (kind, nodes) -> tool -> best run


def print_table(results: Results) -> None:
    head = f"{'model':<8} {'nodes':>8}  {'tool':<14} {'seconds':>8} {'cpu s':>7} {'in-proc s':>9} {'peak MB':>8} " \
           f"{'x onnx':>7} {'x onnx cpu':>10} {'x onnx in-proc':>14}"
    print(head)
    print("-" * len(head))
    for (kind, n), tools in results.items():
        onnx_r = tools.get("onnx")
        for tool in TOOLS:
            r = tools.get(tool)
            if r is None:
                continue
            label = {"shapeflow": "shapeflow text", "shapeflow-json": "shapeflow json"}.get(tool, tool)
            rss = "-" if r.get("timed_out") or "error" in r else f"{r['rss_bytes'] / 2**20:.0f}"
            print(f"{kind:<8} {n:>8}  {label:<14} {_secs(r):>8} {_secs(r, 'cpu'):>7} {_secs(r, 'inner'):>9} {rss:>8} "
                  f"{_ratio(r, onnx_r):>7} {_ratio(r, onnx_r, 'cpu'):>10} {_ratio(r, onnx_r, 'inner'):>14}")
            if "error" in r:
                print(f"{'':<18}  {tool} failed: {r['error'][:100]}")


def print_spread(runs: dict[str, dict[str, list[dict[str, object]]]]) -> None:
    """Every run's wall time, and the ratio to onnx of the same round: how noisy the machine was."""
    print("\nspread (wall s of every round; in brackets the ratio to onnx in that round):")
    for key, tools in runs.items():
        onnx_runs = tools.get("onnx", [])
        for tool, rs in tools.items():
            if tool == "onnx" or not rs:
                continue
            cells = []
            for i, r in enumerate(rs):
                if r.get("timed_out") or "error" in r:
                    cells.append("-")
                    continue
                o = onnx_runs[i] if i < len(onnx_runs) else None
                ratio = f" [{r['wall'] / o['wall']:.2f}]" if o and not o.get("timed_out") and "error" not in o else ""  # type: ignore[operator]
                cells.append(f"{r['wall']:.2f}{ratio}")
            print(f"  {key:<14} {tool:<15} " + ", ".join(cells))


def print_stages(results: Results) -> None:
    print("\nshapeflow in process (best run; µs per node in brackets):")
    for (kind, n), tools in results.items():
        r = tools.get("shapeflow-api")
        if r is None or "report" not in r:
            continue
        rep = r["report"]
        t = rep["times"]  # type: ignore[index]
        parts = [f"{k} {t[k]:.2f} s [{t[k] / n * 1e6:.1f}]" for k in ("load", "graph", "infer", "rules", "render") if k in t]
        print(f"  {kind:<5} {n:>7} nodes: " + ", ".join(parts) + f"; total {t['inner']:.2f} s [{t['inner'] / n * 1e6:.1f}]")
        rules = rep.get("rule_times", {})  # type: ignore[union-attr]
        total = sum(rules.values()) or 1.0
        big = sorted(((v, k) for k, v in rules.items() if v >= 0.05 * total), reverse=True)
        if big:
            print(f"  {'':>13}        rules over 5%: " + ", ".join(f"{k} {v:.2f} s" for v, k in big))


def verdicts(results: Results) -> list[tuple[str, bool | None, bool | None]]:
    """(text, met on wall times, met on CPU times) per bar. The bars are judged on wall times; the
    CPU-time verdict is printed next to it because other processes on a busy machine stretch wall
    times far more than CPU times (when the two disagree, the machine was busy). The onnx bars
    (time and RSS) are judged at the largest size of each kind; the growth bar needs 100k and 500k."""
    out: list[tuple[str, bool | None, bool | None]] = []

    def usable(*runs: dict[str, object] | None) -> bool:
        return all(r is not None and not r.get("timed_out") and "error" not in r for r in runs)

    largest = {kind: max(n for k, n in results if k == kind) for kind, _ in results}
    for (kind, n), tools in results.items():
        onnx_r, api = tools.get("onnx"), tools.get("shapeflow-api")
        for tool in ("shapeflow", "shapeflow-json"):
            sf = tools.get(tool)
            if not usable(sf, onnx_r):
                continue
            fmt = "json" if tool == "shapeflow-json" else "text"
            wall = sf["wall"] / onnx_r["wall"]  # type: ignore[index, operator]
            cpu = sf["cpu"] / onnx_r["cpu"]  # type: ignore[index, operator]
            text = f"{kind} {fmt}: within {ONNX_BAR:g}x of onnx at {n:,} nodes: {wall:.2f}x (cpu {cpu:.2f}x"
            if fmt == "text" and usable(api) and api.get("inner") and onnx_r.get("inner"):  # type: ignore[union-attr]
                text += f", in process {api['inner'] / onnx_r['inner']:.2f}x"  # type: ignore[index, operator]
            bar = n == largest[kind]
            out.append((text + ")" + ("" if bar else " [information]"),
                        wall <= ONNX_BAR if bar else None, cpu <= ONNX_BAR if bar else None))
            if bar:
                ours, theirs = sf["rss_bytes"], onnx_r["rss_bytes"]  # type: ignore[index]
                ok = ours <= theirs  # type: ignore[operator]
                out.append((f"{kind} {fmt}: peak RSS <= onnx's at {n:,} nodes: {ours / 2**20:.0f} vs "  # type: ignore[operator]
                            f"{theirs / 2**20:.0f} MiB ({ours / theirs:.2f}x)", ok, ok))  # type: ignore[operator]
    for (kind, n), tools in results.items():
        sf, ort = tools.get("shapeflow"), tools.get("onnxruntime")
        if not usable(sf) or ort is None:
            continue
        head = f"{kind}: {ORT_BAR:g}x faster than onnxruntime at {n:,} nodes: "
        if "error" in ort:
            out.append((head + "onnxruntime failed", None, None))
        elif ort.get("timed_out"):
            holds = sf["wall"] * ORT_BAR < ort["timeout"]  # type: ignore[index, operator]
            out.append((head + f"onnxruntime > {ort['timeout']:g} s, shapeflow {sf['wall']:.2f} s "  # type: ignore[index]
                        f"(> {ort['timeout'] / sf['wall']:.0f}x)", holds, None))  # type: ignore[index, operator]
        else:
            wall = ort["wall"] / sf["wall"]  # type: ignore[index, operator]
            cpu = ort["cpu"] / sf["cpu"]  # type: ignore[index, operator]
            out.append((head + f"{wall:.1f}x (cpu {cpu:.1f}x)", wall >= ORT_BAR, cpu >= ORT_BAR))
    for kind in KINDS:
        if (kind, 100_000) not in results or (kind, 500_000) not in results:
            continue
        for tool in ("shapeflow", "shapeflow-json", "onnx"):
            a, b = results[kind, 100_000].get(tool), results[kind, 500_000].get(tool)
            if not usable(a, b):
                continue
            wall = b["wall"] / a["wall"]  # type: ignore[index, operator]
            cpu = b["cpu"] / a["cpu"]  # type: ignore[index, operator]
            text = f"{kind} {tool}: linear growth, time 500k / 100k <= {GROWTH_BAR:g}: {wall:.2f} (cpu {cpu:.2f})"
            if tool == "onnx":
                out.append((text + " [information]", None, None))
            else:
                out.append((text, wall <= GROWTH_BAR, cpu <= GROWTH_BAR))
    return out


# -- main --------------------------------------------------------------------------------------------

def build_model(kind: str, n: int, opset: int | None, directory: str) -> str:
    """Save the n-node model of ``kind`` (in a child process: this one stays small, see ``measure``)."""
    path = os.path.join(directory, f"{kind}_{n}_op{opset or 'default'}.onnx")
    if not os.path.exists(path):
        subprocess.run([sys.executable, os.path.join(HERE, "synthetic.py"), kind, str(n), path]
                       + (["--opset", str(opset)] if opset else []), check=True)
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,500000", help="node counts, comma-separated")
    parser.add_argument("--skip-ort", action="store_true", help="do not run onnxruntime's symbolic inference")
    parser.add_argument("--skip-osi", action="store_true", help="do not run the onnx-shape-inference package")
    parser.add_argument("--kinds", default="chain,mix", help="graph kinds (benchmarks/synthetic.py), comma-separated")
    parser.add_argument("--format", choices=("text", "json", "both"), default="both", help="shapeflow's output format")
    parser.add_argument("--repeat", type=int, default=None, help="runs per tool (default 3, 2 at 500k nodes)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds before a run is killed")
    parser.add_argument("--opset", type=int, default=None, help="default: 13 for the chain, 17 for the mix")
    parser.add_argument("--out", help="write every measurement as JSON here")
    parser.add_argument("--keep", help="directory for the models (kept); default: a temporary one")
    parser.add_argument("--child", nargs=2, metavar=("TOOL", "MODEL"), help=argparse.SUPPRESS)
    parser.add_argument("--report", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        _child(args.child[0], args.child[1], args.format, args.report)
        return 0

    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    kinds = [k for k in args.kinds.split(",") if k.strip()]
    tools = ["onnx"] + {"text": ["shapeflow"], "json": ["shapeflow-json"],
                        "both": ["shapeflow", "shapeflow-json"]}[args.format] + ["shapeflow-api"]
    if not args.skip_ort:
        tools.append("onnxruntime")
    if not args.skip_osi:
        # find_spec, not import: this process must stay small (see ``measure``)
        if importlib.util.find_spec("onnx_shape_inference") is None or importlib.util.find_spec("onnx_ir") is None:
            print("onnx-shape-inference is not installed: skipped", file=sys.stderr)
        else:
            tools.append("osi")

    # Byte-compile shapeflow as pip does when it installs a wheel: onnx and onnxruntime are timed
    # from their compiled files, and an editable install under PYTHONDONTWRITEBYTECODE would
    # otherwise recompile shapeflow's modules in every run (about 40 ms of start-up).
    import compileall

    compileall.compile_dir(os.path.join(ROOT, "shapeflow"), quiet=1)

    workdir = args.keep or tempfile.mkdtemp(prefix="bench_infer_")
    os.makedirs(workdir, exist_ok=True)
    results: Results = {}
    raw: dict[str, object] = {"sizes": sizes, "kinds": kinds, "format": args.format, "opset": args.opset,
                              "runs": {}, "load_average": [os.getloadavg()[0]]}
    for kind in kinds:
        for n in sizes:
            print(f"building the {n:,}-node {kind} model ...", file=sys.stderr, flush=True)
            path = build_model(kind, n, args.opset, workdir)
            repeat = args.repeat or (2 if n >= 500_000 else 3)
            runs: dict[str, list[dict[str, object]]] = {t: [] for t in tools}
            for k in range(repeat):
                for tool in tools:
                    if runs[tool] and (runs[tool][-1].get("timed_out") or "error" in runs[tool][-1]):
                        continue  # a timeout or a failure is not repeated
                    print(f"  {kind} {n:,} nodes, round {k + 1}/{repeat}: {tool}", file=sys.stderr, flush=True)
                    r = run_tool(tool, path, "text", args.timeout, workdir)
                    r["timeout"] = args.timeout
                    runs[tool].append(r)
            results[kind, n] = {t: best(rs) for t, rs in runs.items()}
            raw["runs"][f"{kind}_{n}"] = runs  # type: ignore[index]
    raw["load_average"].append(os.getloadavg()[0])  # type: ignore[attr-defined]

    print(f"\nsynthetic models ({', '.join(kinds)}; benchmarks/synthetic.py); best of "
          f"{'/'.join(str(args.repeat or (2 if n >= 500_000 else 3)) for n in sizes)} runs per tool "
          f"(the spread of the runs is under 'spread'); "
          f"seconds = wall time of a fresh process (start-up, imports, load, inference, output), "
          f"cpu s = its user + system time, in-proc = load + inference (+ lint and rendering for shapeflow) "
          f"timed inside it; peak MB = the process's peak RSS (MiB)")
    print_table(results)
    print_spread(raw["runs"])  # type: ignore[arg-type]
    print_stages(results)
    print()
    checks = verdicts(results)
    loads = raw["load_average"]  # type: ignore[index]
    print(f"load average (1 min) before / after: {loads[0]:.1f} / {loads[1]:.1f} on {os.cpu_count()} CPUs"  # type: ignore[index]
          + ("  -- a busy machine: trust the cpu columns more than the wall ones"
             if max(loads) > (os.cpu_count() or 1) else ""))  # type: ignore[arg-type]

    def mark(ok: bool | None) -> str:
        return "MET" if ok else ("?" if ok is None else "NOT MET")

    for text, ok_wall, ok_cpu in checks:
        print(f"{mark(ok_wall):<7}  {text}" + (f"  [on cpu time: {mark(ok_cpu)}]" if ok_cpu != ok_wall else ""))
    if args.out:
        raw["best"] = {f"{kind}_{n}": v for (kind, n), v in results.items()}
        raw["verdicts"] = [{"bar": t, "met_wall": w, "met_cpu": c} for t, w, c in checks]
        with open(args.out, "w") as f:
            json.dump(raw, f, indent=2, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
