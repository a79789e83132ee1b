"""SF206 fan-out-merge: a Squeeze/Unsqueeze read only by Squeezes/Unsqueezes goes into each of them."""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

from ..axes import cancel_squeeze_unsqueeze, cancel_unsqueeze_squeeze, compose_squeeze, compose_unsqueeze
from ..codes import INFO, Code
from ..passes.chain import READERS
from ..passes.context import AXES_INPUT_SINCE, RoundContext, fmt_axes
from ..passes.edit import Editor
from ..passes.match import Match, NoMatch, Result, not_applicable
from ..passes.pattern import Bound, Op, ReadBy, data_readers
from ..passes.spec import Rewrite

Axes = tuple[int, ...]

_OPS = ("Squeeze", "Unsqueeze")

# What a reader becomes.
SAME_OP = "same-op"  # the reader reads x and gets new axes (merged, or what a partial cancel leaves)
OTHER_OP = "other-op"  # S(b) after U(a) with b ⊂ a: an Unsqueeze of x replaces the Squeeze
IDENTITY = "identity"  # the reader does nothing to x: its readers read x (or an Identity keeps its name)

_NO_DIM = not_applicable("the Squeeze removes no dim")


class ReaderPlan(NamedTuple):
    nid: int
    kind: str  # SAME_OP, OTHER_OP or IDENTITY
    op: str  # the op type the reader has after the rewrite (Identity for IDENTITY)
    axes: Axes  # its axes then (empty for IDENTITY)
    z: str  # the reader's output
    keep_name: bool  # IDENTITY whose output is a graph output or read by a subgraph: an Identity stays


class FanOutPlan(NamedTuple):
    first: int  # the node that goes
    x: str  # its input, which every reader reads afterwards
    readers: tuple[ReaderPlan, ...]


def _absorb(first_op: str, a1: Axes, op: str, a2: Axes) -> tuple[str, str, Axes] | str:
    """What reader ``op(a2)`` of ``first_op(a1)`` becomes, as (kind, op, axes), or why it cannot
    absorb the first node."""
    if first_op == "Unsqueeze":
        if op == "Unsqueeze":
            return SAME_OP, op, compose_unsqueeze(a1, a2)
        found = cancel_unsqueeze_squeeze(a1, a2)
        if found is None:
            return "the axes overlap only partly"
        kind, rest = found
        if kind == "identity":
            return IDENTITY, "Identity", ()
        if kind == "unsqueeze":
            return OTHER_OP, "Unsqueeze", tuple(rest)
        return SAME_OP, "Squeeze", tuple(rest)
    if op == "Squeeze":
        return SAME_OP, op, compose_squeeze(a1, a2)
    if cancel_squeeze_unsqueeze(a1, a2):
        return IDENTITY, "Identity", ()
    return "the positions differ (a Squeeze then an Unsqueeze elsewhere is no one node)"


