"""Every crash the fuzzers (fuzz/) or the differential soundness test found, as a named test.

Each runs the real CLI (``infer``, ``lint``, ``optimize``) on the smallest model that showed the
bug and requires what RELIABILITY.md requires of any input: an exit code of 0, 1 or 2 (never 3,
an internal error), no traceback, one line per problem. A bug not fixed yet is a strict xfail
whose reason names the code at fault; fuzz/pipeline.py lists it in KNOWN_BUGS (under the same
test name) so the fuzzers step over it until it is fixed.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import onnx
import pytest
from onnx import helper

from contract.harness import require, run_cli
from contract.models import ints, model, single, vi

COMMANDS = ("infer", "lint", "optimize")


def run_all(cmd: str, data: bytes, tmp_path: Path, *extra: str):  # type: ignore[no-untyped-def]
    require(cmd)
    src = tmp_path / "m.onnx"
    src.write_bytes(data)
    out = ["-o", str(tmp_path / "out.onnx")] if cmd == "optimize" else []
    r = run_cli([cmd, str(src), *out, *extra], cwd=tmp_path)
    info = r.describe()
    assert r.returncode in (0, 1, 2), info
    assert "Traceback" not in r.output and "internal error" not in r.output, info
    return r


def xfail_for(commands: tuple[str, ...], reason: str) -> list:
    return [pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=reason)) if c in commands else c
            for c in COMMANDS]


def _invalid_utf8(m: onnx.ModelProto, placeholder: bytes, raw: bytes) -> bytes:
    """The model's bytes with every ``placeholder`` name replaced by bytes that are not UTF-8."""
    assert len(placeholder) == len(raw)
    data = m.SerializeToString()
    assert placeholder in data
    return data.replace(placeholder, raw)


# -- fuzz_bytes: an axes tensor of data_type 86 (no such type) ---------------------------------------------

@pytest.mark.parametrize("cmd", COMMANDS)
def test_axes_of_an_unknown_dtype(cmd: str, tmp_path: Path) -> None:
    """Fixed: SF109 named the type with DataType.Name(86) (ValueError, exit 3)."""
    m = single("Squeeze", [1, 3], [0])
    m.graph.initializer[0].data_type = 86
    r = run_all(cmd, m.SerializeToString(), tmp_path)
    assert r.returncode in (1, 2)


@pytest.mark.parametrize("fmt", ["text", "json"])
@pytest.mark.parametrize("cmd", ["infer", "lint"])
def test_graph_input_of_an_unknown_dtype(cmd: str, fmt: str, tmp_path: Path) -> None:
    """Fixed: analysis.dtype_name named the type with DataType.Name(86) (exit 3 with --format json).
    No such type exists, so onnxruntime refuses the model: SF016, exit 1."""
    m = single("Unsqueeze", [2, 3], [0])
    m.graph.input[0].type.tensor_type.elem_type = 86
    r = run_all(cmd, m.SerializeToString(), tmp_path, "--format", fmt)
    assert r.returncode == 1 and "SF016" in r.stdout
    if fmt == "json" and cmd == "infer":
        doc = json.loads(r.stdout)
        assert {t["dtype"] for t in doc["tensors"] if t["name"] == "x"} == {"dtype 86"}


# -- fuzz_bytes: names that are not UTF-8 -------------------------------------------------------------------

@pytest.mark.parametrize("cmd", COMMANDS)
def test_rejection_names_a_tensor_that_is_not_utf8(cmd: str, tmp_path: Path) -> None:
    """Fixed: errors._quote (a node reading an undefined tensor named b't\\xff\\xfe') crashed on bytes.
    Since io rejects names that are not UTF-8 at load, the rejection names the field instead."""
    nodes = [helper.make_node("Relu", ["tZZ"], ["y"], name="n")]
    m = model(nodes, [vi("x", [2])], [vi("y", None)])
    r = run_all(cmd, _invalid_utf8(m, b"tZZ", b"t\xff\xfe"), tmp_path)
    assert r.returncode == 2 and "node 'n': input[0] is not valid UTF-8" in r.output, r.describe()


