"""Soundness at the edges of onnxruntime's integer semantics: int64 wrap-around, ``allowzero``
Reshapes, empty Concat inputs, Einsum broadcasting, chained Slices, ``--assume``.

Each model is a small hand-written graph (ONNX text format). The oracle is onnxruntime with
graph optimisations off: every dim and value shapeflow states for a main-graph tensor, with the
symbols bound, must equal the runtime's; ``optimize``'s output must be bit-identical wherever the
original runs. The first tests are failures a red team found (issue 9, findings F1-F11, named in
the comments); ``HELD`` lists the patterns that held when this file was written (they guard
against regressions).
"""

from __future__ import annotations

import itertools
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import cli_process
import numpy as np
import onnx
import pytest
from onnx import helper, parser

from shapeflow.drivers import api
from shapeflow.dims import substitute
from shapeflow.errors import ShapeflowError

ort = pytest.importorskip("onnxruntime")

ROOT = Path(__file__).resolve().parent.parent


# -- the oracle ---------------------------------------------------------------------------------

def _session(model: onnx.ModelProto) -> Any:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 4
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def _exposed(model: onnx.ModelProto) -> tuple[onnx.ModelProto, list[str]]:
    m = onnx.ModelProto()
    m.CopyFrom(model)
    outs = {o.name for o in m.graph.output}
    names = [o for n in m.graph.node for o in n.output if o]
    for name in names:
        if name not in outs:
            m.graph.output.append(onnx.ValueInfoProto(name=name))
    return m, names


def _feeds(model: onnx.ModelProto, binding: Mapping[str, int]) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    feeds = {}
    for vi in model.graph.input:
        tt = vi.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else binding[d.dim_param] for d in tt.shape.dim]
        dt = helper.tensor_dtype_to_np_dtype(tt.elem_type)
        if np.issubdtype(dt, np.floating):
            feeds[vi.name] = rng.standard_normal(shape).astype(dt)
        elif dt == np.bool_:
            feeds[vi.name] = rng.random(shape) < 0.5
        else:
            feeds[vi.name] = rng.integers(0, 5, size=shape).astype(dt)
    return feeds


def _run(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray],
         names: Sequence[str] | None = None) -> list[np.ndarray] | None:
    try:
        return _session(model).run(list(names) if names else None, dict(feeds))
    except Exception:  # noqa: BLE001  # the model fails at this binding: nothing to compare
        return None


def unsound(model: onnx.ModelProto, tmp_path: Path, symbols: Sequence[str] = ("seq",),
            values: Sequence[int] = (0, 1, 2, 3, 5, 257), assume: Sequence[str] = ()) -> list[str]:
    """Every disagreement between shapeflow (infer, then optimize) and onnxruntime."""
    path = str(tmp_path / "m.onnx")
    onnx.save(model, path)
    bad: list[str] = []
    try:
        infos = api.infer(path, assume=list(assume)).inference.tensors[0]
    except ShapeflowError:
        infos = {}
    exposed, names = _exposed(model)
    originals = []
    for combo in itertools.product(values, repeat=len(symbols)):
        b = dict(zip(symbols, combo))
        feeds = _feeds(model, b)
        res = _run(exposed, feeds, names)
        if res is None:
            continue
        rt = dict(zip(names, res))
        originals.append((b, feeds, [rt[o.name] for o in model.graph.output]))
        for name, arr in rt.items():
            info = infos.get(name)
            if info is None:
                continue
            if info.shape is not None:
                if len(info.shape) != arr.ndim:
                    bad.append(f"{name}: rank {len(info.shape)} vs {arr.shape} at {b}")
                    continue
                for d, r in zip(info.shape, arr.shape):
                    v = substitute(d, b) if d is not None else None
                    if isinstance(v, int) and v != r:
                        bad.append(f"{name}: dim {d} = {v} vs {r} at {b}")
            if info.value is not None and arr.dtype.kind in "iub":
                flat = arr.reshape(-1)
                if len(info.value) != flat.size:
                    bad.append(f"{name}: {len(info.value)} elements vs {flat.size} at {b}")
                    continue
                for e, r in zip(info.value, flat):
                    v = substitute(e, b) if e is not None else None
                    if isinstance(v, int) and v != int(r):
                        bad.append(f"{name}: value {e} = {v} vs {int(r)} at {b}")
    opt = str(tmp_path / "opt.onnx")
    try:
        result = api.optimize(path, opt, assume=list(assume)) if assume else api.optimize(path, opt)
    except ShapeflowError:
        return bad
    if result.changed:
        om = onnx.load(opt)
        out_names = [o.name for o in model.graph.output]
        for b, feeds, outs in originals:
            res = _run(om, feeds, out_names)
            if res is None:
                bad.append(f"optimized model fails at {b}")
                continue
            for n, a, o in zip(out_names, outs, res):
                if a.dtype != o.dtype or a.shape != o.shape or a.tobytes() != o.tobytes():
                    bad.append(f"optimize changed {n}: {o.dtype}{list(o.shape)} vs {a.dtype}{list(a.shape)} at {b}")
    return bad


