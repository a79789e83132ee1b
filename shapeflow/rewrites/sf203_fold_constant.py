"""SF203 fold-constant: a Squeeze/Unsqueeze of a constant is a constant with other dims."""

from __future__ import annotations

from typing import Any, NamedTuple, cast

from .._onnx import onnx
from ..axes import squeeze_shape, unsqueeze_shape
from ..codes import INFO, Code
from ..graph import INITIALIZER
from ..passes.context import FROM_INITIALIZER, FROM_OUTER_SCOPE, RoundContext, fmt_axes
from ..passes.edit import Editor
from ..passes.match import Match, NoMatch, Result, not_applicable
from ..passes.pattern import DATA_INPUT, Bound, Op
from ..passes.spec import Rewrite

TensorProto = onnx.TensorProto

# Shared answers for roots the rule does not apply to (immutable).
_NOT_CONSTANT = not_applicable("input is not a constant")


class _Source(NamedTuple):  # (named tuples: one or more per match, cheaper than frozen dataclasses)
    name: str
    sid: int  # scope that defines it
    tensor: TensorProto  # the initializer, or the Constant node's value (built for value_ints...)
    node: int | None  # the Constant node, or None for an initializer


class _Fold(NamedTuple):
    source: _Source
    dims: tuple[int, ...]
    members: tuple[int, ...]  # Squeeze/Unsqueeze nodes of the constant folded together
    name: str | None  # the folded tensor's name: a member's output, or None for a derived name
    in_place: bool  # the members are every read of an initializer of their own scope: it is renamed
    # and reshaped where it is, not copied


def _constant_value(node: onnx.NodeProto) -> TensorProto | None:
    """The tensor a Constant node holds (numeric forms only; a sparse value is not folded)."""
    for a in node.attribute:
        if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
            value: TensorProto = a.t
            return value
        if a.name == "value_int":
            return onnx.helper.make_tensor("", TensorProto.INT64, [], [a.i])
        if a.name == "value_ints":
            return onnx.helper.make_tensor("", TensorProto.INT64, [len(a.ints)], list(a.ints))
        if a.name == "value_float":
            return onnx.helper.make_tensor("", TensorProto.FLOAT, [], [a.f])
        if a.name == "value_floats":
            return onnx.helper.make_tensor("", TensorProto.FLOAT, [len(a.floats)], list(a.floats))
    return None


def _source(ctx: RoundContext, sid: int, name: str) -> _Source | NoMatch:
    where = ctx.definition(sid, name)
    if where is None:
        return _NOT_CONSTANT
    def_sid, p = where
    if p == INITIALIZER:
        t = ctx.scope(def_sid).initializers.get(name)
        if t is None:
            return NoMatch(f"'{name}' is a sparse initializer")
        if (def_sid, name) in ctx.overridable:
            return NoMatch(f"initializer '{name}' is also a graph input (overridable)")
        if t.HasField("segment"):
            return NoMatch(f"initializer '{name}' is stored in segments")
        return _Source(name, def_sid, t, None)
    if p >= 0 and ctx.is_standard(p, "Constant"):
        if ctx.refers_to_function_attributes(p):
            return NoMatch(f"Constant '{name}' takes its value from the function's attributes")
        t = _constant_value(ctx.peek(p))
        if t is None:
            return NoMatch(f"Constant '{name}' holds a sparse or string-list value")
        return _Source(name, def_sid, t, p)
    return _NOT_CONSTANT


def _result_dims(ctx: RoundContext, nid: int, dims: tuple[int, ...]) -> tuple[int, ...] | NoMatch:
    if ctx.info(nid).op_type == "Unsqueeze":
        a = ctx.unsqueeze_axes(nid)
        if isinstance(a, NoMatch):
            return a
        if len(a) + len(dims) != len(ctx.facts[nid].output_shape or ()):
            return NoMatch(f"{ctx.display(nid)}: rank disagrees with the constant")
        return unsqueeze_shape(dims, a)
    b = ctx.squeeze_axes(nid)
    if isinstance(b, NoMatch):
        return b
    for p in b:
        if p >= len(dims) or dims[p] != 1:
            return NoMatch(f"{ctx.display(nid)}: squeezes a dim that is not 1")
    return squeeze_shape(dims, b)


class _ConstantInput(Op):
    """A Squeeze/Unsqueeze whose data input may be a constant: an initializer, a Constant node, or
    a tensor of an enclosing scope (which may be either). ``check`` finds out which."""

    def __init__(self) -> None:
        super().__init__(("Squeeze", "Unsqueeze"), guards=(DATA_INPUT,))
        self.after = frozenset({"Constant", FROM_INITIALIZER, FROM_OUTER_SCOPE})


