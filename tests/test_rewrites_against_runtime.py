"""The rewrites against onnxruntime, on models built to break them (a red team's, issue 16).

Every model goes through the differential oracle (``shapearith.check_model``: original against
optimized in onnxruntime at each binding, and every value or dim inference states) and through
``check_rewrite`` (signature, node count, idempotence). Most of these hold (near misses: the rule
must stay put or be exact); the findings are marked where they are.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest

pytest.importorskip("onnxruntime")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))
import shapearith  # noqa: E402
from test_passes_support import check_rewrite, optimize, parse  # noqa: E402


@pytest.fixture(scope="module")
def runner(ort_runner) -> Iterator[shapearith.Runner]:
    yield ort_runner  # one onnxruntime worker for the session (tests/conftest.py)


def model(body: str, *, inputs: str, outputs: str, inits: str = "", opset: int = 17, functions: str = "") -> str:
    ir = 8 if opset <= 18 else 10
    domains = '"" : %d' % opset + (', "local" : 1' if functions else "")
    return (f"<ir_version: {ir}, opset_import: [{domains}]>\n"
            f"g ({inputs}) => ({outputs})\n" + (f"<{inits}>\n" if inits else "") + "{\n" + body + "\n}\n"
            + functions)


def oracle(runner: shapearith.Runner, m: onnx.ModelProto, symbols: tuple[str, ...], sizes: tuple[int, ...],
           *, changed: bool) -> None:
    onnx.checker.check_model(m)
    bindings = [dict(zip(symbols, v)) for v in itertools.product(sizes, repeat=len(symbols))]
    stats = shapearith.check_model(m, bindings, runner)
    assert stats.bindings_run > stats.bindings_failed, "the model fails in onnxruntime everywhere"
    assert stats.optimize_changed == int(changed)
    if stats.findings:
        pytest.fail("\n".join(f.line() for f in stats.findings), pytrace=False)
    check_rewrite(optimize(m), must_run=True)


# (id, model text, symbols, rules that must fire (empty: nothing may change))
CASES: list[tuple[str, str, tuple[str, ...], tuple[str, ...]]] = [
    # allowzero=1 with a -1 beside a dim that may be 0: [b, -1] is [0, 1] at b=0, not x's [0, 3]
    ("reshape-allowzero-minus-one", model("""
 sh = Shape(x)
 d = Gather<axis=0>(sh, i0)
 u = Unsqueeze(d, a0)
 t = Concat<axis=0>(u, m1)
 y = Reshape<allowzero=1>(x, t)
 o = Neg(y)
""", inputs="float[b, 3] x", outputs="float[b, N] o", inits="int64 i0 = {0}, int64[1] a0 = {0}, int64[1] m1 = {-1}"),
     ("b",), ()),
    # the target names the input's dims in another order: not [0, 0]
    ("reshape-swapped-dims", model("""
 sh = Shape(x)
 d0 = Gather<axis=0>(sh, i0)
 d1 = Gather<axis=0>(sh, i1)
 u0 = Unsqueeze(d0, a0)
 u1 = Unsqueeze(d1, a0)
 t = Concat<axis=0>(u1, u0)
 y = Reshape(x, t)
 o = Neg(y)
""", inputs="float[b, s] x", outputs="float[s, b] o", inits="int64 i0 = {0}, int64 i1 = {1}, int64[1] a0 = {0}"),
     ("b", "s"), ()),
    # Expand to the input's shape with a leading 1: a rank change, not a no-op
    ("expand-rank-up", model("""
 sh = Shape(x)
 t = Concat<axis=0>(one, sh)
 y = Expand(x, t)
 o = Neg(y)
""", inputs="float[b, s] x", outputs="float[1, b, s] o", inits="int64[1] one = {1}"), ("b", "s"), ()),
    # an identity element that broadcasts x to a larger shape is no identity
    ("add-zero-broadcasts-up", model("""
 y = Add(x, z)
 o = Neg(y)
""", inputs="int64[b] x", outputs="int64[N, b] o", inits="int64[3,1] z = {0,0,0}"), ("b",), ()),
    ("add-zero-x-is-1", model("""
 y = Add(x, z)
 o = Neg(y)
