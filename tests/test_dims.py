"""Symbolic dims: canonical form, algebraic laws, and soundness checked by evaluation.

The evaluation oracle: binding every symbol to an int must give the same answer as doing the
arithmetic on the ints, for every operation and every binding (where the int operation runs).
"""

from __future__ import annotations

import copy
import operator
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shapeflow.dims import (
    MAX_DIM,
    Sym,
    Domain,
    dim_bounds,
    dim_exact_div,
    dim_fmod,
    dim_truncdiv,
    broadcast_dim,
    dim_add,
    dim_floordiv,
    dim_from_text,
    dim_is_one,
    dim_max,
    dim_min,
    dim_mod,
    dim_mul,
    dim_neg,
    dim_sub,
    dim_to_json,
    dims_equal,
    format_shape,
    shape_to_json,
    substitute,
)

SETTINGS = settings(max_examples=300, deadline=None, database=None)

a, b, c = Sym.symbol("a"), Sym.symbol("b"), Sym.symbol("c")
seq, batch = Sym.symbol("seq"), Sym.symbol("batch")

# ------------------------------------------------------------------------------------------------
# canonical text

CANONICAL = [
    (lambda: batch, "batch"),
    (lambda: dim_add(seq, 1), "seq + 1"),
    (lambda: dim_add(1, seq), "seq + 1"),
    (lambda: dim_mul(seq, 2), "2*seq"),
    (lambda: dim_mul(2, seq), "2*seq"),
    (lambda: dim_add(seq, seq), "2*seq"),
    (lambda: dim_mul(seq, batch), "batch*seq"),
    (lambda: dim_mul(batch, seq), "batch*seq"),
    (lambda: dim_sub(seq, 1), "seq - 1"),
    (lambda: dim_sub(1, seq), "-seq + 1"),
    (lambda: dim_neg(seq), "-seq"),
    (lambda: dim_mul(-3, seq), "-3*seq"),
    (lambda: dim_floordiv(seq, 4), "floor(seq/4)"),
    (lambda: dim_mod(dim_add(seq, 1), 2), "(seq + 1) % 2"),
    (lambda: dim_mod(seq, 2), "seq % 2"),
    (lambda: dim_mul(2, dim_add(seq, 1)), "2*seq + 2"),
    (lambda: dim_mul(seq, seq), "seq**2"),
    (lambda: dim_add(dim_mul(batch, seq), dim_sub(seq, 3)), "batch*seq + seq - 3"),
    (lambda: dim_add(dim_floordiv(seq, 4), 1), "floor(seq/4) + 1"),
    (lambda: dim_floordiv(dim_add(seq, 1), 4), "floor((seq + 1)/4)"),
    (lambda: dim_mul(3, dim_mod(seq, 2)), "3*(seq % 2)"),
    (lambda: dim_add(dim_mod(seq, 2), batch), "batch + (seq % 2)"),
    (lambda: dim_sub(dim_mul(batch, seq), dim_mul(seq, batch)), "0"),
]


@pytest.mark.parametrize(("build", "text"), CANONICAL)
def test_canonical_text(build, text):
    assert str(build()) == text


def test_constant_results_are_ints():
    assert type(dim_sub(seq, seq)) is int
    assert dim_sub(dim_add(seq, 5), seq) == 5
    assert dim_mul(seq, 0) == 0
    assert dim_floordiv(dim_mul(6, seq), dim_mul(3, seq)) == 2
    assert dim_mod(dim_add(dim_mul(4, seq), 2), 2) == 0


def test_structurally_equal_expressions_are_equal_and_hash_equal():
    x = dim_add(dim_mul(2, seq), batch)
    y = dim_add(batch, dim_add(seq, seq))
    assert x == y and hash(x) == hash(y) and str(x) == str(y)
    assert x is not y
    assert len({x, y, dim_add(batch, dim_mul(seq, 2))}) == 1
    assert Sym.symbol("seq") == seq and hash(Sym.symbol("seq")) == hash(seq)
    assert seq != batch
    assert dim_add(seq, 1) != dim_add(seq, 2)


