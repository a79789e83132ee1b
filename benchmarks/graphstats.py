"""Whole-graph statistics of an ONNX model, and the onnxruntime check of an optimized model.

Counts (``graph_stats``), over the main graph, every subgraph (If/Loop/Scan bodies, at any depth)
and every model-local function:

* ``nodes``: all nodes;
* ``squeeze_unsqueeze``: Squeeze and Unsqueeze nodes of the default domain;
* ``shape_arith``: the shape-arithmetic nodes. A node counts when it is not ``Constant`` nor
  ``Identity`` and ALL of its (non-empty) outputs are integer or bool tensors (int4..int64,
  uint4..uint64, bool). The type of an output is taken, in this order, from the graph's
  ``value_info``/outputs/inputs/initializers after ``onnx.shape_inference.infer_shapes(model,
  strict_mode=False)`` on the model being counted (a subgraph also sees its enclosing scopes), then
  from the op schema at the model's opset when that output's type constraint allows exactly one
  type (Shape, Size, NonZero -> int64; Equal, Less... -> bool). An output whose type is known by
  neither way, or is not a tensor, makes the node not count. Function bodies get no inferred types:
  only the schema rule applies there.

``signature`` gives what a caller of the model sees: the graph inputs that are not initializers and
the graph outputs, each as (name, element type, shape), the shape as a tuple of ints, symbolic dim
names and None for unknown dims (None for the whole shape when the model states none).

Run as a script, ``check`` (the onnxruntime part of ``bench_optimize.py``) runs the original model and
every optimized model on the same inputs and writes one JSON line per optimized model: whether every
output is bit-identical (``np.array_equal`` with the same dtype and shape) with graph optimizations
disabled (the bar) and enabled (for information), and the median latency at ``ORT_DISABLE_ALL`` and
``ORT_ENABLE_ALL`` with one thread, batch 1::

    python benchmarks/graphstats.py ORIGINAL FEEDS0.npz FEEDS1.npz OUT.jsonl RUNS TOOL=PATH...
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx

INTEGER_TYPES = frozenset({
    onnx.TensorProto.INT8, onnx.TensorProto.INT16, onnx.TensorProto.INT32, onnx.TensorProto.INT64,
    onnx.TensorProto.UINT8, onnx.TensorProto.UINT16, onnx.TensorProto.UINT32, onnx.TensorProto.UINT64,
    onnx.TensorProto.BOOL,
    *(getattr(onnx.TensorProto, n) for n in ("INT4", "UINT4", "INT2", "UINT2") if hasattr(onnx.TensorProto, n)),
})
# "tensor(int64)" -> TensorProto.INT64, for the schema rule
_TYPE_STRS = {f"tensor({name.lower()})": value for name, value in onnx.TensorProto.DataType.items()}


@dataclass(frozen=True)
class GraphStats:
    nodes: int
    squeeze_unsqueeze: int
    shape_arith: int


def _schema_type(node: onnx.NodeProto, index: int, opsets: dict[str, int]) -> int | None:
    """The element type of output ``index`` when the op's schema allows exactly one, else None."""
    domain = "" if node.domain in ("", "ai.onnx") else node.domain
    try:
        schema = onnx.defs.get_schema(node.op_type, opsets.get(domain, 1), domain)
    except Exception:  # unknown op or domain (onnx raises SchemaError)
        return None
    outs = schema.outputs
    if not outs:
        return None
    if index >= len(outs) and outs[-1].option != onnx.defs.OpSchema.FormalParameterOption.Variadic:
        return None
    type_str = outs[min(index, len(outs) - 1)].type_str
    allowed = {c.type_param_str: list(c.allowed_type_strs) for c in schema.type_constraints}.get(type_str, [type_str])
    return _TYPE_STRS.get(allowed[0]) if len(allowed) == 1 else None


def _graph_types(graph: onnx.GraphProto, outer: dict[str, int | None]) -> dict[str, int | None]:
    """name -> tensor element type (None: known not to be a tensor) in this graph's scope."""
    types = dict(outer)
    for init in graph.initializer:
        types[init.name] = init.data_type
    for sparse in graph.sparse_initializer:
        types[sparse.values.name] = sparse.values.data_type
    for vi in (*graph.input, *graph.value_info, *graph.output):
        if vi.type.HasField("tensor_type"):
            if vi.type.tensor_type.elem_type:
                types[vi.name] = vi.type.tensor_type.elem_type
        elif vi.type.WhichOneof("value"):
            types[vi.name] = None
    return types


