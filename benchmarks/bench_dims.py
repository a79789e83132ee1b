"""Known dims per model: shapeflow vs onnxruntime's symbolic shape inference (ORT-SSI) vs onnx's
``infer_shapes(strict_mode=False, data_prop=True)``, with every dim each tool states checked against
onnxruntime.

For each model every node output of the main graph is counted: a dim is *known* when it is an int
or an expression over the graph inputs' symbols (a fresh name a tool invents for a data-dependent
size is not). The declared value_info is removed first, so every tool infers from the same model.
ORT-SSI runs as users run it (``auto_merge=True``); when it raises (it does on some graphs) the
model's ORT-SSI count is 0 and the table says so.

Then the model runs in onnxruntime (graph optimisations off, every intermediate exposed as an
output) at the corpus's two input sizes (the first with batch 1), and every known dim, with the
symbols bound, is compared with the runtime dim; a mismatch is a *wrong* dim (a rank that differs
makes every known dim of the tensor wrong).

ORT-SSI merges symbols silently: where two differently named dims meet (a broadcast, a MatMul, a
Concat) it declares them one. The benchmark tracks those merges (its ``suggested_merge_`` table)
and lists the ones that equate two different *input* symbols (or an input symbol and a constant):
its count on such a model rests on that equality. Where several input symbols stand for one
logical axis (tf2onnx names every ``None`` dim separately), the model also runs at *split* sizes
(one symbol 1, the others not; both ways) when onnxruntime accepts them: a dim stated there on a
merge the model does not imply is contradicted, and counted in the "wrong at split sizes" column.

The bar (issue 22): shapeflow knows at least ORT-SSI's count on every model whose ORT-SSI count
does not rest on a merge of input symbols, and states no wrong dim. The models where it knows fewer
are listed with the *frontier* nodes: the nodes whose outputs ORT-SSI knows more dims of than
shapeflow although shapeflow knows at least as much of every input (where the knowledge is lost).

Corpora (``corpora.py``; each built by its ``make_*_corpus.py``): ``text``, ``vision``,
``tf2onnx``, ``paddle``, ``jax`` and ``shared`` (../shared/corpus); absent ones are skipped::

    python benchmarks/bench_dims.py                                  # every corpus present
    python benchmarks/bench_dims.py --corpus tf2onnx,paddle --markdown docs/bench_dims.md --json dims.json
    python benchmarks/bench_dims.py --baseline dims.json             # exit 1 if a count got worse
    python benchmarks/bench_dims.py --shapeflow-root ../main --only bert   # another checkout, some models
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import onnx

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import corpora  # noqa: E402

# A tool's view of one tensor: a list of dims, each an int, a callable binding -> int|None, or None
# (unknown); None for the whole tensor when its rank is unknown. ``text`` keeps each dim as stated.
Evaluator = Callable[[Mapping[str, int]], "int | None"]
Dims = list["int | Evaluator | None"]


@dataclass
class ToolView:
    shapes: dict[str, Dims | None]
    text: dict[str, list[str]]  # tensor -> its dims as the tool writes them ("?" unknown)
    status: str = "ok"
    merges: list[str] = field(default_factory=list)  # ORT-SSI: merges of input symbols, "a=b"


@dataclass
class Count:
    known: int = 0
    wrong: int = 0  # contradicted at the corpus's sizes
    wrong_split: int = 0  # contradicted only at split sizes (differently named input dims apart)


@dataclass
class Row:
    model: str
    corpus: str
    exporter: str
    family: str
    kind: str
    tensors: int
    shapeflow: Count
    ort_ssi: Count
    onnx: Count
    ssi_status: str
    ssi_merges: list[str]
    runs: list[str]  # the sizes checked, "batch=1 seq=5"; "split ..." for the split sizes
    refused: list[str]  # split sizes onnxruntime refused (the model does not run there)
    frontier: list[dict[str, Any]]  # where shapeflow knows fewer dims than ORT-SSI first
    seconds: dict[str, float]

    @property
    def rests_on_merge(self) -> bool:
        """ORT-SSI equated input symbols, or states dims that split sizes contradict."""
        return bool(self.ssi_merges) or self.ort_ssi.wrong_split > 0

    @property
    def behind(self) -> bool:
        return self.shapeflow.known < self.ort_ssi.known


def _strip(model: onnx.ModelProto) -> onnx.ModelProto:
    m = onnx.ModelProto()
    m.CopyFrom(model)
    del m.graph.value_info[:]
    return m


def _tensors(model: onnx.ModelProto) -> list[str]:
    return [o for n in model.graph.node for o in n.output if o]


# ---------------------------------------------------------------- the tools
def shapeflow_view(model: onnx.ModelProto, symbols: set[str], assume: list[str]) -> ToolView:
    from shapeflow.drivers.analysis import analyze
    from shapeflow.dims import Sym, substitute
    from shapeflow.io import load_model_bytes

    kwargs: dict[str, Any] = {}
    if assume:
        from shapeflow.assume import parse_assumptions

        kwargs["assumptions"] = parse_assumptions(assume)
        kwargs["only_known_symbols"] = True
    try:
        a = analyze(load_model_bytes(model.SerializeToString(), "m.onnx"), rules=[], **kwargs)
    except Exception as e:  # noqa: BLE001  # a refusal is a result of its own
        names = _tensors(model)
        return ToolView({n: None for n in names}, {}, f"failed: {type(e).__name__}: {str(e)[:100]}")
    shapes: dict[str, Dims | None] = {}
    text: dict[str, list[str]] = {}
    for name in _tensors(model):
        shape = a.inference.shape_of(name)
        if shape is None:
            shapes[name] = None
            continue
        dims: Dims = []
        for d in shape:
            if isinstance(d, Sym) and d.symbols() <= symbols:
                dims.append(lambda b, d=d: _as_int(substitute(d, b)))
            else:
                dims.append(d if type(d) is int else None)
        shapes[name] = dims
        text[name] = [str(d) if x is not None else "?" for d, x in zip(shape, dims)]
    return ToolView(shapes, text)


def _as_int(v: object) -> int | None:
    return v if type(v) is int else None


def _from_value_info(model: onnx.ModelProto, names: list[str], symbols: set[str]) -> ToolView:
    import sympy

    # input symbols may not be Python names (paddle2onnx: "DynamicDimension.0"): sympy reads stand-ins
    alias = {s: f"_s{i}_" for i, s in enumerate(sorted(symbols, key=len, reverse=True))}
    pattern = re.compile("|".join(re.escape(s) for s in alias)) if alias else None
    local = {s: sympy.Symbol(alias[s], integer=True, nonnegative=True) for s in symbols}
    by_alias = {alias[s]: local[s] for s in symbols}
    table = {vi.name: vi for vi in list(model.graph.value_info) + list(model.graph.output)}
    shapes: dict[str, Dims | None] = {}
    text: dict[str, list[str]] = {}
    cache: dict[str, object] = {}
    for name in names:
        vi = table.get(name)
        if vi is None or not vi.type.tensor_type.HasField("shape"):
            shapes[name] = None
            continue
        dims: Dims = []
        shown = []
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_value"):
                dims.append(int(d.dim_value))
                shown.append(str(d.dim_value))
                continue
            expr = cache.get(d.dim_param) if d.dim_param else False
            if expr is None:
                try:
                    readable = pattern.sub(lambda m: alias[m.group(0)], d.dim_param) if pattern else d.dim_param
                    expr = sympy.sympify(readable, locals=by_alias)
                    if not {str(s) for s in expr.free_symbols} <= set(by_alias):
                        expr = False
                except Exception:  # noqa: BLE001  # a name sympy cannot read is an unknown dim
                    expr = False
                cache[d.dim_param] = expr
            if expr is not False:
                dims.append(lambda b, e=expr: _sympy_int(e, b, local))
                shown.append(d.dim_param)
            else:
                dims.append(None)
                shown.append("?")
        shapes[name] = dims
        text[name] = shown
    return ToolView(shapes, text)


def _sympy_int(expr: Any, b: Mapping[str, int], local: Mapping[str, Any]) -> int | None:
    try:
        v = expr.subs({local[k]: val for k, val in b.items() if k in local})
        return int(v) if v.is_integer else None
    except Exception:  # noqa: BLE001
        return None


def ort_ssi_view(model: onnx.ModelProto, symbols: set[str]) -> ToolView:
    """SymbolicShapeInference.infer_shapes(model, auto_merge=True), its loop kept here so that the
    merges it made can be read afterwards (and so that a failure writes no file into the cwd)."""
    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

    class Tracking(SymbolicShapeInference):  # type: ignore[misc]
        """Records the merges that _merge_symbols makes without a trace (auto_merge keeps the first
        name of a broadcast or a Concat and drops the others)."""

        silent: set[tuple[str, str]] = set()

        def _merge_symbols(self, dims: list[Any]) -> Any:
            out = super()._merge_symbols(dims)
            if out is not None:
                for d in dims:
                    if str(d) != str(out):
                        self.silent.add((str(d), str(out)))
            return out

    names = _tensors(model)
    ssi = Tracking(2**31 - 1, True, False, 0)
    ssi.silent = set()
    try:
        ssi._preprocess(model)
        complete = False
        while ssi.run_:
            complete = ssi._infer_impl()
        ssi._update_output_from_vi()
        if not complete:
            raise RuntimeError("Incomplete symbolic shape inference")
    except Exception as e:  # noqa: BLE001  # users get an exception, and no shapes
        msg = str(e).strip().splitlines()[0][:90] if str(e).strip() else ""
        return ToolView({n: None for n in names}, {}, f"failed: {type(e).__name__}: {msg}")
    view = _from_value_info(ssi.out_mp_, names, symbols)
    pairs = {(str(k), str(v)) for k, v in ssi.suggested_merge_.items()} | ssi.silent
    view.merges = sorted({f"{a}={b}" for a, b in pairs if _equates_inputs(a, b, symbols)})
    return view


def _input_symbols_in(text: str, symbols: set[str]) -> set[str]:
    return {s for s in symbols if re.search(r"(?<![\w.])" + re.escape(s) + r"(?![\w.])", text)}


def _equates_inputs(a: str, b: str, symbols: set[str]) -> bool:
    """A merge that states an equality of the input symbols the model does not state: ``unk__2 =
    unk__0``, ``Min(1000000000, unk__3) = unk__1``, ``seq = 1`` (a premise, not a deduction). A
    merge of a symbol ORT-SSI invented (``Reshape_83_o0__d0``) is not one."""
    sa, sb = _input_symbols_in(a, symbols), _input_symbols_in(b, symbols)
    if not sa and not sb:
        return False
    literal = a.lstrip("-").isdigit() or b.lstrip("-").isdigit()
    return sa != sb and (literal or (bool(sa) and bool(sb)))


def onnx_view(model: onnx.ModelProto, symbols: set[str]) -> ToolView:
    names = _tensors(model)
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception as e:  # noqa: BLE001
        return ToolView({n: None for n in names}, {}, f"failed: {type(e).__name__}: {str(e)[:100]}")
    return _from_value_info(inferred, names, symbols)


# ---------------------------------------------------------------- the runtime
def _session(model: onnx.ModelProto) -> tuple[Any, list[str]]:
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
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess, [o.name for o in sess.get_outputs()]


Run = tuple[str, dict[str, int], dict[str, tuple[int, ...]]]  # (label, symbol bindings, tensor -> shape)


def _shapes(names: list[str], outs: list[Any]) -> dict[str, tuple[int, ...]]:
    """The runtime shape of each tensor output (a sequence, e.g. a TorchScript loop's list, has none)."""
    return {n: tuple(o.shape) for n, o in zip(names, outs) if hasattr(o, "shape")}


def runtime_shapes(model: onnx.ModelProto, cm: corpora.CorpusModel) -> tuple[list[Run], list[Run], list[str]]:
    """(runs at the corpus's sizes, runs at split sizes, split sizes refused)."""
    sess, names = _session(model)
    runs: list[Run] = []
    refused: list[str] = []
    for i, sizes in enumerate(cm.sizes):
        b = cm.bind(sizes)
        label = " ".join(f"{k}={v}" for k, v in sizes.items())
        try:
            outs = sess.run(None, cm.feeds(model, b, seed=i))
        except Exception:  # noqa: BLE001  # a size this configuration cannot take (a window overhangs): no evidence
            refused.append(label)
            continue
        runs.append((label, b, _shapes(names, outs)))
    if not runs:
        raise RuntimeError(f"onnxruntime runs the model at none of the sizes {refused}")
    split: list[Run] = []
    by_axis: dict[str, list[str]] = {}
    for s in corpora.input_symbols(model):
        by_axis.setdefault(cm.symbols.get(s, s), []).append(s)
    base = cm.bind(cm.sizes[-1])
    for axis, syms in by_axis.items():
        if len(syms) < 2:
            continue
        value = max(2, base[syms[0]])
        for first in (value, 1):  # the first input's symbol big and the others 1, then the reverse
            b = dict(base)
            b.update({s: (first if j == 0 else (1 if first != 1 else value)) for j, s in enumerate(syms)})
            label = "split " + " ".join(f"{s}={b[s]}" for s in syms)
            try:
                outs = sess.run(None, cm.feeds(model, b, seed=7))
            except Exception:  # noqa: BLE001  # the model does not run there: no evidence
                refused.append(label)
                continue
            split.append((label, b, _shapes(names, outs)))
    return runs, split, refused


def count(view: ToolView, runs: list[Run], split: list[Run], explain: list[str] | None = None) -> Count:
    """Known and contradicted dims; ``explain`` collects one line per contradicted dim."""
    c = Count()
    for name, dims in view.shapes.items():
        if dims is None:
            continue
        for d_index, d in enumerate(dims):
            if d is None:
                continue
            c.known += 1
            for where, rs in (("runs", runs), ("split", split)):
                if _contradicted(name, d, d_index, len(dims), rs):
                    if explain is not None:
                        rt = [r[2].get(name) for r in rs]
                        explain.append(f"{name}[{d_index}] stated {view.text.get(name)} runtime {rt} ({where})")
                    if where == "runs":
                        c.wrong += 1
                    else:
                        c.wrong_split += 1
                    break
    return c


def _contradicted(name: str, d: Any, index: int, rank: int, runs: list[Run]) -> bool:
    for _label, bindings, runtime in runs:
        rt = runtime.get(name)
        if rt is None:
            continue
        v = d if type(d) is int else d(bindings)
        if len(rt) != rank or (v is not None and v != rt[index]):
            return True
    return False


def _known(dims: Dims | None) -> int:
    return 0 if dims is None else sum(1 for d in dims if d is not None)


def frontier(model: onnx.ModelProto, sf: ToolView, ssi: ToolView) -> list[dict[str, Any]]:
    """Nodes where ORT-SSI knows more output dims than shapeflow while shapeflow knows at least as
    many dims of every input: where shapeflow loses what ORT-SSI keeps."""
    inits = {i.name for i in model.graph.initializer}
    out = []
    for node in model.graph.node:
        outs = [o for o in node.output if o]
        lost = [o for o in outs if _known(ssi.shapes.get(o)) > _known(sf.shapes.get(o))]
        if not lost:
            continue
        inputs_ok = all(i in inits or i == "" or _known(sf.shapes.get(i)) >= _known(ssi.shapes.get(i))
                        for i in node.input if i not in {vi.name for vi in model.graph.input})
        if not inputs_ok:
            continue
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute
                 if a.type in (onnx.AttributeProto.INT, onnx.AttributeProto.INTS)}
        producers = {o: n.op_type for n in model.graph.node for o in n.output}
        out.append({"node": node.name, "op_type": node.op_type, "attrs": attrs, "output": lost[0],
                    "inputs_from": [producers.get(i, "init" if i in inits else "input") for i in node.input],
                    "shapeflow": sf.text.get(lost[0]), "ort_ssi": ssi.text.get(lost[0]),
                    "cause": cause(model, node)})
    return out


