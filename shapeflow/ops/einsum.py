"""Einsum: the output's dims come from the inputs' dims of the same letter."""

from __future__ import annotations

from ..dims import Dim, broadcast_dim
from ..tensorinfo import TensorInfo
from .base import OpCall, register
from .shape_ops import broadcast_shapes


def _terms(equation: str) -> tuple[list[str], str | None] | None:
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    inputs = lhs.split(",")
    for t in inputs + ([rhs] if arrow else []):
        body = t.replace("...", "", 1)
        if "." in body or not all(ch.isalpha() for ch in body):
            return None
    return inputs, (rhs if arrow else None)


@register("Einsum")
def einsum(call: OpCall) -> list[TensorInfo | None]:
    dtype = next((t.dtype for t in call.inputs if t is not None and t.dtype), 0)
    a = call.attrs.get("equation")
    parsed = _terms(a.s.decode("utf-8", "replace")) if a is not None else None
    if parsed is None:
        return [TensorInfo(dtype, None)]
    terms, rhs = parsed
    if len(terms) != len(call.inputs) or any(t is None or t.shape is None for t in call.inputs):
        return [TensorInfo(dtype, None)]
    letters: dict[str, Dim] = {}
    counts: dict[str, int] = {}
    ellipses: list[tuple[Dim, ...]] = []
    for term, t in zip(terms, call.inputs):
        shape = t.shape  # type: ignore[union-attr]
        assert shape is not None
        head, dots, tail = term.partition("...")
        if dots:
            n_ell = len(shape) - len(head) - len(tail)
            if n_ell < 0:
                call.doubt()
                return [None]
            ellipses.append(tuple(shape[len(head):len(head) + n_ell]))
            dims = list(shape[:len(head)]) + list(shape[len(head) + n_ell:])
            chars = head + tail
        else:
            if len(term) != len(shape):
                call.doubt()
                return [None]
            dims, chars = list(shape), term
        for ch, d in zip(chars, dims):
            counts[ch] = counts.get(ch, 0) + 1
            # A letter's dims must agree (a 1 broadcasts): the known one that is not 1 wins.
            letters[ch] = broadcast_dim(letters[ch], d, call.domain) if ch in letters else d
    ell = broadcast_shapes(list(ellipses), call.domain) if ellipses else ()
    if ell is None:
        return [TensorInfo(dtype, None)]
    if rhs is None:  # implicit output: the ellipsis, then the letters used once, sorted
        rhs = ("..." if ellipses else "") + "".join(sorted(ch for ch, n in counts.items() if n == 1))
    head, dots, tail = rhs.partition("...")
    if any(ch not in letters for ch in head + tail) or (dots and not ellipses):
        return [None]
    out = tuple(letters[ch] for ch in head) + (tuple(ell) if dots else ()) + tuple(letters[ch] for ch in tail)
    return [TensorInfo(dtype, out)]