""", inputs="int64[1] x", outputs="int64[N] o", inits="int64[4] z = {0,0,0,0}"), ("b",), ()),
    # 0 - x and 1 / x are not x
    ("sub-div-identity-on-the-left", model("""
 y = Sub(z, x)
 w = Div(one, y)
 o = Neg(w)
""", inputs="int64[b] x", outputs="int64[b] o", inits="int64[1] z = {0}, int64[1] one = {1}"), ("b",), ()),
    ("uint8-and-bool-identities", model("""
 y = Mul(x, one)
 w = Div(y, one)
 o = Add(w, w)
 p = And(t, c)
 q = Xor(p, f)
 r = Not(q)
""", inputs="uint8[b, s] x, bool[b, s] c", outputs="uint8[b, s] o, bool[b, s] r",
        inits="uint8[1] one = {1}, bool[1, 1] t = {1}, bool f = {0}"), ("b", "s"), ("identity-element",)),
    # Cast chains through narrow, unsigned, float16 and bool types (int8 values are negative too)
    ("cast-chains", model("""
 c1 = Cast<to=3>(x)
 c2 = Cast<to=10>(c1)
 c3 = Cast<to=6>(c2)
 c4 = Cast<to=2>(c3)
 c5 = Cast<to=9>(c4)
 c6 = Cast<to=7>(c5)
 o = Neg(c6)
 d1 = Cast<to=9>(x)
 d2 = Cast<to=2>(d1)
 d3 = Cast<to=7>(d2)
 p = Neg(d3)
 e1 = Cast<to=10>(x)
 e2 = Cast<to=2>(e1)
 e3 = Cast<to=3>(e2)
 q = Neg(e3)
""", inputs="int8[b] x", outputs="int64[b] o, int64[b] p, int8[b] q"), ("b",), ("no-op-cast",)),
    # the first Unsqueeze is read by a subgraph too: it stays
    ("fan-out-read-by-a-subgraph", model("""
 u = Unsqueeze(x, a0)
 v = Unsqueeze(u, a1)
 w = Unsqueeze(u, a2)
 o = Add(v, w)
 y = If(cond) <then_branch = g1 () => (float[1, b, s] o1) { o1 = Neg(u) },
               else_branch = g2 () => (float[1, b, s] o2) { o2 = Abs(u) }>
""", inputs="float[b, s] x, bool cond", outputs="float[1, 1, b, s] o, float[1, b, s] y",
        inits="int64[1] a0 = {0}, int64[1] a1 = {1}, int64[1] a2 = {2}"), ("b", "s"), ()),
    ("fan-out-negative-axes-opset11", model("""
 u = Unsqueeze<axes = [-1]>(x)
 v = Unsqueeze<axes = [-1]>(u)
 w = Unsqueeze<axes = [0]>(u)
 o = Add(v, w)
""", inputs="float[b, s] x", outputs="float[N, M, K, L] o", opset=11), ("b", "s"), ("fan-out-merge",)),
    # duplicates whose outputs are both graph outputs, or read by a subgraph, keep their names
    ("duplicates-are-graph-outputs", model("""
 a = Shape(x)
 c = Shape(x)
""", inputs="float[b, s] x", outputs="int64[2] a, int64[2] c"), ("b", "s"), ()),
    ("duplicates-read-by-subgraphs", model("""
 a = Shape(x)
 c = Shape(x)
 y = If(cond) <then_branch = g1 () => (int64[2] o1) { o1 = Identity(c) },
               else_branch = g2 () => (int64[2] o2) { o2 = Identity(a) }>
""", inputs="float[b, s] x, bool cond", outputs="int64[2] y"), ("b", "s"), ()),
    ("shape-start-is-not-a-duplicate", model("""
 a = Shape<start = 1>(x)
 c = Shape(x)
 o = Concat<axis = 0>(a, c)
""", inputs="float[b, s] x", outputs="int64[3] o"), ("b", "s"), ()),
    # a function body: the same Cast under two values of its attribute reference
    ("function-attribute-references", model("""
 y = local.f<t = 7>(x)
 w = local.f<t = 6>(x)
 o = Neg(y)