SHAPE_INPUT = {"Reshape": 1, "Expand": 1, "Tile": 1, "ConstantOfShape": 0, "Slice": 1}
ELEMENTWISE = {"Add", "Sub", "Mul", "Div", "Pow", "Where", "Max", "Min", "Equal", "Less", "Greater", "And", "Or"}


def cause(model: onnx.ModelProto, node: onnx.NodeProto) -> str:
    """A few words on why a frontier node loses dims, from the ops upstream of its shape input."""
    producer = {o: n for n in model.graph.node for o in n.output}
    roots = [node.input[SHAPE_INPUT[node.op_type]]] if node.op_type in SHAPE_INPUT and \
        len(node.input) > SHAPE_INPUT[node.op_type] else list(node.input)
    upstream: list[onnx.NodeProto] = []
    stack, seen = [(r, 0) for r in roots], set()
    while stack:
        name, depth = stack.pop()
        n = producer.get(name)
        if n is None or name in seen or depth > 10:
            continue
        seen.add(name)
        upstream.append(n)
        if n.op_type != "Shape":
            stack.extend((i, depth + 1) for i in n.input if i)
    int32 = any(n.op_type == "Cast" and any(a.name == "to" and a.i == onnx.TensorProto.INT32 for a in n.attribute)
                for n in upstream)
    reduce = sorted({n.op_type for n in upstream if n.op_type.startswith("Reduce")})
    if int32:
        return "shape values cast to int32" + (f" ({', '.join(reduce)})" if reduce else "")
    if reduce:
        return f"{', '.join(reduce)} of shape values"
    if node.op_type == "Reshape":
        allowzero = next((a.i for a in node.attribute if a.name == "allowzero"), 0)
        if allowzero:
            return "Reshape allowzero=1: -1 beside target dims that may be 0"
        return "Reshape allowzero=0: target dims that may be 0 (a 0 copies the input's dim)"
    if node.op_type in ELEMENTWISE:
        return "broadcast of differently named symbols"
    if node.op_type in ("Loop", "Scan", "If"):
        return f"{node.op_type} outputs"
    return node.op_type