def test_a_name_is_never_parsed():
    name = Sym.symbol("2*seq")
    expr = dim_mul(2, seq)
    assert str(name) == str(expr) == "2*seq"  # same text
    assert name != expr  # but a different thing
    assert name.symbols() == {"2*seq"}
    assert dim_from_text("2*seq") == name


def test_sym_is_immutable_and_private():
    with pytest.raises(TypeError):
        Sym()  # type: ignore[call-arg]  # the point of the test
    with pytest.raises(AttributeError):
        seq._terms = ()  # type: ignore[misc]  # the point of the test
    with pytest.raises(TypeError):
        Sym.symbol(3)  # type: ignore[arg-type]  # the point of the test


def test_pickle_and_copy_round_trip():
    x = dim_add(dim_floordiv(dim_mul(seq, batch), 3), dim_mod(seq, 5))
    for y in (pickle.loads(pickle.dumps(x)), copy.deepcopy(x), copy.copy(x)):
        assert y == x and hash(y) == hash(x) and str(y) == str(x)


def test_size_and_symbols():
    assert batch.size() == 1
    assert dim_add(seq, 1).size() == 2
    assert dim_mul(batch, seq).size() == 2
    assert dim_floordiv(seq, 4).size() == 2
    big = dim_mul(dim_add(seq, batch), dim_add(seq, 1))
    assert big.size() > dim_add(seq, batch).size()
    assert dim_floordiv(dim_add(seq, batch), 3).symbols() == {"seq", "batch"}
    assert dim_add(seq, 1).symbols() == frozenset({"seq"})


# ------------------------------------------------------------------------------------------------
# arithmetic tables


def test_none_absorbs_and_int_stays_int():
    for op in (dim_add, dim_sub, dim_mul, dim_floordiv, dim_mod, dim_min, dim_max):
        assert op(None, 3) is None
        assert op(seq, None) is None
        assert op(None, None) is None
    assert dim_neg(None) is None
    assert dim_add(2**70, 2**70) == 2**71  # no overflow
    assert dim_mul(-3, 4) == -12
    assert dim_floordiv(-7, 2) == -4
    assert dim_mod(-7, 2) == 1
    assert dim_floordiv(7, 0) is None and dim_mod(7, 0) is None
    assert dim_floordiv(seq, 0) is None and dim_mod(seq, 0) is None


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (lambda: dim_floordiv(dim_mul(2, seq), 2), seq),
        (lambda: dim_floordiv(dim_add(dim_mul(2, seq), 1), 2), seq),  # floor(seq + 1/2)
        (lambda: dim_floordiv(dim_add(dim_mul(4, seq), 8), 4), dim_add(seq, 2)),
        (lambda: dim_floordiv(dim_mul(-2, seq), -2), seq),
        (lambda: dim_floordiv(dim_mul(2, seq), -1), dim_mul(-2, seq)),
        (lambda: dim_floordiv(seq, 1), seq),
        (lambda: dim_floordiv(dim_mul(seq, batch), seq), batch),
        (lambda: dim_floordiv(dim_mul(6, dim_mul(seq, batch)), dim_mul(3, seq)), dim_mul(2, batch)),
        (lambda: dim_floordiv(dim_add(seq, 1), dim_add(seq, 1)), 1),
        (lambda: dim_floordiv(0, seq), 0),
        # the same quotient written differently meets one atom
        (lambda: dim_floordiv(dim_add(seq, 5), 4), dim_add(dim_floordiv(dim_add(seq, 1), 4), 1)),
        (lambda: dim_floordiv(dim_mul(2, seq), 4), dim_floordiv(seq, 2)),
        (lambda: dim_floordiv(dim_floordiv(seq, 2), 3), dim_floordiv(seq, 6)),
    ],
)
def test_floordiv_simplifies(build, expected):
    assert build() == expected