def _is_shape_arith(node: onnx.NodeProto, types: dict[str, int | None], opsets: dict[str, int]) -> bool:
    if node.op_type in ("Constant", "Identity") and node.domain in ("", "ai.onnx"):
        return False
    outs = [(i, o) for i, o in enumerate(node.output) if o]
    if not outs:
        return False
    for i, name in outs:
        t = types[name] if name in types else _schema_type(node, i, opsets)
        if t not in INTEGER_TYPES:
            return False
    return True


def graph_stats(model: onnx.ModelProto, infer: bool = True) -> GraphStats:
    """Node, Squeeze+Unsqueeze and shape-arithmetic counts (module docstring: the rule)."""
    if infer:
        try:
            model = onnx.shape_inference.infer_shapes(model, strict_mode=False)
        except Exception:  # a model onnx cannot infer is still counted, with the schema rule only
            pass
    opsets = {("" if o.domain == "ai.onnx" else o.domain): o.version for o in model.opset_import}
    nodes = su = arith = 0
    stack: list[tuple[onnx.GraphProto | onnx.FunctionProto, dict[str, int | None]]] = [(model.graph, {})]
    stack.extend((f, {}) for f in model.functions)
    while stack:
        body, outer = stack.pop()
        types = _graph_types(body, outer) if isinstance(body, onnx.GraphProto) else {}
        for n in body.node:
            nodes += 1
            if n.op_type in ("Squeeze", "Unsqueeze") and n.domain in ("", "ai.onnx"):
                su += 1
            if _is_shape_arith(n, types, opsets):
                arith += 1
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    stack.append((a.g, types))
                stack.extend((g, types) for g in a.graphs)
    return GraphStats(nodes, su, arith)


