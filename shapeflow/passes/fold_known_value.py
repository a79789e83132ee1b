"""Squeeze/Unsqueeze whose value is known before run time is a constant (SPEC.md section 4)."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, cast

from .. import codes
from .._onnx import onnx
from ..graph import INITIALIZER
from .base import INT_RANGES, Match, NoMatch, Result, RewriteRule, RoundContext, not_applicable
from .edit import Editor

if TYPE_CHECKING:
    from ..tensorinfo import TensorInfo

# Folding makes an initializer of the output; larger values would grow the model for little gain.
MAX_FOLD_ELEMS = 64

# Shared answers for roots the rule does not apply to (immutable).
_NO_INPUT = not_applicable("no data input")
_UNKNOWN = not_applicable("value not known before run time")
_SYMBOLIC = not_applicable("value is symbolic")
_CONSTANT = not_applicable("input is a constant (fold-constant's case)")
_ABSENT = object()


class _Value(NamedTuple):  # one per match: cheaper to build than a frozen dataclass
    dtype: int
    shape: tuple[int, ...]
    values: tuple[int, ...]


class FoldKnownValue(RewriteRule):
    """S/U(x) is the constant v when value inference knows x's value on every run.

    Exporters compute shapes at run time even where they are static: ``Unsqueeze(Gather(Shape(h),
    2), 0)`` of a tensor ``[batch, seq, 64]`` is ``[64]`` whatever the input. Inference carries the
    values of small integer tensors (a static dim read through Shape→Gather, arithmetic on
    constants); when the node's output value is fully known it becomes an initializer (a Constant
    node in a function body or where the output is a graph output), and the nodes that only fed
    it are removed by the dead-node sweep.

    Does not fire when any element is symbolic (``batch``; see shape-slice), for non-integer
    element types, for values over 64 elements, when the input is a plain constant (fold-constant
    does that), or when the model has initializers that are also graph inputs (values could be
    overridden at run time).
    """

    name = "fold-known-value"
    code = codes.FOLDABLE_CONSTANT.code
    roots = ("Squeeze", "Unsqueeze")

    def match(self, ctx: RoundContext, nid: int) -> Result:
        info = ctx.graph.nodes[nid]  # (asked about every root: one lookup, not one per field)
        names, sid = info.inputs, info.scope
        if not names or not names[0]:
            return _NO_INPUT
        z = info.outputs[0]
        # One lookup in the scope's table, where ``ctx.tensor`` looks first: the table holds every
        # tensor of the model, and on a large one each lookup is a cache miss.
        found = ctx.inference.tensors[sid].get(z, _ABSENT)
        t = ctx.tensor(sid, z) if found is _ABSENT else cast("TensorInfo | None", found)
        if t is None or t.value is None or t.shape is None:
            return _UNKNOWN
        for v in t.value:
            if type(v) is not int:
                return _SYMBOLIC
        p = ctx.graph.scopes[sid].producer.get(names[0])
        if p is None:  # defined in an enclosing scope (or nowhere)
            where = ctx.definition(sid, names[0])
            p = where[1] if where is not None else None
        if p is not None and (p == INITIALIZER or (p >= 0 and ctx.is_standard(p, "Constant"))):
            return _CONSTANT
        if ctx.overridable:
            return NoMatch(f"{ctx.display(nid)}: the model has initializers that are also graph "
                           "inputs, so computed values may change at run time")
        problem = ctx.axes_problem(nid)
        if problem is not None:
            return NoMatch(f"{ctx.display(nid)}: {problem}")
        # (loops, not generator expressions: this runs for every root whose value is known)
        n = 1
        for d in t.shape:
            if type(d) is not int:
                return NoMatch(f"{ctx.display(nid)}: output shape is not static")
            n *= d
        if n != len(t.value):
            return NoMatch(f"{ctx.display(nid)}: value and shape disagree")
        if n > MAX_FOLD_ELEMS:
            return NoMatch(f"{ctx.display(nid)}: value of {n} elements is too large to fold")
        bounds = INT_RANGES.get(t.dtype)
        if bounds is None:
            return NoMatch(f"{ctx.display(nid)}: element type {t.dtype} is not folded")
        lo, hi = bounds
        for v in t.value:
            if not lo <= v <= hi:  # type: ignore[operator]  # ints: checked above
                return NoMatch(f"{ctx.display(nid)}: value out of range of its element type")
        value = _Value(t.dtype, tuple(t.shape), tuple(t.value))  # type: ignore[arg-type]  # ints: checked above
        shown = list(value.values) if n <= 8 else f"{n} values"
        message = lambda: f"{ctx.display(nid)} is the constant {shown}"  # noqa: E731
        # Its readers are "read": when one of them was folded or cancelled earlier in the round
        # (the rounds visit chains from their end), this node is left to the dead-node sweep.
        readers = tuple(ctx.readers(sid, z))
        return Match(nid, (nid,), readers, message, "", value)

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[_Value]) -> None:
        value = m.payload
        sid = ctx.sid(m.nid)
        z = ctx.output(m.nid)
        import numpy as np  # here, not at the top: lint imports this module and needs no numpy

        arr = np.asarray(value.values, dtype=onnx.helper.tensor_dtype_to_np_dtype(value.dtype)).reshape(value.shape)
        if edit.can_add_initializers(sid) and not ctx.is_output(sid, z):
            edit.delete_node(m.nid)
            edit.add_initializer(sid, onnx.numpy_helper.from_array(arr, z))
        else:
            edit.replace_node(m.nid, "Constant", [], "const", value=onnx.numpy_helper.from_array(arr))
