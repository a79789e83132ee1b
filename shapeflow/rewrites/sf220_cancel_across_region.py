"""SF220 cancel-across-region: an Unsqueeze and a Squeeze of the same axes cancel across ops that carry them."""

from __future__ import annotations

from typing import Any, NamedTuple

from ..codes import INFO, Code
from ..dims import Dim
from ..passes.context import RoundContext, fmt_axes
from ..passes.edit import Editor
from ..passes.match import Match, NoMatch, Result, not_applicable
from ..passes.pattern import Bound, DataInput, Op, exclusive_cone, rename_region, tensor_of
from ..passes.spec import Rewrite
from .sf215_reshape_round_trip import ELEMENTWISE

# Ops that carry unit axes through: the elementwise ops (an axis of their output is the axis at the
# same position of their inputs, after broadcasting), Identity, and MatMul with a 2-D right
# operand (every axis of its left operand but the last is an axis of its output).
CARRY: frozenset[str] = ELEMENTWISE | {"Identity", "MatMul"}
# Nodes in the region at most: a longer region is left alone (keeps a match cheap).
MAX_REGION = 32

_IN_FUNCTION = not_applicable("in a function body")
# Ops onnxruntime computes by another, bit-different path beside a one-element operand when the last
# dim is 1 (brute force, onnxruntime 1.32: Pow(x, 3) as x*x*x or powf; Max/Min and -0.0, NaN): with a
# unit axis last, the region's last dim changes from 1 to x's, so they must not be in it.
_LAST_DIM_PATH = frozenset({"Pow", "Max", "Min"})


class _Plan(NamedTuple):
    u: int  # the Unsqueeze
    x: str  # its data input: the region reads it instead
    u_out: str
    z: str  # the Squeeze's data input (the region's last tensor)
    out: str  # the Squeeze's output: the region's last node produces it
    region: tuple[int, ...]