class FoldConstant(Rewrite):
    """S(b)(c) and U(a)(c) of a constant c are a constant: c's bytes with the new dims.

    ## What it does
    Reports a Squeeze or Unsqueeze with known axes whose data input is an initializer or a
    ``Constant`` node, where ``shapeflow optimize`` would replace the node by a tensor with the new
    dims and the same bytes: inserting or removing 1-dims does not move any element in row-major
    order (an external-data reference is copied, its file never read). All the
    Squeezes/Unsqueezes of one constant that give the same dims are folded together into one
    tensor. When they are all of ``c``'s readers, ``c`` goes: renamed and reshaped where it is, or
    moved into the subgraph that was its only reader; otherwise a copy is made only if it is
    smaller than the nodes it removes, so a shared initializer is never duplicated to grow the
    model. In a function body (no initializers) the result is a Constant node.

    ## Why is this bad?
    It is not wrong, but the node runs on every inference for a result that never changes, and
    the graph shows a computation where a constant would do.

    ## Example
    ``b = Squeeze(bias: float[1, 768], [0])`` where ``bias`` is an initializer: ``b`` is the
    initializer ``float[768]`` with the same bytes.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` folds it.

    ## When it does not fire
    When the axes are not constants, when a squeezed dim is not 1, when an output is a graph
    output, when the constant is a sparse tensor or an initializer that is also a graph input (it
    can be overridden), or when a copy would grow the model.
    """

    code = Code("SF203", "fold-constant", INFO, fixable=True)
    aliases = ("foldable-constant",)
    order = 110
    pattern = _ConstantInput()

    def check(self, ctx: RoundContext, b: Bound) -> Result:
        nid = b.root
        names = ctx.inputs(nid)
        sid = ctx.sid(nid)
        source = _source(ctx, sid, names[0])
        if isinstance(source, NoMatch):
            return source
        dims = tuple(source.tensor.dims)  # (ints already)
        readers = ctx.readers(sid, source.name)
        if len(readers) == 1 and readers[0] == nid:
            # The one reader (most Constants): its group is itself, and no other member will ask.
            mine = _member_dims(ctx, sid, source, dims, nid)
            if mine is not None:
                return self._group_match(ctx, nid, sid, source, dims, mine, (nid,))
            groups = _NO_GROUPS
        else:
            groups = _groups(ctx, sid, source, dims)
        mine = groups.dims_of.get(nid)
        if mine is not None:  # a member: its dims are worked out and its output is no graph output
            members = groups.by_dims[mine]
            if len(members) == 1:  # no other member will ask
                return self._group_match(ctx, nid, sid, source, dims, mine, members)
            # Every member of a group gets the same rewrite: work it out once per round, because a
            # shared initializer may have thousands of readers.
            key = ("fold-constant-match", sid, source.sid, source.name, mine)
            found = ctx.cache.get(key)
            if found is None:
                found = self._group_match(ctx, nid, sid, source, dims, mine, members)
                ctx.cache[key] = found
            if isinstance(found, Match):
                return found.at(nid)
            return found  # type: ignore[return-value]
        result = _result_dims(ctx, nid, dims)  # (the checks of ``_groups``, for their answer)
        if isinstance(result, NoMatch):
            return result
        z = ctx.output(nid)
        if ctx.is_output(sid, z):
            return NoMatch(f"{ctx.display(nid)}: output '{z}' is a graph output")
        return self._group_match(ctx, nid, sid, source, dims, result, ())

    def _group_match(self, ctx: RoundContext, nid: int, sid: int, source: _Source, dims: tuple[int, ...],
                     mine: tuple[int, ...], members: tuple[int, ...]) -> Result:
        """The rewrite of the group ``members`` (``()`` when ``nid`` is in no group)."""
        z = ctx.output(nid)
        readers = ctx.readers(sid, source.name)
        if nid not in members:
            # Its output is read by name in a subgraph: it can be folded alone, under its own name.
            if readers != [nid]:
                return NoMatch(f"{ctx.display(nid)}: '{z}' is read by a subgraph and '{source.name}' "
                               "has other readers")
            members = (nid,)
        dies = _left_unread(ctx, source, sid, members)
        in_place = dies and source.sid == sid
        label = f"{'Constant' if source.node is not None else 'initializer'} '{source.name}'"
        if not dies:
            copy = source.tensor.ByteSize() + len(z) + 2 * len(mine)
            removed = sum(ctx.peek(m).ByteSize() for m in members)
            if copy > removed:
                return NoMatch(f"{label} has other readers: a copy ({copy} bytes) would grow the "
                               f"model more than the {removed} bytes of nodes it removes")
        name = ctx.output(members[0]) if len(members) == 1 else None
        rewires: list[int] = []
        if name is None:
            for m in members:
                rewires.extend(ctx.readers(sid, ctx.output(m)))
        reads = (source.node,) if source.node is not None else ()
        def message() -> str:
            what = f"{len(members)} nodes" if len(members) > 1 else ctx.display(nid)
            return f"{what} of {label} {fmt_axes(list(dims))} fold to {fmt_axes(list(mine))}"

        if rewires:
            folded = set(members)
            rewires = [r for r in dict.fromkeys(rewires) if r not in folded]
        return Match(nid, writes=members, reads=reads, rewires=tuple(rewires), message=message,
                     payload=_Fold(source, mine, members, name, in_place))

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[Any]) -> None:
        plan = m.payload
        source = plan.source
        sid = ctx.sid(m.nid)
        name = plan.name or edit.names.fresh(ctx.graph, source.name, "folded")
        for member in plan.members:
            z = ctx.output(member)
            if z != name:
                edit.replace_uses(sid, z, name)
            edit.delete_node(member)
        # In place only if nothing of this round started reading the initializer meanwhile (an
        # identical axes initializer is reused by other rewrites).
        if plan.in_place and source.node is None and edit.count(sid, source.name) == 0:
            edit.retarget_initializer(sid, source.tensor, name, list(plan.dims))
            return
        folded = TensorProto()
        folded.CopyFrom(source.tensor)
        folded.name = name
        del folded.dims[:]
        folded.dims.extend(plan.dims)
        first = min(plan.members, key=lambda n: _position(ctx, sid, n))
        edit.materialize(sid, folded, first, name)


