"""Carrying inference over from one round of the fixpoint to the next.

A rewrite never changes the value of a tensor that survives it (that is what makes it a rewrite),
and it never gives an old name to a new value. So what inference knew about every tensor when a
round started still holds when it ends: only the tensors the round created under new names
(initializers, Constant nodes) have to be read, and only the facts of the Squeeze/Unsqueeze nodes,
whose inputs and axes the round rewrote, have to be worked out again, by the same shape rules.
That replaces a whole-model inference per round by one pass over the new index plus the shape rule
of each remaining Squeeze/Unsqueeze. ``optimize --full-inference`` (and the tests) check that both
ways give the same model.
"""

from __future__ import annotations

from typing import Iterable

from ..dims import BASE
from ..errors import LimitExceededError
from ..graph import ModelGraph
from ..inference import Inference, rule_crashed
from ..ops import REGISTRY
from ..ops.base import OpCall
from ..ops.constants import tensor_info_from_proto

_FACT_OPS = ("Squeeze", "Unsqueeze")


def carry_inference(graph: ModelGraph, previous: Inference, made: Iterable[tuple[int, str]]) -> Inference:
    """Inference for ``graph`` (the model after a round) from ``previous`` (before it).

    ``made`` are the (scope id, name) of tensors the round produced in a new way; those with a
    name the previous inference never saw are read from their initializer or Constant node."""
    # The fact rules below decide in the domain without premises (BASE), as they always have here
    # (a whole inference, --full-inference, decides them in the proved one: it may state more);
    # the result holds in the previous round's domain.
    result = Inference(graph, previous.bindings, previous.limits, domain=BASE)
    result.tensors = previous.tensors  # handed over, not copied: the previous round is done
    result.independent, result.copies = previous.independent, previous.copies
    result.joins, result.join_names = previous.joins, previous.join_names
    nodes = graph.nodes
    for sid, name in made:
        table = result.tensors[sid]
        if name in table:
            continue
        scope = graph.scopes[sid]
        t = scope.initializers.get(name)
        if t is not None:
            table[name] = tensor_info_from_proto(t)
            continue
        p = scope.producer.get(name)
        if p is not None and p >= 0:
            info = nodes[p]
            rule = REGISTRY.get(info.domain, info.op_type) if info.since_version is not None else None
            if rule is not None and info.op_type == "Constant":
                out = rule(OpCall(None, info.since_version, [], p, sid, result, info))  # type: ignore[arg-type]
                table[name] = out[0] if out else None
    rules = {op: REGISTRY.get("", op) for op in _FACT_OPS}
    lookup = result.lookup
    for scope in graph.scopes:
        sid = scope.id
        for nid in scope.order:
            info = nodes[nid]
            rule = rules.get(info.op_type)
            if rule is None or info.domain != "" or info.since_version is None:
                continue
            ins = [lookup(sid, n) if n else None for n in info.inputs]
            try:
                rule(OpCall(None, info.since_version, ins, nid, sid, result, info))
            except LimitExceededError:
                raise
            except Exception as exc:  # as in inference: said, and the node's facts unknown
                rule_crashed(graph, nid, info, exc)
                continue
    result.domain = previous.domain
    return result