# ---------------------------------------------------------------- per model
def measure(cm: corpora.CorpusModel, assume: list[str], explain: bool = False) -> Row:
    model = _strip(onnx.load(str(cm.path)))
    symbols = set(corpora.input_symbols(model))
    seconds = {}
    t = time.perf_counter()
    runs, split, refused = runtime_shapes(model, cm)
    seconds["onnxruntime"] = time.perf_counter() - t
    t = time.perf_counter()
    sf = shapeflow_view(model, symbols, assume)
    seconds["shapeflow"] = time.perf_counter() - t
    t = time.perf_counter()
    ssi = ort_ssi_view(model, symbols)
    seconds["ort_ssi"] = time.perf_counter() - t
    t = time.perf_counter()
    ox = onnx_view(model, symbols)
    seconds["onnx"] = time.perf_counter() - t
    why: dict[str, list[str]] = {"shapeflow": [], "ORT-SSI": [], "onnx": []}
    counts = [count(v, runs, split, why[k]) for k, v in zip(why, (sf, ssi, ox))]
    if explain:
        for tool, lines in why.items():
            for line in lines[:20]:
                print(f"    {cm.name}: {tool} wrong: {line}", file=sys.stderr)
    return Row(model=cm.name, corpus=cm.corpus, exporter=cm.exporter, family=cm.family, kind=cm.kind,
               tensors=len(_tensors(model)), shapeflow=counts[0], ort_ssi=counts[1], onnx=counts[2], ssi_status=ssi.status if sf.status == "ok" else f"shapeflow {sf.status}",
               ssi_merges=ssi.merges, runs=[r[0] for r in runs + split], refused=refused,
               frontier=frontier(model, sf, ssi), seconds={k: round(v, 3) for k, v in seconds.items()})


