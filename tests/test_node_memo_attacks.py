"""Attacks on inference's memo of answers per node (``inference.NODE_MEMO``): models built so that
a memoised answer would differ from the rule's if the key missed anything the rules read.

Each model is inferred, linted (every rule), rendered (``infer`` text and JSON), bound
(``--dims``), assumed about (``--assume``) and optimized with the memo and without it: every
output must be the same, and the memo must have answered some nodes (the case is exercised).
The angles: bodies run again (a Loop's widening) and bodies that repeat the main graph's
questions (scopes), shared dim names inferred independently (broadcast joins, optimize), proofs
between two equal questions, dims a kernel fixes (the run after ``refined``), tainted inputs and
doubts, attributes compared by their bytes (-0.0 and 0.0, NaN payloads, INT vs INTS vs STRING),
values of different element types that hold the same ints (bool True, int 1, float 1.0, a
uint8 300 that is 44), initializers a caller may override, legacy broadcasting (Add-6), outputs
without a name (a shape neither interned nor checked against the limits when first answered),
``--max-expr-size`` errors, and shared answers that a later node's value settling writes to.
"""

from __future__ import annotations

import dataclasses
import struct
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper, parser

from shapeflow import inference
from shapeflow.assume import parse_assumptions
from shapeflow.drivers.analysis import analyze
from shapeflow.errors import ShapeflowError
from shapeflow.io import load_model_bytes
from shapeflow.limits import DEFAULT_LIMITS, Limits
from shapeflow.render.json import infer_json_text
from shapeflow.render.text import infer_text
from shapeflow.rules import select_rules

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fuzz"))
import shapearith  # type: ignore[import-not-found]  # noqa: E402


def _with_inits(m: onnx.ModelProto, **arrays: Any) -> onnx.ModelProto:
    m.graph.initializer.extend(numpy_helper.from_array(np.asarray(v[0], v[1]), k) for k, v in arrays.items())
    return m


def _open_outputs(m: onnx.ModelProto) -> onnx.ModelProto:
    """Graph outputs without a declared shape (no SF112 against what the text declares)."""
    for vi in m.graph.output:
        vi.type.tensor_type.ClearField("shape")
    return m


# A Loop whose carried tensor grows (the body runs again, widened) asking the main graph's
# questions twice per run, before and after the Loop.
LOOP = """
<ir_version: 8, opset_import: ["" : 13]>
g (float[batch, seq] x, int64 n, bool c) => (float[?] acc_out, float[?] y1, float[?] y2) {
    s = Shape (x)
    b = Gather <axis = 0> (s, i0)
    bu = Unsqueeze (b, i0v)
    t = Concat <axis = 0> (bu, m1)
    y1 = Reshape (x, t)
    acc_out = Loop (n, c, x) <body = body (int64 it, bool cin, float[batch, seq] acc) => (bool cout, float[batch, ?] acc2) {
        cout = Identity (cin)
        sa = Shape (acc)
        ba = Gather <axis = 0> (sa, i0)
        bua = Unsqueeze (ba, i0v)
        ta = Concat <axis = 0> (bua, m1)
        r = Reshape (acc, ta)
        sb = Shape (acc)
        bb = Gather <axis = 0> (sb, i0)
        bub = Unsqueeze (bb, i0v)
        tb = Concat <axis = 0> (bub, m1)
        r2 = Reshape (acc, tb)
        acc2 = Concat <axis = 1> (r, r2)
    }>
    s2 = Shape (x)
    b2 = Gather <axis = 0> (s2, i0)
    bu2 = Unsqueeze (b2, i0v)
    t2 = Concat <axis = 0> (bu2, m1)
    y2 = Reshape (x, t2)
}
"""