@pytest.mark.parametrize("fmt", ["text", "json"])
@pytest.mark.parametrize("cmd", COMMANDS)
def test_names_that_are_not_utf8(cmd: str, fmt: str, tmp_path: Path) -> None:
    """Fixed: protobuf hands a string field that is not valid UTF-8 over as bytes; JSON output, the
    infer table and str/bytes comparisons then failed (exit 3). io now rejects such a model at
    load (SF001, exit 2), naming the field."""
    m = single("Squeeze", [2, 3], [1], name="nZZ")  # an SF104 finding names the node
    m.graph.node[0].output[0] = "yZZ"
    m.graph.output[0].name = "yZZ"
    data = _invalid_utf8(m, b"ZZ", b"\xff\xfe")
    r = run_all(cmd, data, tmp_path, "--format", fmt)
    assert r.returncode == 2, r.describe()
    assert "SF001" in r.output and "node #0: output[0] is not valid UTF-8" in r.output, r.describe()
    assert not (tmp_path / "out.onnx").exists()
    if fmt == "json" and r.stdout.strip():
        json.loads(r.stdout)


@pytest.mark.parametrize("field, message", [
    ("doc", "the model has a doc_string that is not valid UTF-8"),
    ("dim", "graph input 'x': type.tensor_type.shape.dim[0].dim_param is not valid UTF-8"),
    ("function", "function #0 has a name that is not valid UTF-8"),
    ("subgraph", "node 'inner' in main/if.then_branch: output[0] is not valid UTF-8"),
])
def test_where_a_string_that_is_not_utf8_is(field: str, message: str, tmp_path: Path) -> None:
    """The rejection names the field, wherever it is (io._non_utf8_problem)."""
    m = single("Squeeze", [2, 3], [1], name="sq")
    if field == "doc":
        m.doc_string = "dZZ"
    elif field == "dim":
        m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "bZZ"
    elif field == "function":
        m.functions.append(helper.make_function("local", "fZZ", ["a"], ["b"],
                                                [helper.make_node("Identity", ["a"], ["b"])],
                                                [helper.make_opsetid("", 13)]))
    else:
        branch = helper.make_graph([helper.make_node("Identity", ["x"], ["oZZ"], name="inner")], "then",
                                   [], [vi("oZZ", [2, 3])])
        other = helper.make_graph([helper.make_node("Identity", ["x"], ["o"], name="inner")], "else",
                                  [], [vi("o", [2, 3])])
        m.graph.node.append(helper.make_node("If", ["c"], ["z"], name="if", then_branch=branch,
                                             else_branch=other))
    r = run_all("lint", _invalid_utf8(m, b"ZZ", b"\xff\xfe"), tmp_path)
    assert r.returncode == 2 and message in r.output, r.describe()


# -- fuzz_bytes: a newline inside an op_type, quoted raw by a graph message -------------------------------------

@pytest.mark.parametrize("cmd", COMMANDS)
def test_rejection_stays_on_one_line(cmd: str, tmp_path: Path) -> None:
    """Fixed: ShapeflowError escapes what is not printable in its message (graph.py quotes names raw)."""
    nodes = [helper.make_node("Relu", ["x"], ["u"], name="n1"),
             helper.make_node("Weird\nOp\x1b[2J", ["x"], ["u"], name="n2")]
    m = model(nodes, [vi("x", [2])], [vi("u", None)])
    r = run_all(cmd, m.SerializeToString(), tmp_path)
    assert r.returncode == 2
    lines = [line for line in r.stderr.splitlines() if "defined twice" in line] or \
        [line for line in r.stdout.splitlines() if "defined twice" in line]
    assert len(lines) == 1 and "Weird\\nOp\\x1b[2J" in lines[0], r.describe()
    assert "\x1b" not in r.output


# -- fuzz_bytes: a Shape node without its input --------------------------------------------------------------------