class _Groups(NamedTuple):
    by_dims: dict[tuple[int, ...], tuple[int, ...]]  # members by resulting dims, in reader order
    dims_of: dict[int, tuple[int, ...]]  # the other way: a group may have thousands, too many to scan


_NO_GROUPS = _Groups({}, {})


def _groups(ctx: RoundContext, sid: int, source: _Source, dims: tuple[int, ...]) -> _Groups:
    """The readers of ``source`` in ``sid`` that fold, by resulting dims; computed once per round
    per constant (a shared initializer may have thousands of readers)."""
    key = ("fold-constant", sid, source.sid, source.name)
    found = ctx.cache.get(key)
    if found is None:
        groups: dict[tuple[int, ...], list[int]] = {}
        for r in ctx.readers(sid, source.name):
            d = _member_dims(ctx, sid, source, dims, r)
            if d is not None:
                groups.setdefault(d, []).append(r)
        found = _Groups({d: tuple(v) for d, v in groups.items()},
                        {n: d for d, v in groups.items() for n in v})
        ctx.cache[key] = found
    return found  # type: ignore[return-value]


def _member_dims(ctx: RoundContext, sid: int, source: _Source, dims: tuple[int, ...],
                 r: int) -> tuple[int, ...] | None:
    """The dims reader ``r`` of ``source`` gives it, if ``r`` folds with the other readers that
    give the same: a Squeeze/Unsqueeze of the constant (as its data only), whose output is no
    graph output and is read by name only as an input."""
    info = ctx.info(r)
    if (not ctx.is_standard(r) or info.op_type not in ("Squeeze", "Unsqueeze")
            or info.inputs[0] != source.name or source.name in info.inputs[1:]):
        return None
    z = info.outputs[0]
    if ctx.is_output(sid, z) or not ctx.direct_readers_only(sid, z):
        return None
    d = _result_dims(ctx, r, dims)
    return None if isinstance(d, NoMatch) else d


def _left_unread(ctx: RoundContext, source: _Source, sid: int, members: tuple[int, ...]) -> bool:
    """Whether ``members`` are every read of the constant in the model, so that folding them
    leaves it dead (the sweep removes it) and nothing is duplicated: true when they are all its
    readers in ``sid`` and every scope between ``sid`` and the one defining it reads it only
    through the body that leads to ``sid``."""
    name = source.name
    readers = ctx.readers(sid, name)
    if len(readers) == 1 and len(members) == 1:  # (the common case: no sets to build)
        if readers[0] != members[0]:
            return False
    elif set(readers) != set(members):
        return False
    if ctx.is_output(sid, name):
        return False
    cur = sid
    while cur != source.sid:
        scope = ctx.scope(cur)
        parent, owner = scope.parent, scope.owner
        if parent is None or owner is None or ctx.readers(parent, name) != [owner] or ctx.is_output(parent, name):
            return False
        if name in ctx.inputs(owner):
            return False
        for sub in ctx.info(owner).subscopes:
            if sub != cur and name in ctx.scope(sub).consumers:
                return False
        cur = parent
    return True


def _position(ctx: RoundContext, sid: int, nid: int) -> int:
    key = ("position", sid)
    pos = cast("dict[int, int] | None", ctx.cache.get(key))
    if pos is None:
        pos = {n: k for k, n in enumerate(ctx.scope(sid).order)}
        ctx.cache[key] = pos
    return pos[nid]