HEAD = '<ir_version: 8, opset_import: ["" : 17]>\n'
PRELUDE = """  s = Shape(x)
  i0 = Constant<value = int64 {0}>()
  n = Gather<axis=0>(s, i0)
  ax0 = Constant<value = int64[1] {0}>()
  nv = Unsqueeze(n, ax0)
"""


def model(body: str, outs: str = "float[N] y", ins: str = "float[seq] x") -> onnx.ModelProto:
    return parser.parse_model(HEAD + f"g ({ins}) => ({outs}) {{\n" + PRELUDE + body + "}")


def first_dim_of_y(path: Path) -> str:
    y = api.infer(str(path)).inference.tensors[0]["y"]
    assert y is not None and y.shape is not None
    return str(y.shape[0])


def shapeflow_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return cli_process.shapeflow(*args, env=env, cwd=cwd, timeout=120)


# =================================================================================================
# Confirmed failures (each fails today)
# =================================================================================================

# F1: symbolic int64 arithmetic is exact, onnxruntime wraps: seq**4 at seq = 56000 is negative.
POW4_LESS0 = {"body": """  a = Mul(n, n)
  b = Mul(a, a)
  z = Constant<value = int64 {0}>()
  e = Less(b, z)
  c = Cast<to=7>(e)
  d = Unsqueeze(c, ax0)
  y = ConstantOfShape(d)
""", "outs": "float[N] y", "ins": "uint8[seq] x"}


def test_int64_polynomial_value_wraps_in_onnxruntime(tmp_path: Path) -> None:
    # shapeflow states b = seq**4 and y = [0]; onnxruntime at seq=56000: b = -8612248073709551616, y = [1]
    bad = unsound(model(**POW4_LESS0), tmp_path, values=(0, 3, 56000))
    assert not [m for m in bad if not m.startswith("optimize")], bad


def test_optimize_folds_a_wrapped_comparison(tmp_path: Path) -> None:
    # optimize folds Unsqueeze(Cast(Less(seq**4, 0))) to [0]: the output is float32[0] instead of [1]
    bad = unsound(model(**POW4_LESS0), tmp_path, values=(0, 3, 56000))
    assert not [m for m in bad if m.startswith("optimize")], bad


def test_large_coefficient_times_seq_wraps(tmp_path: Path) -> None:
    # 2**41 * seq is stated at seq = 2**22 (a 4 MB uint8 input) as 2**63; onnxruntime gives -2**63
    m = model("  k = Constant<value = int64 {2199023255552}>()\n  y = Mul(n, k)\n", "int64 y", "uint8[seq] x")
    assert unsound(m, tmp_path, values=(3, 2**22)) == []


MUL_2_61_LESS0 = """  k = Constant<value = int64 {2305843009213693952}>()
  b = Mul(n, k)
  z = Constant<value = int64 {0}>()
  e = Less(b, z)
  c = Cast<to=7>(e)
  d = Unsqueeze(c, ax0)
  y = ConstantOfShape(d)
"""


def test_coefficient_below_the_edge_wraps_at_seq_4(tmp_path: Path) -> None:
    # 2**61 * seq is kept (coefficient < 2**62); at seq = 4 onnxruntime gives -2**63, so Less(b, 0)
    # is True, y is float32[1]; shapeflow states y: [0] and optimize (even with --verify, which binds
    # seq = 1 and 3) writes a model whose y is float32[0]
    bad = unsound(model(MUL_2_61_LESS0), tmp_path, values=(0, 1, 3, 4, 5))
    assert bad == [], bad


# F7: Reshape with allowzero=1 and a -1: onnxruntime does NOT refuse an empty product there (x: [0, 2],
# computed target [-1, 2, 0] gives [1, 2, 0]), yet shapeflow proves A >= 1 from it.
F7_MODEL = HEAD + """g (float[A, B] x) => (float[P, Q, R] y, int64[1] u, int64[K] r) {
  s = Shape(x)
  i0 = Constant<value = int64 {0}>()
  a = Gather(s, i0)
  ax0 = Constant<value = int64[1] {0}>()
  av = Unsqueeze(a, ax0)
  c = Constant<value = int64[2] {-1, 2}>()
  t = Concat<axis=0>(c, av)
  y = Reshape<allowzero=1>(x, t)
  zero = Constant<value = int64 {0}>()
  e = Equal(a, zero)
  ec = Cast<to=7>(e)
  u = Unsqueeze(ec, ax0)
  one = Constant<value = int64 {1}>()
  lim = Sub(a, one)
  r = Range(i0, lim, one)
}"""


def test_allowzero_reshape_minus_one_proves_nothing(tmp_path: Path) -> None:
    # shapeflow: proven A >= 1, so e = False, u = [0], r: [A - 1]; onnxruntime at A=0, B=2 runs:
    # e = True, u = [1], r: [0]. optimize folds u to [0] (exit 0 without --verify).
    bad = unsound(parser.parse_model(F7_MODEL), tmp_path, symbols=("A", "B"), values=(0, 1, 2, 3))
    assert bad == [], bad


