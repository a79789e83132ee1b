"""SF213 identity-element: an integer or boolean op with its identity element is its other input."""

from __future__ import annotations

from typing import Any

from ..codes import INFO, Code
from ..passes.context import INT_RANGES, RoundContext
from ..passes.edit import Editor
from ..passes.match import Match, NoMatch, Result, not_applicable
from ..passes.pattern import Bound, Bypass, Guard, Op, exclusive_cone, overridable_problem, tensor_of
from ..passes.spec import Rewrite

# op -> (identity element, whether the constant may be either input)
_IDENTITY: dict[str, tuple[int, bool]] = {
    "Add": (0, True), "Sub": (0, False), "Or": (0, True), "Xor": (0, True),
    "Mul": (1, True), "Div": (1, False), "And": (1, True),
}

_NO_IDENTITY = not_applicable("no input is the identity element")


def identity_operand(ctx: RoundContext, nid: int) -> int | None:
    """The position of the input whose value is the op's identity element, or None."""
    info = ctx.graph.nodes[nid]
    names = info.inputs
    if len(names) != 2 or not names[0] or not names[1]:
        return None
    unit, either = _IDENTITY[info.op_type]
    for k in ((1, 0) if either else (1,)):
        t = tensor_of(ctx, info.scope, names[k])  # (asked for every Add, Sub, Mul, Div... of a model)
        if t is None or t.value is None or not t.value:
            continue
        if all(type(v) is int and v == unit for v in t.value):
            return k
    return None


class _IdentityOperand(Guard):
    """One input's value is the op's identity element. Stable: values never change."""

    stable = True

    def check(self, ctx: RoundContext, nid: int) -> NoMatch | None:
        return _NO_IDENTITY if identity_operand(ctx, nid) is None else None


class IdentityElement(Rewrite):
    """x + 0, x - 0, x * 1, x / 1, x and True, x or False, x xor False are x (integer and bool x).

    ## What it does
    Reports ``x + 0``, ``x - 0``, ``x * 1``, ``x / 1``, ``And(x, True)``, ``Or(x, False)`` and
    ``Xor(x, False)`` on integer or bool tensors where the other input's value is known to be the
    op's identity element for every binding, and broadcasting it leaves x's shape as it is (its rank
    at most x's, each of its dims 1 or x's dim there): the node returns x element for element, so
    ``shapeflow optimize`` lets its readers read x and removes it, with the constant's computation
    when nothing else reads it.

    ## Why is this bad?
    It is not wrong, but the node computes a copy of x, and the constant (often a
    ``ConstantOfShape`` or an all-True mask) is built for nothing.

    ## Example
    dynamo exports start attention masks with ``And(ones, cond)``, where ``ones`` is an all-True
    constant: the result is ``cond``.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` removes it. Only integer
    and bool element types: on floats, ``-0 + 0`` is ``+0``.

    ## When it does not fire
    When the output is a graph output or read by name in a subgraph, when the model has
    initializers that are also graph inputs (the constant may be overridden at run time), or when
    x's shape or element type is unknown.
    """

    code = Code("SF213", "identity-element", INFO, fixable=True)
    order = 410
    pattern = Op(tuple(_IDENTITY), guards=(_IdentityOperand(),))
    replacement = Bypass("")

    def check(self, ctx: RoundContext, b: Bound) -> Result:
        nid = b.root
        info = ctx.graph.nodes[nid]
        k = identity_operand(ctx, nid)
        assert k is not None  # (the pattern's guard)
        sid = info.scope
        c_name, x = info.inputs[k], info.inputs[1 - k]
        c, t = ctx.tensor(sid, c_name), ctx.tensor(sid, x)
        if t is None or t.shape is None or c is None or c.shape is None:
            return NoMatch(f"{ctx.display(nid)}: the shape of '{x}' is not known")
        if t.dtype not in INT_RANGES or c.dtype != t.dtype:
            return NoMatch(f"{ctx.display(nid)}: not an integer or bool op")
        if len(c.shape) > len(t.shape):
            return NoMatch(f"{ctx.display(nid)}: the constant has more dims than '{x}'")
        off = len(t.shape) - len(c.shape)
        for j, d in enumerate(c.shape):
            if not (d == 1 or (type(d) is int and t.shape[off + j] == d)):
                return NoMatch(f"{ctx.display(nid)}: the constant broadcasts '{x}' to another shape")
        problem = overridable_problem(ctx, nid, "the constant")
        if problem is not None:
            return problem

        def message() -> str:
            return f"{ctx.display(nid)} ({info.op_type} with its identity element '{c_name}') is '{x}'"

        return self.replacement.plan(ctx, nid, x, sweeps=exclusive_cone(ctx, nid, (c_name,)), message=message)

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[Any]) -> None:
        self.replacement.apply(ctx, edit, m)