@pytest.mark.parametrize(
    "build",
    [
        lambda: dim_floordiv(seq, batch),
        lambda: dim_floordiv(dim_add(seq, 1), seq),
        lambda: dim_floordiv(3, seq),
        lambda: dim_mod(seq, batch),
    ],
)
def test_symbolic_divisor_is_unknown_unless_exact(build):
    assert build() is None


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (lambda: dim_mod(dim_mul(4, seq), 2), 0),
        (lambda: dim_mod(dim_add(dim_mul(4, seq), 3), 2), 1),
        (lambda: dim_mod(seq, 1), 0),
        (lambda: dim_mod(dim_mul(seq, batch), seq), 0),
        (lambda: dim_mod(dim_mod(seq, 4), 2), dim_mod(seq, 2)),
        (lambda: dim_mod(dim_mod(seq, 2), 4), dim_mod(seq, 2)),
        (lambda: dim_mod(dim_add(seq, 5), 4), dim_mod(dim_add(seq, 1), 4)),
    ],
)
def test_mod_simplifies(build, expected):
    assert build() == expected


@pytest.mark.parametrize(
    ("x", "y", "expected"),
    [
        (1, 5, 5),
        (5, 1, 5),
        (1, 1, 1),
        (4, 4, 4),
        (3, 4, None),  # cannot broadcast
        (0, 1, 0),
        (0, 0, 0),
        (1, "seq", "seq"),
        ("seq", 1, "seq"),
        (3, "seq", 3),
        ("seq", 3, 3),
        ("seq", "seq", "seq"),
        ("seq", "batch", None),
        (None, 1, None),
        (1, None, None),
        (None, 4, 4),
        (4, None, 4),
        (None, None, None),
        ("seq", None, None),
    ],
)
def test_broadcast_dim_table(x, y, expected):
    def dim(v):
        return Sym.symbol(v) if isinstance(v, str) else v

    assert broadcast_dim(dim(x), dim(y)) == dim(expected)


@pytest.mark.parametrize(
    ("d", "expected"),
    [(1, True), (0, False), (3, False), (-1, False), (Sym.symbol("one"), None), (None, None)],
)
def test_dim_is_one(d, expected):
    assert dim_is_one(d) is expected


@pytest.mark.parametrize(
    ("x", "y", "expected"),
    [
        (3, 3, True),
        (3, 4, False),
        (seq, seq, True),
        (seq, Sym.symbol("seq"), True),
        (seq, batch, None),  # different names may hold the same value
        (seq, 3, None),
        (3, seq, None),
        (None, None, None),  # every unknown is distinct, but may still be equal
        (None, 3, None),
        (dim_add(seq, 1), seq, False),  # differ by a constant: never equal
        (dim_mul(2, seq), seq, None),  # equal when seq == 0
    ],
)
def test_dims_equal(x, y, expected):
    assert dims_equal(x, y) is expected
    assert dims_equal(y, x) is expected


@pytest.mark.parametrize(
    ("x", "y", "lo", "hi"),
    [
        (3, 5, 3, 5),
        (-2, -7, -7, -2),
        (seq, seq, seq, seq),
        (seq, dim_add(seq, 1), seq, dim_add(seq, 1)),
        (dim_add(seq, 2), 1, 1, dim_add(seq, 2)),  # seq >= 0 decides it
        (None, 3, None, None),
    ],
)
def test_min_max(x, y, lo, hi):
    assert dim_min(x, y) == lo and dim_min(y, x) == lo
    assert dim_max(x, y) == hi and dim_max(y, x) == hi


