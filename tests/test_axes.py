"""Axis arithmetic: tables from the ONNX operator docs, numpy as the oracle, and the rewrite algebra
checked by applying both steps of a pair to labelled shapes."""

from __future__ import annotations


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes
from numpy.exceptions import AxisError as NumpyAxisError
from numpy.lib.array_utils import normalize_axis_tuple

from shapeflow.axes import (
    AxisError,
    cancel_squeeze_unsqueeze,
    cancel_unsqueeze_squeeze,
    compose_squeeze,
    compose_unsqueeze,
    lift,
    normalize_axes,
    normalize_axis,
    squeeze_shape,
    unsqueeze_shape,
)

SETTINGS = settings(max_examples=300, deadline=None)

# ------------------------------------------------------------------------------------------------
# tables


@pytest.mark.parametrize(
    ("shape", "axes", "expected"),
    [
        # ONNX Unsqueeze-13 documentation examples
        ((3, 4, 5), [0], (1, 3, 4, 5)),
        ((3, 4, 5), [1], (3, 1, 4, 5)),
        ((3, 4, 5), [2], (3, 4, 1, 5)),
        ((3, 4, 5), [1, 4], (3, 1, 4, 5, 1)),
        ((3, 4, 5), [2, 4, 5], (3, 4, 1, 5, 1, 1)),
        ((3, 4, 5), [5, 4, 2], (3, 4, 1, 5, 1, 1)),
        ((1, 3, 1, 5), [-2], (1, 3, 1, 1, 5)),
        # edges
        ((), [0], (1,)),
        ((), [-1], (1,)),
        ((), [0, 1], (1, 1)),
        ((7,), [], (7,)),
        ((3, 4), [-1], (3, 4, 1)),
        ((3, 4), [-3], (1, 3, 4)),
        ((3, 4), [0, -1], (1, 3, 4, 1)),
    ],
)
def test_unsqueeze_shape_table(shape, axes, expected):
    assert unsqueeze_shape(shape, axes) == expected


def test_unsqueeze_shape_custom_one_and_symbolic_dims():
    assert unsqueeze_shape(("batch", "seq"), [1], one="1") == ("batch", "1", "seq")
    assert unsqueeze_shape(["a"], (0, 2), one=None) == (None, "a", None)


@pytest.mark.parametrize(
    ("shape", "axes", "message"),
    [
        ((3, 4, 5), [4], "axis 4 out of range [-4, 3]"),
        ((3, 4, 5), [-5], "axis -5 out of range [-4, 3]"),
        ((3, 4, 5), [1, 1], "axis 1 repeated"),
        ((3, 4, 5), [0, -5], "axis 0 repeated (0 and -5 both map to 0)"),
        ((3, 4, 5), [1, 4, -2], "axis 4 repeated (4 and -2 both map to 4)"),
        ((), [1], "axis 1 out of range [-1, 0]"),
    ],
)
def test_unsqueeze_shape_errors(shape, axes, message):
    with pytest.raises(AxisError) as info:
        unsqueeze_shape(shape, axes)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("shape", "axes", "expected"),
    [
        ((1, 3, 1, 5), [0], (3, 1, 5)),
        ((1, 3, 1, 5), [0, 2], (3, 5)),
        ((1, 3, 1, 5), [-2], (1, 3, 5)),
        ((1, 3, 1, 5), [2, 0], (3, 5)),
        ((1, 3, 1, 5), [0, -4], (3, 1, 5)),  # a repeat (0 and -4) is tolerated
        ((1, 3, 1, 5), [], (1, 3, 1, 5)),  # "no axes" is the caller's case
        ((1,), [0], ()),
        ((3, 4), [1], (3,)),  # dims are not checked here: the caller judges them
    ],
)
def test_squeeze_shape_table(shape, axes, expected):
    assert squeeze_shape(shape, axes) == expected


@pytest.mark.parametrize(("shape", "axes"), [((1, 3), [2]), ((1, 3), [-3]), ((), [0])])
def test_squeeze_shape_out_of_range(shape, axes):
    with pytest.raises(AxisError):
        squeeze_shape(shape, axes)


@pytest.mark.parametrize(
    ("axis", "rank", "expected"),
    [
        (0, 1, 0),
        (-1, 1, 0),
        (2, 3, 2),
        (-3, 3, 0),
        (2**62, 2**62 + 1, 2**62),
        (-(2**63), 2**63, 0),
        (2**63 - 1, 2**63, 2**63 - 1),
        (np.int64(-2), 4, 2),
    ],
)
def test_normalize_axis(axis, rank, expected):
    assert normalize_axis(axis, rank) == expected
    assert type(normalize_axis(axis, rank)) is int


