"""Axis arithmetic for Squeeze and Unsqueeze (SPEC.md sections 1 and 4).

An axis ``x`` of a rank-``r`` tensor is valid in ``[-r, r-1]``; a negative one counts from the
end (``x + r``). Unsqueeze axes refer to the *output* rank (input rank + number of axes), Squeeze
axes to the input rank.

The rewrite algebra works on normalised (non-negative, sorted, distinct) axes:

* ``U(a)`` inserts 1-dims so that they sit at positions ``a`` of its output.
* ``S(b)`` removes positions ``b`` of its input.
* ``lift(s, p)`` is the ``p``-th position (from 0) not in ``s``: it maps a position of the
  tensor without ``s`` to the same dim's position in the tensor with ``s``.

Then ``U(a2)`` after ``U(a1)`` is ``U(a2 | lift(a2, a1))`` (the 1s of the first step end up
between those of the second), ``S(b2)`` after ``S(b1)`` is ``S(b1 | lift(b1, b2))``, and
``S(b)`` after ``U(a)`` cancels what both name: the identity if ``a == b``, the leftover
Unsqueeze if ``b`` is a proper subset of ``a``, the leftover Squeeze if ``a`` is a proper subset
of ``b``. Renumbering a leftover position ``x`` drops it by the number of removed positions
below it (the inverse of ``lift``).

Everything runs on sorted lists with two pointers, O(n log n) at most, because an Unsqueeze
may list many thousands of axes. Pure Python: no onnx, no networkx.
"""

from __future__ import annotations

import operator
from typing import AbstractSet, Iterable, Optional, Sequence, TypeVar, Union

__all__ = [
    "AxisError",
    "cancel_squeeze_unsqueeze",
    "cancel_unsqueeze_squeeze",
    "compose_squeeze",
    "compose_unsqueeze",
    "lift",
    "normalize_axes",
    "normalize_axis",
    "squeeze_shape",
    "unsqueeze_shape",
]

T = TypeVar("T")


class AxisError(ValueError):
    """An invalid axis: out of range, or repeated where repeats are not allowed.

    ``axis`` is the offending value as given (for a repeat, the later of the two), ``rank``
    the rank it was checked against.
    """

    axis: Optional[int]
    rank: Optional[int]

    def __init__(self, message: str, axis: Optional[int] = None, rank: Optional[int] = None):
        super().__init__(message)
        self.axis = axis
        self.rank = rank


def _range_message(axis: int, rank: int) -> str:
    if rank == 0:
        return f"axis {axis} out of range: a rank-0 tensor has no axes"
    return f"axis {axis} out of range [{-rank}, {rank - 1}]"


def normalize_axis(axis: int, rank: int) -> int:
    """``axis`` as a position in ``[0, rank)``; AxisError outside ``[-rank, rank-1]``."""
    axis = operator.index(axis)  # numpy ints from tensors are fine, floats are not
    rank = operator.index(rank)
    if rank < 0:
        raise ValueError(f"rank must be >= 0, got {rank}")
    if -rank <= axis < rank:
        return axis + rank if axis < 0 else axis
    raise AxisError(_range_message(axis, rank), axis=axis, rank=rank)


def normalize_axes(
    axes: Sequence[int], rank: int, *, allow_duplicates: bool = False
) -> tuple[int, ...]:
    """Sorted, normalised axes.

    Range errors are reported before repeats (as numpy does). With ``allow_duplicates`` repeats
    are dropped instead of rejected.
    """
    if len(axes) == 1 and type(rank) is int:  # the common case, on every node of large graphs
        a = axes[0]
        if type(a) is int and -rank <= a < rank:
            return (a + rank if a < 0 else a,)
    given = [operator.index(a) for a in axes]
    normal = [normalize_axis(a, rank) for a in given]
    if allow_duplicates:
        return tuple(sorted(set(normal)))
    first: dict[int, int] = {}  # position -> the axis value that named it first
    for orig, pos in zip(given, normal):
        if pos in first:
            prev = first[pos]
            if prev == orig:
                msg = f"axis {orig} repeated"
            else:
                msg = f"axis {pos} repeated ({prev} and {orig} both map to {pos})"
            raise AxisError(msg, axis=orig, rank=rank)
        first[pos] = orig
    return tuple(sorted(normal))


def unsqueeze_shape(
    shape: Sequence[T],
    axes: Sequence[int],
    one: T = 1,  # type: ignore[assignment]  # 1 suits int dims; other dim types pass their own
) -> tuple[T, ...]:
    """Insert ``one`` at ``axes`` of the output (rank ``len(shape) + len(axes)``).

    AxisError for an axis out of range or two axes naming one position."""
    dims = tuple(shape)
    if type(axes) in (tuple, list) and len(axes) == 1:  # the common case, on every Unsqueeze of large graphs
        a = axes[0]
        r = len(dims) + 1
        if type(a) is int and -r <= a < r:
            p = a + r if a < 0 else a
            return dims[:p] + (one,) + dims[p:]
    axes = list(axes)
    positions = normalize_axes(axes, len(dims) + len(axes))
    out: list[T] = []
    src = 0
    for p in positions:
        take = p - len(out)  # input dims that come before this 1
        out.extend(dims[src : src + take])
        src += take
        out.append(one)
    out.extend(dims[src:])
    return tuple(out)