@pytest.mark.parametrize(
    ("x", "y"),
    [
        (seq, 3),
        (seq, batch),
        (dim_sub(seq, 3), 0),
        (dim_add(seq, 1), dim_mul(2, batch)),
        (dim_sub(seq, 5), dim_neg(batch)),
    ],
)
def test_min_max_stay_symbolic_and_exact(x, y):
    """Undecidable min/max are atoms that evaluate to the runtime's answer at every binding, in
    either argument order, with one canonical form."""
    for f, ref in ((dim_min, min), (dim_max, max)):
        r = f(x, y)
        assert isinstance(r, Sym)
        assert f(y, x) == r and str(f(y, x)) == str(r)
        for s in (0, 1, 2, 3, 4, 7, 1000):
            for b in (0, 1, 5):
                env = {"seq": s, "batch": b}
                assert substitute(r, env) == ref(substitute(x, env), substitute(y, env))


def test_min_text_reads_like_the_issue():
    assert str(dim_min(seq, 3)) == "min(3, seq)"
    assert dim_max(dim_sub(seq, 3), 0) == dim_sub(dim_max(seq, 3), 3)


def test_bounds_follow_the_domain_and_assumptions():
    assert dim_bounds(seq) == (0, MAX_DIM)
    assert dim_bounds(dim_sub(seq, 3)) == (-3, MAX_DIM - 3)
    assert dim_bounds(dim_min(seq, 3)) == (0, 3)
    assert dim_bounds(dim_mod(seq, 4)) == (0, 3)
    small = Domain(ranges={"seq": (3, 10)})
    assert dim_bounds(seq, small) == (3, 10)
    assert dim_min(seq, 3, small) == 3
    assert dim_is_one(seq, small) is False
    assert dims_equal(dim_mul(2, seq), 5, small) is False
    assert dim_is_one(seq) is None  # the assumption holds where it is given: not in the base domain


def test_truncating_division_follows_the_sign():
    assert dim_truncdiv(-7, 2) == -3 and dim_truncdiv(7, -2) == -3 and dim_truncdiv(-7, -2) == 3
    assert dim_truncdiv(seq, 2) == dim_floordiv(seq, 2)  # seq >= 0: floor == trunc
    assert dim_truncdiv(dim_sub(seq, 5), 2) is None  # sign unknown: no floor pretending to truncate
    assert dim_truncdiv(dim_neg(seq), 2) == dim_neg(dim_floordiv(seq, 2))
    for s in range(0, 12):
        q = substitute(dim_truncdiv(dim_neg(seq), 3), {"seq": s})
        assert q == int(-s / 3)


def test_numpy_integers_are_accepted():
    np = pytest.importorskip("numpy")
    assert dim_add(np.int64(2), 3) == 5 and type(dim_add(np.int64(2), 3)) is int
    assert dim_mul(seq, np.int64(2)) == dim_mul(2, seq)
    with pytest.raises(TypeError):
        dim_add(1.5, seq)  # type: ignore[arg-type]  # the point of the test


# ------------------------------------------------------------------------------------------------
# text, json, substitution


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3", 3),
        ("0", 0),
        ("007", 7),
        ("", None),
        ("batch", Sym.symbol("batch")),
        ("unk__3", Sym.symbol("unk__3")),
        ("-1", Sym.symbol("-1")),  # not a non-negative dim: a name
        ("3 ", Sym.symbol("3 ")),
        ("\u00b2", Sym.symbol("\u00b2")),  # a unicode digit is not a decimal dim
        ("seq + 1", Sym.symbol("seq + 1")),
    ],
)
def test_dim_from_text(text, expected):
    got = dim_from_text(text)
    assert got == expected and type(got) is type(expected)


def test_dim_from_text_with_too_many_digits_is_a_name():
    text = "9" * 5000  # more than int() parses by default
    assert isinstance(dim_from_text(text), Sym)


def test_none_is_never_equal_to_none_and_round_trips_through_json():
    shape = (batch, dim_add(seq, 1), 4, None, dim_floordiv(seq, 4))
    assert shape_to_json(shape) == ["batch", "seq + 1", 4, None, "floor(seq/4)"]
    assert shape_to_json(None) is None
    assert dim_to_json(dim_mul(2, seq)) == "2*seq"
    assert dim_to_json(7) == 7 and dim_to_json(None) is None
    assert format_shape((batch, seq, 4, 16)) == "[batch, seq, 4, 16]"
    assert format_shape((batch, None)) == "[batch, ?]"
    assert format_shape(()) == "[]"
    assert format_shape(None) == "?"