""", inputs="int32[b, s] x", outputs="int64[b, s] o, int32[b, s] w", functions='''
<domain: "local", opset_import: ["" : 17]>
f <t> (x) => (y) {
  c1 = Cast<to: int = @t>(x)
  c2 = Cast<to: int = @t>(x)
  y = Add(c1, c2)
}
'''), ("b", "s"), ("merge-duplicates",)),
    # Identity as an If branch's output (it keeps the branch output's name) and after the If
    ("identity-in-and-after-if", model("""
 y = If(cond) <then_branch = g1 () => (float[b, s] o1) { o1 = Identity(x) },
               else_branch = g2 () => (float[b, s] o2) { o2 = Neg(x) }>
 o = Identity(y)
 p = Neg(o)
""", inputs="float[b, s] x, bool cond", outputs="float[b, s] p"), ("b", "s"), ("identity-node",)),
    # string and float Constants become initializers; the outputs are strings
    ("string-constants", model("""
 a = Constant<value_string = "hi">()
 b2 = Constant<value_strings = ["x", "y"]>()
 c = Identity(a)
 d = Identity(b2)
 e = Constant<value_floats = [1.5, 2.5]>()
 o = Add(x, e)
""", inputs="float[2] x", outputs="string c, string[2] d, float[2] o"), ("b",), ("constant-node",)),
    ("concat-negative-axis-and-empty", model("""
 c1 = Concat<axis = -1>(x, e)
 c2 = Concat<axis = 0>(c1, x, c1)
 o = Neg(c2)
""", inputs="int64[b] x", outputs="int64[N] o", inits="int64[0] e = {}"), ("b",), ("merge-concat",)),
]


@pytest.mark.parametrize("text,symbols,fires", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_attack(runner: shapearith.Runner, text: str, symbols: tuple[str, ...], fires: tuple[str, ...]) -> None:
    m = parse(text)
    out = optimize(m)
    for rule in fires:
        assert out.fired.get(rule, 0) > 0, (rule, out.fired)
    oracle(runner, m, symbols, (0, 1, 2, 7), changed=bool(out.result.changed))


def test_training_info_names_are_kept() -> None:
    m = parse(model("""
 k = Constant<value_ints = [1, 2]>()
 a = Identity(x)
 c = Cast<to = 7>(a)
 o = Add(c, k)
""", inputs="int64[2] x", outputs="int64[2] o"))
    ti = m.training_info.add()
    ti.algorithm.CopyFrom(onnx.parser.parse_graph("alg (int64[2] a, int64[2] k) => (int64[2] w) { w = Add(a, k) }"))
    ti.update_binding.add(key="k", value="w")
    out = optimize(m)
    assert out.fired.get("no-op-cast") == 1
    produced = {o for n in out.after.graph.node for o in n.output}
    assert {"a", "k"} <= produced  # both named by the training algorithm: their nodes stay
    check_rewrite(out)


def test_oracle_feeds_scalar_inputs_as_arrays() -> None:
    """The oracle's feeds for a scalar input: onnxruntime refuses numpy scalars, which made every
    binding of a model with a scalar input (an If condition, a Loop trip count) a silent failure."""
    m = parse(model(" y = Neg(x)", inputs="float[b] x, bool c, int64 n, float f", outputs="float[b] y"))
    feeds = shapearith.make_feeds(m, {"b": 2}, 0)
    assert feeds is not None
    for name in ("c", "n", "f"):
        assert isinstance(feeds[name], np.ndarray) and feeds[name].shape == ()


LOOP_STATIC_CARRIED = model("""
 vout, scan = Loop(trip, cond0, v0) <body = body (int64 i, bool c, float[2] v_in) => (bool c_out, float[M] v_out,
                                                                                    int64[K] s_out) {
     c_out = Identity(c)
     s = Shape(v_in)
     s_out = Identity(s)
     v_out = Concat<axis = 0>(v_in, v_in)
 }>
 o = Neg(vout)
""", inputs="int64 trip, bool cond0, float[2] v0", outputs="float[N] o, int64[T, 1] scan")


def test_loop_carried_shape_that_grows_is_not_folded(runner: shapearith.Runner) -> None:
    oracle(runner, parse(LOOP_STATIC_CARRIED), ("b",), (1,), changed=False)
