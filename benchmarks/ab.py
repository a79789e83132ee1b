"""A/B timing of two shapeflow trees in the same run: ``optimize`` and ``lint`` (what bench_optimize.py
and bench_lint.py time) and ``infer`` (text and JSON: bench_infer.py), on the synthetic graphs of
benchmarks/synthetic.py (the chain, and the mix with --kinds) and on corpus models.

    python benchmarks/ab.py --baseline main                       # main against this checkout
    python benchmarks/ab.py --baseline main --sizes 10000,100000 --corpus DIR --repeat 5
    python benchmarks/ab.py --baseline main --kinds chain,mix --commands infer,infer-json,optimize

Each round runs every command once with the baseline tree and once with this one, back to back, in
a fresh ``python -m shapeflow`` process (``PYTHONPATH`` pointing at the tree); a command's best CPU
time (user + system) over the rounds counts, as in bench_lint.py: on a shared machine the best of
several close runs is the steadiest figure. The ratio current / baseline is printed per command
and model, and their geometric mean per command; exit 1 when a mean is over ``--limit`` (1.10).
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def cpu_of(tree: Path, args: list[str]) -> float:
    # Both trees' bytecode cached outside them (a PYTHONDONTWRITEBYTECODE environment would have the
    # tree without a __pycache__ compile every module on every run, some 80 ms on a small model)
    env = dict(os.environ, PYTHONPATH=str(tree),
               PYTHONPYCACHEPREFIX=os.path.join(tempfile.gettempdir(), "sf-ab-pycache"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    # (not from a checkout's root: ``python -m`` puts the working directory first on sys.path, and
    # both sides would import the shapeflow found there)
    proc = subprocess.run([sys.executable, "-m", "shapeflow", *args], env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, cwd=tempfile.gettempdir())
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        sys.exit(f"{tree}: shapeflow {' '.join(args)} failed ({proc.returncode}): {proc.stderr.decode()[-400:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", default="main", help="a git ref or a folder holding the other tree")
    ap.add_argument("--sizes", default="10000,100000,500000", help="sizes of the synthetic graphs")
    ap.add_argument("--kinds", default="chain", help="synthetic graph kinds (benchmarks/synthetic.py)")
    ap.add_argument("--commands", default="optimize,lint", help="of optimize, lint, infer, infer-json")
    ap.add_argument("--corpus", action="append", default=[], help="a folder of models to time too (repeatable)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--limit", type=float, default=1.10)
    ap.add_argument("--workdir")
    args = ap.parse_args(argv)
    from compare_outputs import export_tree  # (benchmarks/ is on sys.path when run as a script)

    work = Path(args.workdir or tempfile.mkdtemp(prefix="sf-ab-"))
    work.mkdir(parents=True, exist_ok=True)
    base = export_tree(args.baseline, work / "baseline-tree")
    current = ROOT
    import onnx
    import synthetic

    models: list[Path] = []
    for kind in (k for k in args.kinds.split(",") if k.strip()):
        for n in (int(s) for s in args.sizes.split(",") if s.strip()):
            path = work / f"{kind}_{n}.onnx"
            if not path.exists():
                onnx.save(synthetic.build(kind, n), str(path))
            models.append(path)
    for folder in args.corpus:
        models.extend(sorted(Path(folder).glob("*.onnx")))
    out = work / "out.onnx"
    every = {
        "optimize": lambda m: ["optimize", str(m), "-o", str(out), "--force", "-q"],
        "lint": lambda m: ["lint", "--no-cache", "--isolated", "-q", str(m)],
        "infer": lambda m: ["infer", "--isolated", "-q", str(m)],
        "infer-json": lambda m: ["infer", "--isolated", "-q", "--format", "json", str(m)],
    }
    commands = {c: every[c] for c in args.commands.split(",") if c.strip()}
    best: dict[tuple[str, str, str], float] = {}
    for _ in range(args.repeat):
        for m in models:
            for name, make in commands.items():
                for side, tree in (("baseline", base), ("current", current)):
                    t = cpu_of(tree, make(m))
                    key = (name, m.name, side)
                    best[key] = min(best.get(key, math.inf), t)
    print(f"{'command':<9} {'model':<44} {'baseline s':>10} {'current s':>10} {'ratio':>7}")
    worst = 0.0
    for name in commands:
        logs = []
        for m in models:
            a, b = best[(name, m.name, "baseline")], best[(name, m.name, "current")]
            ratio = b / a if a > 0 else 1.0
            logs.append(math.log(ratio))
            print(f"{name:<9} {m.name[:44]:<44} {a:>10.3f} {b:>10.3f} {ratio:>7.3f}")
        mean = math.exp(sum(logs) / len(logs)) if logs else 1.0
        worst = max(worst, mean)
        print(f"{name:<9} {'geometric mean':<44} {'':>10} {'':>10} {mean:>7.3f}")
    return 1 if worst > args.limit else 0


if __name__ == "__main__":
    sys.exit(main())