# ---------------------------------------------------------------- reports
def _cell(c: Count) -> str:
    return f"{c.known}"


def _wrong(r: Row) -> str:
    def one(c: Count) -> str:
        return f"{c.wrong}" + (f" (+{c.wrong_split} split)" if c.wrong_split else "")
    return f"{one(r.shapeflow)} / {one(r.ort_ssi)} / {one(r.onnx)}"


def _note(r: Row) -> str:
    notes = []
    if r.ssi_status != "ok":
        notes.append("ORT-SSI " + r.ssi_status.replace("|", "/"))
    if r.ssi_merges:
        shown = ", ".join(r.ssi_merges[:3]) + (" ..." if len(r.ssi_merges) > 3 else "")
        notes.append(f"ORT-SSI merged {shown}")
    if any(x.startswith("split") for x in r.refused) and not any(x.startswith("split") for x in r.runs):
        notes.append("split sizes refused")
    sizes_refused = [x for x in r.refused if not x.startswith("split")]
    if sizes_refused:
        notes.append("onnxruntime refuses " + ", ".join(sizes_refused))
    return "; ".join(notes)


def markdown_table(rows: list[Row]) -> str:
    out = ["| model | exporter | kind | tensors | shapeflow | ORT-SSI | onnx | wrong: shapeflow / ORT-SSI / onnx | "
           "notes |", "|---|---|---|---:|---:|---:|---:|---|---|"]
    for r in rows:
        mark = " **(<)**" if r.behind else ""
        out.append(f"| {r.model} | {r.exporter} | {r.kind} | {r.tensors} | {r.shapeflow.known}{mark} | "
                   f"{r.ort_ssi.known} | {r.onnx.known} | {_wrong(r)} | {_note(r)} |")
    return "\n".join(out)


