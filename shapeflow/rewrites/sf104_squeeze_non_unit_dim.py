"""SF104 squeeze-non-unit-dim, the repair: a Squeeze of a dim that is not 1 keeps it (``lint --fix`` only)."""

from __future__ import annotations

from typing import Any, NamedTuple

from .. import codes
from ..facts import kept_axes, non_unit_axes
from ..passes.context import AXES_INPUT_SINCE, RoundContext, fmt_axes
from ..passes.edit import Editor, int64_tensor
from ..passes.match import Match, NoMatch, Result, not_applicable
from ..passes.pattern import Bound, Guard, Op
from ..passes.spec import Rewrite

_NOT_FLAGGED = not_applicable("no axis on a dim known not to be 1")


class _Flagged(Guard):
    """The Squeeze has an axis on a dim known not to be 1 (an SF104 finding)."""

    def check(self, ctx: RoundContext, nid: int) -> NoMatch | None:
        fact = ctx.facts.get(nid)
        return _NOT_FLAGGED if fact is None or not non_unit_axes(fact, ctx.domain) else None


class DropAxes(NamedTuple):
    keep: tuple[int, ...]  # the axes as written that stay; () removes the node
    identity: bool  # no axis left and the output must keep its name: an Identity produces it


class SqueezeNonUnitFix(Rewrite):
    """S(b) with dims known != 1 at some of b is S(b') (Paddle's squeeze), b' the rest of b.

    The repair of an SF104 finding, run by ``lint --fix`` before the rewrites (``optimize`` refuses
    such a model instead). Paddle's ``squeeze`` keeps a dim that is not 1 where ONNX's raises; a
    model converted from Paddle meant the Paddle result. The kept axes are written in the form of
    the node's opset (attribute before 13, a new int64 initializer from 13 on: a shared axes tensor
    is never edited), and the output's value_info, which described the broken node, is dropped.
    With no axis left the node goes and its readers read its input (a Squeeze without axes would
    remove every 1-dim instead).

    Does not fire when the axes are not constants in the form of the node's opset, or when no axis
    is left and the output is a graph output whose declared rank the input does not have (an
    Identity there would break the declared output: the finding stays, to be fixed by hand).
    """

    code = codes.SQUEEZE_NON_UNIT_DIM
    repair = True
    order = 100
    pattern = Op("Squeeze", guards=(_Flagged(),))

    def check(self, ctx: RoundContext, b: Bound) -> Result:
        nid = b.root
        fact = ctx.facts[nid]
        problem = ctx.axes_problem(nid)
        if problem is not None:
            return NoMatch(f"{ctx.display(nid)}: {problem}")
        keep = kept_axes(fact, ctx.domain)
        dropped = [ax for ax in fact.axes.values or () if ax not in keep]
        sid = ctx.sid(nid)
        z = ctx.output(nid)
        identity = False
        if not keep:
            identity = ctx.is_output(sid, z) or not ctx.direct_readers_only(sid, z)
            declared = _declared_rank(ctx, sid, z)
            rank = len(fact.input_shape or ())
            if identity and declared is not None and declared != rank:
                return NoMatch(f"{ctx.display(nid)}: output '{z}' is declared with rank {declared}; "
                               f"without the Squeeze it would have rank {rank}")
        what = f"keep axes {fmt_axes(keep)}" if keep else "remove the node"
        return Match(nid, message=lambda: f"{ctx.display(nid)}: drop axes {fmt_axes(dropped)} (dims not 1), {what}",
                     payload=DropAxes(keep, identity),
                     rewires=tuple(r for r in ctx.readers(sid, z) if r != nid) if not keep and not identity else ())

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[Any]) -> None:
        plan = m.payload
        sid = ctx.sid(m.nid)
        z = ctx.output(m.nid)
        if plan.keep:
            _set_kept_axes(ctx, edit, m.nid, plan.keep)
            edit.forget_value_info(sid, z)
        elif plan.identity:
            edit.make_identity(m.nid)
            edit.forget_value_info(sid, z)
        else:
            edit.replace_uses(sid, z, ctx.inputs(m.nid)[0])
            edit.delete_node(m.nid)


def _set_kept_axes(ctx: RoundContext, edit: Editor, nid: int, keep: tuple[int, ...]) -> None:
    """Write ``keep`` as the node's axes: the attribute before opset 13; from 13 a new int64 tensor
    named after the output (``y_axes``), so that a tensor other nodes read is never edited."""
    if (ctx.info(nid).since_version or 0) < AXES_INPUT_SINCE:
        edit.set_axes(nid, keep)
        return
    sid = ctx.sid(nid)
    name = _fresh(ctx, f"{ctx.output(nid)}_axes")
    tensor = int64_tensor(keep, name)
    if edit.can_add_initializers(sid):
        edit.add_initializer(sid, tensor)
    else:
        edit.new_node(sid, nid, "Constant", [], [name], value=tensor)
    if len(ctx.inputs(nid)) >= 2:
        edit.set_input(nid, 1, name)
    else:
        edit.append_input(nid, name)


def _fresh(ctx: RoundContext, base: str) -> str:
    """``base``, or ``base_1``, ``base_2``...: a name no scope of the model uses (a subgraph must not
    shadow an outer name either). Repairs are few: the table is built once per round."""
    used = ctx.cache.get("repair-names")
    if not isinstance(used, set):
        names: set[str] = set()
        for scope in ctx.graph.scopes:
            names.update(scope.producer, scope.consumers, scope.inputs, scope.outputs)
        ctx.cache["repair-names"] = used = names
    name, k = base, 0
    while name in used:
        k += 1
        name = f"{base}_{k}"
    used.add(name)
    return name


def _declared_rank(ctx: RoundContext, sid: int, name: str) -> int | None:
    """The rank ``name`` is declared with as an output of graph scope ``sid``, if any."""
    body = ctx.scope(sid).proto
    for vi in getattr(body, "output", ()):
        if getattr(vi, "name", None) == name:
            t = vi.type
            if t.HasField("tensor_type") and t.tensor_type.HasField("shape"):
                return len(t.tensor_type.shape.dim)
            return None
    return None