class CancelAcrossRegion(Rewrite):
    """S(a)(f(U(a)(x))) is f(x) when every op of f carries the axes a.

    ## What it does
    Reports a ``Squeeze`` that removes the unit axes an ``Unsqueeze`` inserted a few ops earlier,
    when every op between them carries those axes through unchanged: ``shapeflow optimize`` lets
    the ops read the Unsqueeze's input, the last of them produce the Squeeze's output, and removes
    both nodes. The ops of the region are elementwise (``Add``, ``Mul``, ``Relu``, ``Cast``,
    ``Tanh``...), ``Identity``, and ``MatMul`` whose region operand is the left one, whose right
    operand is 2-D, and whose unit axes are not the last one. Every tensor of the region has the
    Unsqueeze output's rank ``r``; an operand from outside the region may broadcast only where it
    cannot meet the unit axes: it has rank at most ``r`` minus their number, and its dims at the
    unit axes and before them (aligned from the right) are statically 1. Each input of rank ``r``
    of a region op must come from the Unsqueeze through the region, and no tensor of the region
    may be read outside it.

    ## Why is this bad?
    It is not wrong, but the two nodes only add and remove 1-dims that every op in between
    carries along. paddle2onnx writes ``Unsqueeze(1) -> MatMul(W) -> Add(bias) -> Squeeze(1)``
    for a linear layer on a 2-D input.

    ## Example
    ``u = Unsqueeze(x: [n, 8], [1]); m = MatMul(u, W: [8, 16]); a = Add(m, b: [16]);
    y = Squeeze(a, [1])`` is ``m = MatMul(x, W); y = Add(m, b)``.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` rewrites it. Each op
    computes the same elements in the same order: a unit axis changes no element's row-major
    position, broadcasting an outside operand pairs it with the same elements (it does not reach
    the unit axes), and ``MatMul`` with a 2-D right operand multiplies the same rows (onnxruntime
    runs one matrix product over the left operand's rows either way, bit for bit). The region's
    tensors take new names (their shapes change; a name keeps its value from round to round).

    ## When it does not fire
    When the Squeeze removes other axes than the Unsqueeze inserted (or some only), when a tensor
    of the region or the Unsqueeze's output is read outside the region, is a graph output or is
    read by a subgraph; when an op of the region is another op, a MatMul reads the region as its
    right operand or has a right operand that is not 2-D (a 3-D one broadcasts over the unit
    axis), or an outside operand could broadcast against a unit axis or add rank, or is an
    initializer that is also a graph input (a caller may pass another shape); when a rank is
    unknown; when a unit axis is the last one and the region has a ``Pow``, ``Max`` or ``Min``
    (onnxruntime computes them by another, bit-different path when the last dim is 1); in function
    bodies; in a region of more than 32 nodes.
    """

    code = Code("SF220", "cancel-across-region", INFO, fixable=True)
    order = 230
    pattern = Op("Squeeze", Op(CARRY), guards=(DataInput(),))

    def check(self, ctx: RoundContext, b: Bound) -> Result:
        nid = b.root
        info = ctx.graph.nodes[nid]
        sid, z = info.scope, info.inputs[0]
        if ctx.graph.scopes[sid].kind != "graph":
            return _IN_FUNCTION
        axes = ctx.squeeze_axes(nid)
        if isinstance(axes, NoMatch):
            return axes
        if not axes:
            return NoMatch(f"{ctx.display(nid)}: no axes")
        zt = tensor_of(ctx, sid, z)
        if zt is None or zt.shape is None:
            return NoMatch(f"{ctx.display(nid)}: the input's rank is unknown")
        rank = len(zt.shape)
        found = _walk(ctx, nid, z, rank, axes)
        if isinstance(found, NoMatch):
            return found
        u, members = found
        u_axes = ctx.unsqueeze_axes(u)
        if isinstance(u_axes, NoMatch):
            return u_axes
        if tuple(u_axes) != tuple(axes):
            return NoMatch(f"{ctx.display(nid)}: {ctx.display(u)} inserts {fmt_axes(u_axes)}, the Squeeze "
                           f"removes {fmt_axes(axes)}")
        u_out = ctx.graph.nodes[u].outputs[0]
        inside = set(members)
        for name in (u_out, *(ctx.graph.nodes[p].outputs[0] for p in members)):
            if ctx.is_output(sid, name) or not ctx.direct_readers_only(sid, name):
                return NoMatch(f"{ctx.display(nid)}: '{name}' is a graph output or is read by a subgraph")
            for r in ctx.readers(sid, name):
                if r in inside or (r == nid and name == z and info.inputs[1:].count(z) == 0):
                    continue
                return NoMatch(f"{ctx.display(nid)}: '{name}' is read outside the region (by {ctx.display(r)})")
        region = {u_out, *(ctx.graph.nodes[p].outputs[0] for p in members)}
        for p in members:
            pinfo = ctx.graph.nodes[p]
            if pinfo.op_type == "MatMul" and pinfo.inputs[1] in region:
                return NoMatch(f"{ctx.display(nid)}: {ctx.display(p)} reads the region as its right operand")
        x = ctx.graph.nodes[u].inputs[0]
        sweeps = tuple(dict.fromkeys((*exclusive_cone(ctx, nid, info.inputs[1:]),
                                      *exclusive_cone(ctx, u, ctx.graph.nodes[u].inputs[1:]))))
        writes = (nid, u, *members)
        sweeps = tuple(n for n in sweeps if n not in writes)

        def message() -> str:
            return (f"{ctx.display(u)} {fmt_axes(axes)} and {ctx.display(nid)} {fmt_axes(axes)} cancel "
                    f"across {len(members)} node(s)")

        return Match(nid, writes=writes, sweeps=sweeps, message=message,
                     payload=_Plan(u, x, u_out, z, info.outputs[0], tuple(members)))

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[Any]) -> None:
        sid, plan = ctx.sid(m.nid), m.payload
        edit.delete_node(m.nid)
        # (the region reads x without the unit axes: a new value, never forwarded to readers
        # another rewrite gave u_out)
        edit.replace_uses(sid, plan.u_out, plan.x, forward=False)
        edit.delete_node(plan.u)
        # The region's tensors lose the unit axes: they take new names, and its last tensor takes
        # the Squeeze's output name, whose value (shape and elements) it now is.
        rename_region(ctx, edit, sid, plan.region, plan.z, plan.out, "squeeze")


def _rank(ctx: RoundContext, sid: int, name: str) -> "tuple[Dim, ...] | None":
    t = tensor_of(ctx, sid, name)
    return None if t is None else t.shape