def summary_table(rows: list[Row]) -> str:
    groups: dict[str, list[Row]] = {}
    for r in rows:
        groups.setdefault(f"{r.exporter}, {r.kind}", []).append(r)
    out = ["| exporter, kind | models | tensors | shapeflow known | ORT-SSI known | onnx known | "
           "wrong: shapeflow / ORT-SSI / onnx | shapeflow behind ORT-SSI | of which ORT-SSI merged input symbols |",
           "|---|---:|---:|---:|---:|---:|---|---:|---:|"]
    for name, rs in sorted(groups.items()):
        def tot(tool: str, key: str, rs: list[Row] = rs) -> int:
            return sum(getattr(getattr(r, tool), key) for r in rs)
        wrong = " / ".join(f"{tot(t, 'wrong')}" + (f" (+{tot(t, 'wrong_split')})" if tot(t, 'wrong_split') else "")
                           for t in ("shapeflow", "ort_ssi", "onnx"))
        behind = [r for r in rs if r.behind]
        out.append(f"| {name} | {len(rs)} | {sum(r.tensors for r in rs)} | {tot('shapeflow', 'known')} | "
                   f"{tot('ort_ssi', 'known')} | {tot('onnx', 'known')} | {wrong} | {len(behind)} | "
                   f"{sum(1 for r in behind if r.rests_on_merge)} |")
    return "\n".join(out)