def squeeze_shape(shape: Sequence[T], axes: Sequence[int]) -> tuple[T, ...]:
    """Remove positions ``axes`` of the input; repeats are tolerated (onnxruntime does).

    Does not check that the removed dims are 1, and empty ``axes`` removes nothing: Squeeze
    without axes ("every 1-dim") is the caller's case to handle."""
    dims = tuple(shape)
    if type(axes) in (tuple, list) and len(axes) == 1:  # the common case, on every Squeeze of large graphs
        a = axes[0]
        r = len(dims)
        if type(a) is int and -r <= a < r:
            p = a + r if a < 0 else a
            return dims[:p] + dims[p + 1:]
    drop = set(normalize_axes(axes, len(dims), allow_duplicates=True))
    return tuple(d for i, d in enumerate(dims) if i not in drop)


def _canon(axes: Iterable[int]) -> list[int]:
    """Sorted distinct non-negative axes; the algebra is defined on normalised axes only."""
    if type(axes) is tuple and len(axes) == 1 and type(axes[0]) is int and axes[0] >= 0:
        return [axes[0]]  # the common case
    out = sorted({operator.index(a) for a in axes})
    if out and out[0] < 0:
        raise AxisError(f"axis {out[0]} is not normalised (must be >= 0)", axis=out[0])
    return out


def lift(s: Union[AbstractSet[int], Sequence[int]], p: int) -> int:
    """The ``p``-th (from 0) non-negative integer not in ``s``."""
    p = operator.index(p)
    if p < 0:
        raise ValueError(f"position must be >= 0, got {p}")
    v = p
    for x in sorted(set(s)):
        if x < 0:
            continue
        if x > v:
            break
        v += 1  # x takes a slot at or below v, so the p-th free slot moves up
    return v


def _lift_sorted(s: list[int], ps: list[int]) -> list[int]:
    """``[lift(s, p) for p in ps]`` for sorted distinct non-negative ``s`` and ``ps``, in O(n)."""
    out = []
    j = 0  # number of elements of s at or below the current answer
    n = len(s)
    for p in ps:
        v = p + j
        while j < n and s[j] <= v:
            j += 1
            v = p + j
        out.append(v)
    return out


def _drop_sorted(xs: list[int], removed: list[int]) -> list[int]:
    """Renumber sorted ``xs`` after deleting sorted ``removed`` (disjoint from ``xs``), in O(n)."""
    out = []
    j = 0
    n = len(removed)
    for x in xs:
        while j < n and removed[j] < x:
            j += 1
        out.append(x - j)
    return out


def compose_unsqueeze(a1: Sequence[int], a2: Sequence[int]) -> tuple[int, ...]:
    """``U(a2)`` after ``U(a1)`` as one ``U``: ``a2 | {lift(a2, p) for p in a1}``."""
    if type(a1) is tuple and type(a2) is tuple and len(a1) == 1 and len(a2) == 1:
        f, s = a1[0], a2[0]  # the common case, one axis each: s takes a slot at or below f
        if type(f) is int and type(s) is int and f >= 0 and s >= 0:
            v = f + 1 if s <= f else f
            return (s, v) if s < v else (v, s)
    first, second = _canon(a1), _canon(a2)
    return tuple(sorted(second + _lift_sorted(second, first)))


def compose_squeeze(b1: Sequence[int], b2: Sequence[int]) -> tuple[int, ...]:
    """``S(b2)`` after ``S(b1)`` as one ``S``: ``b1 | {lift(b1, q) for q in b2}``."""
    first, second = _canon(b1), _canon(b2)
    return tuple(sorted(first + _lift_sorted(first, second)))


def cancel_unsqueeze_squeeze(
    a: Sequence[int], b: Sequence[int]
) -> Optional[tuple[str, tuple[int, ...]]]:
    """Simplify ``S(b)`` after ``U(a)``.

    ``("identity", ())`` if ``b == a``; ``("unsqueeze", rest)`` if ``b`` is a proper subset of
    ``a`` (``rest`` are positions of the final output); ``("squeeze", rest)`` if ``a`` is a proper
    subset of ``b`` (``rest`` are positions of the original input); ``None`` otherwise.
    ``b`` must list explicit axes: an axis-less Squeeze means something else.
    """
    if _same_single(a, b):  # the common case
        return _IDENTITY
    ua, sb = _canon(a), _canon(b)
    if ua == sb:
        return ("identity", ())
    a_set, b_set = set(ua), set(sb)
    if len(sb) < len(ua) and b_set <= a_set:
        rest = [x for x in ua if x not in b_set]
        return ("unsqueeze", tuple(_drop_sorted(rest, sb)))
    if len(ua) < len(sb) and a_set <= b_set:
        rest = [x for x in sb if x not in a_set]
        return ("squeeze", tuple(_drop_sorted(rest, ua)))
    return None


def cancel_squeeze_unsqueeze(b: Sequence[int], a: Sequence[int]) -> bool:
    """Whether ``U(a)`` after ``S(b)`` is the identity (on shapes): exactly when ``a == b``.

    The pair also removes a run-time failure if a squeezed dim is not 1; whether that is
    acceptable (``--strict``) is the caller's call."""
    return _same_single(a, b) or _canon(a) == _canon(b)


_IDENTITY: tuple[str, tuple[int, ...]] = ("identity", ())


def _same_single(a: Sequence[int], b: Sequence[int]) -> bool:
    """``a`` and ``b`` are the same one non-negative axis (no normalising needed to compare them)."""
    return (type(a) is tuple and type(b) is tuple and len(a) == 1 and a == b
            and type(a[0]) is int and a[0] >= 0)