@pytest.mark.parametrize("cmd", COMMANDS)
def test_shape_node_without_input(cmd: str, tmp_path: Path) -> None:
    """Fixed (passes): shape_slice read input 0 of a Shape node that has none (IndexError, exit 3 in
    optimize and in lint's SF201-SF203)."""
    nodes = [helper.make_node("Shape", [], ["shape"], name="shape"),
             helper.make_node("Gather", ["shape", "i0"], ["d"], name="gather", axis=0),
             helper.make_node("Unsqueeze", ["d"], ["y"], name="unsq", axes=[0])]
    m = model(nodes, [vi("x", ["batch", 3])], [vi("y", None)], [ints("i0", [0], dims=[])], opset=11)
    run_all(cmd, m.SerializeToString(), tmp_path)


# -- differential soundness: onnx's Attention-23 shape function on symbolic dims --------------------------------

def test_attention_with_symbolic_hidden_size_is_not_zero() -> None:
    """Fixed (ops/fallback.py): onnx infers Attention-23's output as [batch, seq, 0] when the hidden
    size is symbolic (it reads the dim's dim_value, 0); at run time it is [batch, seq, 24]. A number
    onnx derives from a symbolic dim is now checked against a probe run and left unknown."""
    from shapeflow.graph import build_graph
    from shapeflow.inference import infer
    from shapeflow.io import load_model_bytes

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.case.node import collect_testcases

        case = next(c for c in collect_testcases(None) if c.name == "test_attention_3d")
    m = onnx.ModelProto()
    m.CopyFrom(case.model)
    for i, inp in enumerate(m.graph.input):
        for k, d in enumerate(inp.type.tensor_type.shape.dim):
            d.dim_param = f"s{i}_{k}"
    inf = infer(build_graph(load_model_bytes(m.SerializeToString(), "attention.onnx")))
    shape = inf.lookup(0, m.graph.output[0].name).shape
    assert shape is not None and len(shape) == 3
    assert shape[2] != 0  # unknown (None) is fine; 0 was wrong


# -- not from a fuzzer: hangs the limits exist for -----------------------------------------------------------------

def test_shape_value_squared_twelve_times_is_stopped(tmp_path: Path) -> None:
    """Fixed (inference.py): --max-expr-size now applies to the symbolic *values* of shape tensors,
    where (a + b)^4096 used to be expanded inside one Mul node for minutes."""
    from contract.test_limits import squared_sum

    r = run_all("infer", squared_sum(12).SerializeToString(), tmp_path)
    # (since issue 9 the value leaves int64 after a few squarings and is unknown before the
    # expression limit is reached; tests/contract/test_limits.py covers both ways it stops)
    assert r.returncode == 0  # (a hang is its timeout; its time against a small model: bench_budgets.py)


# -- fuzz_bytes (CI, session 2): an Unsqueeze carrying a graph attribute, in a mergeable chain ---------