def behind_list(rows: list[Row]) -> str:
    """Where shapeflow knows fewer dims than ORT-SSI, grouped by cause: the models, their gap, and
    the frontier nodes by op."""
    groups: dict[str, list[str]] = {}
    for r in rows:
        if not r.behind:
            continue
        causes = Counter(f.get("cause", "?") for f in r.frontier)
        main = causes.most_common(1)[0][0] if causes else "no frontier node (the loss starts at an input)"
        ops = Counter(_frontier_key(f) for f in r.frontier)
        shown = ", ".join(f"{k} x{n}" if n > 1 else k for k, n in ops.most_common(6))
        others = "; also " + ", ".join(c for c in causes if c != main) if len(causes) > 1 else ""
        merged = " (ORT-SSI merged input symbols)" if r.rests_on_merge else ""
        groups.setdefault(main, []).append(f"  - `{r.model}` ({r.exporter}): {r.shapeflow.known} vs "
                                           f"{r.ort_ssi.known}{merged}; frontier: {shown or '-'}{others}")
    out = []
    for main, lines in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        out.append(f"- **{main}** ({len(lines)} models)")
        out.extend(lines)
    return "\n".join(out)


def _frontier_key(f: Mapping[str, Any]) -> str:
    attrs = f.get("attrs") or {}
    extra = "".join(f" {k}={v}" for k, v in attrs.items() if k in ("allowzero", "keepdims", "to", "axis"))
    return f"{f['op_type']}{extra}"


