"""Readable, comparable expressions (issue 22, point 7), property-tested: every simplification the
dim algebra makes (folding a sum into a min/max, the lattice laws, monotone floors, the settled
form of a univariate expression joined with its small values, zero sets) leaves the value the
same at bindings 0, 1, 2, 3, a large one and random ones.
"""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shapeflow.dims import (
    BASE, Domain, Sym, dim_add, dim_floordiv, dim_max, dim_min, dim_mul, dim_sub, join_pieces, rebuild, simplest,
    substitute, zero_forcing_symbols, zero_implies,
)
from shapeflow.ops.conv import window_out
from shapeflow.ops.shape_ops import _slice_len

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
L, a, b = Sym.symbol("L"), Sym.symbol("a"), Sym.symbol("b")
LARGE = 2**40
POINTS = (0, 1, 2, 3, 4, 5, 7, 11, 64, 1000, LARGE - 1, LARGE)


def _at(d, env):  # type: ignore[no-untyped-def]
    v = substitute(d, env)
    assert type(v) is int, (d, env, v)
    return v


def _univariate(children):  # type: ignore[no-untyped-def]
    k = st.integers(-4, 4)
    return st.one_of(
        st.tuples(st.sampled_from([dim_add, dim_sub]), children, children).map(lambda t: t[0](t[1], t[2])),
        st.tuples(children, k).map(lambda t: dim_mul(*t)),
        st.tuples(children, st.integers(1, 4)).map(lambda t: dim_floordiv(*t)),
        st.tuples(st.sampled_from([dim_min, dim_max]), children, children).map(lambda t: t[0](t[1], t[2])),
    )


uni = st.recursive(st.one_of(st.integers(-5, 5), st.just(L)), _univariate, max_leaves=7)
multi = st.recursive(st.one_of(st.integers(-3, 3), st.sampled_from([a, b])), _univariate, max_leaves=6)


@SETTINGS
@given(x=uni, extra=st.lists(st.integers(0, 10**6), min_size=3, max_size=3))
def test_simplest_keeps_the_value(x, extra) -> None:  # type: ignore[no-untyped-def]
    s = simplest(x)
    for v in POINTS + tuple(extra):
        assert _at(s, {"L": v}) == _at(x, {"L": v}), (x, s, v)


@SETTINGS
@given(x=multi, lo=st.integers(0, 4))
def test_rebuild_in_a_narrower_domain_keeps_the_value_there(x, lo) -> None:  # type: ignore[no-untyped-def]
    r = rebuild(x, Domain(ranges={"a": (lo, None)}))
    rng = random.Random(lo)
    for va in (lo, lo + 1, lo + 2, lo + 3, LARGE, rng.randrange(lo, 10**6)):
        for vb in (0, 1, 2, 3, LARGE, rng.randrange(0, 10**6)):
            env = {"a": va, "b": vb}
            assert _at(r, env) == _at(x, env), (x, r, env)


@SETTINGS
@given(x=multi, y=multi)
def test_min_max_of_folded_operands_keep_the_value(x, y) -> None:  # type: ignore[no-untyped-def]
    lo, hi = dim_min(x, y), dim_max(x, y)
    rng = random.Random(0)
    for va in (0, 1, 2, 3, LARGE, rng.randrange(10**6)):
        for vb in (0, 1, 2, 3, LARGE, rng.randrange(10**6)):
            env = {"a": va, "b": vb}
            vx, vy = _at(x, env), _at(y, env)
            assert _at(lo, env) == min(vx, vy) and _at(hi, env) == max(vx, vy), (x, y, env)


@SETTINGS
@given(t=multi, d=multi)
def test_zero_sets_are_sound(t, d) -> None:  # type: ignore[no-untyped-def]
    envs = [{"a": va, "b": vb} for va in (0, 1, 2, 3, LARGE) for vb in (0, 1, 2, 3, LARGE)]
    if zero_implies(t, d):
        for env in envs:
            if _at(t, env) == 0:
                assert _at(d, env) == 0, (t, d, env)
    for name in zero_forcing_symbols(d):
        for other in (0, 1, 2, 3, LARGE):
            env = {"a": other, "b": other, name: 0}
            assert _at(d, env) == 0, (d, name, env)


def test_the_issue_examples() -> None:
    seq = Sym.symbol("seq")
    assert str(dim_max(0, dim_add(dim_sub(seq, dim_max(3, seq)), 3))) == "min(3, seq)"
    # x[max(seq - 3, 0):seq]: the clamped start gives the same length as x[-3:]
    assert str(_slice_len(seq, dim_max(dim_sub(seq, 3), 0), seq, 1, BASE)) == "min(3, seq)"
    assert str(_slice_len(seq, -3, 2**63 - 1, 1, BASE)) == "min(3, seq)"
    # lattice laws and monotone floors
    assert dim_min(dim_min(seq, 7), seq) == dim_min(seq, 7)
    assert dim_max(dim_min(seq, 7), seq) == seq
    assert dim_min(dim_floordiv(seq, 2), dim_floordiv(dim_add(seq, 1), 2)) == dim_floordiv(seq, 2)


def test_pool_lengths_read_simply() -> None:
    """2-wide and 3-wide, stride 2/3 pools without pads (the window overhangs a short input):
    the forms the pool rule states, and their values against the runtime's trunc formula."""
    cases = {
        (2, 2, 0, 0, False): "max(floor(L/2), min(1, L))",
        (3, 3, 0, 0, False): "max(floor(L/3), min(1, L))",
        (2, 2, 1, 1, True): "floor(L/2) + 1",
        (3, 2, 2, 2, True): "floor((L + 1)/2) + 1",
    }
    for (k, s, pb, pe, ceil), text in cases.items():
        out = window_out(L, k, s, 1, pb, pe, "NOTSET", ceil, True)
        assert str(out) == text
        for v in range(0, 40):
            assert _at(out, {"L": v}) == window_out(v, k, s, 1, pb, pe, "NOTSET", ceil, True), (k, s, v)


def test_join_pieces_checks_every_piece() -> None:
    # 1 from L = 1 on, 0 at 0: min(1, L); a wrong low value finds no form
    assert str(join_pieces("L", 1, 0, [0], 1)) == "min(1, L)"
    assert join_pieces("L", 1, 0, [5], 1) is None
    assert join_pieces("L", 3, 0, [0, 1, 1], 3) is None  # x[L-3:L] is 0, 1, 1, 3, 3, ...