@pytest.mark.parametrize(
    ("axis", "rank", "message"),
    [
        (5, 3, "axis 5 out of range [-3, 2]"),
        (-4, 3, "axis -4 out of range [-3, 2]"),
        (0, 0, "axis 0 out of range: a rank-0 tensor has no axes"),
        (2**62, 3, f"axis {2**62} out of range [-3, 2]"),
        (-(2**63), 3, f"axis {-(2**63)} out of range [-3, 2]"),
    ],
)
def test_normalize_axis_errors(axis, rank, message):
    with pytest.raises(AxisError) as info:
        normalize_axis(axis, rank)
    assert str(info.value) == message
    assert info.value.axis == axis
    assert info.value.rank == rank
    assert isinstance(info.value, ValueError)


def test_normalize_axis_rejects_non_integers():
    with pytest.raises(TypeError):
        normalize_axis(1.0, 3)  # type: ignore[arg-type]  # the point of the test


def test_normalize_axes_messages_and_dedup():
    with pytest.raises(AxisError, match=r"^axis 0 repeated \(0 and -3 both map to 0\)$") as info:
        normalize_axes([0, 1, -3], 3)
    assert info.value.axis == -3
    # range errors win over repeats, as in numpy
    with pytest.raises(AxisError, match="out of range"):
        normalize_axes([0, 0, 7], 3)
    assert normalize_axes([2, -1, 0, -3], 3, allow_duplicates=True) == (0, 2)
    assert normalize_axes([], 0) == ()
    assert normalize_axes(np.array([-1, 0], dtype=np.int64), 2) == (0, 1)


@pytest.mark.parametrize(
    ("s", "p", "expected"),
    [
        ((), 0, 0),
        ((), 5, 5),
        ((0,), 0, 1),
        ((1,), 0, 0),
        ((1,), 1, 2),
        ({0, 2}, 1, 3),
        ((0, 1, 2), 0, 3),
        ((5, 0, 5), 0, 1),  # repeats and any order
        ((-1, 0), 0, 1),  # negatives are not positions
    ],
)
def test_lift_table(s, p, expected):
    assert lift(s, p) == expected


@pytest.mark.parametrize(
    ("a1", "a2", "expected"),
    [
        ([0], [0], (0, 1)),
        ([0], [1], (0, 1)),
        ([1], [0], (0, 2)),
        ([0, 1], [1], (0, 1, 2)),
        ([], [2], (2,)),
        ([3], [], (3,)),
    ],
)
def test_compose_unsqueeze_table(a1, a2, expected):
    assert compose_unsqueeze(a1, a2) == expected


@pytest.mark.parametrize(
    ("b1", "b2", "expected"),
    [
        ([0], [0], (0, 1)),
        ([1], [0], (0, 1)),
        ([0], [1], (0, 2)),
        ([0, 2], [0, 1], (0, 1, 2, 3)),
        ([], [1], (1,)),
    ],
)
def test_compose_squeeze_table(b1, b2, expected):
    assert compose_squeeze(b1, b2) == expected


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ([1], [1], ("identity", ())),
        ([0, 2], [2, 0], ("identity", ())),
        ([0, 2], [0], ("unsqueeze", (1,))),
        ([0, 2, 5], [2], ("unsqueeze", (0, 4))),
        ([1], [1, 3], ("squeeze", (2,))),
        ([0, 1], [0, 1, 2, 4], ("squeeze", (0, 2))),
        ([0, 1], [1, 2], None),
        ([0], [1], None),
    ],
)
def test_cancel_unsqueeze_squeeze_table(a, b, expected):
    assert cancel_unsqueeze_squeeze(a, b) == expected


def test_cancel_squeeze_unsqueeze():
    assert cancel_squeeze_unsqueeze([0, 2], [2, 0]) is True
    assert cancel_squeeze_unsqueeze([0], [1]) is False
    assert cancel_squeeze_unsqueeze([0, 1], [0]) is False


def test_algebra_rejects_unnormalised_axes():
    with pytest.raises(AxisError, match="not normalised"):
        compose_unsqueeze([-1], [0])


# ------------------------------------------------------------------------------------------------
# numpy as the oracle

