"""The fast paths of the large-model work keep the slow paths' answers.

Each test compares a fast path with the straightforward computation it replaces: the JSON writer
with ``json.dumps(indent=2)``, the column-wise table with the row-wise one, the lazily built
consumer tables with a scan of every node, the axis shortcuts with the general code, and the
text line of a diagnostic with the line built piece by piece.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper, parser

from shapeflow.drivers.analysis import analyze
from shapeflow.axes import (
    cancel_squeeze_unsqueeze, cancel_unsqueeze_squeeze, compose_unsqueeze, squeeze_shape, unsqueeze_shape,
)
from shapeflow.diagnostics import Diagnostic, Location, Severity
from shapeflow.errors import display_path
from shapeflow.graph import build_graph
from shapeflow.io import load_model_bytes
from shapeflow.render import _table, format_diagnostic
from shapeflow.render.json import infer_json_text

sys.path.insert(0, str(Path(__file__).parent))
import model_builders as mb  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

SUBGRAPHS = """
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, batch] x, bool c) => (float[1, 2, batch] y, float[?] z) {
    t = Relu (x)
    ax = Constant <value = int64[1] {0}> ()
    y = If (c) <
        then_branch = a () => (float[1, 2, batch] o1) { o1 = Unsqueeze (t, ax) },
        else_branch = b () => (float[1, 2, batch] o2) { o2 = Unsqueeze (x, ax) }
    >
    z = Squeeze (x)
}
"""


def _models() -> list[tuple[str, onnx.ModelProto]]:
    models = [(p.name, onnx.load(str(p))) for p in sorted(EXAMPLES.glob("*.onnx"))]
    models.append(("chain", mb.squeeze_unsqueeze_chain(400)))
    models.append(("chain11", mb.squeeze_unsqueeze_chain(400, 11)))
    models.append(("subgraphs", parser.parse_model(SUBGRAPHS)))
    return models


@pytest.mark.parametrize("name, model", _models(), ids=lambda v: v if isinstance(v, str) else "")
def test_json_text_is_json_dumps(name: str, model: onnx.ModelProto) -> None:
    a = analyze(load_model_bytes(model.SerializeToString(), name))
    assert infer_json_text(a) == json.dumps(a.to_json(), indent=2)
    bound = analyze(load_model_bytes(model.SerializeToString(), name), dims={"batch": 2, "seq": 5})
    assert infer_json_text(bound) == json.dumps(bound.to_json(), indent=2)


def test_json_text_escapes_like_json_dumps() -> None:
    nodes = [helper.make_node("Unsqueeze", ["x\u00e9\"\\\n", "ax"], ["y\u2603"], name="n\u0153ud\t1"),
             helper.make_node("Squeeze", ["y\u2603"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x\u00e9\"\\\n", TensorProto.FLOAT, ["b\u00e4tch", 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.array([0], np.int64), "ax")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    a = analyze(load_model_bytes(m.SerializeToString(), "quote\"d.onnx"))
    assert infer_json_text(a) == json.dumps(a.to_json(), indent=2)


@pytest.mark.parametrize("name, model", _models(), ids=lambda v: v if isinstance(v, str) else "")
def test_lazy_consumers_are_every_reader(name: str, model: onnx.ModelProto) -> None:
    g = build_graph(load_model_bytes(model.SerializeToString(), name))
    for scope in g.scopes:
        expected: dict[str, list[int]] = {}
        for nid in scope.nodes:
            for tensor in g.nodes[nid].proto.input:
                if tensor and nid not in expected.setdefault(tensor, []):
                    expected[tensor].append(nid)
        for sid in (s.id for s in g.scopes if s.parent == scope.id):  # owners read what bodies read
            for tensor in g.scopes[sid].free:
                if tensor in scope.producer and g.scopes[sid].owner not in expected.setdefault(tensor, []):
                    expected[tensor].append(g.scopes[sid].owner)  # type: ignore[arg-type]
        assert {k: sorted(v) for k, v in scope.consumers.items()} == {k: sorted(v) for k, v in expected.items()}


def test_node_proto_is_one_object() -> None:
    g = build_graph(load_model_bytes(mb.squeeze_unsqueeze_chain(40).SerializeToString(), "m"))
    info = g.nodes[7]
    assert info.proto is info.proto
    assert info.peek() is info.proto
    assert info.proto.op_type == info.op_type and tuple(info.proto.input) == info.inputs


@pytest.mark.parametrize("rows", [
    [["a", "bb", "c"], ["dddd", "", "e "]],
    [["a ", "b", ""], ["c", "", "long last cell  "]],  # (the last column is left unpadded)
    [],
    [["x", "y"]],  # shorter than the header: the row-wise path
])
def test_table_columns_match_rows(rows: list[list[str]]) -> None:
    headers = ["one", "two", "three"]
    widths = [len(h) for h in headers]
    for row in rows:
        for k, cell in enumerate(row):
            widths[k] = max(widths[k], len(cell))
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip(), "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    assert _table(headers, rows) == "\n".join(lines)


@pytest.mark.parametrize("rank", range(0, 4))
def test_single_axis_shortcuts(rank: int) -> None:
    shape = tuple(range(2, 2 + rank))
    for axis in range(-rank - 1, rank + 1):
        expected = list(shape)
        expected.insert(axis + rank + 1 if axis < 0 else axis, 1)
        assert unsqueeze_shape(shape, [axis]) == tuple(expected) == unsqueeze_shape(shape, iter([axis]))
    for axis in range(-rank, rank):
        assert squeeze_shape(shape, (axis,)) == tuple(d for i, d in enumerate(shape) if i != axis % rank)


def _unsqueeze_positions(rank: int, axes: tuple[int, ...]) -> tuple[int, ...]:
    """Where U(axes) puts its 1-dims, found by running it on a shape of distinct dims."""
    out = unsqueeze_shape(tuple(range(10, 10 + rank)), list(axes))
    return tuple(i for i, d in enumerate(out) if d == 1)


@pytest.mark.parametrize("rank", range(0, 4))
def test_one_axis_composition_shortcuts(rank: int) -> None:
    # compose_unsqueeze and the cancel checks answer one-axis tuples without the general
    # algebra; the answers must be the general ones (lists take the general path).
    for first in range(rank + 1):
        for second in range(rank + 2):
            fast = compose_unsqueeze((first,), (second,))
            assert fast == compose_unsqueeze([first], [second])
            # and what the two Unsqueezes do, run one after the other on a shape
            once = unsqueeze_shape(tuple(range(10, 10 + rank)), [first])
            twice = unsqueeze_shape(once, [second])
            assert fast == tuple(i for i, d in enumerate(twice) if d == 1)
            assert fast == _unsqueeze_positions(rank, fast)
    for a in range(4):
        for b in range(4):
            assert cancel_unsqueeze_squeeze((a,), (b,)) == cancel_unsqueeze_squeeze([a], [b])
            assert cancel_squeeze_unsqueeze((b,), (a,)) == cancel_squeeze_unsqueeze([b], [a])


def _format_by_parts(d: Diagnostic) -> str:
    """The text line of a diagnostic built piece by piece, as the renderer did before its fast path."""
    loc = d.location
    parts = [f"{d.file}:"]
    if loc.graph and loc.graph != "main":
        parts.append(f"{loc.graph}:")
    if loc.node is not None:
        label = f" ({loc.op_label})" if loc.op_label else ""
        parts.append(f"node '{loc.node}'{label}:")
    elif loc.tensor is not None:
        parts.append(f"tensor '{loc.tensor}':")
    parts.append(f"{d.severity.value} {d.code} {d.name}: {d.message}")
    line = display_path(" ".join(parts))
    if d.hint:
        line += f"\n    hint: {display_path(d.hint)}"
    return line


@pytest.mark.parametrize("location", [
    Location(), Location("main/If_1.then_branch", "sq", "Squeeze", 13), Location("main", "#3", "Squeeze", None),
    Location("main", "n", None), Location("function:local::F", None, None, None, "t\x1b[0m"),
    Location("main", "evil\nname", "Unsqueeze", 21),
])
@pytest.mark.parametrize("hint", ["", "drop the axis", "bad\x07hint"])
def test_text_line_is_the_piecewise_one(location: Location, hint: str) -> None:
    for severity in Severity:
        d = Diagnostic("SF104", "squeeze-non-unit-dim", severity, "m\tx.onnx", "axis 1 has dim 3", hint,
                       False, location)
        assert format_diagnostic(d) == _format_by_parts(d)


# -- the rewrite engine's hot paths (shapeflow/passes/_fast.py) against their plain twins ---------


def _engine_models() -> list[tuple[str, onnx.ModelProto]]:
    models = _models()
    models.append(("gpt2_like", mb.gpt2_like(13, layers=1)))
    corpus = Path("/work/shared/corpus")
    if corpus.is_dir():
        models += [(p.name, onnx.load(str(p))) for p in sorted(corpus.glob("*.onnx"))]
    return models


@pytest.mark.parametrize("name, model", _engine_models(), ids=lambda v: v if isinstance(v, str) else "")
def test_chain_and_dispatch_are_their_plain_twins(name: str, model: onnx.ModelProto) -> None:
    from shapeflow.passes.context import RoundContext
    from shapeflow.passes.dispatch import Dispatch
    from shapeflow.rewrites import select

    a = analyze(load_model_bytes(model.SerializeToString(), name), rules=[])
    ctx = RoundContext.build(a.graph, a.inference)
    asked = 0
    for nid, info in enumerate(a.graph.nodes):
        if not info.inputs or not info.inputs[0]:
            continue
        for op in ("Squeeze", "Unsqueeze"):
            for limit in (1, 2, 16):
                assert ctx.chain(nid, op, limit) == ctx.chain_plain(nid, op, limit), (nid, op, limit)
                asked += len(ctx.chain_plain(nid, op, limit))
    dispatch = Dispatch(select())
    for latest_first in (True, False):
        assert dispatch.plan(ctx, latest_first) == dispatch.plan_plain(ctx, latest_first)
    if name in ("chain", "attention.onnx"):
        assert asked  # runs were compared, not only empty answers


def _optimized(model: onnx.ModelProto, name: str) -> tuple[bytes, object]:
    from shapeflow.drivers.optimizer import OptimizeRefused, optimize_model

    loaded = load_model_bytes(model.SerializeToString(), name)
    try:
        r = optimize_model(loaded, explain=True)
    except OptimizeRefused as exc:  # a model with errors (the examples' axis errors)
        return b"", str(exc)
    return r.model.SerializeToString(), (r.rewrites, r.log, r.skipped, r.rounds, r.notes, r.roots)


def _mixed(n: int) -> onnx.ModelProto:
    """benchmarks/synthetic.py's mixed graph: Reshape round trips, no-op Reshapes, Casts, Identities."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import synthetic

    return synthetic.mixed_graph(n)