def test_false_fact_gives_a_false_sf104_error(tmp_path: Path) -> None:
    # with the false fact A >= 1, the dim A + 1 is "never 1": SF104 error; at A=0 (x: [0, 2]) the
    # model runs and the Squeeze removes that dim (onnxruntime: sq is [1])
    m = parser.parse_model(HEAD + """g (float[A, B] x) => (float[P, Q, R] y, int64[K] sq) {
  s = Shape(x)
  i0 = Constant<value = int64 {0}>()
  a = Gather(s, i0)
  ax0 = Constant<value = int64[1] {0}>()
  av = Unsqueeze(a, ax0)
  c = Constant<value = int64[2] {-1, 2}>()
  t = Concat<axis=0>(c, av)
  y = Reshape<allowzero=1>(x, t)
  one = Constant<value = int64 {1}>()
  lim = Add(a, one)
  q = Range(i0, lim, one)
  qq = Unsqueeze(q, ax0)
  ax1 = Constant<value = int64[1] {1}>()
  sq = Squeeze(qq, ax1)
}""")
    onnx.save(m, str(tmp_path / "m.onnx"))
    out = _run(m, {"x": np.zeros((0, 2), np.float32)})
    assert out is not None and out[1].shape == (1,)  # the model runs at A=0
    r = shapeflow_cli("lint", str(tmp_path / "m.onnx"))
    assert "SF104" not in r.stdout, r.stdout


# F8: a computed Reshape target that may be -1 is taken as the dim (allowzero=1, or allowzero=0 at a
# position past the input's rank): at A=0 the target A - 1 is -1, which onnxruntime infers.
def test_allowzero_target_that_may_be_minus_one(tmp_path: Path) -> None:
    m = parser.parse_model(HEAD + """g (float[A] x) => (float[N] y, int64[K] r) {
  s = Shape(x)
  one1 = Constant<value = int64[1] {1}>()
  t = Sub(s, one1)
  y = Reshape<allowzero=1>(x, t)
  sy = Shape(y)
  i0 = Constant<value = int64 {0}>()
  d = Gather(sy, i0)
  one = Constant<value = int64 {1}>()
  lim = Add(d, one)
  r = Range(i0, lim, one)
}""")
    # shapeflow: y: [A - 1] (= -1 at A=0), r: [A]; onnxruntime at A=0: y: [0], r: [1]
    assert unsound(m, tmp_path, symbols=("A",), values=(0, 1, 2, 3)) == []


def test_target_past_the_input_rank_that_may_be_minus_one(tmp_path: Path) -> None:
    m = parser.parse_model(HEAD + """g (float[A, B] x) => (float[N, M, K] y) {
  s = Shape(x)
  i0 = Constant<value = int64 {0}>()
  i1 = Constant<value = int64 {1}>()
  ax0 = Constant<value = int64[1] {0}>()
  a = Gather(s, i0)
  b = Gather(s, i1)
  one = Constant<value = int64 {1}>()
  am1 = Sub(a, one)
  bv = Unsqueeze(b, ax0)
  am1v = Unsqueeze(am1, ax0)
  t = Concat<axis=0>(bv, bv, am1v)
  y = Reshape(x, t)
}""")
    # shapeflow: y: [?, B, A - 1]; onnxruntime at A=0, B=1: [1, 1, 0]
    assert unsound(m, tmp_path, symbols=("A", "B"), values=(0, 1, 2, 3)) == []