def test_huge_int_text_does_not_crash():
    huge = 10 ** 5000
    assert "bit integer" in format_shape((huge,))
    assert "bit integer" in str(dim_mul(huge, seq))


@pytest.mark.parametrize(
    ("build", "bindings", "expected"),
    [
        (lambda: seq, {"seq": 7}, 7),
        (lambda: dim_add(dim_mul(2, seq), batch), {"seq": 3, "batch": 1}, 7),
        (lambda: dim_add(dim_mul(2, seq), batch), {"batch": 1}, dim_add(dim_mul(2, seq), 1)),
        (lambda: dim_mul(seq, batch), {"batch": 1}, seq),
        (lambda: dim_floordiv(dim_add(seq, 1), 4), {"seq": 10}, 2),
        (lambda: dim_mod(dim_add(seq, batch), 3), {"seq": 4, "batch": 4}, 2),
        (lambda: dim_floordiv(dim_add(seq, batch), 3), {"batch": 3}, dim_add(dim_floordiv(seq, 3), 1)),
        (lambda: seq, {"other": 1}, seq),
        (lambda: 5, {"seq": 1}, 5),
        (lambda: None, {"seq": 1}, None),
    ],
)
def test_substitute(build, bindings, expected):
    got = substitute(build(), bindings)
    assert got == expected and type(got) is type(expected)


# ------------------------------------------------------------------------------------------------
# laws and soundness (hypothesis)

NAMES = ("a", "b", "c")
leaves = st.one_of(st.integers(-6, 6), st.sampled_from([a, b, c]), st.just(dim_mul(2, a)))


def _extend(children):
    binary = st.sampled_from([dim_add, dim_sub, dim_mul])
    return st.one_of(
        st.tuples(binary, children, children).map(lambda t: t[0](t[1], t[2])),
        children.map(dim_neg),
        st.tuples(children, st.integers(-5, 5).filter(bool)).map(lambda t: dim_floordiv(*t)),
        st.tuples(children, st.integers(-5, 5).filter(bool)).map(lambda t: dim_mod(*t)),
        st.tuples(st.sampled_from([dim_min, dim_max]), children, children).map(lambda t: t[0](t[1], t[2])),
    )


exprs = st.recursive(leaves, _extend, max_leaves=6)
# A named symbol is a dim: it ranges over the integers >= 0 (SPEC.md section 6); expressions
# over symbols (shape values) may still be negative.
envs = st.fixed_dictionaries({n: st.integers(0, 12) for n in NAMES})


def _value(d, env):
    v = substitute(d, env)
    assert type(v) is int, f"{d!r} with {env} gave {v!r}"
    return v


def _same(x, y):
    return x == y and hash(x) == hash(y) and str(x) == str(y)


@SETTINGS
@given(x=exprs, y=exprs, z=exprs)
def test_ring_laws(x, y, z):
    assert _same(dim_add(x, y), dim_add(y, x))
    assert _same(dim_mul(x, y), dim_mul(y, x))
    assert _same(dim_add(dim_add(x, y), z), dim_add(x, dim_add(y, z)))
    assert _same(dim_mul(dim_mul(x, y), z), dim_mul(x, dim_mul(y, z)))
    assert _same(dim_mul(x, dim_add(y, z)), dim_add(dim_mul(x, y), dim_mul(x, z)))
    assert _same(dim_sub(x, x), 0)
    assert _same(dim_add(x, 0), x) and _same(dim_mul(x, 1), x)
    assert _same(dim_neg(dim_neg(x)), x)
    assert _same(dim_sub(x, y), dim_add(x, dim_neg(y)))