def _walk(ctx: RoundContext, nid: int, z: str, rank: int, axes: tuple[int, ...]) -> tuple[int, list[int]] | NoMatch:
    """Walk back from ``z`` through the region to the one Unsqueeze: its id and the region's nodes
    (nearest first), or why the region does not carry ``axes``."""
    sid = ctx.sid(nid)
    producer, nodes = ctx.graph.scopes[sid].producer, ctx.graph.nodes
    me = ctx.display(nid)
    last = max(axes)
    u = -1
    members: list[int] = []
    seen: set[str] = set()
    stack = [z]
    while stack:
        t = stack.pop()
        if t in seen:
            continue
        seen.add(t)
        p = producer.get(t)
        if p is None or p < 0:
            return NoMatch(f"{me}: '{t}' (rank {rank}) does not come from an Unsqueeze through the region")
        pinfo = nodes[p]
        if pinfo.domain != "" or pinfo.since_version is None or pinfo.subscopes:
            return NoMatch(f"{me}: {ctx.display(p)} does not carry the unit axes")
        if pinfo.op_type == "Unsqueeze":
            if u >= 0 and u != p:
                return NoMatch(f"{me}: the region starts at two Unsqueezes")
            if not pinfo.inputs or not pinfo.inputs[0]:
                return NoMatch(f"{me}: {ctx.display(p)} has no data input")
            u = p
            continue
        if pinfo.op_type not in CARRY or len(pinfo.outputs) != 1:
            return NoMatch(f"{me}: {ctx.display(p)} does not carry the unit axes")
        if len(members) >= MAX_REGION:
            return NoMatch(f"{me}: the region has more than {MAX_REGION} nodes")
        if pinfo.op_type in _LAST_DIM_PATH and last == rank - 1:
            return NoMatch(f"{me}: {ctx.display(p)} with a unit axis last (onnxruntime computes it another "
                           "way when the last dim is 1: not bit-exact)")
        members.append(p)
        names = pinfo.inputs
        if pinfo.op_type == "MatMul":
            if len(names) != 2 or not names[0] or not names[1]:
                return NoMatch(f"{me}: {ctx.display(p)} has not two inputs")
            left, right = _rank(ctx, sid, names[0]), _rank(ctx, sid, names[1])
            if left is None or right is None:
                return NoMatch(f"{me}: a rank at {ctx.display(p)} is unknown")
            if (sid, names[1]) in ctx.overridable:
                return NoMatch(f"{me}: '{names[1]}' is an initializer that is also a graph input (its shape "
                               "may change at run time)")
            if len(left) != rank or len(right) != 2 or last >= rank - 1:
                return NoMatch(f"{me}: {ctx.display(p)} does not carry the unit axes (its left operand "
                               f"has rank {len(left)}, its right operand rank {len(right)}; the axes "
                               f"{fmt_axes(axes)})")
            stack.append(names[0])
            continue
        for name in names:
            if not name:
                continue
            shape = _rank(ctx, sid, name)
            if shape is None:
                return NoMatch(f"{me}: the rank of '{name}' is unknown")
            if len(shape) == rank:
                stack.append(name)
                continue
            if (sid, name) in ctx.overridable:
                return NoMatch(f"{me}: '{name}' is an initializer that is also a graph input (its shape "
                               "may change at run time)")
            if not _stays_clear(shape, rank, axes):
                return NoMatch(f"{me}: '{name}' (read by {ctx.display(p)}) could broadcast against a unit axis")
    if u < 0:
        return NoMatch(f"{me}: no Unsqueeze starts the region")
    return u, members


def _stays_clear(shape: "tuple[Dim, ...]", rank: int, axes: tuple[int, ...]) -> bool:
    """An outside operand of ``shape`` broadcast against a rank-``rank`` region tensor meets the
    unit ``axes`` (and what precedes them) only with static 1s, and still has at most the region's
    rank once the axes are gone."""
    if len(shape) > rank - len(axes):
        return False
    off = rank - len(shape)  # the region position of the operand's dim 0
    last = max(axes)
    for j, d in enumerate(shape):
        if off + j <= last and not (type(d) is int and d == 1):
            return False
    return True


__all__ = ["CancelAcrossRegion"]
