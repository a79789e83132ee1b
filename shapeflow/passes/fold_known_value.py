"""A node whose value is known before run time is a constant (SPEC.md section 4).

Termination: a fold deletes its node (an initializer takes the output's name) or replaces it by a
Constant node, which is no root of the rule; either way the count of root nodes drops.
"""

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
_SEVERAL = not_applicable("node with several outputs")
_ABSENT = object()

# The op types whose outputs value inference evaluates (shapeflow/ops): the rule's roots. Not
# Constant (already a constant) nor Identity (cleanup's), nothing with a subgraph (If, Loop), no
# random op. A root whose value is unknown costs one dict lookup.
VALUE_OPS: tuple[str, ...] = (
    "Squeeze", "Unsqueeze",
    "Shape", "Size", "Gather", "Slice", "Concat", "Reshape", "Expand", "ConstantOfShape", "Range",
    "Transpose", "Tile", "Flatten",
    "Neg", "Abs", "Not", "Cast", "CastLike", "Floor", "Ceil", "Round",
    "Add", "Sub", "Mul", "Div", "Mod", "Pow", "Max", "Min", "Sum",
    "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Where",
)
_AXIS_OPS = frozenset({"Squeeze", "Unsqueeze"})
_ROOTS = frozenset(VALUE_OPS)
_NOT_A_ROOT = not_applicable("not an op whose value is folded")
_MEMO = "fold-known-value-alone"  # ctx.cache key
_READERS_FOLD = not_applicable("every reader folds, and this node goes with them")


def _allowzero_target(ctx: RoundContext, sid: int, name: str) -> bool:
    """Whether ``name`` is the target of a Reshape that may run with allowzero=1."""
    for r in ctx.readers(sid, name):
        info = ctx.graph.nodes[r]
        if (info.op_type == "Reshape" and info.domain == "" and (info.since_version or 0) >= 14
                and len(info.inputs) > 1 and info.inputs[1] == name and info.has_attrs):
            for a in ctx.peek(r).attribute:
                if a.name == "allowzero" and (a.ref_attr_name or a.i):
                    return True
    return False


class _Value(NamedTuple):  # one per match: cheaper to build than a frozen dataclass
    dtype: int
    shape: tuple[int, ...]
    values: tuple[int, ...]


