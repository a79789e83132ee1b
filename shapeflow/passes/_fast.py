"""Hand-tuned twins of plain functions on the rewrite engine's hot paths.

Each function here computes exactly what its plain twin computes (named in its docstring, and
checked equal by tests/test_fast_paths.py), with the lookups written out: they run once per
Squeeze/Unsqueeze of a model, hundreds of thousands of times on a large one. Read the plain twin
to learn what the engine does; change both together.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..graph import INITIALIZER

if TYPE_CHECKING:
    from .context import RoundContext
    from .dispatch import Dispatch
    from .spec import Rewrite

# What produces a root's data input, besides an op type (``Pattern.after``; ``context`` exports
# them: they live here because context imports this module)
FROM_INITIALIZER = "<initializer>"
FROM_GRAPH_INPUT = "<graph input>"
FROM_OUTER_SCOPE = "<outer scope>"
FROM_CUSTOM = "<custom>"
FROM_NOTHING = "<no input>"  # the root has no input at all (a Constant)


def chain(self: "RoundContext", nid: int, op_type: str, limit: int = 16) -> list[int]:
    """``RoundContext.chain_plain`` with ``input_producer`` and ``only_reader`` written out."""
    nodes = self.graph.nodes
    info = nodes[nid]
    sid = info.scope
    scope = self.graph.scopes[sid]
    producer, consumers = scope.producer, scope.consumers
    outputs = self._outputs.get(sid)
    if outputs is None:
        outputs = self.outputs(sid)
    out: list[int] = []
    cur = nid
    while len(out) < limit:
        names = info.inputs
        p = producer.get(names[0]) if names and names[0] else None
        if p is None or p < 0 or p in out:
            return out
        info = nodes[p]
        if (info.op_type != op_type or info.domain != "" or info.since_version is None
                or not info.inputs or not info.inputs[0]):
            return out  # another op, or a malformed node (no data input) to rewrite through
        name = info.outputs[0]
        readers = consumers.get(name)
        exclusive = readers is not None and len(readers) == 1 and readers[0] == cur and name not in outputs
        if out and not exclusive:
            return out  # beyond the nearest, a node read elsewhere ends the run
        out.append(p)
        if not exclusive:
            return out
        cur = p
    return out


def plan(dispatch: "Dispatch", ctx: "RoundContext", roots: list[int]) -> list[tuple[int, list["Rewrite"]]]:
    """``Dispatch.plan_plain`` over ``roots``, with ``is_standard`` and ``input_kind`` written out."""
    graph = ctx.graph
    nodes = graph.nodes
    producers = [scope.producer for scope in graph.scopes]
    table = dispatch._table
    out: list[tuple[int, list[Rewrite]]] = []
    for nid in roots:
        info = nodes[nid]
        if info.domain != "" or info.since_version is None:
            continue
        names = info.inputs
        p = producers[info.scope].get(names[0]) if names else None
        if not names:
            kind = FROM_NOTHING
        elif p is None:
            kind = FROM_OUTER_SCOPE
        elif p < 0:
            kind = FROM_INITIALIZER if p == INITIALIZER else FROM_GRAPH_INPUT
        else:
            pinfo = nodes[p]
            kind = pinfo.op_type if pinfo.domain == "" and pinfo.since_version is not None else FROM_CUSTOM
        found = table.get((info.op_type, kind))
        if found is None:
            found = dispatch.rules_for(info.op_type, kind)
        if found:
            out.append((nid, found))
    return out


def exclusive_cone(ctx: "RoundContext", nid: int, names: "tuple[str, ...] | None", limit: int) -> tuple[int, ...]:
    """``pattern.exclusive_cone_plain`` (at most ``limit`` nodes, ``MAX_CONE``) with ``_only_inside``
    written out, and empty names skipped when popped instead of filtered when pushed."""
    if not ctx.claims:
        return ()
    graph = ctx.graph
    nodes = graph.nodes
    info = nodes[nid]
    sid = info.scope
    scope = graph.scopes[sid]
    producer, consumers = scope.producer, scope.consumers
    outputs = ctx._outputs.get(sid)
    if outputs is None:
        outputs = ctx.outputs(sid)
    inside = {nid}
    # what ``nid`` goes on reading: a producer it reads through them is no member
    kept = frozenset() if names is None else frozenset(info.inputs).difference(names)
    out: list[int] = []
    stack = list(info.inputs if names is None else names)
    while stack and len(out) < limit:
        name = stack.pop()
        if not name:
            continue
        p = producer.get(name)
        if p is None or p < 0 or p in inside:
            continue
        pinfo = nodes[p]
        if pinfo.domain != "" or pinfo.since_version is None or pinfo.subscopes:
            continue
        alone = True
        for o in pinfo.outputs:
            if not o:
                continue
            if o in outputs or o in kept:
                alone = False
                break
            readers = consumers.get(o)
            if readers is not None:
                for r in readers:
                    if r not in inside:
                        alone = False
                        break
                if not alone:
                    break
        if alone:
            inside.add(p)
            out.append(p)
            stack.extend(pinfo.inputs)
        # (else it may qualify later, when its other readers join: it is pushed again)
    return tuple(out)