small_shapes = array_shapes(min_dims=0, max_dims=8, min_side=0, max_side=5)


def _view(shape):
    # A broadcast view has the shape without allocating the elements.
    return np.broadcast_to(np.float32(0), shape)


@SETTINGS
@given(
    rank=st.integers(0, 10),
    axes=st.lists(st.integers(-14, 14), max_size=6),
    dupes=st.booleans(),
)
def test_normalize_axes_matches_numpy(rank, axes, dupes):
    try:
        expected = normalize_axis_tuple(axes, rank, allow_duplicate=dupes)
    except (NumpyAxisError, ValueError) as err:
        with pytest.raises(AxisError):
            normalize_axes(axes, rank, allow_duplicates=dupes)
        # the kind of error matches: out of range versus repeated
        assert isinstance(err, NumpyAxisError) == any(not -rank <= a < rank for a in axes)
        return
    got = normalize_axes(axes, rank, allow_duplicates=dupes)
    assert got == tuple(sorted(set(expected)))
    for a in axes:
        assert normalize_axis(a, rank) == normalize_axis_tuple(a, rank)[0]


@SETTINGS
@given(data=st.data(), shape=small_shapes)
def test_unsqueeze_shape_matches_expand_dims(data, shape):
    out_rank = len(shape) + data.draw(st.integers(0, 5))
    positions = data.draw(
        st.lists(st.integers(0, out_rank - 1), min_size=out_rank - len(shape),
                 max_size=out_rank - len(shape), unique=True)
        if out_rank > len(shape)
        else st.just([])
    )
    axes = [p - out_rank if data.draw(st.booleans()) else p for p in positions]
    expected = np.expand_dims(_view(shape), tuple(axes)).shape
    assert unsqueeze_shape(shape, axes) == expected


@SETTINGS
@given(shape=small_shapes, axes=st.lists(st.integers(-10, 10), min_size=1, max_size=4))
def test_unsqueeze_shape_errors_match_expand_dims(shape, axes):
    try:
        expected = np.expand_dims(_view(shape), tuple(axes)).shape
    except (NumpyAxisError, ValueError):
        with pytest.raises(AxisError):
            unsqueeze_shape(shape, axes)
    else:
        assert unsqueeze_shape(shape, axes) == expected


@SETTINGS
@given(data=st.data(), shape=array_shapes(min_dims=0, max_dims=8, min_side=1, max_side=3))
def test_squeeze_shape_matches_numpy_on_unit_dims(data, shape):
    units = [i for i, d in enumerate(shape) if d == 1]
    chosen = data.draw(st.lists(st.sampled_from(units), unique=True) if units else st.just([]))
    rank = len(shape)
    axes = [a - rank if data.draw(st.booleans()) else a for a in chosen]
    expected = np.squeeze(_view(shape), axis=tuple(axes)).shape
    assert squeeze_shape(shape, axes) == expected
    # Repeating an axis changes nothing (onnxruntime tolerates it).
    assert squeeze_shape(shape, axes + axes) == expected


# ------------------------------------------------------------------------------------------------
# the rewrite algebra, checked by applying both steps to labelled shapes
#
# Input dims are distinct labels and inserted dims are ONE, so a shape comparison also checks
# that every dim lands in the right position.

ONE = "1"


def _labelled(n):
    return tuple(f"d{i}" for i in range(n))


@st.composite
def unsqueeze_axes(draw, rank):
    """Normalised sorted axes for an Unsqueeze of a rank-``rank`` input."""
    k = draw(st.integers(0, 5))
    if rank + k == 0:
        return []
    return sorted(draw(st.lists(st.integers(0, rank + k - 1), min_size=k, max_size=k, unique=True)))


@st.composite
def squeeze_axes(draw, rank):
    return sorted(draw(st.lists(st.integers(0, rank - 1), unique=True, max_size=rank)) if rank else [])


@SETTINGS
@given(data=st.data())
def test_lift_is_the_pth_free_position(data):
    s = data.draw(st.sets(st.integers(0, 20), max_size=10))
    p = data.draw(st.integers(0, 15))
    free = [i for i in range(100) if i not in s]
    assert lift(s, p) == free[p]
    assert lift(sorted(s), p) == free[p]