OPS = [
    (dim_add, operator.add),
    (dim_sub, operator.sub),
    (dim_mul, operator.mul),
    (dim_floordiv, operator.floordiv),
    (dim_mod, operator.mod),
    (dim_min, min),
    (dim_max, max),
    (dim_truncdiv, lambda p, q: abs(p) // abs(q) * (1 if (p >= 0) == (q >= 0) else -1)),
    (dim_fmod, lambda p, q: p - q * (abs(p) // abs(q) * (1 if (p >= 0) == (q >= 0) else -1))),
    (dim_exact_div, lambda p, q: p // q if p % q == 0 else None),
]
_DIVISIONS = {OPS[k][1] for k in (3, 4, 7, 8, 9)}


@SETTINGS
@given(x=exprs, y=exprs, env=envs, op=st.sampled_from(OPS))
def test_operations_agree_with_int_arithmetic(x, y, env, op):
    sym_op, int_op = op
    vx, vy = _value(x, env), _value(y, env)
    result = sym_op(x, y)
    if int_op in _DIVISIONS and vy == 0:
        return  # the division fails at run time; nothing to agree with
    if result is None:
        # Only divisions may give up: by a symbol, with a dividend of unknown sign (truncation),
        # or where the quotient is not an integer for every binding (exact division).
        assert int_op in _DIVISIONS
        return
    assert _value(result, env) == int_op(vx, vy)


@SETTINGS
@given(x=exprs, k=st.integers(-12, 12).filter(bool), env=envs)
def test_division_by_a_constant_is_exact(x, k, env):
    # With a nonzero int divisor the answer is never unknown, and always right.
    q, r = dim_floordiv(x, k), dim_mod(x, k)
    assert q is not None and r is not None
    vx = _value(x, env)
    assert _value(q, env) == vx // k
    assert _value(r, env) == vx % k
    # q*k + r == x holds as values
    assert _value(dim_add(dim_mul(q, k), r), env) == vx


@SETTINGS
@given(x=exprs, y=exprs, env=envs)
def test_comparisons_are_sound(x, y, env):
    vx, vy = _value(x, env), _value(y, env)
    eq = dims_equal(x, y)
    if eq is True:
        assert vx == vy
    elif eq is False:
        assert vx != vy
    one = dim_is_one(x)
    if one is not None:
        assert one == (vx == 1)
    out = broadcast_dim(x, y)
    if out is not None and (vx == vy or 1 in (vx, vy)):
        assert _value(out, env) == (vy if vx == 1 else vx)


@SETTINGS
@given(x=exprs, env=envs)
def test_symbols_cover_what_substitute_needs(x, env):
    if isinstance(x, Sym):
        assert x.symbols() <= set(NAMES)
        assert x.size() >= 1
        partial = substitute(x, {"a": env["a"]})
        assert not isinstance(partial, Sym) or "a" not in partial.symbols()
        assert _value(partial, env) == _value(x, env)


# ------------------------------------------------------------------------------------------------
# speed: these run per node on very large graphs


def test_common_cases():
    """The per-node fast paths give the general results (their speed against plain ints is a
    budget of benchmarks/bench_budgets.py)."""
    d = seq
    for i in range(1_000):
        d = dim_add(d, 1)
        d = dim_sub(d, 1)
        dim_mul(d, 4)
        broadcast_dim(d, 1)
        dims_equal(d, seq)
        dim_add(i, i)
    assert d == seq


def test_dim_nonnegative() -> None:
    from shapeflow.dims import dim_nonnegative

    batch, seq = Sym.symbol("batch"), Sym.symbol("seq")
    assert dim_nonnegative(3) and not dim_nonnegative(-1) and not dim_nonnegative(None)
    assert dim_nonnegative(batch) and dim_nonnegative(dim_add(dim_mul(2, seq), 1))
    assert dim_nonnegative(dim_mul(batch, seq)) and dim_nonnegative(dim_floordiv(seq, 4))
    assert not dim_nonnegative(dim_sub(seq, 1))  # seq may be 0
    assert not dim_nonnegative(dim_neg(batch))