# F9: a min/max nest ~350 deep (within a raised --max-expr-size) crashes the printer: exit 3, RecursionError.
def _minmax_nest(k: int) -> onnx.ModelProto:
    from onnx import TensorProto, numpy_helper
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "i0"], ["a"], axis=0),
             helper.make_node("Gather", ["s", "i1"], ["b"], axis=0)]
    inits = [numpy_helper.from_array(np.array(v, np.int64), n) for v, n in ((0, "i0"), (1, "i1"), (1, "one"))]
    cur = "a"
    for i in range(k):
        inits.append(numpy_helper.from_array(np.array(i + 1, np.int64), f"k{i}"))
        nodes.append(helper.make_node("Add" if i % 2 else "Sub", ["b", f"k{i}"], [f"t{i}"]))
        nodes.append(helper.make_node("Min" if i % 2 else "Max", [cur, f"t{i}"], [f"v{i}"]))
        cur = f"v{i}"
    nodes.append(helper.make_node("Range", ["i0", cur, "one"], ["y"]))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["A", "B"])],
                          [helper.make_tensor_value_info("y", TensorProto.INT64, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


@pytest.mark.parametrize("args", [["--format", "json"], ["--all"]])
def test_deep_min_max_nest_is_not_an_internal_error(tmp_path: Path, args: list[str]) -> None:
    onnx.save(_minmax_nest(350), str(tmp_path / "m.onnx"))
    r = shapeflow_cli("infer", str(tmp_path / "m.onnx"), "--max-expr-size", "2000", *args)
    assert r.returncode in (0, 2), r.stderr  # today: exit 3, "internal error: RecursionError"


# F10: onnxruntime's Concat ignores the other dims of an EMPTY input; shapeflow takes them from the
# first input. x: [0, 0], w: [1, 1] concatenated on axis 0 give [1, 1] (shapeflow: [A + C, B] = [1, 0]).
def test_concat_takes_non_axis_dims_from_an_input_that_may_be_empty(tmp_path: Path) -> None:
    m = parser.parse_model(HEAD + """g (float[A, B] x, float[C, D] w) => (float[N, M] y) {
  y = Concat<axis=0>(x, w)
}""")
    assert unsound(m, tmp_path, symbols=("A", "B", "C", "D"), values=(0, 1, 2)) == []


# F11: Einsum (onnx's fallback inference) takes a subscript's dim from the first operand, but
# onnxruntime broadcasts a 1 there: "i,i->i" on x: [1], w: [0] gives [0] (shapeflow: [A] = 1).
@pytest.mark.parametrize("equation, sig", [
    ("i,i->i", "(float[A] x, float[B] w) => (float[N] y)"),
    ("...j,...j->...j", "(float[A, B] x, float[C, D] w) => (float[N, M] y)"),
])
def test_einsum_subscript_that_broadcasts(tmp_path: Path, equation: str, sig: str) -> None:
    m = parser.parse_model(HEAD + f"g {sig} {{\n  y = Einsum<equation=\"{equation}\">(x, w)\n}}")
    syms = [c for c in "ABCD" if f"{c}]" in sig or f"{c}," in sig]
    assert unsound(m, tmp_path, symbols=syms, values=(0, 1, 2)) == []


# F2: chained x[1:] slices do not simplify; ~130 of them exceed --max-expr-size and the model is rejected.
def _chain(k: int) -> onnx.ModelProto:
    body = "  st = Constant<value = int64[1] {1}>()\n  en = Constant<value = int64[1] {9223372036854775807}>()\n"
    cur = "x"
    for i in range(k):
        body += f"  v{i} = Slice({cur}, st, en)\n"
        cur = f"v{i}"
    body += f"  y = Identity({cur})\n"
    return model(body)


def test_chained_slices_end_in_the_plain_form(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(_chain(3), str(path))
    assert first_dim_of_y(path) == "max(0, seq - 3)"  # today: max(0, max(-1, max(-2, seq - 3)))


def _slices(*bounds: tuple[int, int]) -> onnx.ModelProto:
    body, cur = "", "x"
    for i, (st, en) in enumerate(bounds):
        body += (f"  s{i} = Constant<value = int64[1] {{{st}}}>()\n  e{i} = Constant<value = int64[1] {{{en}}}>()\n"
                 f"  v{i} = Slice({cur}, s{i}, e{i})\n")
        cur = f"v{i}"
    return model(body + f"  y = Identity({cur})\n")


@pytest.mark.parametrize("bounds, plain", [
    (((0, -1), (0, -1)), "max(0, seq - 2)"),  # x[:-1][:-1]; today max(0, max(-1, seq - 2))
    (((0, 4), (0, 2)), "min(2, seq)"),  # x[:4][:2]; today min(2, min(4, seq))
])
def test_two_slices_end_in_the_plain_form(tmp_path: Path, bounds: tuple[tuple[int, int], ...], plain: str) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(_slices(*bounds), str(path))
    assert first_dim_of_y(path) == plain


def test_two_hundred_chained_slices_are_not_rejected(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(_chain(200), str(path))
    r = shapeflow_cli("infer", str(path))
    assert r.returncode == 0, r.stderr  # today: exit 2, SF006 max-expr-size exceeded (value 258)


# F3: `[tool.shapeflow] assume` (issue 9: "also in [tool.shapeflow]") is an unknown key (exit 2).
def test_assume_in_pyproject(tmp_path: Path) -> None:
    m = model("  st = Constant<value = int64[1] {-3}>()\n"
              "  en = Constant<value = int64[1] {9223372036854775807}>()\n  y = Slice(x, st, en)\n")
    onnx.save(m, str(tmp_path / "m.onnx"))
    (tmp_path / "pyproject.toml").write_text('[tool.shapeflow]\nassume = ["seq>=3"]\n')
    r = shapeflow_cli("lint", "m.onnx", cwd=tmp_path)
    assert r.returncode != 2, r.stderr


# F4: lint over several files: an --assume naming a symbol of none of them is accepted and reported.
def test_lint_assume_naming_no_symbol_of_any_model(tmp_path: Path) -> None:
    m = model("  y = Identity(x)\n")
    onnx.save(m, str(tmp_path / "a.onnx"))
    onnx.save(m, str(tmp_path / "b.onnx"))
    r = shapeflow_cli("lint", str(tmp_path / "a.onnx"), str(tmp_path / "b.onnx"), "--assume", "nothere>=3")
    assert r.returncode == 2 and "nothere" in r.stderr, (r.returncode, r.stderr)


# F5: an --assume range beyond the domain (a dim is at most 2**62) is accepted: an empty domain.
def test_assume_beyond_the_largest_dim_is_refused(tmp_path: Path) -> None:
    onnx.save(model("  y = Identity(x)\n"), str(tmp_path / "m.onnx"))
    r = shapeflow_cli("infer", str(tmp_path / "m.onnx"), "--assume", f"seq>={2**62 + 1}")
    assert r.returncode == 2, r.stderr


# F6: an --assume contradicting a fact the graph proves (Reshape -1 => seq >= 1) is accepted,
# and inference then states the dim `seq - 1` (= -1 in the assumed range).
FACT = """  m1 = Constant<value = int64[1] {-1}>()
  t = Concat<axis=0>(s, m1)
  r = Reshape(x, t)
  one = Constant<value = int64 {1}>()
  lim = Sub(n, one)
  y = Range(i0, lim, one)
"""


def test_assume_contradicting_a_proven_fact_is_refused(tmp_path: Path) -> None:
    onnx.save(model(FACT, "int64[N] y"), str(tmp_path / "m.onnx"))
    r = shapeflow_cli("infer", str(tmp_path / "m.onnx"), "--assume", "seq<=0", "--all")
    assert r.returncode == 2 and "seq" in r.stderr, (r.returncode, r.stdout)


# =================================================================================================
# What held (regression guards): stated dims/values equal onnxruntime's, optimize bit-exact
# =================================================================================================

BIG = "  big = Constant<value = int64[1] {9223372036854775807}>()\n"
NEGBIG = "  nbig = Constant<value = int64[1] {-9223372036854775808}>()\n"

HELD: dict[str, tuple[str, str]] = {
    # Shape start/end, Gather with negative and rank-0/2-D indices
    "shape_start_neg": ("  y = Shape<start=-1>(x)\n", "int64[N] y"),
    "shape_start_past_end": ("  y = Shape<start=5, end=-7>(x)\n", "int64[N] y"),
    "shape_of_scalar": ("  sc = ReduceSum<keepdims=0>(x)\n  y = Shape<start=-1>(sc)\n", "int64[N] y"),
    "gather_neg_scalar": ("  m = Constant<value = int64 {-1}>()\n  y = Gather(s, m)\n", "int64 y"),
    "gather_2d_idx": ("  idx = Constant<value = int64[2,2] {0, -1, 0, 0}>()\n  y = Gather(s, idx)\n", "int64[2,2] y"),
    "gather_sym_idx": (("  k = Constant<value = int64[3] {7, 8, 9}>()\n  c = Concat<axis=0>(s, k)\n"
                       "  three = Constant<value = int64 {3}>()\n  i = Min(n, three)\n  y = Gather(c, i)\n"), "int64 y"),
    # Slice: symbolic starts/ends, steps, negative steps, INT_MIN/INT_MAX ends, symbolic axes/steps
    "slice_sym_start": ("  f5 = Constant<value = int64[1] {5}>()\n  a = Sub(nv, f5)\n  y = Slice(x, a, nv)\n", "float[N] y"),
    "slice_neg_sym_start": ("  a = Neg(nv)\n" + BIG + "  y = Slice(x, a, big)\n", "float[N] y"),
    "slice_neg_half": ("  t = Constant<value = int64[1] {2}>()\n  h = Div(nv, t)\n  a = Neg(h)\n" + BIG
                       + "  y = Slice(x, a, big)\n", "float[N] y"),
    "slice_step2": ("  st = Constant<value = int64[1] {1}>()\n" + BIG + "  stp = Constant<value = int64[1] {2}>()\n"
                    "  y = Slice(x, st, big, ax0, stp)\n", "float[N] y"),
    "slice_step_m3": ("  st = Constant<value = int64[1] {-2}>()\n" + NEGBIG + "  stp = Constant<value = int64[1] {-3}>()\n"
                      "  y = Slice(x, st, nbig, ax0, stp)\n", "float[N] y"),
    "slice_negstep_symend": (("  st = Constant<value = int64[1] {-1}>()\n  two = Constant<value = int64[1] {2}>()\n"
                             "  en = Sub(two, nv)\n  stp = Constant<value = int64[1] {-1}>()\n"
                             "  y = Slice(x, st, en, ax0, stp)\n"), "float[N] y"),
    "slice_negstep_end_m1": (("  st = Constant<value = int64[1] {5}>()\n  en = Constant<value = int64[1] {-1}>()\n"
                             "  stp = Constant<value = int64[1] {-1}>()\n  y = Slice(x, st, en, ax0, stp)\n"), "float[N] y"),
    "slice_negstep_sym_start": (NEGBIG + "  stp = Constant<value = int64[1] {-2}>()\n  y = Slice(x, nv, nbig, ax0, stp)\n",
                                "float[N] y"),
    "slice_sym_step": ("  z = Constant<value = int64[1] {0}>()\n" + BIG + "  y = Slice(x, z, big, z, nv)\n", "float[N] y"),
    "slice_sym_axes": ("  z = Constant<value = int64[1] {1}>()\n" + BIG + "  ax = Sub(nv, nv)\n  y = Slice(x, z, big, ax)\n",
                       "float[N] y"),
    "slice_shape_vec_negstep": ("  k = Constant<value = int64[2] {7, 8}>()\n  c = Concat<axis=0>(s, k)\n"
                                "  st = Constant<value = int64[1] {-1}>()\n" + NEGBIG
                                + "  sp = Constant<value = int64[1] {-2}>()\n  y = Slice(c, st, nbig, ax0, sp)\n", "int64[N] y"),
    # Range: negative, symbolic, float deltas
    "range_negdelta": ("  z = Constant<value = int64 {0}>()\n  d = Constant<value = int64 {-2}>()\n  y = Range(n, z, d)\n", "int64[N] y"),
    "range_symdelta": (("  z = Constant<value = int64 {0}>()\n  one = Constant<value = int64 {1}>()\n  d = Add(n, one)\n"
                       "  t = Constant<value = int64 {10}>()\n  y = Range(z, t, d)\n"), "int64[N] y"),
    "range_neg_symdelta": (("  z = Constant<value = int64 {0}>()\n  k = Constant<value = int64 {-10}>()\n  d = Neg(n)\n"
                           "  y = Range(z, k, d)\n"), "int64[N] y"),
    "range_float": (("  z = Constant<value = float {0.5}>()\n  nf = Cast<to=1>(n)\n  d = Constant<value = float {0.3}>()\n"
                    "  y = Range(z, nf, d)\n"), "float[N] y"),
    # Reshape: allowzero, a computed 0, a Reshape -1 fact (dead node: onnxruntime still runs it)
    "reshape_allowzero": (("  m = Constant<value = int64[1] {1}>()\n  t = Concat<axis=0>(nv, m)\n"
                          "  y = Reshape<allowzero=1>(x, t)\n"), "float[N] y"),
    "reshape_sym0": ("  m = Constant<value = int64[1] {-1}>()\n  t = Concat<axis=0>(m, nv)\n  y = Reshape(x, t)\n", "float[N] y"),
    "dead_reshape_fact": (("  m1 = Constant<value = int64[1] {-1}>()\n  t = Concat<axis=0>(s, m1)\n  dead = Reshape(x, t)\n"
                          "  one = Constant<value = int64 {1}>()\n  lim = Sub(n, one)\n  y = Range(i0, lim, one)\n"), "int64[N] y"),
    # Expand / ConstantOfShape / Tile / Pad with symbolic and zero inputs, broadcasting
    "expand0": ("  z = Constant<value = int64[2] {0, 1}>()\n  y = Expand(x, z)\n", "float[N] y"),
    "expand_min1": ("  o = Constant<value = int64[1] {1}>()\n  mn = Min(nv, o)\n  y = Expand(x, mn)\n", "float[N] y"),
    "expand_seq_plus_1": ("  one = Constant<value = int64[1] {1}>()\n  t = Add(nv, one)\n  y = Expand(x, t)\n", "float[N] y"),
    "bcast_seq_seq_plus_1": ("  c1 = Constant<value = float[1] {1.0}>()\n  xp = Concat<axis=0>(x, c1)\n  y = Add(x, xp)\n",
                             "float[N] y"),
    "bcast_max1": (("  one = Constant<value = int64 {1}>()\n  z = Constant<value = int64 {0}>()\n  m = Max(n, one)\n"
                   "  r = Range(z, m, one)\n  rf = Cast<to=1>(r)\n  y = Add(x, rf)\n"), "float[N] y"),
    "constantofshape0": ("  z = Constant<value = int64[1] {3}>()\n  t = Concat<axis=0>(nv, z)\n  y = ConstantOfShape(t)\n",
                         "float[N] y"),
    "tile": ("  t = Constant<value = int64[1] {2}>()\n  r = Sub(t, nv)\n  rr = Max(r, nv)\n  y = Tile(x, rr)\n", "float[N] y"),
    "pad_neg": (("  z = Constant<value = int64[1] {2}>()\n  a = Sub(z, nv)\n  b = Constant<value = int64[1] {-1}>()\n"
                "  p = Concat<axis=0>(b, a)\n  y = Pad(x, p)\n"), "float[N] y"),
    # integer arithmetic: Min/Max/Abs/Neg/Sign, Div/Mod signs, INT64 edges, comparisons, Where
    "min_neg": ("  f = Constant<value = int64 {5}>()\n  a = Sub(n, f)\n  z = Constant<value = int64 {-2}>()\n  y = Min(a, z)\n", "int64 y"),
    "max_neg": ("  f = Constant<value = int64 {5}>()\n  a = Sub(f, n)\n  z = Constant<value = int64 {-2}>()\n  y = Max(a, z)\n", "int64 y"),
    "mod_negdiv": ("  f = Constant<value = int64 {-3}>()\n  y = Mod(n, f)\n", "int64 y"),
    "fmod_neg": ("  f = Constant<value = int64 {-3}>()\n  a = Neg(n)\n  y = Mod<fmod=1>(a, f)\n", "int64 y"),
    "mod_neg_dividend": ("  f = Constant<value = int64 {3}>()\n  a = Neg(n)\n  y = Mod(a, f)\n", "int64 y"),
    "mod_by_sym": (("  f = Constant<value = int64 {7}>()\n  one = Constant<value = int64 {1}>()\n  d = Add(n, one)\n"
                   "  y = Mod(f, d)\n"), "int64 y"),
    "div_negdiv": ("  f = Constant<value = int64 {-2}>()\n  y = Div(n, f)\n", "int64 y"),
    "div_neg_dividend": ("  f = Constant<value = int64 {3}>()\n  a = Sub(f, n)\n  y = Div(a, f)\n", "int64 y"),
    "div_by_sym": (("  f = Constant<value = int64 {7}>()\n  one = Constant<value = int64 {1}>()\n  d = Add(n, one)\n"
                   "  y = Div(f, d)\n"), "int64 y"),
    "near_int64_max": ("  f = Constant<value = int64 {9223372036854775806}>()\n  y = Add(n, f)\n", "int64 y"),
    "int64_min_abs": ("  a = Constant<value = int64 {-9223372036854775808}>()\n  y = Abs(a)\n", "int64 y"),
    "int64_min_mod": (("  a = Constant<value = int64 {-9223372036854775808}>()\n  b = Constant<value = int64 {-1}>()\n"
                      "  y = Mod(a, b)\n"), "int64 y"),
    "int32_wrap": ("  a = Constant<value = int32 {2147483647}>()\n  b = Constant<value = int32 {1}>()\n  y = Add(a, b)\n",
                   "int32 y"),
    "uint8_sub": ("  a = Constant<value = uint8 {3}>()\n  b = Constant<value = uint8 {5}>()\n  y = Sub(a, b)\n", "uint8 y"),
    "int8_neg_min": ("  a = Constant<value = int8 {-128}>()\n  y = Neg(a)\n", "int8 y"),
    "sign": ("  f = Constant<value = int64 {2}>()\n  a = Sub(f, n)\n  y = Sign(a)\n", "int64 y"),
    "where_eq0": (("  z = Constant<value = int64 {0}>()\n  e = Equal(n, z)\n  one = Constant<value = int64 {1}>()\n"
                  "  y = Where(e, one, n)\n"), "int64 y"),
    "less1_where": (("  z = Constant<value = int64 {1}>()\n  e = Less(n, z)\n  a = Constant<value = int64 {7}>()\n"
                    "  y = Where(e, a, n)\n"), "int64 y"),
    "clip_inverted": ("  lo = Constant<value = int64 {2}>()\n  hi = Constant<value = int64 {1}>()\n  y = Clip(n, lo, hi)\n", "int64 y"),
    "reducemin_shape": ("  k = Constant<value = int64[1] {3}>()\n  c = Concat<axis=0>(s, k)\n  y = ReduceMin<keepdims=0>(c)\n",
                        "int64 y"),
    "cumsum_rev": ("  c = Concat<axis=0>(nv, nv, s)\n  y = CumSum<reverse=1, exclusive=1>(c, i0)\n", "int64[3] y"),
    # Casts through every type and back
    "cast_bool": ("  b = Cast<to=9>(n)\n  y = Cast<to=7>(b)\n", "int64 y"),
    "cast_double": ("  b = Cast<to=11>(n)\n  y = Cast<to=7>(b)\n", "int64 y"),
    "cast_f16": ("  b = Cast<to=10>(n)\n  y = Cast<to=7>(b)\n", "int64 y"),
    "cast_bf16": ("  b = Cast<to=16>(n)\n  y = Cast<to=7>(b)\n", "int64 y"),
    "cast_u64_neg": ("  f = Constant<value = int64 {2}>()\n  a = Sub(f, n)\n  b = Cast<to=13>(a)\n  y = Cast<to=7>(b)\n", "int64 y"),
    "cast_u32_neg": ("  f = Constant<value = int64 {2}>()\n  a = Sub(f, n)\n  b = Cast<to=12>(a)\n  y = Cast<to=7>(b)\n", "int64 y"),
    "cast_f16_round": ("  f = Constant<value = int64 {2051}>()\n  b = Cast<to=10>(f)\n  y = Cast<to=7>(b)\n", "int64 y"),
    "cast_bf16_round": ("  f = Constant<value = int64 {259}>()\n  b = Cast<to=16>(f)\n  y = Cast<to=7>(b)\n", "int64 y"),
    "cast_float_neg_half": ("  f = Constant<value = float {-2.5}>()\n  y = Cast<to=7>(f)\n", "int64 y"),
    "cast_float_3e9_int32": ("  f = Constant<value = float {3e9}>()\n  b = Cast<to=6>(f)\n  y = Cast<to=7>(b)\n", "int64 y"),
    "cast_i64max_float": ("  a = Constant<value = int64 {9223372036854775807}>()\n  f = Cast<to=1>(a)\n  y = Cast<to=7>(f)\n",
                          "int64 y"),
    "float_add_2pow24": (("  a = Constant<value = float {16777216.0}>()\n  b = Constant<value = float {1.0}>()\n"
                         "  c = Add(a, b)\n  y = Cast<to=7>(c)\n"), "int64 y"),
    "float_div_ceil": (("  nf = Cast<to=11>(n)\n  t = Constant<value = double {2.0}>()\n  q = Div(nf, t)\n  c = Ceil(q)\n"
                       "  y = Cast<to=7>(c)\n"), "int64 y"),
    # Squeeze/Unsqueeze of shape vectors, Squeeze without axes of a dim that may be 1
    "squeeze_shape_vec": ("  a = Squeeze(nv, ax0)\n  y = Unsqueeze(a, ax0)\n", "int64[1] y"),
    "unsq_sq_noaxes": ("  u = Unsqueeze(x, ax0)\n  y = Squeeze(u)\n", "float[N] y"),
    "sq_noaxes_min1": (("  one = Constant<value = int64[1] {1}>()\n  two = Constant<value = int64[1] {2}>()\n"
                       "  m = Min(nv, one)\n  t = Concat<axis=0>(m, two)\n  x0 = Constant<value = float[1,1] {1.0}>()\n"
                       "  e = Expand(x0, t)\n  y = Squeeze(e)\n"), "float[A] y"),
    "fold_unsq_slice_last3": ("  st = Constant<value = int64[1] {-3}>()\n" + BIG + "  z = Slice(x, st, big)\n  sz = Shape(z)\n"
                              "  g = Gather(sz, i0)\n  u = Unsqueeze(g, ax0)\n  m1 = Constant<value = int64[1] {-1}>()\n"
                              "  t = Concat<axis=0>(m1, u)\n  y = Reshape(x, t)\n", "float[A,B] y"),
    "fold_eq_with_fact": (("  z = Constant<value = int64 {0}>()\n  e = Equal(n, z)\n  c = Cast<to=7>(e)\n  y = Unsqueeze(c, ax0)\n"
                          "  m1 = Constant<value = int64[1] {-1}>()\n  t = Concat<axis=0>(s, m1)\n  r = Reshape(x, t)\n"),
                          "int64[1] y"),
}


@pytest.mark.parametrize("name", sorted(HELD))
def test_held(name: str, tmp_path: Path) -> None:
    body, outs = HELD[name]
    assert unsound(model(body, outs), tmp_path) == []


def test_held_function_reshape_inside_if_proves_nothing(tmp_path: Path) -> None:
    # a Reshape -1 in a function called from an If branch that may not run proves nothing
    text = """<ir_version: 8, opset_import: ["" : 17, "local" : 1]>
g (float[seq] x) => (int64[N] y) {
  s = Shape(x)
  i0 = Constant<value = int64 {0}>()
  c = Constant<value = bool {0}>()
  w = If(c) <then_branch = tb () => (float[K] o) { o = local.F(x) },
             else_branch = eb () => (float[K2] o2) { o2 = Identity(x) }>
  one = Constant<value = int64 {1}>()
  n = Gather<axis=0>(s, i0)
  lim = Sub(n, one)
  y = Range(i0, lim, one)
}
<domain: "local", opset_import: ["" : 17]>
F (a) => (b) {
  sa = Shape(a)
  m1 = Constant<value = int64[1] {-1}>()
  t = Concat<axis=0>(sa, m1)
  b0 = Reshape(a, t)
  b = Flatten<axis=0>(b0)
}"""
    path = tmp_path / "m.onnx"
    onnx.save(parser.parse_model(text), str(path))
    assert first_dim_of_y(path) == "max(0, seq - 1)"


def test_held_min_max_chain_of_2000_is_fast_and_sound(tmp_path: Path) -> None:
    # min/max of seq - k, alternating: 4,000 nodes of shape arithmetic infer in well under a few seconds
    from onnx import TensorProto, numpy_helper
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "i0"], ["v0"], axis=0)]
    inits = [numpy_helper.from_array(np.array(0, np.int64), "i0"), numpy_helper.from_array(np.array(1, np.int64), "one")]
    cur = "v0"
    for i in range(2000):
        inits.append(numpy_helper.from_array(np.array(i + 2, np.int64), f"k{i}"))
        nodes.append(helper.make_node("Sub", ["v0", f"k{i}"], [f"t{i}"]))
        nodes.append(helper.make_node("Min" if i % 2 else "Max", [cur, f"t{i}"], [f"v{i + 1}"]))
        cur = f"v{i + 1}"
    nodes.append(helper.make_node("Range", ["i0", cur, "one"], ["y"]))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["seq"])],
                          [helper.make_tensor_value_info("y", TensorProto.INT64, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(tmp_path / "chain.onnx"))
    r = shapeflow_cli("infer", str(tmp_path / "chain.onnx"))
    assert r.returncode == 0, r.stderr
    assert unsound(m, tmp_path, values=(0, 1, 2, 40, 3000)) == []


@pytest.mark.parametrize("args, needle", [
    (["--assume", "seq>=5", "--assume", "seq<=4"], "empty range"),
    (["--assume", "seq<0"], "never negative"),
    (["--assume", "foo>=3"], "foo"),
    (["--assume", "seq>=3", "--dim", "seq=2"], "--dim"),
    (["--assume", "seq=>3"], "expected"),
])
def test_held_bad_assumptions_exit_2_with_one_line(tmp_path: Path, args: list[str], needle: str) -> None:
    onnx.save(model("  y = Identity(x)\n"), str(tmp_path / "m.onnx"))
    r = shapeflow_cli("infer", str(tmp_path / "m.onnx"), *args)
    assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