@SETTINGS
@given(data=st.data(), rank=st.integers(0, 8))
def test_compose_unsqueeze_equals_both_steps(data, rank):
    x = _labelled(rank)
    a1 = data.draw(unsqueeze_axes(rank))
    a2 = data.draw(unsqueeze_axes(rank + len(a1)))
    two_steps = unsqueeze_shape(unsqueeze_shape(x, a1, ONE), a2, ONE)
    merged = compose_unsqueeze(a1, a2)
    assert list(merged) == sorted(set(merged))
    assert unsqueeze_shape(x, merged, ONE) == two_steps


@SETTINGS
@given(data=st.data(), rank=st.integers(0, 10))
def test_compose_squeeze_equals_both_steps(data, rank):
    x = _labelled(rank)
    b1 = data.draw(squeeze_axes(rank))
    b2 = data.draw(squeeze_axes(rank - len(b1)))
    two_steps = squeeze_shape(squeeze_shape(x, b1), b2)
    merged = compose_squeeze(b1, b2)
    assert list(merged) == sorted(set(merged))
    assert squeeze_shape(x, merged) == two_steps


@SETTINGS
@given(data=st.data(), rank=st.integers(0, 8))
def test_cancel_unsqueeze_squeeze_equals_both_steps(data, rank):
    x = _labelled(rank)
    a = data.draw(unsqueeze_axes(rank))
    mid = unsqueeze_shape(x, a, ONE)
    # Bias b towards subsets and supersets of a, where the interesting answers are.
    kind = data.draw(st.sampled_from(["subset", "superset", "any"]))
    if kind == "subset":
        b = sorted(data.draw(st.sets(st.sampled_from(a)) if a else st.just(set())))
    elif kind == "superset":
        others = [i for i in range(len(mid)) if i not in a]
        extra = data.draw(st.sets(st.sampled_from(others)) if others else st.just(set()))
        b = sorted(set(a) | extra)
    else:
        b = data.draw(squeeze_axes(len(mid)))
    result = cancel_unsqueeze_squeeze(a, b)
    after = squeeze_shape(mid, b)
    if result is None:
        assert not set(b) <= set(a) and not set(a) <= set(b)
        return
    what, rest = result
    if what == "identity":
        assert after == x
    elif what == "unsqueeze":
        assert rest and unsqueeze_shape(x, rest, ONE) == after
    else:
        assert what == "squeeze"
        assert rest and squeeze_shape(x, rest) == after


@SETTINGS
@given(data=st.data(), rank=st.integers(0, 10))
def test_cancel_squeeze_unsqueeze_equals_both_steps(data, rank):
    # On shapes whose squeezed dims are 1, U(a) after S(b) restores the input iff a == b.
    shape = tuple(data.draw(st.sampled_from([1, 2, 3])) for _ in range(rank))
    units = [i for i, d in enumerate(shape) if d == 1]
    b = sorted(data.draw(st.sets(st.sampled_from(units)) if units else st.just(set())))
    a = data.draw(unsqueeze_axes(rank - len(b)))
    if data.draw(st.booleans()):
        a = b  # make the interesting case common
    try:
        back = unsqueeze_shape(squeeze_shape(shape, b), a)
    except AxisError:
        back = None
    cancels = cancel_squeeze_unsqueeze(b, a)
    assert cancels == (sorted(a) == sorted(b))
    if cancels:
        assert back == shape


# ------------------------------------------------------------------------------------------------
# size: no quadratic behaviour on huge axis lists


def test_large_axis_lists():
    """100,000-element axis lists (benchmarks/bench_budgets.py checks the time grows linearly)."""
    n = 100_000
    evens = list(range(0, 2 * n, 2))
    shape = unsqueeze_shape([7] * n, evens)
    assert len(shape) == 2 * n and shape[0] == 1 and shape[1] == 7
    assert squeeze_shape(shape, evens) == (7,) * n
    assert normalize_axes(list(range(-n, 0)), n) == tuple(range(n))
    merged = compose_unsqueeze(list(range(n)), list(range(n, 2 * n)))
    assert merged == tuple(range(2 * n))
    assert compose_squeeze(evens, list(range(n))) == tuple(range(2 * n))
    assert cancel_unsqueeze_squeeze(evens, evens[1:]) == ("unsqueeze", (0,))
    assert cancel_unsqueeze_squeeze(evens[:-1], evens) == ("squeeze", (n - 1,))
    assert lift(range(0, 2 * n, 2), n - 1) == 2 * n - 1
    assert cancel_squeeze_unsqueeze(evens, list(reversed(evens)))
