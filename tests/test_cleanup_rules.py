"""The clean-up rules of issue 16: merge-duplicates (SF207), no-op-cast (SF208), identity-node
(SF209) and constant-node (SF210).

Each model that a rule rewrites is checked the generic way (``fuzz/shapearith.py``'s oracle:
optimize keeps every output bit-identical in onnxruntime at seq = 0, 1, 2, 5), plus what the rule
did to the graph; near misses must not fire; lint reports the codes and ``--fix`` applies them;
optimize is idempotent. The Cast algebra (``same_through``) is checked against onnxruntime on
every value of each small source type and the edges of the large ones.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import onnx.parser
import pytest
from onnx import TensorProto, helper

from shapeflow.io.load import load_model_bytes
from shapeflow.passes import rewrite_model
from shapeflow.rewrites import select
from shapeflow.rewrites.sf208_no_op_cast import same_through

pytest.importorskip("onnxruntime")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))
import shapearith  # noqa: E402

SEQS = (0, 1, 2, 5, 257)


@pytest.fixture(scope="module")
def runner(ort_runner) -> Iterator[shapearith.Runner]:
    yield ort_runner  # one onnxruntime worker for the session (tests/conftest.py)


def model(body: str, *, inputs: str = "float[seq] x", outputs: str, inits: str = "",
          opset: int = 17, ir: int | None = None, functions: str = "") -> onnx.ModelProto:
    ir = ir if ir is not None else (8 if opset <= 18 else 10)
    extra = ', "local" : 1' if functions else ""
    text = (f'<ir_version: {ir}, opset_import: ["" : {opset}{extra}]>\n'
            f"g ({inputs}) => ({outputs})\n" + (f"<{inits}>\n" if inits else "") + "{\n" + body + "\n}\n"
            + functions)
    m = onnx.parser.parse_model(text)
    onnx.checker.check_model(m)
    return m


def check(runner: shapearith.Runner, m: onnx.ModelProto) -> None:
    """optimize keeps every output bit-identical (and the stated dims/values hold)."""
    stats = shapearith.check_model(m, [{"seq": s} for s in SEQS], runner,
                                   optimize_bindings=[{"seq": s} for s in SEQS])
    assert stats.bindings_run > stats.bindings_failed, "the model fails in onnxruntime at every binding"
    assert stats.optimize_changed, "optimize changed nothing"
    if stats.findings:
        pytest.fail("\n".join(f.line() for f in stats.findings) + "\n" + shapearith._model_text(m),
                    pytrace=False)


def optimized(m: onnx.ModelProto, rules: list[str] | None = None) -> tuple[onnx.ModelProto, dict[str, int]]:
    loaded = load_model_bytes(m.SerializeToString(), "m.onnx")
    result = rewrite_model(loaded, select(rules))
    return loaded.proto, result.rewrites


def ops(m: onnx.ModelProto) -> list[str]:
    return [n.op_type for n in m.graph.node]


# -- merge-duplicates (SF207) ----------------------------------------------------------------------

# Four copies of Shape -> Gather -> Unsqueeze, as some exports write them, each feeding a Concat.
_CHAINS = "\n".join(
    f" s{k} = Shape(x)\n g{k} = Gather<axis=0>(s{k}, zero)\n u{k} = Unsqueeze(g{k}, ax)" for k in range(4))


def test_duplicate_shape_chains_collapse_over_rounds(runner: shapearith.Runner) -> None:
    m = model(_CHAINS + "\n c = Concat<axis=0>(u0, u1, u2, u3)\n y = Reshape(x, c)\n"
              " t = Concat<axis=0>(u3, u2)\n z = Expand(y, t)",
              inputs="float[seq, 1, 1, 1] x", outputs="float[?, ?, ?, ?] y, float[?,?,?,?] z",
              inits="int64 zero = {0}, int64[1] ax = {0}")
    out, fired = optimized(m, ["merge-duplicates"])
    assert ops(out) == ["Shape", "Gather", "Unsqueeze", "Concat", "Reshape", "Concat", "Expand"]
    assert fired["merge-duplicates"] == 9
    # the survivors are the first copies
    assert [n.output[0] for n in out.graph.node[:3]] == ["s0", "g0", "u0"]
    assert list(out.graph.node[3].input) == ["u0"] * 4
    check(runner, m)


def test_a_rewrite_that_makes_a_twin_over_an_equal_constant_is_merged_next_round(
        runner: shapearith.Runner) -> None:
    # identity-node rewires A to read x: A becomes Add(c1, x), the twin of the unchanged B, which
    # reads an equal constant under another name (c2): the round must see it and run once more
    m = model(" i = Identity(x)\n a = Add(c1, i)\n b = Add(c2, x)\n y = Mul(a, b)",
              outputs="float[seq] y", inits="float[1] c1 = {2.0}, float[1] c2 = {2.0}")
    out, fired = optimized(m, ["identity-node", "merge-duplicates"])
    assert fired == {"identity-node": 1, "merge-duplicates": 1}, fired
    assert ops(out) == ["Add", "Mul"]
    assert list(out.graph.node[1].input) == ["a", "a"]
    check(runner, m)


def test_duplicates_with_other_attributes_or_inputs_stay() -> None:
    m = model(" s = Shape(x)\n a = Gather<axis=0>(s, zero)\n b = Gather<axis=0>(s, one)\n"
              " c = Gather<axis=0>(s, zero)\n d = Cast<to=1>(a)\n e = Cast<to=11>(a)",
              inputs="float[seq, 4] x", outputs="int64 b, int64 c, float d, double e",
              inits="int64 zero = {0}, int64 one = {1}")
    out, fired = optimized(m, ["merge-duplicates"])
    # c is a graph output: it keeps its name, though it repeats a
    assert fired == {}, fired
    assert len(out.graph.node) == 6


def test_random_ops_and_custom_domains_are_never_merged(runner: shapearith.Runner) -> None:
    m = model(" r1 = RandomUniformLike(x)\n r2 = RandomUniformLike(x)\n y = Add(r1, r2)\n"
              " a = Relu(x)\n b = Relu(x)\n z = Add(a, b)",
              outputs="float[seq] y, float[seq] z")
    out, fired = optimized(m, ["merge-duplicates"])
    assert fired == {"merge-duplicates": 1}
    assert ops(out) == ["RandomUniformLike", "RandomUniformLike", "Add", "Relu", "Add"]
    custom = model(" a = local.F(x)\n b = local.F(x)\n y = Add(a, b)", outputs="float[seq] y",
                   functions='<domain: "local", opset_import: ["" : 17]>\nF (t) => (u) { u = Relu(t) }')
    assert optimized(custom, ["merge-duplicates"])[1] == {}


def test_duplicate_read_by_name_in_a_subgraph_stays() -> None:
    m = model(" a = Shape(x)\n b = Shape(x)\n y = If(c) <then_branch = t () => (int64[1] o) "
              "{ o = Identity(b) }, else_branch = e () => (int64[1] o2) { o2 = Identity(a) }>",
              inputs="float[seq] x, bool c", outputs="int64[1] y")
    assert optimized(m, ["merge-duplicates"])[1] == {}


def test_duplicate_constants_merge_in_a_function_body(runner: shapearith.Runner) -> None:
    m = model(" y = local.F(x)", outputs="float[seq] y",
              functions='<domain: "local", opset_import: ["" : 17]>\nF (t) => (u) {\n'
                        " c1 = Constant<value = float[1] {2.0}>()\n c2 = Constant<value = float[1] {2.0}>()\n"
                        " c3 = Constant<value = float[1] {3.0}>()\n a = Mul(t, c1)\n b = Mul(a, c2)\n"
                        " u = Mul(b, c3)\n}")
    out, fired = optimized(m, ["merge-duplicates"])
    assert fired == {"merge-duplicates": 1}
    assert [n.output[0] for n in out.functions[0].node] == ["c1", "c3", "a", "b", "u"]
    check(runner, m)


def test_nodes_reading_equal_small_initializers_merge(runner: shapearith.Runner) -> None:
    # jax2onnx writes new [0], [2] and [4, 4] initializers for each Dense layer's output shape:
    # the Slices read equal constants under other names, so they are one, and so are the Concats
    # and Reshapes after them
    m = model(" s = Shape(x)\n"
              + "".join(f" b{k} = Slice(s, st{k}, en{k})\n c{k} = Concat<axis=0>(b{k}, f{k})\n"
                        f" r{k} = Reshape(x, c{k})\n" for k in range(3))
              + " p = Add(r0, r1)\n y = Add(p, r2)",
              inputs="float[seq, 2, 8] x", outputs="float[?, ?, ?, ?] y",
              inits=", ".join(f"int64[1] st{k} = {{0}}, int64[1] en{k} = {{2}}, int64[2] f{k} = {{4, 4}}"
                              for k in range(3)))
    out, fired = optimized(m, ["merge-duplicates"])
    assert fired["merge-duplicates"] == 6, fired
    assert ops(out) == ["Shape", "Slice", "Concat", "Reshape", "Add", "Add"]
    # the survivors read the first constants; the others are no longer read, and go
    assert sorted(t.name for t in out.graph.initializer) == ["en0", "f0", "st0"]
    check(runner, m)


def test_initializers_that_only_look_equal_stay_apart() -> None:
    # +0.0 and -0.0 (x + -0.0 keeps a -0.0 of x, x + 0.0 does not), int64 [0] and int32 [0],
    # an initializer that is also a graph input (a caller may override it), and constants over
    # 64 elements (compared by name only)
    m = model(" a = Add(x, zp)\n b = Add(x, zm)\n y = Sub(a, b)\n"
              " s = Shape(x)\n i = Cast<to=6>(s)\n g = Gather(s, i64)\n h = Gather(i, i32)\n"
              " k = Gather(s, o1)\n l = Gather(s, o2)\n"
              " u = Add(w, v1)\n v = Add(w, v2)\n z = Add(u, v)",
              inputs="float[seq] x, int64[1] o2, float[65] w",
              outputs="float[seq] y, int64[1] g, int32[1] h, int64[1] k, int64[1] l, float[65] z",
              inits="float zp = {0.0}, float zm = {-0.0}, int64[1] i64 = {0}, int32[1] i32 = {0}, "
                    "int64[1] o1 = {0}, int64[1] o2 = {0}, "
                    f"float[65] v1 = {{{', '.join(['1.0'] * 65)}}}, float[65] v2 = {{{', '.join(['1.0'] * 65)}}}")
    out, fired = optimized(m, ["merge-duplicates"])
    assert fired == {}, fired
    assert len(out.graph.node) == len(m.graph.node)


# -- no-op-cast (SF208) ----------------------------------------------------------------------------

def test_cast_to_own_type_and_round_trips_go(runner: shapearith.Runner) -> None:
    m = model(" s = Shape(x)\n a = Cast<to=7>(s)\n y = Reshape(x, a)\n i = Cast<to=6>(a)\n"
              " j = Cast<to=7>(i)\n k = Cast<to=6>(j)\n z = Add(k, one)\n"
              " j2 = Cast<to=7>(i)\n f = Cast<to=1>(j2)\n w = Mul(f, two)",
              inputs="float[seq] x", outputs="float[?] y, int32[1] z, float[1] w",
              inits="int32 one = {1}, float two = {2.0}")
    out, fired = optimized(m, ["no-op-cast"])
    # a (int64 -> int64) goes; Cast(Cast(i: int32, int64), int32) is i; f casts i directly
    assert ops(out) == ["Shape", "Reshape", "Cast", "Add", "Cast", "Mul"], ops(out)
    assert [list(n.input) for n in out.graph.node[1:5]] == [["x", "s"], ["s"], ["i", "one"], ["i"]]
    assert fired["no-op-cast"] == 3
    check(runner, m)
    # an int64 shape value does not round-trip through int32 (values above 2**31 would wrap)
    m64 = model(" s = Shape(x)\n i = Cast<to=6>(s)\n j = Cast<to=7>(i)\n y = Reshape(x, j)",
                inputs="float[seq] x", outputs="float[?] y")
    assert optimized(m64, ["no-op-cast"])[1] == {}


def test_widening_inner_cast_goes(runner: shapearith.Runner) -> None:
    # int8 -> float16 holds every int8; float16 -> int16 then equals int8 -> int16
    m = model(" s = Shape(x)\n b = Cast<to=3>(s)\n h = Cast<to=10>(b)\n w = Cast<to=5>(h)\n"
              " y = Cast<to=7>(w)\n z = Add(y, s)",
              inputs="float[seq] x", outputs="int64[1] z")
    out, fired = optimized(m, ["no-op-cast"])
    # twice: Cast(Cast(b: int8, float16), int16), then Cast(Cast(b, int16), int64)
    assert ops(out) == ["Shape", "Cast", "Cast", "Add"], ops(out)
    assert fired == {"no-op-cast": 2}, fired
    check(runner, m)


@pytest.mark.parametrize("chain,why", [
    ((2, 3, 6), "int8 does not hold uint8"),
    ((6, 11, 3), "float middle, int8 target narrower than int32"),
    ((6, 10, 7), "float16 does not hold int32"),
    ((1, 7, 1), "float source"),
])
def test_casts_that_may_change_values_stay(chain: tuple[int, int, int], why: str) -> None:
    src, mid, dst = chain
    m = helper.make_model(helper.make_graph(
        [helper.make_node("Cast", ["x"], ["m"], to=mid), helper.make_node("Cast", ["m"], ["y"], to=dst),
         helper.make_node("Neg", ["y"], ["z"])], "g",
        [helper.make_tensor_value_info("x", src, ["n"])], [helper.make_tensor_value_info("z", dst, ["n"])]),
        opset_imports=[helper.make_opsetid("", 17)])
    out, fired = optimized(m, ["no-op-cast"])
    assert fired == {}, why


_INTS = [TensorProto.BOOL, TensorProto.INT8, TensorProto.UINT8, TensorProto.INT16, TensorProto.UINT16,
         TensorProto.INT32, TensorProto.UINT32, TensorProto.INT64, TensorProto.UINT64]
_FLOATS = [TensorProto.FLOAT16, TensorProto.FLOAT, TensorProto.DOUBLE]


def _values(dtype: int) -> np.ndarray:
    np_type = helper.tensor_dtype_to_np_dtype(dtype)
    if dtype == TensorProto.BOOL:
        return np.array([False, True])
    info = np.iinfo(np_type)
    if info.bits <= 16:
        return np.arange(info.min, int(info.max) + 1).astype(np_type)
    edges = [info.min, info.max, 0, 1, -1, 255, 256, 257, 2049, 65504, 65520, 2**24 + 1, 2**31 - 1,
             -(2**31), 2**53 + 1, -(2**53) - 1, 123456789]
    return np.array([v for v in edges if info.min <= v <= info.max], dtype=np_type)


def test_same_through_agrees_with_onnxruntime() -> None:
    """Every (source, middle, target) the rule treats as the same conversion, run both ways."""
    import onnxruntime as ort

    checked = 0
    for src, mid, dst in itertools.product(_INTS, _INTS + _FLOATS, _INTS + _FLOATS):
        if not same_through(src, mid, dst):
            continue
        g = helper.make_graph(
            [helper.make_node("Cast", ["x"], ["m"], to=mid), helper.make_node("Cast", ["m"], ["a"], to=dst),
             helper.make_node("Cast", ["x"], ["b"], to=dst)], "g",
            [helper.make_tensor_value_info("x", src, ["n"])],
            [helper.make_tensor_value_info("a", dst, ["n"]), helper.make_tensor_value_info("b", dst, ["n"])])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        a, b = sess.run(None, {"x": _values(src)})
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), (src, mid, dst)
        checked += 1
    assert checked > 100
    # and the ones it must refuse
    assert not same_through(TensorProto.UINT8, TensorProto.INT8, TensorProto.INT32)
    assert not same_through(TensorProto.INT32, TensorProto.DOUBLE, TensorProto.INT8)
    assert not same_through(TensorProto.INT64, TensorProto.DOUBLE, TensorProto.INT64)
    assert same_through(TensorProto.INT32, TensorProto.INT64, TensorProto.INT8)


# -- identity-node (SF209) -------------------------------------------------------------------------

def test_identities_go_unless_they_keep_a_name(runner: shapearith.Runner) -> None:
    m = model(" k = Identity(x)\n a = Identity(x)\n s = Shape(a)\n b = Identity(s)\n y = Reshape(a, b)\n"
              " z = Identity(y)\n w = If(c) <then_branch = t () => (float[?] o) { o = Identity(k) }, "
              "else_branch = e () => (float[?] o2) { o2 = Identity(x) }>",
              inputs="float[seq] x, bool c", outputs="float[?] z, float[?] w")
    out, fired = optimized(m, ["identity-node"])
    # a and b go; z (graph output), k (read by name in a subgraph) and the branch outputs stay
    assert fired == {"identity-node": 2}
    assert [n.output[0] for n in out.graph.node] == ["k", "s", "y", "z", "w"]
    check(runner, model(" a = Identity(x)\n s = Shape(a)\n b = Identity(s)\n y = Reshape(a, b)\n"
                        " z = Identity(y)", outputs="float[?] z"))


def test_identity_of_a_sequence_stays() -> None:
    m = model(" q = SequenceConstruct(x, x)\n p = Identity(q)\n y = SequenceAt(p, zero)",
              outputs="float[?] y", inits="int64 zero = {0}")
    assert optimized(m, ["identity-node"])[1] == {}


# -- constant-node (SF210) -------------------------------------------------------------------------

def test_main_graph_constants_become_initializers(runner: shapearith.Runner) -> None:
    m = model(" a = Constant<value_ints = [0]>()\n u = Unsqueeze(x, a)\n"
              " f = Constant<value_float = 2.0>()\n v = Mul(u, f)\n"
              " t = Constant<value = int64[2] {1, -1}>()\n y = Reshape(v, t)\n"
              " o = Constant<value_int = 3>()",
              outputs="float[1, ?] y, int64 o")
    out, fired = optimized(m, ["constant-node"])
    assert fired == {"constant-node": 3}
    assert ops(out) == ["Unsqueeze", "Mul", "Reshape", "Constant"]  # o is a graph output
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in out.graph.initializer}
    assert inits["a"].tolist() == [0] and inits["a"].dtype == np.int64
    assert inits["f"].shape == () and inits["f"].dtype == np.float32
    assert inits["t"].tolist() == [1, -1]
    check(runner, m)


def test_constants_stay_in_functions_subgraphs_and_old_ir() -> None:
    body = " a = Constant<value_ints = [0]>()\n y = Unsqueeze(x, a)"
    assert optimized(model(body, outputs="float[1, seq] y", ir=3, opset=13), ["constant-node"])[1] == {}
    m = model(" y = local.F(x)", outputs="float[seq] y",
              functions='<domain: "local", opset_import: ["" : 17]>\nF (t) => (u) {\n'
                        " c = Constant<value = float[1] {2.0}>()\n u = Mul(t, c)\n}")
    assert optimized(m, ["constant-node"])[1] == {}
    sub = model(" y = If(c) <then_branch = t () => (float[?] o) { k = Constant<value_float = 1.0>()\n"
                " o = Add(x, k) }, else_branch = e () => (float[?] o2) { o2 = Identity(x) }>",
                inputs="float[seq] x, bool c", outputs="float[?] y")
    assert optimized(sub, ["constant-node"])[1] == {}


def test_string_and_external_free_values() -> None:
    m = model(" s = Constant<value_strings = [\"a\", \"b\"]>()\n y = Identity(s)", inputs="float[seq] x",
              outputs="string[2] y")
    out, fired = optimized(m, ["constant-node"])
    assert fired == {"constant-node": 1}
    values = onnx.numpy_helper.to_array(out.graph.initializer[0]).tolist()
    assert [v.decode() if isinstance(v, bytes) else v for v in values] == ["a", "b"]


# -- all the rules together ------------------------------------------------------------------------

_EXPORT = (" c0 = Constant<value_ints = [0]>()\n" + _CHAINS.replace("ax)", "c0)")
           + "\n i = Identity(u0)\n k = Cast<to=7>(i)\n c = Concat<axis=0>(k, u1, u2, u3)\n y = Reshape(x, c)")


def test_together_idempotent_and_exact(runner: shapearith.Runner, tmp_path: Path) -> None:
    m = model(_EXPORT, inputs="float[seq, 1, 1, 1] x", outputs="float[?, ?, ?, ?] y",
              inits="int64 zero = {0}")
    out, fired = optimized(m)
    # the copies merge, the Constant, Identity and Cast go, and shape-slice takes the chain left
    assert ops(out) == ["Shape", "Concat", "Reshape"], (ops(out), fired)
    assert {"merge-duplicates", "constant-node", "identity-node", "no-op-cast"} <= set(fired)
    again, fired2 = optimized(out)
    assert fired2 == {} and again.SerializeToString() == out.SerializeToString()
    check(runner, m)


def test_lint_reports_the_codes_and_fix_applies(tmp_path: Path) -> None:
    import json

    import cli_process

    path = tmp_path / "m.onnx"
    path.write_bytes(model(_EXPORT, inputs="float[seq, 1, 1, 1] x", outputs="float[?, ?, ?, ?] y",
                           inits="int64 zero = {0}").SerializeToString())
    cmd = ["lint", str(path), "--select", "SF207,SF208,SF209,SF210", "--format", "json"]
    found = json.loads(cli_process.shapeflow(*cmd).stdout)
    codes = {d["code"] for d in found["diagnostics"]} if isinstance(found, dict) else {d["code"] for d in found}
    assert codes == {"SF207", "SF208", "SF209", "SF210"}, codes
    fix = cli_process.shapeflow(*cmd[:-2], "--fix")
    assert fix.returncode in (0, 1), fix.stderr
    after = onnx.load(str(path))
    assert len(after.graph.node) < 5 + 12
    found = json.loads(cli_process.shapeflow(*cmd).stdout)
    left = found["diagnostics"] if isinstance(found, dict) else found
    assert left == [], left


def test_carried_and_full_inference_agree_on_duplicates() -> None:
    """Whether a next round could find a new duplicate is judged from what merge-duplicates'
    pattern depends on (a node's own op, inputs and attributes: ``SAME_KEY``,
    ``rounds.keyed_collision``); a round of full inference every time must give the same bytes."""
    chains = model(_CHAINS + "\n c = Concat<axis=0>(u0, u1, u2, u3)\n y = Reshape(x, c)",
                   inputs="float[seq, 1, 1, 1] x", outputs="float[?, ?, ?, ?] y",
                   inits="int64 zero = {0}, int64[1] ax = {0}")
    export = model(_EXPORT, inputs="float[seq, 1, 1, 1] x", outputs="float[?, ?, ?, ?] y",
                   inits="int64 zero = {0}")
    # (with every rule, the round that merges the copies rewires the Concat, a root of
    # merge-concat: one confirming round follows)
    for m, rules, rounds in ((chains, ["merge-duplicates"], 3), (export, None, 3)):
        a = load_model_bytes(m.SerializeToString(), "m.onnx")
        b = load_model_bytes(m.SerializeToString(), "m.onnx")
        ra = rewrite_model(a, select(rules))
        rewrite_model(b, select(rules), full_inference=True)
        assert a.proto.SerializeToString() == b.proto.SerializeToString()
        assert ra.rounds == rounds  # the copies collapse one level per round, and then it stops


def test_no_initializer_left_unread(runner: shapearith.Runner) -> None:
    """A Constant made an initializer in the round that also removes its last reader (here the
    axes of an Unsqueeze that shape-slice replaces) does not stay behind unread."""
    m = model(" i = Constant<value = int64 {0}>()\n a = Constant<value_ints = [0]>()\n s = Shape(x)\n"
              " g = Gather<axis=0>(s, i)\n u = Unsqueeze(g, a)\n y = Concat<axis=0>(u, m1)",
              inputs="float[seq, 3] x", outputs="int64[2] y", inits="int64[1] m1 = {-1}")
    out, fired = optimized(m)
    assert fired.get("shape-slice") == 1 and fired.get("constant-node"), fired
    read = {i for n in out.graph.node for i in n.input}
    assert all(t.name in read for t in out.graph.initializer), (fired, [t.name for t in out.graph.initializer])
    check(runner, m)