class FanOutMerge(Rewrite):
    """Op(a1) read only by Squeeze/Unsqueeze nodes R_i goes: each R_i reads Op's input instead.

    ## What it does
    Reports a Squeeze or Unsqueeze whose output two or more Squeeze/Unsqueeze nodes read (and
    nothing else: no other node, no subgraph, no graph output) when every reader can take it in,
    so that ``shapeflow optimize`` rewrites each reader against its input and removes it. Each
    reader takes the first node in with the algebra of the chain rules: ``U(a2)`` after ``U(a1)``
    is ``U(a2 ∪ lift(a2, a1))``; ``S(b2)`` after ``S(b1)`` is ``S(b1 ∪ lift(b1, b2))``; ``S(b)``
    after ``U(a)`` is the identity (b = a), ``U(a - b)`` (b ⊂ a) or ``S(b - a)`` (a ⊂ b); ``U(a)``
    after ``S(a)`` is the identity. A reader that becomes the identity goes and its readers read the
    input (an Identity keeps its output's name when that is a graph output or a subgraph reads it).
    The chain rules report the same rewrites when the node has one reader.

    ## Why is this bad?
    It is not wrong, but the shared node is one kernel launch and one intermediate tensor that
    nothing needs. Every layer of a torch dynamo export has one: ``Unsqueeze(Range, [0, 1])`` read
    by ``Unsqueeze[3]`` and ``Unsqueeze[2]``.

    ## Example
    ``t = Unsqueeze(x, [0, 1]); p = Unsqueeze(t, [3]); q = Unsqueeze(t, [2])`` is
    ``p = Unsqueeze(x, [0, 1, 3]); q = Unsqueeze(x, [0, 1, 2])``.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` rewrites the readers and
    removes the node: one node and one Squeeze/Unsqueeze fewer, each reader's output unchanged.
    By default a cancelled Squeeze whose dims are not statically 1 is removed (which removes a
    run-time failure, and says so); under ``--strict`` it is not.

    ## When it does not fire
    When the first node's output is a graph output, is read by a subgraph or by any node that is
    not a Squeeze/Unsqueeze reading it as data, has fewer than two readers (the chain rules take
    one), or when one reader cannot absorb it (axes overlapping only partly, a Squeeze then an
    Unsqueeze of other positions), or on the conditions of the chain rules: axes not constant or not
    in the form of the opset, ranks unknown with negative axes, a Squeeze without axes on symbolic
    dims.
    """

    code = Code("SF206", "fan-out-merge", INFO, fixable=True)
    order = 260
    pattern = Op(_OPS, guards=(ReadBy(_OPS, 2),))
    # A reader of a Squeeze may become an Unsqueeze (S(b) after U(a), b ⊂ a): a node no round matched.
    creates = frozenset(_OPS)

    def check(self, ctx: RoundContext, b: Bound) -> Result:
        nid = b.root
        readers = data_readers(ctx, nid)
        if isinstance(readers, NoMatch):
            return readers
        nodes = ctx.graph.nodes
        info = nodes[nid]
        sid = info.scope
        me = ctx.display(nid)
        first_op = info.op_type
        a1 = READERS[first_op](ctx, nid)
        if isinstance(a1, NoMatch):
            return a1
        if not a1:
            return _NO_DIM
        plans: list[ReaderPlan] = []
        notes: list[str] = []
        outputs = ctx.outputs(sid)
        consumers = ctx.graph.scopes[sid].consumers
        rewires: list[int] = []
        for r in readers:
            rinfo = nodes[r]
            a2 = READERS[rinfo.op_type](ctx, r)
            if isinstance(a2, NoMatch):
                return NoMatch(f"{me} fans out to {ctx.display(r)}: {a2.reason}")
            found = _absorb(first_op, a1, rinfo.op_type, a2)
            if isinstance(found, str):
                return NoMatch(f"{me} {fmt_axes(a1)} fans out to {ctx.display(r)} {fmt_axes(a2)}: {found}")
            kind, op, axes = found
            z = rinfo.outputs[0]
            keep = False
            if kind == IDENTITY:
                if first_op == "Squeeze":
                    unproven = ctx.unproven_ones(nid, a1)
                    if unproven:
                        dims = ", ".join(unproven)
                        if ctx.strict:
                            return NoMatch(f"{me} {fmt_axes(a1)} then {ctx.display(r)} {fmt_axes(a2)}: "
                                           f"--strict and squeezed {dims} not statically 1")
                        note = f"removes a run-time failure when squeezed {dims} is not 1"
                        if note not in notes:
                            notes.append(note)
                z_readers = consumers.get(z, ())
                keep = z in outputs or any(z not in nodes[q].inputs for q in z_readers)
                if not keep:
                    rewires.extend(z_readers)
            plans.append(ReaderPlan(r, kind, op, axes, z, keep))
        writes = (nid, *readers)
        taken = set(writes)
        rewired = tuple(dict.fromkeys(q for q in rewires if q not in taken))
        plan = FanOutPlan(nid, info.inputs[0], tuple(plans))
        return Match(nid, writes=writes, rewires=rewired, message=_message(ctx, plan, a1), note="; ".join(notes),
                     payload=plan)

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[Any]) -> None:
        plan: FanOutPlan = m.payload
        sid = ctx.sid(plan.first)
        x = plan.x
        for p in plan.readers:
            if p.kind == SAME_OP:
                edit.set_input(p.nid, 0, x)
                edit.set_axes(p.nid, p.axes)
            elif p.kind == OTHER_OP:
                _replace_op(ctx, edit, p, x)
            elif p.keep_name:
                edit.replace_node(p.nid, "Identity", [x], "identity")
            else:
                edit.replace_uses(sid, p.z, x)
                edit.delete_node(p.nid)
        edit.delete_node(plan.first)


def _replace_op(ctx: RoundContext, edit: Editor, p: ReaderPlan, x: str) -> None:
    """Put ``p.op(x, p.axes)`` in place of reader ``p.nid``, with the axes in the form of its opset
    (Squeeze and Unsqueeze moved their axes to an input at the same version, 13)."""
    info = ctx.info(p.nid)
    axes = [int(a) for a in p.axes]
    if (info.since_version or 0) >= AXES_INPUT_SINCE:
        base = info.peek().name or p.z
        name = edit.int64_const(info.scope, axes, base, "axes", p.nid)
        edit.replace_node(p.nid, p.op, [x, name], p.op.lower())
    else:
        edit.replace_node(p.nid, p.op, [x], p.op.lower(), axes=axes)


def _message(ctx: RoundContext, plan: FanOutPlan, a1: Axes) -> Callable[[], str]:
    def text() -> str:  # (built when shown)
        parts = []
        for p in plan.readers:
            if p.kind == IDENTITY:
                parts.append(f"{ctx.display(p.nid)} cancels")
            else:
                parts.append(f"{ctx.display(p.nid)} becomes {p.op} {fmt_axes(p.axes)}")
        return (f"{ctx.display(plan.first)} {fmt_axes(a1)} goes into its {len(plan.readers)} readers: "
                + ", ".join(parts))
    return text


__all__ = ["FanOutMerge", "FanOutPlan", "ReaderPlan"]