def leftovers(model: onnx.ModelProto) -> tuple[dict[str, int], dict[str, int]]:
    """What is left, in the main graph, to tell one tool's output from another's: each Squeeze and
    Unsqueeze as ``producer > Op > consumers`` (``input``/``init`` for a graph input or an
    initializer, ``out`` for a graph output), and the shape-arithmetic nodes counted by op type."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    except Exception:  # noqa: BLE001  # the schema rule alone, as graph_stats does
        inferred = model
    opsets = {("" if o.domain == "ai.onnx" else o.domain): o.version for o in model.opset_import}
    types = _graph_types(inferred.graph, {})
    graph = model.graph
    producer = {o: n.op_type for n in graph.node for o in n.output}
    producer.update({i.name: "init" for i in graph.initializer})
    producer.update({i.name: "input" for i in graph.input if i.name not in producer})
    consumers: dict[str, list[str]] = {}
    for n in graph.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n.op_type)
    for o in graph.output:
        consumers.setdefault(o.name, []).append("out")
    su: dict[str, int] = {}
    arith: dict[str, int] = {}
    for n in graph.node:
        if n.op_type in ("Squeeze", "Unsqueeze") and n.domain in ("", "ai.onnx"):
            after = ",".join(sorted(set(consumers.get(n.output[0], [])))) or "-"
            key = f"{producer.get(n.input[0], '?')} > {n.op_type} > {after}"
            su[key] = su.get(key, 0) + 1
        if _is_shape_arith(n, types, opsets):
            arith[n.op_type] = arith.get(n.op_type, 0) + 1
    return su, arith


Dim = int | str | None
Signature = list[tuple[str, str, int, tuple[Dim, ...] | None]]


def signature(model: onnx.ModelProto) -> Signature:
    """("in"/"out", name, element type, shape) of every graph input (not an initializer) and output."""
    inits = {i.name for i in model.graph.initializer}
    sig: Signature = []
    for kind, values in (("in", [v for v in model.graph.input if v.name not in inits]), ("out", model.graph.output)):
        for v in values:
            tt = v.type.tensor_type
            shape: tuple[Dim, ...] | None = None
            if tt.HasField("shape"):
                shape = tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tt.shape.dim)
            sig.append((kind, v.name, tt.elem_type, shape))
    return sig


def feeds(model: onnx.ModelProto, symbols: dict[str, int], seed: int, vocab: int = 1000) -> dict[str, np.ndarray]:
    """Inputs for every non-initializer graph input: symbolic dims from ``symbols`` (a dim whose name is
    missing there: 1 for names with "batch", else the largest value given), floats normal, integer
    inputs named like a mask all ones, token type ids zeros, position ids 0, 1, 2... along the last
    axis, other integers in [1, vocab), bools random."""
    gen = np.random.default_rng(seed)
    inits = {i.name for i in model.graph.initializer}
    other = max(symbols.values(), default=1)
    out: dict[str, np.ndarray] = {}
    for v in model.graph.input:
        if v.name in inits:
            continue
        tt = v.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else
                symbols.get(d.dim_param, 1 if "batch" in d.dim_param.lower() else other) for d in tt.shape.dim]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
        if np.issubdtype(dtype, np.floating):
            out[v.name] = gen.standard_normal(dims).astype(dtype)
        elif dtype == np.bool_:
            out[v.name] = gen.random(dims) < 0.5
        elif "mask" in v.name.lower():
            out[v.name] = np.ones(dims, dtype=dtype)
        elif "token_type" in v.name.lower():
            out[v.name] = np.zeros(dims, dtype=dtype)
        elif "position" in v.name.lower() and dims:
            out[v.name] = np.broadcast_to(np.arange(dims[-1], dtype=dtype), dims).copy()
        else:
            out[v.name] = gen.integers(1, vocab, size=dims).astype(dtype)
    return out


# ---------------------------------------------------------------------------------------------------
# onnxruntime check (a child process of bench_optimize.py: a runtime crash costs one model, not the run)

def _session(path: str, level: Any) -> Any:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = level
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    if level == ort.GraphOptimizationLevel.ORT_DISABLE_ALL:
        # the graphs' semantics, as optimize --verify compares them: a MatMul weight that is an
        # initializer is pre-packed and summed in another order than one computed by a node
        so.add_session_config_entry("session.disable_prepacking", "1")
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def _run(sess: Any, feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    names = [o.name for o in sess.get_outputs()]
    wanted = {i.name for i in sess.get_inputs()}
    return dict(zip(names, sess.run(names, {k: v for k, v in feed.items() if k in wanted})))


def _differs(ref: dict[str, np.ndarray], got: dict[str, np.ndarray]) -> str | None:
    """None when every output is bit-identical (same names, dtypes, shapes, values), else why not."""
    if set(ref) != set(got):
        return f"outputs {sorted(got)} != {sorted(ref)}"
    for name, r in ref.items():
        g = np.asarray(got[name])
        r = np.asarray(r)
        if g.dtype != r.dtype or g.shape != r.shape:
            return f"{name}: {g.dtype}{list(g.shape)} != {r.dtype}{list(r.shape)}"
        if not np.array_equal(g, r, equal_nan=r.dtype.kind in "fc"):
            diff = float(np.max(np.abs(g.astype(np.float64) - r.astype(np.float64)))) if r.size else 0.0
            return f"{name}: values differ (max |diff| {diff:.3g})"
    return None


def _latency(sess: Any, feed: dict[str, np.ndarray], runs: int) -> float:
    """Median seconds of ``runs`` runs after a warmup of max(3, runs // 5)."""
    names = [o.name for o in sess.get_outputs()]
    wanted = {i.name for i in sess.get_inputs()}
    feed = {k: v for k, v in feed.items() if k in wanted}
    for _ in range(max(3, runs // 5)):
        sess.run(names, feed)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        sess.run(names, feed)
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def check(original: str, feed_files: list[str], out: str, runs: int, targets: list[tuple[str, str]]) -> None:
    import onnxruntime as ort

    levels = {"disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL, "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}
    bindings = [dict(np.load(f)) for f in feed_files]
    refs: dict[str, list[dict[str, np.ndarray]]] = {}
    for key, level in levels.items():
        sess = _session(original, level)
        refs[key] = [_run(sess, b) for b in bindings]
    for tool, path in targets:
        rec: dict[str, Any] = {"tool": tool}
        try:
            for key, level in levels.items():
                sess = _session(path, level)
                why = None
                for i, b in enumerate(bindings):
                    why = _differs(refs[key][i], _run(sess, b))
                    if why:
                        why = f"binding {i}: {why}"
                        break
                rec[f"exact_{key}"] = why is None
                rec[f"why_{key}"] = why
                rec[f"latency_{key}"] = _latency(sess, bindings[0], runs)
        except Exception as e:
            rec["error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:160] if str(e).strip() else ''}"
        with open(out, "a") as fh:
            fh.write(json.dumps(rec) + "\n")


def main(argv: list[str]) -> int:
    original, f0, f1, out, runs, *targets = argv
    check(original, [f0, f1], out, int(runs), [tuple(t.split("=", 1)) for t in targets])  # type: ignore[misc]
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