class FoldKnownValue(RewriteRule):
    """A node whose output value inference knows on every run is the constant v.

    Exporters compute shapes at run time even where they are static: ``Unsqueeze(Gather(Shape(h),
    2), 0)`` of a tensor ``[batch, seq, 64]`` is ``[64]`` whatever the input, and so are ``Shape``
    of a static tensor, ``Mul``/``Div``/``Mod`` of such values, ``ConstantOfShape`` of a known
    shape, ``Equal``/``Where`` on them. Inference carries the values of small integer tensors;
    when a node's output value is fully known for every value of the symbols, the node becomes an
    initializer (a Constant node in a function body or where the output is a graph output), and
    the nodes that only fed it are removed by the dead-node sweep.

    Does not fire when any element is symbolic (``batch``; see shape-slice), for non-integer
    element types, for values over 64 elements, for a Squeeze/Unsqueeze whose input is a plain
    constant (fold-constant does that), for nodes with several outputs or a subgraph, or when the
    model has initializers that are also graph inputs (values could be overridden at run time).
    """

    name = "fold-known-value"
    code = codes.FOLDABLE_CONSTANT.code
    roots = VALUE_OPS

    def match(self, ctx: RoundContext, nid: int) -> Result:
        info = ctx.graph.nodes[nid]
        # The common case first, in one lookup: the value is unknown (most roots of a model).
        t = ctx.inference.tensors[info.scope].get(info.outputs[0], _ABSENT)
        if t is None:
            return _UNKNOWN
        if t is not _ABSENT:
            known = cast("TensorInfo", t).value
            if known is None:
                return _UNKNOWN
            for v in known:  # the next most common case: a symbolic value (a shape of batch, seq)
                if type(v) is not int:
                    return _SYMBOLIC
        # The nodes judged alone this round, for the readers' check: a node of a run of known
        # values is asked about as a root and as a reader (only known values are kept: the rest
        # answers in one lookup anyway).
        memo = cast("dict[int, _Value | NoMatch] | None", ctx.cache.get(_MEMO))
        if memo is None:
            memo = ctx.cache[_MEMO] = {}
        found = memo.get(nid)
        if found is None:
            found = memo[nid] = self._foldable(ctx, nid)
        if type(found) is not _Value:
            return found  # type: ignore[return-value]
        # Only the end of a run of known values folds: when every reader folds too, this node goes
        # with them (the sweep), and folding it as well would make a constant nobody reads.
        sid, z = info.scope, info.outputs[0]
        readers = tuple(ctx.readers(sid, z))
        if readers and not ctx.is_output(sid, z):
            for r in readers:
                judged = memo.get(r)
                if judged is None:
                    judged = memo[r] = self._foldable(ctx, r)
                if type(judged) is not _Value:
                    break
            else:
                return _READERS_FOLD
        value = found
        n = len(value.values)
        shown = list(value.values) if n <= 8 else f"{n} values"
        message = lambda: f"{ctx.display(nid)} is the constant {shown}"  # noqa: E731
        # Its readers are "read": when one of them was folded or cancelled earlier in the round
        # (the rounds visit chains from their end), this node is left to the dead-node sweep. The
        # nodes that only feed it are written: the sweep deletes them after the fold, so no other
        # rewrite of the round may spend itself on them.
        return Match(nid, (nid, *exclusive_cone(ctx, nid)), readers, message, "", value)

    def may_fire_later(self, ctx: RoundContext, nid: int) -> bool:
        info = ctx.graph.nodes[nid]
        t = ctx.tensor(info.scope, info.outputs[0])
        if t is None or t.value is None:
            return False
        for v in t.value:
            if type(v) is not int:
                return False
        return True

    def _foldable(self, ctx: RoundContext, nid: int) -> "_Value | NoMatch":
        """The value ``nid`` folds to, judged alone (its readers not considered), or why not."""
        info = ctx.graph.nodes[nid]
        if info.op_type not in _ROOTS or info.domain != "" or info.since_version is None:
            return _NOT_A_ROOT  # (a reader: the roots are such nodes)
        names, sid, outs = info.inputs, info.scope, info.outputs
        z = outs[0]
        # One lookup in the scope's table, where ``ctx.tensor`` looks first: the table holds every
        # tensor of the model, and on a large one each lookup is a cache miss.
        found = ctx.inference.tensors[sid].get(z, _ABSENT)
        t = ctx.tensor(sid, z) if found is _ABSENT else cast("TensorInfo | None", found)
        if t is None or t.value is None or t.shape is None:
            return _UNKNOWN
        for v in t.value:
            if type(v) is not int:
                return _SYMBOLIC
        if len(outs) > 1:
            for o in outs[1:]:
                if o:
                    return _SEVERAL
        if info.op_type in _AXIS_OPS:
            if not names or not names[0]:
                return _NO_INPUT
            p = ctx.graph.scopes[sid].producer.get(names[0])
            if p is None:  # defined in an enclosing scope (or nowhere)
                where = ctx.definition(sid, names[0])
                p = where[1] if where is not None else None
            if p is not None and (p == INITIALIZER or (p >= 0 and ctx.is_standard(p, "Constant"))):
                return _CONSTANT
            problem = ctx.axes_problem(nid)
            if problem is not None:
                return NoMatch(f"{ctx.display(nid)}: {problem}")
        elif info.subscopes:
            return NoMatch(f"{ctx.display(nid)}: the node carries a graph attribute")
        elif info.has_attrs and ctx.refers_to_function_attributes(nid):
            return NoMatch(f"{ctx.display(nid)}: attributes refer to the function's attributes")
        if ctx.overridable:
            return NoMatch(f"{ctx.display(nid)}: the model has initializers that are also graph "
                           "inputs, so computed values may change at run time")
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
        if 0 in t.value and -1 in t.value and _allowzero_target(ctx, sid, z):
            # onnxruntime runs [0, 5, -1, 16] under allowzero=1 when computed, but as a constant
            # onnx's shape inference refuses it when the session is made, at every binding
            return NoMatch(f"{ctx.display(nid)}: a Reshape target with 0 and -1 under allowzero=1 "
                           "(a constant one is refused when onnxruntime loads the model)")
        return _Value(t.dtype, tuple(t.shape), tuple(t.value))  # type: ignore[arg-type]  # ints: checked above

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


# A fold claims at most this many of the nodes feeding it (the sweep removes the rest anyway).
MAX_CONE = 256


def exclusive_cone(ctx: RoundContext, nid: int, names: "tuple[str, ...] | None" = None) -> tuple[int, ...]:
    """The standard nodes of ``nid``'s scope that only ``nid`` needs through its inputs ``names``
    (default all), directly or through each other: every output read only by nodes of the set,
    none a graph output. What the sweep deletes once ``nid`` stops reading ``names``; a rewrite
    that claims them (writes) keeps the round's other rewrites from spending themselves there."""
    if not ctx.claims:
        return ()
    info = ctx.graph.nodes[nid]
    sid = info.scope
    scope = ctx.graph.scopes[sid]
    producer, consumers, nodes = scope.producer, scope.consumers, ctx.graph.nodes
    outputs = ctx.outputs(sid)
    inside = {nid}
    # what ``nid`` goes on reading: a producer it reads through them is no member
    kept = frozenset() if names is None else frozenset(info.inputs).difference(names)
    out: list[int] = []
    stack = [n for n in (info.inputs if names is None else names) if n]
    while stack and len(out) < MAX_CONE:
        name = stack.pop()
        p = producer.get(name)
        if p is None or p < 0 or p in inside:
            continue
        pinfo = nodes[p]
        if pinfo.domain != "" or pinfo.since_version is None or pinfo.subscopes:
            continue
        only = True
        for o in pinfo.outputs:
            if not o:
                continue
            if o in outputs:
                only = False
                break
            if o in kept:
                only = False
                break
            for r in consumers.get(o, ()):
                if r not in inside:
                    only = False
                    break
            if not only:
                break
        if only:  # (else it may qualify later, when its other readers join: it is pushed again)
            inside.add(p)
            out.append(p)
            stack.extend(n for n in pinfo.inputs if n)
    return tuple(out)