# Loops in a Loop whose carried values widen at both levels: the inner body runs again in each
# round of the outer one, seeded with records made anew (whose shapes the memo must keep alive:
# its keys hold their ids).
NESTED = """
<ir_version: 8, opset_import: ["" : 13]>
g (float[a, b] x, int64 n, bool c) => (float[?] y) {
    y = Loop (n, c, x) <body = outer (int64 oit, bool ocin, float[?, ?] oacc) => (bool ocout, float[?, ?] oacc3) {
        ocout = Identity (ocin)
        o1 = Shape (oacc)
        o2 = Reshape (oacc, m1)
        o3 = Shape (o2)
        o4 = Concat <axis = 0> (o2, o2)
        inner_out = Loop (n, c, oacc) <body = inner (int64 iit, bool icin, float[?, ?] iacc) => (bool icout, float[?, ?] iacc2) {
            icout = Identity (icin)
            i1 = Shape (iacc)
            i2 = Slice (iacc, one, end, zero)
            i3 = Shape (i2)
            i4 = Transpose (i2)
            i5 = Shape (i4)
            iacc2 = Concat <axis = 1> (iacc, iacc)
        }>
        p1 = Shape (inner_out)
        oacc2 = Concat <axis = 0> (oacc, oacc)
        oacc3 = Transpose (oacc2)
    }>
}
"""

# The same questions in two If nodes' four branches (each its own scope) and in the main graph,
# twice in each branch.
IFS = """
<ir_version: 8, opset_import: ["" : 13]>
g (float[batch, seq, 64] x, bool c) => (float[?] z, float[?] z2, float[?] w) {
    z = If (c) <
        then_branch = t1 () => (float[?] o1) { p1 = Shape (x)  q1 = Slice (p1, st, en)  r1 = Concat <axis = 0> (q1, tgt)
                                               pp1 = Shape (x)  qq1 = Slice (pp1, st, en)  rr1 = Concat <axis = 0> (qq1, tgt)
                                               a1 = Reshape (x, r1)  o1 = Reshape (a1, rr1) },
        else_branch = t2 () => (float[?] o2) { p2 = Shape (x)  q2 = Slice (p2, st, en)  r2 = Concat <axis = 0> (q2, tgt)
                                               pp2 = Shape (x)  qq2 = Slice (pp2, st, en)  rr2 = Concat <axis = 0> (qq2, tgt)
                                               a2 = Reshape (x, r2)  o2 = Reshape (a2, rr2) }
    >
    z2 = If (c) <
        then_branch = t3 () => (float[?] o3) { p3 = Shape (x)  q3 = Slice (p3, st, en)  r3 = Concat <axis = 0> (q3, tgt)  o3 = Reshape (x, r3) },
        else_branch = t4 () => (float[?] o4) { p4 = Shape (x)  q4 = Slice (p4, st, en)  r4 = Concat <axis = 0> (q4, tgt)  o4 = Reshape (x, r4) }
    >
    p = Shape (x)
    q = Slice (p, st, en)
    r = Concat <axis = 0> (q, tgt)
    pp = Shape (x)
    qq = Slice (pp, st, en)
    rr = Concat <axis = 0> (qq, tgt)
    w0 = Reshape (x, r)
    w = Reshape (w0, rr)
}
"""

# Two inputs declaring ``batch``: optimize infers them with symbols of their own (batch@m), and
# the broadcasts of batch with batch@m are joins named per pair, in the run's tables.
JOINS = """
<ir_version: 8, opset_import: ["" : 13]>
g (float[batch, 4] x, float[batch, 4] m, float[batch] v) => (float[?] a, float[?] a2, float[?] w, float[?] w2,
                                                            float[?] e, float[?] e2, int64[?] sa, int64[?] sa2) {
    a = Add (x, m)
    a2 = Add (x, m)
    cnd = Greater (x, m)
    cnd2 = Greater (x, m)
    w = Where (cnd, x, m)
    w2 = Where (cnd2, x, m)
    sv = Shape (a)
    sv2 = Shape (a2)
    e = Expand (v, sv)
    e2 = Expand (v, sv2)
    sa = Shape (w)
    sa2 = Shape (w2)
}
"""

