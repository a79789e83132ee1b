"""SF214 merge-concat: a Concat read only by a Concat along the same axis is part of it."""

from __future__ import annotations

from typing import Any, NamedTuple

from ..codes import INFO, Code
from ..passes.context import RoundContext
from ..passes.edit import Editor
from ..passes.match import Match, NoMatch, Result, not_applicable
from ..passes.pattern import Bound, Op
from ..passes.spec import Rewrite

_NO_INNER = not_applicable("no input is a Concat read only here")
# Concat has a required axis attribute since opset 4 (before, it defaulted to 1)
AXIS_REQUIRED_SINCE = 4


class _Plan(NamedTuple):
    inputs: tuple[str, ...]  # the outer Concat's new inputs
    inner: tuple[int, ...]  # the Concats spliced in


def _axis(ctx: RoundContext, nid: int) -> int | None:
    if (ctx.graph.nodes[nid].since_version or 0) < AXIS_REQUIRED_SINCE:
        return None
    return ctx.int_attribute(nid, "axis")


class MergeConcat(Rewrite):
    """Concat(a, Concat(b, c), d) along one axis is Concat(a, b, c, d).

    ## What it does
    Reports ``Concat(a, Concat(b, c), d)`` where the inner Concat has no other reader (not a graph
    output, not read by a subgraph) and both concatenate along the same axis (compared after
    normalising negative axes by the rank, when they differ in sign): ``shapeflow optimize`` writes
    ``Concat(a, b, c, d)`` and the inner Concat goes. Concatenation is associative: the inner
    Concat's inputs, spliced in its place, give the same tensor element for element, empty inputs
    included.

    ## Why is this bad?
    It is not wrong, but it runs two nodes (and copies the data twice) for one concatenation.
    Exporters build shape vectors in pieces this way.

    ## Example
    ``Resize(x, sizes=Concat(Slice(Shape(x), 0, 2), Concat(h, w)))``: the sizes are one Concat of
    three inputs.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` merges them.

    ## When it does not fire
    Before opset 4 (the axis attribute was optional then) or when an axis is missing.
    """

    code = Code("SF214", "merge-concat", INFO, fixable=True)
    order = 420
    pattern = Op("Concat")

    def check(self, ctx: RoundContext, b: Bound) -> Result:
        nid = b.root
        info = ctx.graph.nodes[nid]
        sid = info.scope
        scope = ctx.graph.scopes[sid]
        nodes = ctx.graph.nodes
        found: list[int] = []
        for name in info.inputs:
            p = scope.producer.get(name) if name else None
            if p is None or p < 0 or p == nid or p in found:
                continue
            pinfo = nodes[p]
            if pinfo.op_type == "Concat" and pinfo.domain == "" and pinfo.since_version is not None:
                found.append(p)
        if not found:
            return _NO_INNER
        axis = _axis(ctx, nid)
        if axis is None:
            return NoMatch(f"{ctx.display(nid)}: no axis attribute")
        z = info.outputs[0]
        t = ctx.tensor(sid, z) if z else None
        rank = t.rank if t is not None else None
        inner: list[int] = []
        why = ""
        for p in found:
            y = nodes[p].outputs[0]
            if not ctx.only_reader(sid, y, nid) or y not in info.inputs:
                why = f"{ctx.display(p)} has other readers or is a graph output"
                continue
            a = _axis(ctx, p)
            if a is None:
                why = f"{ctx.display(p)} has no axis attribute"
                continue
            if a != axis and (rank is None or a % max(rank, 1) != axis % max(rank, 1)):
                why = f"{ctx.display(p)} concatenates along another axis"
                continue
            inner.append(p)
        if not inner:
            return NoMatch(f"{ctx.display(nid)}: {why}")
        spliced: list[str] = []
        for name in info.inputs:
            p = scope.producer.get(name) if name else None
            if p is not None and p in inner:
                spliced.extend(nodes[p].inputs)
            else:
                spliced.append(name)

        def message() -> str:
            return f"{', '.join(ctx.display(p) for p in inner)} and {ctx.display(nid)} are one Concat"

        return Match(nid, writes=(nid, *inner), message=message, payload=_Plan(tuple(spliced), tuple(inner)))

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[Any]) -> None:
        edit.set_inputs(m.nid, m.payload.inputs)
        for p in m.payload.inner:
            edit.delete_node(p)


__all__ = ["MergeConcat"]
