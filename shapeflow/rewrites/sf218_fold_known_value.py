"""SF218 fold-known-value: a node whose value is known before run time is a constant."""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence, cast

from .._onnx import onnx
from ..codes import INFO, Code
from ..graph import INITIALIZER
from ..passes.context import INT_RANGES, RoundContext
from ..passes.edit import Editor
from ..passes.match import Match, NoMatch, Result, not_applicable
from ..passes.pattern import Bound, KnownValue, Op, exclusive_cone, tensor_of
from ..passes.spec import Rewrite

# Folding makes an initializer of the output; larger values would grow the model for little gain.
MAX_FOLD_ELEMS = 64

# Shared answers for roots the rule does not apply to (immutable).
_NO_INPUT = not_applicable("no data input")
_UNKNOWN = not_applicable("value not known before run time")
_SYMBOLIC = not_applicable("value is symbolic")
_CONSTANT = not_applicable("input is a constant (fold-constant's case)")
_SEVERAL = not_applicable("node with several outputs")

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
    "ReduceProd", "ReduceSum", "ReduceMin", "ReduceMax",
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


class FoldKnownValue(Rewrite):
    """A node whose output value inference knows on every run is the constant v.

    ## What it does
    Reports a node whose output value inference knows exactly for every binding of the symbols (a
    small integer or bool tensor: ``Shape`` of a static tensor, ``Gather(Shape(h), 2)`` of a dim
    that is 64, ``Mul``/``Div``/``Mod`` of such values, comparisons, ``Where`` and
    ``ConstantOfShape`` on them), at the end of each run of such nodes: ``shapeflow optimize`` makes
    it an initializer (a Constant node in a function body or where the output is a graph output),
    and the nodes that only fed it are removed by the dead-node sweep.

    ## Why is this bad?
    It is not wrong, but the nodes run on every inference for a result that never changes, and
    the graph shows a computation where a constant would do. Exporters compute shapes at run time
    even where they are static.

    ## Example
    ``d = Unsqueeze(Gather(Shape(h), 2), [0])`` where ``h`` is ``[batch, seq, 64]``: ``d`` is
    ``[64]`` whatever the input.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` folds it. A fold deletes
    its node (an initializer takes the output's name) or replaces it by a Constant node, which is
    no root of the rewrite: either way the count of root nodes drops.

    ## When it does not fire
    When any element is symbolic (``batch``; see shape-slice), for non-integer element types, for
    values over 64 elements, for a Squeeze/Unsqueeze whose input is a plain constant (fold-constant
    does that), for nodes with several outputs or a subgraph, or when the model has initializers
    that are also graph inputs (values could be overridden at run time).
    """

    code = Code("SF218", "fold-known-value", INFO, fixable=True)
    aliases = ("foldable-constant",)
    order = 120
    pattern = Op(VALUE_OPS, guards=(KnownValue(),))

    def check(self, ctx: RoundContext, b: Bound) -> Result:
        nid = b.root
        info = ctx.graph.nodes[nid]
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
        # nodes that only feed it are swept after the fold, so no other rewrite of the round may
        # spend itself on them.
        return Match(nid, reads=readers, sweeps=exclusive_cone(ctx, nid), message=message, payload=value)

    def _foldable(self, ctx: RoundContext, nid: int) -> "_Value | NoMatch":
        """The value ``nid`` folds to, judged alone (its readers not considered), or why not."""
        info = ctx.graph.nodes[nid]
        if info.op_type not in _ROOTS or info.domain != "" or info.since_version is None:
            return _NOT_A_ROOT  # (a reader: the roots are such nodes)
        names, sid, outs = info.inputs, info.scope, info.outputs
        z = outs[0]
        # One lookup in the scope's table, where ``ctx.tensor`` looks first: the table holds every
        # tensor of the model, and on a large one each lookup is a cache miss.
        t = tensor_of(ctx, sid, z)
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

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[Any]) -> None:
        value = m.payload
        write_constant(ctx, edit, m.nid, value.dtype, value.shape, value.values)


def write_constant(ctx: RoundContext, edit: Editor, nid: int, dtype: int, shape: Sequence[int],
                   values: Sequence[Any]) -> None:
    """Node ``nid``'s one output becomes the constant ``values``: an initializer of its name, or a
    Constant node where the scope takes no initializers or the output is a graph output."""
    sid = ctx.sid(nid)
    z = ctx.output(nid)
    import numpy as np  # here, not at the top: lint imports this module and needs no numpy

    arr = np.asarray(values, dtype=onnx.helper.tensor_dtype_to_np_dtype(dtype)).reshape(tuple(shape))
    if edit.can_add_initializers(sid) and not ctx.is_output(sid, z):
        edit.delete_node(nid)
        edit.add_initializer(sid, onnx.numpy_helper.from_array(arr, z))
    else:
        edit.replace_node(nid, "Constant", [], "const", value=onnx.numpy_helper.from_array(arr))