@pytest.mark.parametrize("name, model", _engine_models() + [("mix", _mixed(660))],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_skipping_taken_roots_is_asking_their_rules(name: str, model: onnx.ModelProto,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """``rounds.SKIP_TAKEN`` (a root an earlier rewrite of the round took is not asked about) gives
    the model, the log, the near misses and the roots of asking every rule at every root."""
    from shapeflow.passes import rounds
    from shapeflow.rewrites import select

    asked = [0]
    for cls in {type(r) for r in select()}:
        def counted(self, ctx, nid, _match=cls.match):  # type: ignore[no-untyped-def]
            asked[0] += 1
            return _match(self, ctx, nid)

        monkeypatch.setattr(cls, "match", counted)
    runs = {}
    for skip in (True, False):
        monkeypatch.setattr(rounds, "SKIP_TAKEN", skip)
        asked[0] = 0
        runs[skip] = _optimized(model, name), asked[0]
    assert runs[True][0] == runs[False][0]
    if name in ("chain", "mix"):  # roots were taken before they were visited: the skip was exercised
        assert runs[True][1] < runs[False][1]


def test_canonical_value_memo_is_the_plain_answer() -> None:
    """``ops.numeric.canonical_value`` (with a memo of the values that fit, one per domain and its
    narrowings) against ``canonical_value_plain``, for every tracked type, as the domain narrows
    (what inference's proofs do), across domains, and for the keys the memo must not share (True, 1.0)."""
    from shapeflow.dims import Domain, Sym, dim_mul, dim_neg, dim_sub
    from shapeflow.ops import numeric

    b, s = Sym.symbol("batch"), Sym.symbol("seq")
    bs = dim_mul(b, s)
    big = dim_mul(dim_mul(bs, bs), dim_mul(bs, bs))
    values = [(b, s, 8), (bs,), (dim_sub(b, s),), (big,), (dim_sub(s, 3), 2**40), (dim_mul(b, 2**40),),
              (True, b), (1, b), (b, None), (dim_sub(s, 1),), (dim_mul(s, 2**31),), (dim_neg(b),), (2**63, b)]
    dtypes = sorted({*numeric.INT_RANGES, *numeric.FLOAT_FORMATS, numeric.BOOL})
    for start in ({}, {"seq": (1, None)}, {"batch": (0, 3)}):
        dom = Domain(ranges=start)
        memo: dict[tuple[int, tuple[object, ...]], tuple[object, ...]] = {}
        for step in range(3):
            for dtype in dtypes:
                for v in values:
                    got = numeric.canonical_value(dtype, v, dom, memo)  # type: ignore[arg-type]
                    want = numeric.canonical_value_plain(dtype, v, dom)  # type: ignore[arg-type]
                    assert got == want and [type(x) for x in got or ()] == [type(x) for x in want or ()], \
                        (start, step, dtype, v)
            dom = dom.at_least("seq", 1 + 2 * step)  # narrower ranges: s - 1, s - 3 may now fit unsigned


@pytest.mark.parametrize("name, model", _engine_models() + [("mix", _mixed(660))],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_canonical_value_memo_infers_the_same(name: str, model: onnx.ModelProto,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from shapeflow.ops import numeric

    out = {}
    for memo in (True, False):
        monkeypatch.setattr(numeric, "MEMO", memo)
        a = analyze(load_model_bytes(model.SerializeToString(), name))
        out[memo] = infer_json_text(a)
    assert out[True] == out[False]


def _dims_pool() -> list[object]:
    from shapeflow.dims import Sym, dim_add, dim_mul

    b, s = Sym.symbol("batch"), Sym.symbol("seq")
    return [0, 1, 2, 3, 8, 2**40, None, b, s, dim_mul(b, s), dim_add(s, 2), dim_mul(s, 1)]


def test_broadcast_shortcut_is_broadcast_shapes() -> None:
    """``ops.shape_ops.broadcast_shortcut`` (the longest shape, where every other is its tail or
    ones) against ``broadcast_shapes`` with proofs on: the same shape where it answers, no
    conflict, no proof recorded and no join asked; it answers for the shapes built to fit."""
    import random

    from shapeflow.dims import Domain
    from shapeflow.ops.shape_ops import broadcast_conflict, broadcast_shapes, broadcast_shortcut

    def join(a: object, b: object) -> object:
        raise AssertionError("the shortcut's case never names a broadcast")

    rng = random.Random(26)
    pool = _dims_pool()
    answered = 0
    for trial in range(4000):
        longest = tuple(rng.choice(pool) for _ in range(rng.randint(0, 4)))
        shapes: list[object] = [longest]
        for _ in range(rng.randint(0, 3)):
            cut = rng.randint(0, len(longest))
            pick = rng.random()
            if pick < 0.4:
                shapes.append(longest[cut:])
            elif pick < 0.6:
                shapes.append((1,) * cut)
            elif pick < 0.7:
                shapes.append(None)
            else:
                shapes.append(tuple(rng.choice(pool) for _ in range(cut)))
        rng.shuffle(shapes)
        dom = Domain.from_premises({"seq": (1, None)} if trial % 2 else {})
        learned: list[Domain] = []
        fast = broadcast_shortcut(shapes)  # type: ignore[arg-type]
        if fast is None:
            continue
        answered += 1
        assert not broadcast_conflict(shapes), shapes  # type: ignore[arg-type]
        plain = broadcast_shapes(shapes, dom, join, learned.append)  # type: ignore[arg-type]
        assert fast == plain and [type(d) for d in fast] == [type(d) for d in plain], shapes
        assert not learned, shapes
    assert answered > 1000


def test_reshape_memo_is_the_plain_answer() -> None:
    """``ops.shape_ops.reshape_symbolic`` (memo keyed on the ranges in force) against
    ``reshape_symbolic_plain``, asked twice in a row, as ranges narrow (the plain one's own proofs
    and others'), with and without proofs; each compared in a fresh block of the same ranges so
    that the proofs each records are compared too."""
    import random

    from shapeflow.dims import Domain, Sym, dim_mul
    from shapeflow.ops import shape_ops

    b, s = Sym.symbol("batch"), Sym.symbol("seq")
    bs = dim_mul(b, s)
    in_shapes = [(b, s, 8), (bs, 8), (b, s), (b, None, 8), None, (b, 4, s, 32), (2, 3, 4)]
    targets = [[bs, 8], [b, s, 8], [-1, 8], [b, -1], [0, s, 8], [b, 0, -1], [-1, s, 32], [s, b], [bs], [b, s, -1],
               [0, 0, 8], [dim_mul(b, 2), -1]]
    rng = random.Random(26)
    shape_ops._RESHAPES.clear()
    kept = 0
    for start in ({}, {"seq": (1, None)}, {"batch": (0, 3)}):
        fast_dom = plain_dom = Domain.from_premises(start)
        for step in range(60):
            shape, target = rng.choice(in_shapes), rng.choice(targets)
            allowzero, prove = rng.choice((0, 0, 1)), rng.choice((True, False))
            fast_learned: list[Domain] = []
            plain_learned: list[Domain] = []
            fast = shape_ops.reshape_symbolic(shape, list(target), allowzero, fast_dom,
                                              fast_learned.append if prove else None)
            plain = shape_ops.reshape_symbolic_plain(shape, list(target), allowzero, plain_dom,
                                                     plain_learned.append if prove else None)
            fast_dom = fast_learned[-1] if fast_learned else fast_dom
            plain_dom = plain_learned[-1] if plain_learned else plain_dom
            assert fast == plain, (start, shape, target, allowzero, prove)
            assert dict(fast_dom.ranges) == dict(plain_dom.ranges), (start, shape, target, allowzero, prove)
            if step % 20 == 19:  # another node's proof narrows the ranges
                fast_dom = fast_dom.at_least("batch", step // 20 + 1)
                plain_dom = plain_dom.at_least("batch", step // 20 + 1)
        kept = max(kept, len(shape_ops._RESHAPES))
    assert kept  # answers were kept (and so asked for again)


@pytest.mark.parametrize("name, model", _engine_models() + [("mix", _mixed(660))],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_reshape_memo_and_broadcast_shortcut_infer_the_same(name: str, model: onnx.ModelProto,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Inference (the JSON of ``infer``) and ``optimize`` with the Reshape memo and the broadcast
    shortcut, and without both."""
    from shapeflow.ops import elementwise, shape_ops

    out = {}
    for fast in (True, False):
        monkeypatch.setattr(shape_ops, "MEMO", fast)
        shape_ops._RESHAPES.clear()
        if not fast:
            monkeypatch.setattr(elementwise, "broadcast_shortcut", lambda shapes: None)
        a = analyze(load_model_bytes(model.SerializeToString(), name))
        out[fast] = infer_json_text(a), _optimized(model, name)
    assert out[True] == out[False]


BAD_ATTRIBUTES = """
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] x, int64[2] idx) => (float[2, 3] y, float[?] z, float[?] w, float[?] v) {
    a = Relu <alpha = 0.1> (x)
    b = Concat (x, x)
    c = Concat <axis = 1.0> (x, x)
    d = Concat <axis = 1> (x, x)
    e = Concat <axis = 1, axis = 0> (x, x)
    f = Gather <axis = 0> (x, idx)
    h = Gather <axis = 0> (x, idx)
    k = Gather <axis = "0"> (x, idx)
    k2 = Gather <axis = "0"> (x, idx)
    c2 = Concat <axis = 1.0> (x, x)
    y = Cast <to = 1> (x)
    z = Add (x, idx)
    z2 = Add (x, idx)
    w = Concat <axis = 1> (x, idx)
    v = Softmax <axis = 1, extra = 2> (x)
}
"""


@pytest.mark.parametrize("name, model", _engine_models() + [("mix", _mixed(660)), ("bad", parser.parse_model(BAD_ATTRIBUTES))],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_attribute_memo_finds_the_same(name: str, model: onnx.ModelProto,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """SF011 (with its memos of the attributes and the nodes found fine) and SF013 (with its verdict
    per memo key) report the same findings, in the same order, as without them (SF007 beside)."""
    from shapeflow.rules import select_rules, sf011_attribute_mismatch, sf013_type_mismatch

    rules = select_rules(select=["SF007", "SF011", "SF013"])
    out = {}
    for fast in (True, False):
        monkeypatch.setattr(sf011_attribute_mismatch, "MEMO", fast)
        monkeypatch.setattr(sf013_type_mismatch, "MEMO", fast)
        a = analyze(load_model_bytes(model.SerializeToString(), name), rules=rules)
        out[fast] = [d.to_json() for d in a.diagnostics]
    assert out[True] == out[False]
    if name == "bad":
        codes = [d["code"] for d in out[True]]
        assert codes.count("SF011") >= 6 and "SF013" in codes, codes
        # a bad node repeated is reported each time (the memo of nodes found fine keeps no bad one)
        nodes = [d["node"] for d in out[True] if d["code"] == "SF011"]
        assert {"#2", "#7", "#8", "#9"} <= set(nodes), nodes  # c, k, k2, c2 (unnamed: by index)
        assert {"#11", "#12"} <= {d["node"] for d in out[True] if d["code"] == "SF013"}, out[True]  # z, z2


def test_unknown_fields_read_body_by_body_are_every_node() -> None:
    """SF007 reads each body's nodes from its own list: the nodes it reports are those of the index
    whose proto has unknown fields, in node id order (main graph and an If branch here)."""
    from google.protobuf.unknown_fields import UnknownFieldSet

    from shapeflow.rules import select_rules

    model = parser.parse_model(SUBGRAPHS)
    extra = b"\x98\x06\x01"  # field 99, a varint: unknown to every onnx
    graph = model.graph
    for k in (0, 3):
        graph.node[k].ParseFromString(graph.node[k].SerializeToString() + extra)
    branch = graph.node[2].attribute[0].g.node[0]
    branch.ParseFromString(branch.SerializeToString() + extra)
    a = analyze(load_model_bytes(model.SerializeToString(), "unknown"), rules=select_rules(select=["SF007"]))
    found = [d.location.node for d in a.diagnostics if d.location.node]
    want = [a.graph.display(nid) for nid, info in enumerate(a.graph.nodes) if UnknownFieldSet(info.peek())]
    assert len(want) == 3 and sorted(found) == sorted(want)


# Nodes asked the same question again and again, and nodes whose rules do more than answer: a
# -1 Reshape that proves a range (the answers found before the proof must not be reused after
# it), doubts (an axis out of range, ranks that differ), inputs left out (a Slice without axes
# beside one with unknown axes), an attribute of the wrong type, values of bools, a Constant
# with an ``@attr`` in a function, and an If whose branches hold the same nodes.
REPEATED = """
<ir_version: 8, opset_import: ["" : 13, "local" : 1]>
g (float[batch, seq, 8] x, int64[2] k, bool c) => (float[?] y, float[?] z, float[?] w, float[?] v, int64[?] u,
                                                   float[?] q) {
    s = Shape (x)
    s2 = Shape (x)
    b = Gather <axis = 0> (s, i0)
    b2 = Gather <axis = 0> (s2, i0)
    bad = Gather <axis = 3> (s, i0)
    bad2 = Gather <axis = 3> (s2, i0)
    mistyped = Gather <axis = 0.0> (s, i0)
    mistyped2 = Gather <axis = 0.0> (s2, i0)
    n = Mul (b, b2)
    n2 = Mul (b2, b)
    bu = Unsqueeze (b, i0v)
    t = Concat <axis = 0> (bu, minus1)
    y0 = Reshape (x, t)
    t2 = Concat <axis = 0> (n2, minus1)
    y = Reshape (y0, t2)
    r1 = Concat <axis = 0> (s, x2d)
    r2 = Concat <axis = 0> (s2, x2d)
    sl = Slice (s, i0v, big)
    sl2 = Slice (s2, i0v, big)
    sk = Slice (s, i0v, big, k)
    sk2 = Slice (s2, i0v, big, k)
    e = Equal (s, s2)
    e2 = Equal (s2, s)
    ec = Cast <to = 7> (e)
    ec2 = Cast <to = 7> (e2)
    u = Add (ec, ec2)
    z = If (c) <
        then_branch = t1 () => (float[?] o1) { p1 = Shape (x)  o1 = Reshape (x, p1) },
        else_branch = t2 () => (float[?] o2) { p2 = Shape (x)  o2 = Reshape (x, p2) }
    >
    w = local.F <n = 3> (x)
    v = local.F <n = 3> (x)
    q = ReduceSum <keepdims = 0> (x, ax2)
}
<domain: "local", opset_import: ["" : 13]>
F <n> (a) => (o) {
    c3 = Constant <value_int: int = @n> ()
    c4 = Constant <value_int = 4> ()
    c5 = Constant <value_int = 4> ()
    h = Unsqueeze (c3, zero)
    h2 = Unsqueeze (c4, zero)
    zero = Constant <value_ints = [0]> ()
    sh = Concat <axis = 0> (h, h2)
    o = Reshape (a, sh)
}
"""


def _repeated() -> onnx.ModelProto:
    m = parser.parse_model(REPEATED)
    inits = {"i0": np.array(0, np.int64), "minus1": np.array([-1], np.int64), "x2d": np.array([[1]], np.int64),
             "i0v": np.array([0], np.int64), "big": np.array([2], np.int64), "ax2": np.array([2], np.int64),
             "one": np.array([1], np.int64), "end": np.array([2**63 - 1], np.int64)}
    m.graph.initializer.extend(numpy_helper.from_array(v, k) for k, v in inits.items())
    nodes = list(m.graph.node)
    # x[1:] is max(batch - 1, 0) before the -1 Reshape proves batch >= 1 and batch - 1 after it (in
    # one pass: ``_run``); a Slice with its axes left out, then one with unknown axes (a custom
    # op's output)
    before = [helper.make_node("Slice", ["x", "one", "end", "i0v"], ["pre"]),
              helper.make_node("Slice", ["s", "i0v", "big", ""], ["gap"]),
              helper.make_node("Foo", ["x"], ["unk"], domain="custom"),
              helper.make_node("Slice", ["s", "i0v", "big", "unk"], ["gap2"])]
    after = [helper.make_node("Slice", ["x", "one", "end", "i0v"], ["post"])]
    at = next(k for k, n in enumerate(nodes) if n.output[0] == "y0")
    del m.graph.node[:]
    m.graph.node.extend(nodes[:2] + before + nodes[2:at + 1] + after + nodes[at + 1:])
    m.opset_import.append(helper.make_opsetid("custom", 1))
    m.graph.output.extend(helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("pre", "post"))
    return m


def test_node_memo_one_pass_across_a_proof(monkeypatch: pytest.MonkeyPatch) -> None:
    """One pass of inference (``_run``, whose domain narrows at the -1 Reshape's proof) with and
    without the memo of answers per node: the answers found before the proof are not reused
    after it, and an input left out is not an unknown one."""
    from shapeflow import inference
    from shapeflow.dims import Domain
    from shapeflow.limits import DEFAULT_LIMITS

    graph = build_graph(load_model_bytes(_repeated().SerializeToString(), "repeated"))
    out = {}
    for memo in (True, False):
        monkeypatch.setattr(inference, "NODE_MEMO", memo)
        r = inference._run(graph, None, DEFAULT_LIMITS, None, Domain.from_premises({}))
        out[memo] = r.tensors, dict(r.ranges), r.load_errors
    assert out[True] == out[False]
    pre, post, gap, gap2 = (out[True][0][0][n] for n in ("pre", "post", "gap", "gap2"))
    assert pre.shape != post.shape and gap.shape != gap2.shape  # (the cases are exercised)


def _inference_facts(a: object) -> object:
    inf = a.inference  # type: ignore[attr-defined]
    return (inf.tensors, inf.axis_nodes, inf.call_facts, inf.load_errors, inf.call_type_errors,
            sorted(inf.tainted), inf.refined, dict(inf.ranges), inf.subgraph_out)


@pytest.mark.parametrize("name, model", _engine_models() + [("mix", _mixed(660)), ("repeated", _repeated())],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_node_memo_infers_the_same(name: str, model: onnx.ModelProto, monkeypatch: pytest.MonkeyPatch) -> None:
    """Inference with its memo of answers per node (``inference.NODE_MEMO``) and asking every
    rule: the same tables, facts, doubts and proofs, the same ``infer`` JSON and lint findings,
    and the same ``optimize`` (which infers with independent inputs)."""
    from shapeflow import inference
    from shapeflow.rules import select_rules

    out = {}
    hits = {}
    real_key = inference._node_key
    for memo, size in ((True, 16384), (True, 2), (False, 16384)):  # (2: the memo is full, and cleared, often)
        monkeypatch.setattr(inference, "NODE_MEMO", memo)
        monkeypatch.setattr(inference, "_NODE_MEMO_SIZE", size)
        seen: dict[object, int] = {}

        def counted(*args, _seen=seen):  # type: ignore[no-untyped-def]
            found = real_key(*args)
            if found is not None:
                _seen[found[0]] = _seen.get(found[0], 0) + 1
            return found

        monkeypatch.setattr(inference, "_node_key", counted)
        data = model.SerializeToString()
        a = analyze(load_model_bytes(data, name), rules=select_rules(None))
        bound = analyze(load_model_bytes(data, name), dims={"batch": 2, "seq": 5})
        out[memo, size] = (infer_json_text(a), [d.to_json() for d in a.diagnostics], _inference_facts(a),
                           infer_json_text(bound), _optimized(model, name))
        hits[memo] = sum(n - 1 for n in seen.values())
    assert out[True, 16384] == out[False, 16384]
    assert out[True, 2] == out[False, 16384]
    assert not hits[False]
    if name in ("chain", "mix", "repeated", "gpt2_like"):
        assert hits[True], name  # answers were asked for again: the memo was exercised


def test_node_memo_ops_have_the_audited_rules() -> None:
    """Every op inference memoises answers of runs one of the rules read for it (their answers
    depend on the key alone, their other effects are flagged on the OpCall): a rule registered
    anew, or an op added, must be read again before it joins ``inference._MEMO_OPS``."""
    from shapeflow import inference
    from shapeflow.ops import REGISTRY

    audited = {"constants.constant", "elementwise.broadcast_op", "elementwise.cast", "elementwise.reduce",
               "elementwise.where", "shape_ops.concat", "shape_ops.expand", "shape_ops.gather", "shape_ops.reshape",
               "shape_ops.shape", "shape_ops.slice_", "shape_ops.transpose"}
    for op in inference._MEMO_OPS:
        rule = REGISTRY.get("", op)
        assert rule is not None and f"{rule.__module__.rsplit('.', 1)[-1]}.{rule.__name__}" in audited, op


REPEATED_AXIS_FINDINGS = """
<ir_version: 8, opset_import: ["" : 13]>
g (float[1, 3, batch] x) => (float[?] y1, float[?] y2, float[?] y3, float[?] y4, float[?] y5, float[?] y6) {
    ax = Constant <value = int64[1] {1}> ()
    bad = Constant <value = int64[2] {0, 5}> ()
    twice = Constant <value = int64[2] {0, -3}> ()
    last = Constant <value = int64[1] {2}> ()
    y1 = Squeeze (x, ax)
    y2 = Squeeze (x, ax)
    y3 = Unsqueeze (x, bad)
    y4 = Unsqueeze (x, bad)
    y5 = Squeeze (x, twice)
    y6 = Squeeze (x, last)
}
"""


def _axis_models() -> list[tuple[str, onnx.ModelProto]]:
    from lint_fixtures import FIXTURES

    models = _engine_models() + [("repeated", parser.parse_model(REPEATED_AXIS_FINDINGS))]
    return models + [(f.id, f.model()) for f in FIXTURES if f.code.startswith("SF1")]


@pytest.mark.parametrize("name, model", _axis_models(), ids=lambda v: v if isinstance(v, str) else "")
def test_axis_rules_asked_per_group_find_the_same(name: str, model: onnx.ModelProto,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The axis rules asked once per group of nodes with the same facts (``rules.base.GROUPED``)
    report what they report asked node by node, in the same order, call sites included."""
    from shapeflow.rules import base, select_rules

    out = {}
    for grouped in (True, False):
        monkeypatch.setattr(base, "GROUPED", grouped)
        a = analyze(load_model_bytes(model.SerializeToString(), name), rules=select_rules(select=["SF1"]))
        out[grouped] = [d.to_json() for d in a.diagnostics]
    assert out[True] == out[False]
    if name == "repeated":
        codes = [d["code"] for d in out[True]]
        assert codes.count("SF104") == 2 and codes.count("SF101") == 2 and "SF103" in codes, codes


ODD_NAMES = """
<ir_version: 8, opset_import: ["" : 13]>
g (float[1, 3, batch] x) => (float[?] y1, float[?] y2, float[?] y3, float[?] y4) {
    ax = Constant <value = int64[1] {0}> ()
    y1 = Squeeze (x, ax)
    y2 = Squeeze (x, ax)
    y3 = Unsqueeze (x, ax)
    y4 = Squeeze (x)
}
"""


def _odd_names(names: list[str]) -> onnx.ModelProto:
    model = parser.parse_model(ODD_NAMES)
    for node, name in zip(model.graph.node[1:], names):
        node.name = name
    return model


@pytest.mark.parametrize("name, model", _engine_models() + [
    ("odd", _odd_names(["a node ", "", "a very long node name indeed", "#0"])),
    ("escaped", _odd_names(["tab\there", "ok", "bell\x07", "new\nline"])),
    ("repeated", parser.parse_model(REPEATED_AXIS_FINDINGS)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_axis_table_by_distinct_rests_is_the_column_table(name: str, model: onnx.ModelProto,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """``infer``'s table written a text per distinct (op, shapes, axes) (``render.text.FAST``) is
    the column-wise table, escapes, subgraph paths and declared dims included."""
    from shapeflow.render import text

    a = analyze(load_model_bytes(model.SerializeToString(), name))
    out = {}
    for fast in (True, False):
        monkeypatch.setattr(text, "FAST", fast)
        out[fast] = text.infer_text(a), text.infer_text(a, all_tensors=True)
    assert out[True] == out[False]


@pytest.mark.parametrize("name, model", _engine_models() + [("mix", _mixed(660))],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_exclusive_cone_is_its_plain_twin(name: str, model: onnx.ModelProto) -> None:
    from shapeflow.passes.context import RoundContext
    from shapeflow.passes.pattern import exclusive_cone, exclusive_cone_plain

    a = analyze(load_model_bytes(model.SerializeToString(), name), rules=[])
    ctx = RoundContext.build(a.graph, a.inference)
    walked = 0
    for nid, info in enumerate(a.graph.nodes):
        for names in (None, info.inputs[1:], info.inputs[:1]):
            plain = exclusive_cone_plain(ctx, nid, names)
            assert exclusive_cone(ctx, nid, names) == plain, (nid, names)
            walked += len(plain)
    if name in ("chain", "mix", "attention.onnx"):
        assert walked  # cones were compared, not only empty answers
    ctx.claims = False
    assert exclusive_cone(ctx, 0) == exclusive_cone_plain(ctx, 0) == ()


@pytest.mark.parametrize("name, model", _engine_models()[:6] + [("bad", parser.parse_model(BAD_ATTRIBUTES))],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_index_sets_every_field_init_sets(name: str, model: onnx.ModelProto) -> None:
    """The index fills its NodeInfo records field by field, not through ``NodeInfo.__init__``: each
    record has every field set, to what ``__init__`` sets from the same values."""
    from shapeflow.graph import NodeInfo

    g = build_graph(load_model_bytes(model.SerializeToString(), name))
    assert g.nodes
    for info in g.nodes:
        assert all(hasattr(info, slot) for slot in NodeInfo.__slots__), info
        twin = NodeInfo(None, info.scope, info.index, info.domain, info.since_version, info.op_type,
                        info.inputs, info.outputs, info.subscopes, info.has_attrs, info._src)
        assert [getattr(info, s) for s in NodeInfo.__slots__ if s != "_proto"] == \
            [getattr(twin, s) for s in NodeInfo.__slots__ if s != "_proto"]
        assert info.has_attrs == (len(info.peek().attribute) > 0)
        assert info.proto is info.peek() and info.proto.op_type == info.op_type
