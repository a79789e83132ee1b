"""Dims that a file declares as expressions (``-floordiv(-H, 2)``, ``2*seq + 1``), read as dims.

A ``dim_param`` is a name to ONNX. Exporters also write expressions there: jax2onnx writes
``-floordiv(-H, 2)`` for a ceiling division of the input dim ``H``, and ``shapeflow infer -o``
writes its own (``floor((samples - 10)/5) + 1``, ``min(3, seq)``). :func:`parse_dim` reads such a
text as a dim over the given symbols, so a declaration can be checked against inference.

The grammar, and nothing else (any other text stays an opaque name)::

    expr   := term (("+" | "-") term)*
    term   := unary (("*" | "//" | "%") unary)*         // and % by a positive int
    unary  := ("-" | "+") unary | power
    power  := atom ("**" INT)?                            exponent 0..8
    atom   := INT | NAME | "(" expr ")" | FUNC "(" expr ("," expr)* ")"
    FUNC   := floordiv | mod (two arguments, the second a positive int) | min | max
              | floor | ceil (one argument, ``E/k`` with k a positive int)

Function names are matched without regard to case (sympy writes ``Max``). Division is floor
division, ``mod``/``%`` take the divisor's sign (Python's, ONNX's shape arithmetic). The reader is
bounded: at most ``MAX_TEXT`` characters, ``MAX_DEPTH`` nested brackets, calls or unary signs,
ints of at most 19 digits, intermediate results of at most ``MAX_SIZE`` terms; it never evaluates
text as code. Graph-input ``dim_param`` are never parsed:
there a text is one opaque symbol whatever it says.
"""

from __future__ import annotations

import re
from typing import Collection

from .dims import BASE, Dim, Domain, Sym, dim_add, dim_floordiv, dim_max, dim_min, dim_mod, dim_mul, dim_neg, dim_sub

__all__ = ["MAX_DEPTH", "MAX_TEXT", "parse_dim"]

MAX_TEXT = 256
MAX_DEPTH = 16
MAX_SIZE = 256  # terms of an intermediate result (the default --max-expr-size)
_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(\*\*|//|[-+*/%(),]))")
_FUNCS = {"floordiv": 2, "mod": 2, "min": 2, "max": 2, "floor": 1, "ceil": 1}


class _Opaque(Exception):
    """The text is not an expression of the grammar over the given symbols."""


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    n = len(text)
    while pos < n:
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip() == "":
                break
            raise _Opaque
        out.append(m.group(m.lastindex or 0))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, tokens: list[str], symbols: Collection[str], dom: Domain) -> None:
        self.t = tokens
        self.i = 0
        self.symbols = symbols
        self.dom = dom
        self.depth = 0

    def peek(self) -> str | None:
        return self.t[self.i] if self.i < len(self.t) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expected is not None and tok != expected):
            raise _Opaque
        self.i += 1
        return tok

    def deeper(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _Opaque

    def expr(self) -> Dim:
        value = self.term()
        while self.peek() in ("+", "-"):
            op = self.take()
            rhs = self.term()
            value = dim_add(value, rhs) if op == "+" else dim_sub(value, rhs)
            _known(value)
        return value

    def term(self) -> Dim:
        value = self.unary()
        while self.peek() in ("*", "//", "%"):
            op = self.take()
            rhs = self.unary()
            if op == "*":
                value = dim_mul(value, rhs)
            else:
                k = _positive_int(rhs)
                value = dim_floordiv(value, k, self.dom) if op == "//" else dim_mod(value, k, self.dom)
            _known(value)
        return value

    def unary(self) -> Dim:
        if self.peek() in ("-", "+"):
            op = self.take()
            self.deeper()
            value = self.unary()
            self.depth -= 1
            return dim_neg(value) if op == "-" else value
        return self.power()

    def power(self) -> Dim:
        base = self.atom()
        if self.peek() == "**":
            self.take()
            tok = self.take()
            if not tok.isdigit() or int(tok) > 8:
                raise _Opaque
            value: Dim = 1
            for _ in range(int(tok)):
                value = dim_mul(value, base)
            return _known(value)
        return base

    def atom(self) -> Dim:
        tok = self.take()
        if tok.isdigit():
            if len(tok) > 19:
                raise _Opaque
            return int(tok)
        if tok == "(":
            self.deeper()
            value = self.expr()
            self.take(")")
            self.depth -= 1
            return value
        if tok[0].isalpha() or tok[0] == "_":
            func = tok.lower()
            if self.peek() == "(" and func in _FUNCS:
                return self.call(func)
            if tok not in self.symbols:
                raise _Opaque
            return Sym.symbol(tok)
        raise _Opaque

    def call(self, func: str) -> Dim:
        self.take("(")
        self.deeper()
        args = [self.expr()]
        while self.peek() == ",":
            self.take()
            args.append(self.expr())
        divisor: int | None = None
        if func in ("floor", "ceil"):
            self.take("/")  # floor(E/k): E was read as the whole argument up to the "/"
            divisor = _positive_int(self.unary())
        self.take(")")
        self.depth -= 1
        if func in ("min", "max"):
            if len(args) < 2:
                raise _Opaque
            value = args[0]
            for a in args[1:]:
                value = dim_min(value, a, self.dom) if func == "min" else dim_max(value, a, self.dom)
                _known(value)
            return value
        if len(args) != _FUNCS[func]:
            raise _Opaque
        if func == "floordiv":
            return _known(dim_floordiv(args[0], _positive_int(args[1]), self.dom))
        if func == "mod":
            return _known(dim_mod(args[0], _positive_int(args[1]), self.dom))
        assert divisor is not None
        if func == "floor":
            return _known(dim_floordiv(args[0], divisor, self.dom))
        return _known(dim_neg(dim_floordiv(dim_neg(args[0]), divisor, self.dom)))  # ceil(E/k) = -floor(-E/k)


def _known(d: Dim) -> Dim:
    # None: an expression the dims cannot hold; a large one: ``((a+b+c)**8)**8`` grows a term
    # count no declaration needs, so reading stops before the arithmetic gets expensive
    if d is None or (type(d) is Sym and d.size() > MAX_SIZE):
        raise _Opaque
    return d


def _positive_int(d: Dim) -> int:
    if type(d) is not int or d < 1:
        raise _Opaque
    return d


def parse_dim(text: str, symbols: Collection[str], dom: Domain = BASE) -> Dim:
    """``text`` as a dim over ``symbols`` (an int, or an expression whose every name is one of
    ``symbols``); None when it is anything else, which the caller keeps as an opaque name. A text
    that is one of ``symbols`` is that symbol, whatever characters it has."""
    if text in symbols:
        return Sym.symbol(text)
    if not text or len(text) > MAX_TEXT or not text.isascii():
        return None
    try:
        tokens = _tokens(text)
        if not tokens:
            return None
        p = _Parser(tokens, symbols, dom)
        value = p.expr()
        if p.peek() is not None:
            return None
        return value
    except (_Opaque, RecursionError, ValueError, OverflowError):
        return None
