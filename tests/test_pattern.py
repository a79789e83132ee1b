"""The pattern layer (shapeflow/passes/pattern.py) and the claims of the engine's rounds: what a
pattern binds and refuses, what it tells the dispatch, and how a deferred match holds what it would
sweep."""

from __future__ import annotations

from onnx import parser

from shapeflow.graph import build_graph
from shapeflow.inference import infer
from shapeflow.io import load_model_bytes
from shapeflow.passes.context import RoundContext
from shapeflow.passes.match import Match, NoMatch
from shapeflow.passes.pattern import (
    Bound, Bypass, KnownInput, KnownValue, Op, exclusive_cone, one_element_constant, region,
)
from shapeflow.passes.rounds import READS, WRITES, Claims

MODEL = """
<ir_version: 8, opset_import: ["" : 17]>
g (float[n, 3] x) => (int64[1] out, float[n, 3] y, float[n, 3] z) <int64[1] zero = {0}, int64 one = {1}> {
    [shape] s = Shape (x)
    [gather] d = Gather <axis = 0> (s, one)
    [unsq] u = Unsqueeze (d, zero)
    [r1] r = Relu (x)
    [neg1] n1 = Neg (r)
    [neg2] n2 = Neg (n1)
    [mul] y = Mul (n2, n1)
    [c3] three = Constant <value = int64[1] {3}> ()
    [exp] e = Expand (x, three)
    [id] z = Identity (e)
    [idout] out = Identity (u)
}
"""


def _ctx() -> tuple[RoundContext, dict[str, int]]:
    graph = build_graph(load_model_bytes(parser.parse_model(MODEL).SerializeToString(), "m.onnx"))
    ctx = RoundContext.build(graph, infer(graph))
    ids = {graph.display(n): n for n in range(len(graph.nodes))}
    return ctx, ids


def test_nested_producers_are_bound_by_name() -> None:
    ctx, ids = _ctx()
    pattern = Op("Unsqueeze", Op("Gather", Op("Shape", name="shape"), name="gather"))
    b = pattern.bind(ctx, ids["unsq"])
    assert isinstance(b, Bound) and b.root == ids["unsq"]
    assert (b["gather"], b["shape"]) == (ids["gather"], ids["shape"])
    # what the dispatch reads: rooted at Unsqueeze, only where a Gather produces input 0
    assert pattern.roots == ("Unsqueeze",) and pattern.after == frozenset({"Gather"})


def test_a_missing_producer_is_no_near_miss() -> None:
    ctx, ids = _ctx()
    found = Op("Unsqueeze", Op("Concat")).bind(ctx, ids["unsq"])
    assert isinstance(found, NoMatch) and not found.near
    found = Op("Unsqueeze", Op("Gather", Op("Relu"))).bind(ctx, ids["unsq"])
    assert isinstance(found, NoMatch) and not found.near


def test_an_exclusive_producer_read_elsewhere_is_a_near_miss() -> None:
    ctx, ids = _ctx()
    # n1 is read by neg2 and by mul: not exclusive to neg2
    assert isinstance(Op("Neg", Op("Neg")).bind(ctx, ids["neg2"]), Bound)
    found = Op("Neg", Op("Neg", exclusive=True)).bind(ctx, ids["neg2"])
    assert isinstance(found, NoMatch) and found.near and "other readers" in found.reason
    # r is read by neg1 alone
    assert isinstance(Op("Neg", Op("Relu", exclusive=True)).bind(ctx, ids["neg1"]), Bound)


def test_stable_guards_settle_a_root() -> None:
    ctx, ids = _ctx()
    known = Op("Unsqueeze", guards=(KnownValue(),))
    assert isinstance(known.bind(ctx, ids["unsq"]), Bound) and not known.settled(ctx, ids["unsq"])  # [3]
    neg = Op("Neg", guards=(KnownValue(),))
    assert isinstance(neg.bind(ctx, ids["neg2"]), NoMatch) and neg.settled(ctx, ids["neg2"])  # a float tensor
    target = Op("Expand", guards=(KnownInput(1),))
    assert isinstance(target.bind(ctx, ids["exp"]), Bound)


def test_bypass_claims_the_root_and_rewires_its_readers() -> None:
    ctx, ids = _ctx()
    bypass = Bypass("{root} is '{x}'")
    m = bypass.plan(ctx, ids["exp"], "x")
    assert isinstance(m, Match)
    assert m.writes == (ids["exp"],) and m.rewires == (ids["id"],) and m.text.endswith("is 'x'")
    # an output that must keep its name cannot be bypassed
    refused = bypass.plan(ctx, ids["idout"], "u")
    assert isinstance(refused, NoMatch) and "must keep its name" in refused.reason


def test_what_a_rewrite_leaves_to_the_sweep() -> None:
    ctx, ids = _ctx()
    # the Unsqueeze's inputs: the Gather and the Shape feed it alone (the initializers are no nodes)
    assert set(exclusive_cone(ctx, ids["unsq"])) == {ids["gather"], ids["shape"]}
    assert set(exclusive_cone(ctx, ids["exp"], ("three",))) == {ids["c3"]}
    # Relu's output is read by neg1 only, but x is a graph input: nothing else
    assert exclusive_cone(ctx, ids["neg1"]) == (ids["r1"],)
    ctx.claims = False  # listing candidates claims nothing
    assert exclusive_cone(ctx, ids["unsq"]) == ()


def test_regions_and_one_element_constants() -> None:
    ctx, ids = _ctx()
    assert one_element_constant(ctx, 0, "zero") and one_element_constant(ctx, 0, "three")
    assert one_element_constant(ctx, 0, "one")  # (a scalar: rank 0)
    assert not one_element_constant(ctx, 0, "x")
    found = region(ctx, ids["mul"], "n2", frozenset({"Neg", "Mul"}), "Relu", one_element_constant, 8)
    assert not isinstance(found, NoMatch)
    assert found.start == ids["r1"] and set(found.nodes) == {ids["neg1"], ids["neg2"]}
    too_small = region(ctx, ids["mul"], "n2", frozenset({"Neg"}), "Relu", one_element_constant, 1)
    assert isinstance(too_small, NoMatch) and "more than 1" in too_small.reason


def test_claims_tell_reads_from_writes() -> None:
    """A deferred match holds what it would sweep only when a node it would change was taken."""
    claims = Claims()
    claims.take(Match(1, writes=(1, 2), reads=(3,), rewires=(4,), sweeps=(5,)))
    assert claims.conflict(Match(6, writes=(6,), reads=(2,))) == READS  # what it matched on changed
    assert claims.conflict(Match(7, writes=(7,), sweeps=(5,))) == WRITES  # it would sweep a taken node
    assert claims.conflict(Match(8, writes=(8,), reads=(3,))) is None  # reading together is fine
    assert claims.conflict(Match(9, writes=(3,))) == WRITES  # writing what another reads
    assert claims.conflict(Match(10, rewires=(4,))) is None  # two renames of one node
    waiting = Match(11, writes=(11,), sweeps=(12, 13))
    claims.reserve(waiting)
    assert claims.conflict(Match(14, writes=(13,))) == WRITES
    assert claims.conflict(Match(15, writes=(15,), reads=(12,))) == READS