# x[1:] is max(batch - 1, 0) before the -1 Reshape proves batch >= 1 and batch - 1 after it;
# the shape arithmetic before and after too.
PROOF = """
<ir_version: 8, opset_import: ["" : 13]>
g (float[batch, seq, 64] x) => (float[?] pre, float[?] pre2, float[?] y, float[?] y2, float[?] post, float[?] post2,
                                 int64[?] d, int64[?] d2, int64[?] d3) {
    pre = Slice (x, one, end, i0v)
    pre2 = Slice (x, one, end, i0v)
    s = Shape (x)
    s2 = Shape (x)
    d = Sub (s, onev)
    d2 = Sub (s2, onev)
    y = Reshape (x, tgt)
    y2 = Reshape (x, tgt)
    post = Slice (x, one, end, i0v)
    post2 = Slice (x, one, end, i0v)
    s3 = Shape (x)
    d3 = Sub (s3, onev)
}
"""

# MatMul's kernel fixes the inner dims a Reshape to a runtime target leaves unknown: the run
# after the one that found them states them (refined) where the memo answered the Reshape.
EQUATE = """
<ir_version: 8, opset_import: ["" : 13]>
g (float[batch, 8] x, int64[2] t, float[4, 3] w) => (float[?] y, float[?] y2) {
    r = Reshape (x, t)
    r2 = Reshape (x, t)
    y = MatMul (r, w)
    y2 = MatMul (r2, w)
}
"""

# A Squeeze of a dim known != 1 fails (what follows is tainted); Concats of mismatched ranks doubt.
TAINT = """
<ir_version: 8, opset_import: ["" : 13]>
g (float[batch, 3] x, float[batch] v) => (float[?] c, float[?] c2, float[?] c3, float[?] c4, int64[?] k, int64[?] k2) {
    q = Squeeze (x, ax1)
    c = Concat <axis = 0> (q, x)
    c2 = Concat <axis = 0> (q, x)
    c3 = Concat <axis = 0> (v, x)
    c4 = Concat <axis = 0> (v, x)
    sq = Shape (q)
    sq2 = Shape (q)
    k = Concat <axis = 0> (sq, sq2)
    k2 = Concat <axis = 0> (sq2, sq)
}
"""

# The answers of Cast to int32 of shape values are shared by the memo; an Identity, a Floor and a
# Cast read them after a proof narrowed the domain (value settling writes the Identity's output,
# which is its input's record: it must leave every sharer as it was).
SHARED = """
<ir_version: 8, opset_import: ["" : 13]>
g (float[batch, seq, 64] x) => (int32[?] c, int32[?] c2, int32[?] i, float[?] f, int64[?] j, float[?] y) {
    s = Shape (x)
    c = Cast <to = 6> (s)
    c2 = Cast <to = 6> (s)
    y = Reshape (x, tgt)
    i = Identity (c2)
    cf = Cast <to = 1> (s)
    cf2 = Cast <to = 1> (s)
    f = Floor (cf2)
    j = Cast <to = 7> (c)
}
"""

# An input left out is not an unknown one (ReduceSum's axes: every axis, or unknown ones); a
# function's nodes read the call's attributes (``@n``), which no key holds.
ABSENT = """
<ir_version: 8, opset_import: ["" : 13, "custom" : 1, "local" : 1]>
g (float[batch, seq] x, float[batch, seq, 2] x3) => (float[?] r1, float[?] r2, float[?] r3, float[?] r4, float[?] f3, float[?] f4) {
    unk = custom.Foo (x)
    r1 = ReduceSum <keepdims = 1> (x)
    r2 = ReduceSum <keepdims = 1> (x, unk)
    r3 = ReduceSum <keepdims = 1> (x)
    r4 = ReduceSum <keepdims = 1> (x, unk)
    f3 = local.F <n = 3> (x3)
    f4 = local.F <n = 4> (x3)
}
<domain: "local", opset_import: ["" : 13]>
F <n> (a) => (o) {
    c = Constant <value_int: int = @n> ()
    z = Constant <value_ints = [0]> ()
    h = Unsqueeze (c, z)
    m = Constant <value_ints = [-1]> ()
    sh = Concat <axis = 0> (h, m)
    o = Reshape (a, sh)
}
"""


def _axes_left_out(m: onnx.ModelProto) -> onnx.ModelProto:
    """r1 and r3 with their axes input named "" (left out) rather than missing from the list."""
    for n in m.graph.node:
        if n.output[0] in ("r1", "r3"):
            n.input.append("")
    return m


