"""Known dims per model: shapeflow vs onnxruntime's symbolic shape inference (ORT-SSI) vs onnx's
``infer_shapes(data_prop=True)``, with every dim each tool states checked against onnxruntime.

For each model every node output of the main graph is counted: a dim is *known* when it is an int
or an expression over the graph inputs' symbols (a fresh name a tool invents for a data-dependent
size is not). The declared value_info is removed first, so every tool infers from the same model.
Then the model runs in onnxruntime (graph optimisations off, every intermediate exposed) at two
input sizes, and every known dim, with the symbols bound, is compared with the runtime dim; a
mismatch is a *wrong* dim.

Models: ``benchmarks/vision_corpus`` (``make_vision_corpus.py``) and the text transformers of
``../shared/corpus`` when present. Prints a Markdown table::

    python benchmarks/bench_dims.py [--corpus DIR ...]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import onnx

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from shapeflow.drivers.analysis import analyze
from shapeflow.dims import Sym, substitute
from shapeflow.io import load_model_bytes

# A tool's view of one tensor: a list of dims, each an int, a callable binding -> int|None, or None.
Evaluator = Callable[[Mapping[str, int]], "int | None"]
ToolShapes = dict[str, "list[int | Evaluator | None] | None"]


def _strip(model: onnx.ModelProto) -> onnx.ModelProto:
    m = onnx.ModelProto()
    m.CopyFrom(model)
    del m.graph.value_info[:]
    return m


def _input_symbols(model: onnx.ModelProto) -> set[str]:
    return {d.dim_param for vi in model.graph.input for d in vi.type.tensor_type.shape.dim if d.dim_param}


def _tensors(model: onnx.ModelProto) -> list[str]:
    return [o for n in model.graph.node for o in n.output if o]


def shapeflow_shapes(model: onnx.ModelProto, symbols: set[str]) -> ToolShapes:
    a = analyze(load_model_bytes(model.SerializeToString(), "m.onnx"), rules=[])
    out: ToolShapes = {}
    for name in _tensors(model):
        shape = a.inference.shape_of(name)
        if shape is None:
            out[name] = None
            continue
        dims: list = []
        for d in shape:
            if isinstance(d, Sym) and d.symbols() <= symbols:
                dims.append(lambda b, d=d: _as_int(substitute(d, b)))
            else:
                dims.append(d if type(d) is int else None)
        out[name] = dims
    return out


def _as_int(v: object) -> int | None:
    return v if type(v) is int else None


def _from_value_info(model: onnx.ModelProto, symbols: set[str]) -> ToolShapes:
    import sympy

    local = {s: sympy.Symbol(s, integer=True, nonnegative=True) for s in symbols}
    table = {vi.name: vi for vi in list(model.graph.value_info) + list(model.graph.output)}
    out: ToolShapes = {}
    cache: dict[str, object] = {}
    for name in _tensors(model):
        vi = table.get(name)
        if vi is None or not vi.type.tensor_type.HasField("shape"):
            out[name] = None
            continue
        dims: list = []
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_value"):
                dims.append(int(d.dim_value))
            elif d.dim_param:
                expr = cache.get(d.dim_param)
                if expr is None:
                    try:
                        expr = sympy.sympify(d.dim_param, locals=local)
                    except Exception:
                        expr = False
                    cache[d.dim_param] = expr
                if expr is not False and {str(s) for s in expr.free_symbols} <= symbols:  # type: ignore[union-attr]
                    dims.append(lambda b, e=expr: _sympy_int(e, b, local))
                else:
                    dims.append(None)
            else:
                dims.append(None)
        out[name] = dims
    return out


def _sympy_int(expr: object, b: Mapping[str, int], local: Mapping[str, object]) -> int | None:
    try:
        v = expr.subs({local[k]: val for k, val in b.items() if k in local})  # type: ignore[attr-defined]
        return int(v) if v.is_integer else None
    except Exception:
        return None


def ort_ssi_shapes(model: onnx.ModelProto, symbols: set[str]) -> ToolShapes:
    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

    try:
        inferred = SymbolicShapeInference.infer_shapes(model, auto_merge=True, guess_output_rank=False)
    except Exception as e:
        print(f"    ORT-SSI failed: {type(e).__name__}: {str(e)[:100]}", file=sys.stderr)
        return {n: None for n in _tensors(model)}
    return _from_value_info(inferred, symbols)


def onnx_shapes(model: onnx.ModelProto, symbols: set[str]) -> ToolShapes:
    try:
        inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception as e:
        print(f"    onnx failed: {type(e).__name__}: {str(e)[:100]}", file=sys.stderr)
        return {n: None for n in _tensors(model)}
    return _from_value_info(inferred, symbols)


def _session(model: onnx.ModelProto):  # type: ignore[no-untyped-def]
    import onnxruntime as ort

    m = onnx.ModelProto()
    m.CopyFrom(model)
    have = {o.name for o in m.graph.output}
    for name in _tensors(model):
        if name not in have:
            m.graph.output.append(onnx.ValueInfoProto(name=name))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 4
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess, [o.name for o in sess.get_outputs()]


def count(shapes: ToolShapes, runs: list[tuple[Mapping[str, int], Mapping[str, tuple]]]) -> tuple[int, int]:
    """(known dims, wrong dims): a known dim is wrong when it differs from the runtime in some run
    (a rank that differs makes every known dim of the tensor wrong)."""
    known = wrong = 0
    for name, dims in shapes.items():
        if dims is None:
            continue
        stated = [d for d in dims if d is not None]
        known += len(stated)
        for d_index, d in enumerate(dims):
            if d is None:
                continue
            for bindings, runtime in runs:
                rt = runtime.get(name)
                if rt is None:
                    continue
                v = d if type(d) is int else d(bindings)  # type: ignore[operator]
                if len(rt) != len(dims) or (v is not None and v != rt[d_index]):
                    wrong += 1
                    break
    return known, wrong


def vision_runs(model: onnx.ModelProto, entry: dict) -> list[tuple[dict, dict]]:
    sess, names = _session(model)
    runs = []
    rng = np.random.default_rng(0)
    for sizes in entry["sizes"]:
        axes = entry["axes"]
        shape = [sizes[axes[0]], *entry["channels"], *(sizes[a] for a in axes[1:])]
        try:
            outs = sess.run(None, {"x": rng.standard_normal(shape).astype(np.float32)})
        except Exception as e:  # noqa: BLE001  # a size this configuration cannot take: no evidence
            print(f"    {sizes}: onnxruntime refuses ({str(e)[-60:]})", file=sys.stderr)
            continue
        runs.append((dict(sizes), {n: o.shape for n, o in zip(names, outs)}))
    return runs


def text_runs(model: onnx.ModelProto, path: Path) -> list[tuple[dict, dict]]:
    template = dict(np.load(str(path)[: -len(".onnx")] + ".inputs.npz"))
    sess, names = _session(model)
    runs = []
    rng = np.random.default_rng(0)
    for bindings in ({"batch": 1, "seq": 5}, {"batch": 2, "seq": 11}):
        syms = _input_symbols(model)
        b = {s: (bindings["batch"] if "batch" in s else bindings["seq"]) for s in syms}
        feeds = {}
        for vi in model.graph.input:
            shape = [d.dim_value if d.HasField("dim_value") else b[d.dim_param] for d in vi.type.tensor_type.shape.dim]
            like = template[vi.name]
            feeds[vi.name] = rng.integers(int(like.min()), int(like.max()) + 1, size=shape).astype(like.dtype)
        outs = sess.run(None, feeds)
        runs.append((b, {n: o.shape for n, o in zip(names, outs)}))
    return runs


def _group(model: str) -> str:
    """``wav2vec2_1_dynamo_op18.onnx`` -> ``wav2vec2, dynamo op18``; other names stay as they are."""
    parts = model[: -len(".onnx")].split("_")
    for i, p in enumerate(parts):
        if p.isdigit() and i + 2 < len(parts) + 1 and i + 1 < len(parts):
            return f"{'_'.join(parts[:i])}, {' '.join(parts[i + 1:])}"
    return model[: -len(".onnx")]


def print_summary(rows: list[dict]) -> None:
    """The rows summed per family and exporter (the README table)."""
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(_group(r["model"]), []).append(r)
    print("\n| models | count | tensors | shapeflow known | ORT-SSI known | onnx data_prop known "
          "| wrong: shapeflow / ORT-SSI / onnx |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, rs in groups.items():
        def tot(key: str, i: int, rs: list[dict] = rs) -> int:
            return sum(r[key][i] for r in rs)
        print(f"| {name} | {len(rs)} | {sum(r['tensors'] for r in rs)} | {tot('shapeflow', 0)} | {tot('ort_ssi', 0)} "
              f"| {tot('onnx', 0)} | {tot('shapeflow', 1)} / {tot('ort_ssi', 1)} / {tot('onnx', 1)} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vision", type=Path, default=HERE / "vision_corpus")
    ap.add_argument("--text", type=Path, default=ROOT.parent.parent / "shared" / "corpus")
    ap.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = ap.parse_args(argv)
    models: list[tuple[str, Path, Callable[[onnx.ModelProto], list]]] = []
    manifest_path = args.vision / "manifest.json"
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        for fname, entry in manifest.items():
            models.append((fname, args.vision / fname, lambda m, e=entry: vision_runs(m, e)))
    if args.text.is_dir():
        for fname in sorted(os.listdir(args.text)):
            if fname.endswith(".onnx"):
                p = args.text / fname
                models.append((fname, p, lambda m, p=p: text_runs(m, p)))
    rows = []
    print("| model | tensors | shapeflow known | ORT-SSI known | onnx data_prop known | shapeflow wrong | ORT-SSI wrong "
          "| onnx wrong |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for fname, path, runner in models:
        model = _strip(onnx.load(str(path)))
        symbols = _input_symbols(model)
        runs = runner(model)
        sf = count(shapeflow_shapes(model, symbols), runs)
        ssi = count(ort_ssi_shapes(model, symbols), runs)
        ox = count(onnx_shapes(model, symbols), runs)
        row = {"model": fname, "tensors": len(_tensors(model)), "shapeflow": sf, "ort_ssi": ssi, "onnx": ox}
        rows.append(row)
        mark = "" if sf[0] >= ssi[0] else " (<)"
        print(f"| {fname} | {row['tensors']} | {sf[0]}{mark} | {ssi[0]} | {ox[0]} | {sf[1]} | {ssi[1]} | {ox[1]} |",
              flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    print_summary(rows)
    behind = [r["model"] for r in rows if r["shapeflow"][0] < r["ort_ssi"][0]]
    wrong = sum(r["shapeflow"][1] for r in rows)
    print(f"\n{len(rows)} models; shapeflow behind ORT-SSI on {len(behind)} {behind}; shapeflow wrong dims: {wrong}",
          file=sys.stderr)
    return 1 if behind or wrong else 0


if __name__ == "__main__":
    sys.exit(main())