def bar(rows: list[Row]) -> tuple[bool, str]:
    behind = [r.model for r in rows if r.behind and not r.rests_on_merge]
    behind_merge = [r.model for r in rows if r.behind and r.rests_on_merge]
    wrong = sum(r.shapeflow.wrong + r.shapeflow.wrong_split for r in rows)
    text = (f"{len(rows)} models; shapeflow behind ORT-SSI on {len(behind)} models where ORT-SSI merged no input "
            f"symbols {behind}, and on {len(behind_merge)} where it did; shapeflow wrong dims: {wrong}")
    return not behind and not wrong, text


def compare(rows: list[Row], baseline: Path) -> list[str]:
    """What got worse against an earlier --json run: fewer shapeflow dims known, more wrong."""
    old = {(r["corpus"], r["model"]): r for r in json.loads(baseline.read_text())["rows"]}
    worse = []
    for r in rows:
        o = old.get((r.corpus, r.model))  # the corpora share model names
        if o is None:
            continue
        if r.shapeflow.known < o["shapeflow"]["known"]:
            worse.append(f"{r.model}: shapeflow known {o['shapeflow']['known']} -> {r.shapeflow.known}")
        w_old = o["shapeflow"]["wrong"] + o["shapeflow"].get("wrong_split", 0)
        if r.shapeflow.wrong + r.shapeflow.wrong_split > w_old:
            worse.append(f"{r.model}: shapeflow wrong {w_old} -> {r.shapeflow.wrong + r.shapeflow.wrong_split}")
    return worse


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=",".join(corpora.CORPORA) + ",shared",
                    help="corpora, comma-separated (absent ones are skipped)")
    ap.add_argument("--only", default=None, help="models whose name contains one of these, comma-separated")
    ap.add_argument("--json", type=Path, help="write the rows as JSON")
    ap.add_argument("--markdown", type=Path, help="write the tables as Markdown (docs/bench_dims.md)")
    ap.add_argument("--baseline", type=Path, help="an earlier --json: exit 1 if shapeflow knows fewer or states "
                    "more wrong dims on a model")
    ap.add_argument("--assume", action="append", default=[], help="passed to shapeflow (repeatable)")
    ap.add_argument("--explain", action="store_true", help="print every contradicted dim (stderr)")
    ap.add_argument("--shapeflow-root", type=Path, default=ROOT, help="measure the shapeflow of this checkout")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(args.shapeflow_root.resolve()))
    import shapeflow

    print(f"shapeflow from {Path(shapeflow.__file__).parent}", file=sys.stderr)
    models: list[corpora.CorpusModel] = []
    for c in args.corpus.split(","):
        if c == "shared":
            models += corpora.load("shared", corpora.shared_corpus(ROOT))
        elif c in corpora.CORPORA:
            models += corpora.load(c)
        elif c:
            ap.error(f"unknown corpus {c}")
    if args.only:
        models = [m for m in models if any(s in m.name for s in args.only.split(","))]
    rows: list[Row] = []
    print(markdown_table([]), flush=True)
    for cm in models:
        try:
            row = measure(cm, args.assume, args.explain)
        except Exception as e:  # noqa: BLE001  # one broken model does not stop the benchmark
            print(f"  {cm.name}: not measured: {type(e).__name__}: {str(e)[:120]}", file=sys.stderr, flush=True)
            continue
        rows.append(row)
        print(markdown_table([row]).splitlines()[-1], flush=True)
    print()
    print(summary_table(rows))
    behind = behind_list(rows)
    if behind:
        print("\nshapeflow knows fewer dims than ORT-SSI:\n" + behind)
    ok, text = bar(rows)
    print("\n" + text, file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps({"rows": [{**asdict(r), "rests_on_merge": r.rests_on_merge}
                                                  for r in rows]}, indent=1))
    if args.markdown:
        # a hand-written analysis below the marker survives a regeneration
        kept = ""
        if args.markdown.exists() and ANALYSIS_MARKER in args.markdown.read_text():
            kept = args.markdown.read_text().split(ANALYSIS_MARKER, 1)[1]
        args.markdown.write_text(render_markdown(rows, text) + ("\n" + ANALYSIS_MARKER + kept if kept else ""))
    if args.baseline:
        worse = compare(rows, args.baseline)
        for w in worse:
            print("worse: " + w, file=sys.stderr)
        return 1 if worse else 0
    return 0 if ok else 1


