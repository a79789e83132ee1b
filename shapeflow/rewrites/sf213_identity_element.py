"""An integer or boolean op with its identity element is its other input (issue 16)."""

from __future__ import annotations

from typing import NamedTuple

from .. import codes
from .base import INT_RANGES, Match, NoMatch, Result, RewriteRule, RoundContext, not_applicable
from .edit import Editor
from .fold_known_value import exclusive_cone

# op -> (identity element, whether the constant may be either input)
_IDENTITY: dict[str, tuple[int, bool]] = {
    "Add": (0, True), "Sub": (0, False), "Or": (0, True), "Xor": (0, True),
    "Mul": (1, True), "Div": (1, False), "And": (1, True),
}

_NOT_TWO = not_applicable("not two inputs")
_NO_IDENTITY = not_applicable("no input is the identity element")


class _Plan(NamedTuple):
    x: str  # the input the readers read instead
    z: str  # the output


class IdentityElement(RewriteRule):
    """x + 0, x - 0, x * 1, x / 1, x and True, x or False, x xor False are x (integer and bool x).

    Exporters leave these in their shape and mask arithmetic: dynamo's attention masks start from
    ``And(ones, cond)`` with an all-True constant. Where the other input's value is known to be the
    op's identity element for every binding, and broadcasting it leaves x's shape as it is (its rank
    at most x's, each of its dims 1 or x's dim there), the node returns x element for element: its
    readers read x and the node goes, with the constant's computation when nothing else reads it.
    Only integer and bool element types: on floats, ``-0 + 0`` is ``+0``.

    Does not fire when the output is a graph output or read by name in a subgraph, when the model
    has initializers that are also graph inputs (the constant may be overridden at run time), or
    when x's shape or element type is unknown.
    """

    name = "identity-element"
    code = codes.IDENTITY_ELEMENT.code
    roots = tuple(_IDENTITY)

    def may_fire_later(self, ctx: RoundContext, nid: int) -> bool:
        return self._constant(ctx, nid) is not None

    def _constant(self, ctx: RoundContext, nid: int) -> int | None:
        """The position of the input that is the identity element (value only), or None."""
        info = ctx.graph.nodes[nid]
        names = info.inputs
        if len(names) != 2 or not names[0] or not names[1]:
            return None
        unit, either = _IDENTITY[info.op_type]
        for k in ((1, 0) if either else (1,)):
            t = ctx.tensor(info.scope, names[k])
            if t is None or t.value is None or not t.value:
                continue
            if all(type(v) is int and v == unit for v in t.value):
                return k
        return None

    def match(self, ctx: RoundContext, nid: int) -> Result:
        info = ctx.graph.nodes[nid]
        if len(info.inputs) != 2:
            return _NOT_TWO
        k = self._constant(ctx, nid)
        if k is None:
            return _NO_IDENTITY
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
        if ctx.overridable:
            return NoMatch(f"{ctx.display(nid)}: the model has initializers that are also graph inputs, "
                           "so the constant may change at run time")
        z = info.outputs[0]
        if not z or ctx.is_output(sid, z) or not ctx.direct_readers_only(sid, z):
            return NoMatch(f"{ctx.display(nid)}: '{z}' must keep its name (graph output or read by a "
                           "subgraph): an Identity would not shrink the graph")
        readers = tuple(r for r in ctx.readers(sid, z) if r != nid)

        def message() -> str:
            return f"{ctx.display(nid)} ({info.op_type} with its identity element '{c_name}') is '{x}'"

        return Match(nid, (nid, *exclusive_cone(ctx, nid, (c_name,))), (), message, "", _Plan(x, z), readers)

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[_Plan]) -> None:
        edit.replace_uses(ctx.sid(m.nid), m.payload.z, m.payload.x)
        edit.delete_node(m.nid)


__all__ = ["IdentityElement"]