@pytest.mark.parametrize("first", [True, False], ids=["on-first", "on-second"])
@pytest.mark.parametrize("cmd", COMMANDS)
def test_unsqueeze_with_a_graph_attribute(cmd: str, first: bool, tmp_path: Path) -> None:
    """Fixed: merge-unsqueeze deleted an Unsqueeze that owned a subgraph (an attribute no
    Unsqueeze has), tripping the editor's guard (AssertionError, exit 3). Now SF117 flags the
    attribute as an error, optimize refuses the model, and no rule rewrites such a node."""
    body = helper.make_graph([helper.make_node("Identity", ["a"], ["b"])], "body",
                             [vi("a", [1])], [vi("b", [1])])
    odd = {"body": body}
    nodes = [helper.make_node("Unsqueeze", ["x"], ["y"], name="u0", axes=[0], **(odd if first else {})),
             helper.make_node("Unsqueeze", ["y"], ["z"], name="u1", axes=[0], **({} if first else odd))]
    graph = helper.make_graph(nodes, "g", [vi("x", ["n"])], [vi("z", None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    r = run_all(cmd, m.SerializeToString(), tmp_path)
    assert r.returncode == 1, r.describe()
    assert "SF117" in r.output or "error-level finding" in r.output, r.describe()
    assert not (tmp_path / "out.onnx").exists()


# -- fuzz_bytes (CI seed 1, session 2): a rewrite inside a function body that makes a caller known ---

_CALLER_LEARNS = """
<ir_version: 8, opset_import: ["" : 17, "local" : 1]>
g (float[1, 1, 3] x) => (float[1, 1, 3] y)
{
    t = local.SU (x)
    s = Shape (t)
    i = Constant <value = int64 {0}> ()
    d = Gather <axis = 0> (s, i)
    k = Constant <value = int64[1] {0}> ()
    u = Unsqueeze (d, k)
    k1 = Constant <value = int64[1] {1}> ()
    big = Constant <value = int64[1] {9}> ()
    rest = Slice (s, k1, big)
    shape = Concat <axis = 0> (u, rest)
    y = Reshape (t, shape)
}
<domain: "local", opset_import: ["" : 17]>
SU (a) => (b)
{
    ax = Constant <value = int64[1] {7}> ()
    p = Unsqueeze (a, ax)
    b = Squeeze (p, ax)
}
"""


def test_optimize_is_idempotent_when_a_function_body_changes(tmp_path: Path) -> None:
    """Fixed: cancelling a pair inside a function body that fails at run time (axis 7 for the
    rank this call passes) made the call's output shape known, so the next optimize folded the
    shape chain behind it: not a fixpoint. A round that rewrites a called function is now followed
    by a whole inference, and, since the run at each call site is linted too, such a model is
    refused before any rewrite: the axis error is reported at the call."""
    m = onnx.parser.parse_model(_CALLER_LEARNS)
    src = tmp_path / "m.onnx"
    src.write_bytes(m.SerializeToString())
    r = run_cli(["optimize", str(src), "-o", str(tmp_path / "out.onnx")], cwd=tmp_path)
    assert r.returncode == 1 and not (tmp_path / "out.onnx").exists(), r.describe()
    assert "SF101" in r.output and "at the call from node" in r.output
    # With an axis valid at every rank, the pair in the body cancels, and a second run of
    # optimize on its output changes nothing.
    good, once, twice = tmp_path / "good.onnx", tmp_path / "once.onnx", tmp_path / "twice.onnx"
    good.write_bytes(onnx.parser.parse_model(_CALLER_LEARNS.replace("int64[1] {7}", "int64[1] {0}"))
                     .SerializeToString())
    r = run_cli(["optimize", str(good), "-o", str(once)], cwd=tmp_path)
    assert r.returncode == 0, r.describe()
    assert "cancel" in run_cli(["optimize", str(good), "-o", str(tmp_path / "v.onnx"), "-v"], cwd=tmp_path).output
    r = run_cli(["optimize", str(once), "-o", str(twice)], cwd=tmp_path)
    assert r.returncode == 0, r.describe()
    assert twice.read_bytes() == once.read_bytes(), "optimize is not idempotent"


def test_constant_of_shape_of_negative_dims_is_no_crash() -> None:
    """shapearith (seed 1) made a ConstantOfShape whose shape has two negative dims: their product
    is a large positive count, and the rule filled a list that many times over. onnxruntime refuses
    the node; inference leaves its value unknown, and no shape rule raises."""
    from onnx import TensorProto as TP

    from shapeflow.graph import build_graph
    from shapeflow.inference import infer
    from shapeflow.io.load import load_model_bytes

    value = helper.make_tensor("v", TP.INT64, [1], [7])
    for dims in ([-(2**35), 2**35], [-(2**35), -(2**35)], [-3, 5]):
        g = helper.make_graph([helper.make_node("ConstantOfShape", ["s"], ["y"], value=value)], "g", [],
                              [helper.make_tensor_value_info("y", TP.INT64, None)],
                              [helper.make_tensor("s", TP.INT64, [2], dims)])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            t = infer(build_graph(load_model_bytes(m.SerializeToString(), "m.onnx"))).tensors[0]["y"]
        assert t is not None and t.value is None, dims