def render_markdown(rows: list[Row], verdict: str) -> str:
    return "\n".join([
        "# Known dims: shapeflow, onnxruntime's symbolic shape inference, onnx", "",
        "Generated by `python benchmarks/bench_dims.py --markdown docs/bench_dims.md` (method: the script's "
        "docstring and the paragraph below).", "",
        METHOD, "", "## Per exporter and kind", "", summary_table(rows), "", verdict, "",
        "## Per model", "",
        "Cells: dims known (an int, or an expression of the input symbols), over every node output of the main "
        "graph. **(<)**: shapeflow knows fewer than ORT-SSI. Wrong: dims contradicted by onnxruntime at the two "
        "sizes; `+N split`: contradicted only where differently named input dims take different values.", "",
        markdown_table(rows), "", "## Where shapeflow knows fewer dims than ORT-SSI", "",
        "Frontier: the nodes where ORT-SSI states more output dims than shapeflow although shapeflow knows as "
        "much of every input (op type, with the attribute that decides it).", "",
        behind_list(rows) or "(none)", ""])


ANALYSIS_MARKER = "<!-- analysis: kept when the tables are regenerated -->"
METHOD = (
    "Method. Every model of the corpora (`benchmarks/make_*_corpus.py`: PyTorch TorchScript and dynamo, "
    "tf2onnx, paddle2onnx, jax2onnx; small random-weight configurations with dynamic batch and sequence or "
    "spatial axes) has its value_info removed; then shapeflow (`analyze`, the `infer` command's inference), "
    "ORT-SSI (`SymbolicShapeInference.infer_shapes(auto_merge=True)`, as users run it; its loop is kept in "
    "the benchmark to read the symbol merges it made) and onnx (`infer_shapes(strict_mode=False, "
    "data_prop=True)`) each state the shapes of every node output. A dim counts as known when it is an "
    "int or an expression of the graph inputs' symbols. onnxruntime then runs the model, every "
    "intermediate exposed as an output and graph optimisations off, at two input sizes (the first with "
    "batch 1), and every known dim is evaluated with the symbols bound and compared with the runtime's. "
    "ORT-SSI equates differently named dims where they meet (`auto_merge`); the merges of two input "
    "symbols are listed, and where several input symbols stand for one axis the model also runs at split "
    "sizes (one 1, the other not) when onnxruntime accepts them.")


if __name__ == "__main__":
    sys.exit(main())