def _u8(v: int) -> onnx.TensorProto:
    """A uint8 tensor [v] as a file may store it (int32_data: 300 is read as 44)."""
    t = onnx.TensorProto(name="t", data_type=TensorProto.UINT8, dims=[1])
    t.int32_data.append(v)
    return t


def _by_bytes() -> onnx.ModelProto:
    """Constants and attributes the key compares by their bytes, and values of element types
    whose ints are equal."""
    nan1 = struct.unpack("<f", struct.pack("<I", 0x7FC00001))[0]
    nan2 = struct.unpack("<f", struct.pack("<I", 0x7FC00002))[0]
    nodes: list[onnx.NodeProto] = []
    outs: list[str] = []
    consts: list[tuple[str, dict[str, Any]]] = [
        ("cf0", {"value_float": 0.0}), ("cfm0", {"value_float": -0.0}), ("cn1", {"value_float": nan1}),
        ("cn2", {"value_float": nan2}), ("ci1", {"value_int": 1}), ("ci1b", {"value_int": 1}),
        ("cb", {"value": helper.make_tensor("t", TensorProto.BOOL, [1], [True])}),
        ("cbi", {"value": helper.make_tensor("t", TensorProto.INT64, [1], [1])}),
        ("cff", {"value": helper.make_tensor("t", TensorProto.FLOAT, [1], [1.0])}),
        ("cfi", {"value": helper.make_tensor("t", TensorProto.INT32, [1], [1])}),
        ("cu8", {"value": _u8(300)}), ("cu8b", {"value": _u8(44)}),
    ]
    for name, kw in consts:
        nodes.append(helper.make_node("Constant", [], [name], **kw))
    for a, b in [("cf0", "cfm0"), ("cn1", "cn2"), ("cb", "cbi"), ("cff", "cfi"), ("cu8", "cu8b"), ("ci1", "ci1b")]:
        for k in range(2):
            nodes.append(helper.make_node("Cast", [a], [f"{a}_c{k}"], to=TensorProto.INT64))
            nodes.append(helper.make_node("Cast", [b], [f"{b}_c{k}"], to=TensorProto.INT64))
            nodes.append(helper.make_node("Add", [f"{a}_c{k}", f"{b}_c{k}"], [f"{a}{b}_s{k}"]))
            nodes.append(helper.make_node("Equal", [a, b], [f"{a}{b}_e{k}"]))
            # (equal shapes are one object, so these differ in the key by element type alone)
            nodes.append(helper.make_node("Mul", [a, a], [f"{a}_m{k}"]))
            nodes.append(helper.make_node("Mul", [b, b], [f"{b}_m{k}"]))
            outs += [f"{a}{b}_s{k}", f"{a}{b}_e{k}", f"{a}_m{k}", f"{b}_m{k}"]
    # x and its int64 Cast share one shape record: their Reshapes differ by element type alone
    nodes.append(helper.make_node("Cast", ["x"], ["xi"], to=TensorProto.INT64))
    for k, src in enumerate(("x", "xi", "x", "xi")):
        nodes.append(helper.make_node("Reshape", [src, "flat"], [f"flat{k}"]))
        outs.append(f"flat{k}")
    # attributes no rule reads, differing only in their bytes
    for k, alpha in enumerate([0.0, -0.0, nan1, nan2, 0.0]):
        nodes.append(helper.make_node("Shape", ["x"], [f"sh{k}"], bogus=alpha))
        nodes.append(helper.make_node("Gather", [f"sh{k}", "i0"], [f"g{k}"], axis=0, other=alpha))
        outs.append(f"g{k}")
    # one axis as an INT (read), an INTS and a STRING (not: the default), and the INT again
    for name, axis in (("ga", 1), ("gb", [1]), ("gc", "1"), ("gd", 1)):
        nodes.append(helper.make_node("Gather", ["sh0", "i0v"], [name], axis=axis))
        outs.append(name)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])
    inits = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in (("i0", 0), ("i0v", [0]), ("flat", [-1]))]
    g = helper.make_graph(nodes, "g", [x], [helper.make_tensor_value_info(n, 0, None) for n in outs], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def _overridable() -> onnx.ModelProto:
    """The same values from an initializer a caller may override (a graph input too, IR 4 on)
    and from one it may not, read by equal nodes."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 12])
    tover = helper.make_tensor_value_info("tover", TensorProto.INT64, [2])
    inits = [numpy_helper.from_array(np.array([3, 4], np.int64), n) for n in ("tover", "tfixed")]
    nodes = [helper.make_node("Reshape", ["x", "tover"], ["r1"]), helper.make_node("Reshape", ["x", "tfixed"], ["r2"]),
             helper.make_node("Shape", ["tover"], ["s1"]), helper.make_node("Shape", ["tfixed"], ["s2"]),
             helper.make_node("Concat", ["s1", "tover"], ["c1"], axis=0),
             helper.make_node("Concat", ["s2", "tfixed"], ["c2"], axis=0),
             helper.make_node("Reshape", ["x", "tover"], ["r3"]), helper.make_node("Reshape", ["x", "tfixed"], ["r4"]),
             helper.make_node("Shape", ["r3"], ["s3"]), helper.make_node("Shape", ["r4"], ["s4"])]
    outs = [helper.make_tensor_value_info(n, 0, None) for n in ("r1", "r2", "r3", "r4", "c1", "c2", "s3", "s4")]
    g = helper.make_graph(nodes, "g", [x, tover], outs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def _legacy() -> onnx.ModelProto:
    """Add-6 (legacy broadcasting, its broadcast and axis attributes read) repeated and varied."""
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, ["n", 3, 4])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [3])
    nodes = [helper.make_node("Add", ["a", "b"], ["o1"], broadcast=1, axis=1),
             helper.make_node("Add", ["a", "b"], ["o2"], broadcast=1, axis=1),
             helper.make_node("Add", ["a", "b"], ["o3"], broadcast=0),
             helper.make_node("Add", ["a", "b"], ["o4"], broadcast=1)]
    g = helper.make_graph(nodes, "g", [a, b], [helper.make_tensor_value_info(f"o{k}", 0, None) for k in range(1, 5)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 6)], ir_version=3)


def _unnamed(n: int = 6) -> onnx.ModelProto:
    """Each question first asked by a node whose output has no name (its answer's shape is neither
    interned nor checked against the limits then), then by a named one the memo answers; the
    values grow (s * s * ...) towards ``--max-expr-size``."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["a", "b"])
    # a dim the rule builds (a + c + d), first in a shape that is not stored
    nodes = [helper.make_node("Concat", ["x", "y", "z"], [""], axis=0),
             helper.make_node("Concat", ["x", "y", "z"], ["k"], axis=0),
             helper.make_node("Shape", ["x"], ["s"])]
    cur = "s"
    for k in range(n):
        nodes.append(helper.make_node("Mul", [cur, "s"], [""]))
        nodes.append(helper.make_node("Mul", [cur, "s"], [f"m{k}"]))
        nodes.append(helper.make_node("Add", [f"m{k}", cur], [""]))
        nodes.append(helper.make_node("Add", [f"m{k}", cur], [f"m{k}a"]))
        cur = f"m{k}a"
    nodes.append(helper.make_node("Expand", ["x", "s"], [""]))
    nodes.append(helper.make_node("Expand", ["x", "s"], ["e"]))
    nodes.append(helper.make_node("Reshape", ["x", cur], [""]))
    nodes.append(helper.make_node("Reshape", ["x", cur], ["r"]))
    outs = [helper.make_tensor_value_info(n, 0, None) for n in ("r", "e", cur, "k")]
    inputs = [x] + [helper.make_tensor_value_info(n, TensorProto.FLOAT, [d, "b"]) for n, d in (("y", "c"), ("z", "d"))]
    g = helper.make_graph(nodes, "g", inputs, outs)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def _ints(**kv: Any) -> dict[str, Any]:
    return {k: (v, np.int64) for k, v in kv.items()}


MODELS: dict[str, Callable[[], onnx.ModelProto]] = {
    "loop": lambda: _with_inits(parser.parse_model(LOOP), **_ints(i0=0, i0v=[0], m1=[-1])),
    "nested": lambda: _with_inits(parser.parse_model(NESTED), **_ints(m1=[-1], one=[1], end=[2**62], zero=[0])),
    "ifs": lambda: _with_inits(parser.parse_model(IFS), **_ints(st=[0], en=[2], tgt=[4, -1])),
    "joins": lambda: parser.parse_model(JOINS),
    "proof": lambda: _with_inits(parser.parse_model(PROOF), **_ints(one=[1], end=[2**63 - 1], i0v=[0], onev=[1, 1, 1],
                                                                    tgt=[0, 0, 4, -1, 2])),
    "equate": lambda: parser.parse_model(EQUATE),
    "taint": lambda: _with_inits(parser.parse_model(TAINT), **_ints(ax1=[1])),
    "shared": lambda: _with_inits(parser.parse_model(SHARED), **_ints(tgt=[0, 0, 4, -1, 2])),
    "absent": lambda: _axes_left_out(parser.parse_model(ABSENT)),
    "by_bytes": _by_bytes,
    "overridable": _overridable,
    "legacy": _legacy,
    "unnamed": _unnamed,
}


# -- running a model both ways ------------------------------------------------------------------------

def _facts(a: Any) -> tuple[Any, ...]:
    inf = a.inference
    return (repr(inf.tensors), repr(inf.axis_nodes), repr(inf.call_facts), inf.load_errors, inf.call_type_errors,
            sorted(inf.tainted), repr(inf.refined), repr(dict(inf.ranges)), repr(inf.subgraph_out))


def _guarded(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except ShapeflowError as exc:  # (a limit, a refused model: the same one both ways)
        return ("error", type(exc).__name__, str(exc))


def _outputs(model: onnx.ModelProto, name: str, limits: Limits = DEFAULT_LIMITS,
             optimize: bool = True) -> list[Any]:
    """Everything a user sees of ``model``: infer (text, every tensor, JSON), lint's findings, the
    run's facts and the progress it reported; the same bound and assumed about; optimize's model
    and log."""
    from shapeflow.drivers.optimizer import OptimizeRefused, optimize_model

    data = model.SerializeToString()
    symbols = sorted({d.dim_param for vi in model.graph.input for d in vi.type.tensor_type.shape.dim if d.dim_param})
    rules = select_rules(None)

    def whole() -> Any:
        ticks: list[tuple[int, int]] = []
        a = analyze(load_model_bytes(data, name), rules=rules, limits=limits,
                    progress=lambda done, total: ticks.append((done, total)))
        return (infer_text(a), infer_text(a, all_tensors=True), infer_json_text(a),
                [d.to_json() for d in a.diagnostics], _facts(a), ticks)

    out = [_guarded(whole)]
    if symbols:
        dims = {s: k % 3 + 1 for k, s in enumerate(symbols)}
        premises = parse_assumptions(["*>=1", f"{symbols[0]}>=2"] + ([f"{symbols[0]}=={symbols[1]}"] if len(symbols) > 1 else []))
        for kw in ({"dims": dims}, {"assumptions": premises}):
            def given(kw: dict[str, Any] = kw) -> Any:
                a = analyze(load_model_bytes(data, name), rules=rules, limits=limits, **kw)
                return infer_json_text(a), [d.to_json() for d in a.diagnostics]

            out.append(_guarded(given))
    if optimize:
        def optimized() -> Any:
            try:
                r = optimize_model(load_model_bytes(data, name), explain=True, limits=limits)
            except OptimizeRefused as exc:
                return ("refused", str(exc))
            return r.model.SerializeToString(), repr((r.rewrites, r.log, r.skipped, r.rounds, r.notes, r.roots))

        out.append(_guarded(optimized))
    return out


def _both_ways(model: onnx.ModelProto, name: str, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> tuple[Any, int]:
    """(the outputs, asserted the same with the memo and without; how many nodes the memo answered)."""
    hits = [0]
    recall = inference._Runner._recall

    def counted(self: Any, *args: Any) -> Any:
        keyed, outs = recall(self, *args)
        hits[0] += outs is not None
        return keyed, outs

    monkeypatch.setattr(inference._Runner, "_recall", counted)
    got = {}
    answered = {}
    for memo in (True, False):
        monkeypatch.setattr(inference, "NODE_MEMO", memo)
        hits[0] = 0
        got[memo] = _outputs(model, name, **kw)
        answered[memo] = hits[0]
    assert got[True] == got[False]
    assert not answered[False]
    return got[True], answered[True]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_memo_attack_models_give_what_asking_every_rule_gives(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    model = _open_outputs(MODELS[name]())
    out, hits = _both_ways(model, name, monkeypatch)
    assert hits, name  # the memo answered nodes of the model: the attack was tried
    assert out[0][0] != "error", out[0]  # (inferred, not refused)


def test_memo_attack_by_small_memos(monkeypatch: pytest.MonkeyPatch) -> None:
    """A memo of 1 and 2 answers (cleared at almost every node) infers what a large one does."""
    for size in (1, 2):
        monkeypatch.setattr(inference, "_NODE_MEMO_SIZE", size)
        for name in ("loop", "proof", "joins", "by_bytes"):
            _both_ways(_open_outputs(MODELS[name]()), name, monkeypatch, optimize=False)


@pytest.mark.parametrize("max_expr", [2, 3, 5, 8, 13, 40])
def test_memo_attack_limits_are_met_where_they_were(max_expr: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--max-expr-size`` stops inference at the same node with the memo (an answer's shape is
    checked where it is first stored under a name, the memo's or the rule's)."""
    limits = dataclasses.replace(DEFAULT_LIMITS, max_expr_size=max_expr)
    errors = 0
    for name in ("unnamed", "proof", "loop", "shared"):
        out, _ = _both_ways(_open_outputs(MODELS[name]()), name, monkeypatch, limits=limits, optimize=False)
        errors += out[0][0] == "error"
    if max_expr <= 3:
        assert errors  # (a limit was met; past a cube the values no longer fit int64: dropped)


def test_memo_attack_shared_answers_stay_as_they_were(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nodes the memo answered share the first node's record; the Identity that reads one after a
    proof (its output is that record: value settling writes it again) changes none of them."""
    monkeypatch.setattr(inference, "NODE_MEMO", True)
    a = analyze(load_model_bytes(_open_outputs(MODELS["shared"]()).SerializeToString(), "shared"))
    t = a.inference.tensors[0]
    assert t["c"] is t["c2"] is t["i"]  # (the case: one record)
    assert t["cf"] is t["cf2"] is t["f"]
    assert "batch" in dict(a.inference.ranges) or a.inference.ranges  # (a proof came between)
    monkeypatch.setattr(inference, "NODE_MEMO", False)
    b = analyze(load_model_bytes(_open_outputs(MODELS["shared"]()).SerializeToString(), "shared"))
    assert {k: (v.dtype, v.shape, v.value) for k, v in t.items() if v is not None} == \
        {k: (v.dtype, v.shape, v.value) for k, v in b.inference.tensors[0].items() if v is not None}


# -- generated models, repeated ----------------------------------------------------------------------

def _copied(nodes: list[onnx.NodeProto], produced: set[str], suffix: str) -> list[onnx.NodeProto]:
    """``nodes`` with the tensors they compute renamed (``suffix``), their other inputs as they were."""
    out = []
    for n in nodes:
        c = onnx.NodeProto()
        c.CopyFrom(n)
        c.name = (n.name or "n") + suffix
        del c.input[:], c.output[:]
        c.input.extend(x + suffix if x in produced else x for x in n.input)
        c.output.extend(x + suffix if x in produced else x for x in n.output)
        out.append(c)
    return out


def _repeated(m: onnx.ModelProto, how: str) -> onnx.ModelProto:
    """``m`` with its nodes asked again: copied into the main graph under new names ("twin"), or
    twice into the body of an If (both branches) or a Loop that reads the main graph's tensors."""
    m = onnx.ModelProto.FromString(m.SerializeToString())
    g = m.graph
    nodes = list(g.node)
    produced = {o for n in nodes for o in n.output if o}
    outputs = [o for o in g.output if o.name in produced]
    if how == "twin":
        g.node.extend(_copied(nodes, produced, "__t"))
        for o in outputs:
            g.output.append(helper.make_tensor_value_info(o.name + "__t", o.type.tensor_type.elem_type, None))
        return m
    last = outputs[0]

    def body(tag: str) -> onnx.GraphProto:
        inner = _copied(nodes, produced, f"__{tag}a") + _copied(nodes, produced, f"__{tag}b")
        res = helper.make_tensor_value_info(f"{last.name}__{tag}", last.type.tensor_type.elem_type, None)
        inner.append(helper.make_node("Identity", [f"{last.name}__{tag}a"], [res.name]))
        if how == "if":
            return helper.make_graph(inner, tag, [], [res])
        inner.append(helper.make_node("Identity", ["cin"], ["cout"]))
        return helper.make_graph(inner, tag, [helper.make_tensor_value_info("it", TensorProto.INT64, []),
                                              helper.make_tensor_value_info("cin", TensorProto.BOOL, [])],
                                 [helper.make_tensor_value_info("cout", TensorProto.BOOL, []), res])

    g.input.append(helper.make_tensor_value_info("rep_c", TensorProto.BOOL, []))
    if how == "if":
        g.node.append(helper.make_node("If", ["rep_c"], ["rep"], then_branch=body("t"), else_branch=body("e")))
    else:
        g.input.append(helper.make_tensor_value_info("rep_n", TensorProto.INT64, []))
        g.node.append(helper.make_node("Loop", ["rep_n", "rep_c"], ["rep"], body=body("l")))
    g.output.append(helper.make_tensor_value_info("rep", last.type.tensor_type.elem_type, None))
    return m


@pytest.mark.parametrize("how", ["twin", "if", "loop"])
def test_memo_attack_generated_models(how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """fuzz/shapearith.py's models (shape arithmetic as exporters write it), their questions asked
    again under other names, in other scopes and in a body run more than once. (The search ran
    over 3000 models of each kind and graphgen's 4000 valid and odd ones, twinned too: no
    difference; these seeds keep it a regression check.)"""
    hits = 0
    for seed in range(0, 24):
        gen = shapearith.generate(seed)
        if not any(o.name for o in gen.model.graph.output):
            continue
        _, answered = _both_ways(_repeated(gen.model, how), f"sa{seed}", monkeypatch, optimize=seed % 4 == 0)
        hits += answered
    assert hits


@pytest.mark.parametrize("independent", [False, True])
def test_memo_attack_one_pass_across_proofs(independent: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """One pass of inference (``_run``: no second run starting from what the first proved), whose
    domain narrows at the -1 Reshapes: no answer found before a proof is given after it."""
    from shapeflow.dims import Domain
    from shapeflow.graph import build_graph

    for name in ("proof", "shared", "loop", "joins"):
        graph = build_graph(load_model_bytes(_open_outputs(MODELS[name]()).SerializeToString(), name))
        copies = inference.shared_dim_names(graph) if independent else None
        got = {}
        for memo in (True, False):
            monkeypatch.setattr(inference, "NODE_MEMO", memo)
            r = inference._run(graph, None, DEFAULT_LIMITS, None, Domain.from_premises({}), independent, copies)
            got[memo] = repr(r.tensors), dict(r.ranges), r.load_errors, r.refined
        assert got[True] == got[False], name
        if name == "proof":
            assert got[True][1]  # (a proof was made in the pass)


def test_memo_keys_name_live_shapes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A key holds its input shapes by identity, so each entry keeps those shapes alive: a shape
    the run drops (a Loop body's seed of an earlier round) would otherwise leave its id to a new
    shape, and a node reading that one would be given the old answer."""
    remember = inference._Runner._remember
    checked = [0]

    def spy(self: Any, nid: int, key: tuple[Any, ...], outs: Any, ins: Any) -> None:
        remember(self, nid, key, outs, ins)
        entry = self.node_memo.get(key)
        if entry is not None:
            kept = {id(shape) for shape in entry[1]}
            for part in key[3:]:
                if type(part) is tuple and len(part) == 3 and type(part[0]) is int:  # an input: (dtype, id, value)
                    assert part[1] in kept or part[1] == id(None), key
                    checked[0] += 1

    monkeypatch.setattr(inference._Runner, "_remember", spy)
    for name in ("nested", "loop", "shared"):
        analyze(load_model_bytes(_open_outputs(MODELS[name]()).SerializeToString(), name))
    assert checked[0]
