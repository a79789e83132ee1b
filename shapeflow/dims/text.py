"""Dims as text: what ``str(sym)`` prints, the JSON form, and a dim read from a file's text."""

from __future__ import annotations

import operator
from typing import Any, Optional, Union

from .canonical import _FLOOR, _MAX, _MIN, _NAME, Dim, Shape, Sym, _add_const, _Atom, _coerce, _Mono, dim_add


# ---------------------------------------------------------------------------------------------
# text


def _int_text(n: int) -> str:
    try:
        return str(n)
    except ValueError:  # beyond sys.get_int_max_str_digits(); printing must not crash
        return f"<{n.bit_length()}-bit integer>"


def _atom_text(atom: _Atom, whole: bool) -> str:
    if atom.kind == _NAME:
        return atom.name  # type: ignore[return-value]  # name atoms always have one
    expr = atom.expr
    assert expr is not None
    if atom.kind == _MIN or atom.kind == _MAX:
        other = atom.other
        first = _expr_text(expr, whole=True)
        second = _int_text(other) if type(other) is int else _expr_text(other, whole=True)  # type: ignore[arg-type]
        # the int first, as people write it: min(3, seq)
        pair = f"{second}, {first}" if type(other) is int else f"{first}, {second}"
        return f"{'min' if atom.kind == _MIN else 'max'}({pair})"
    inner = _expr_text(expr, whole=False)
    simple = len(expr._terms) == 1
    if atom.kind == _FLOOR:
        return f"floor({inner if simple else f'({inner})'}/{atom.k})"
    bare = simple and expr._terms[0][1] == 1 and len(expr._terms[0][0]) == 1
    text = f"{inner if bare else f'({inner})'} % {atom.k}"
    # % binds like *, so it gets brackets unless it is the whole expression.
    return text if whole else f"({text})"


def _mono_text(mono: _Mono, whole: bool) -> str:
    parts = []
    i = 0
    while i < len(mono):
        atom = mono[i]
        j = i + 1
        while j < len(mono) and mono[j] == atom:
            j += 1
        power = j - i
        text = _atom_text(atom, whole and len(mono) == 1)
        parts.append(text if power == 1 else f"{text}**{power}")
        i = j
    return "*".join(parts)


def _expr_text(s: Sym, whole: bool) -> str:
    terms = s._terms
    if len(terms) == 2 and terms[1][0] == () and terms[0][1] == 1 and len(terms[0][0]) == 1:
        atom = terms[0][0][0]
        if (atom.kind == _MIN or atom.kind == _MAX) and type(atom.other) is int:
            # max(2, seq) - 2 reads better as the clamp it came from: max(0, seq - 2)
            c = terms[1][1]
            inner = _add_const(atom.expr, c)  # type: ignore[arg-type]
            inner_text = _int_text(inner) if type(inner) is int else _expr_text(inner, whole=True)  # type: ignore[arg-type]
            return f"{'min' if atom.kind == _MIN else 'max'}({_int_text(atom.other + c)}, {inner_text})"
        if atom.kind == _MIN or atom.kind == _MAX:
            # max(-batch, seq - 1) + 1 reads better with the constant inside: max(-batch + 1, seq)
            c = terms[1][1]
            parts = []
            for operand in (atom.expr, atom.other):
                v = dim_add(operand, c)
                parts.append(_int_text(v) if type(v) is int else _expr_text(v, whole=True))  # type: ignore[arg-type]
            return f"{'min' if atom.kind == _MIN else 'max'}({parts[0]}, {parts[1]})"
    out = []
    for i, (mono, c) in enumerate(terms):
        neg = c < 0
        mag = -c if neg else c
        if not mono:
            text = _int_text(mag)
        else:
            body = _mono_text(mono, whole and len(terms) == 1 and c == 1)
            text = body if mag == 1 else f"{_int_text(mag)}*{body}"
        if i == 0:
            out.append(f"-{text}" if neg else text)
        else:
            out.append(f" - {text}" if neg else f" + {text}")
    return "".join(out)


def dim_from_text(text: str) -> Dim:
    """A dim read from a file: a decimal int, ``None`` for an empty string, else a symbol name."""
    if text == "":
        return None
    if text.isascii() and text.isdigit():
        try:
            return int(text)
        except ValueError:  # more digits than int() will parse: keep it as a name
            pass
    return Sym.symbol(text)


def dim_to_json(d: Dim) -> Union[int, str, None]:
    d = _coerce(d)
    if isinstance(d, Sym):
        return str(d)
    return d


def shape_to_json(s: Shape) -> Optional[list[Any]]:
    if s is None:
        return None
    return [dim_to_json(d) for d in s]


def _dim_text(d: Dim) -> str:
    if d is None:
        return "?"
    if isinstance(d, Sym):
        return str(d)
    return _int_text(operator.index(d))


def format_shape(s: Shape) -> str:
    """Human text: ``[batch, seq + 1, 4]``; ``?`` for an unknown rank or an unknown dim."""
    if s is None:
        return "?"
    return "[" + ", ".join(_dim_text(d) for d in s) + "]"
