"""The fix of SF104 squeeze-non-unit-dim: drop the axes whose dim is not 1, as Paddle's ``squeeze`` does.

Pure model editing: it reads the facts inference recorded and edits the parsed ModelProto in place
(the networkx graph is only an index into it, and is stale afterwards: re-analyse to lint the
result). It never edits a tensor that something else may read: new axes go into a new initializer
(a ``Constant`` node inside a function, which has no initializers).

- Axes left: the node keeps its name and gets the kept axes, written in the form of its opset
  (attribute before opset 13, an int64 input from 13; a wrongly-placed form is removed).
- No axis left: a Squeeze without axes would remove *every* 1-dim, so the node goes. Its readers
  read its input instead; when its output is a graph output or is read by a subgraph by name, the
  node becomes an Identity under the same name instead, so that no name visible outside changes.
- The ``value_info`` of the edited output is dropped: it described the shape the broken node was
  meant to have, and the fixed node may have another (inference can recompute it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ._onnx import onnx
from .graph import ModelGraph
from .inference import Inference
from .opsets import AXES_INPUT_SINCE
from .rules.sf104_squeeze_non_unit_dim import kept_axes, non_unit_axes



@dataclass(frozen=True)
class SqueezeFix:
    nid: int  # DAG node id of the Squeeze
    graph: str  # graph path, for reports
    node: str  # display name
    keep: tuple[int, ...]  # axes as written that stay
    dropped: tuple[int, ...]  # axes as written that go (their dims are known != 1)


def plan_squeeze_fixes(inference: Inference) -> list[SqueezeFix]:
    """One fix per Squeeze that SF104 flags."""
    plan = []
    for a in inference.axis_nodes:
        bad = non_unit_axes(a)
        if bad:
            plan.append(SqueezeFix(a.nid, a.graph, a.node, kept_axes(a), tuple(ax for ax, _, _ in bad)))
    return plan


def apply_squeeze_fixes(model: onnx.ModelProto, graph: ModelGraph, fixes: Sequence[SqueezeFix]) -> int:
    """Apply ``fixes`` to ``model`` (which ``graph`` indexes); returns the number of nodes changed."""
    if graph.model is not model:
        raise ValueError("graph does not index this model")
    names = _Names(graph)
    removals: dict[int, list[int]] = {}  # scope id -> node indexes to delete
    prepends: dict[int, list[onnx.NodeProto]] = {}  # function scope id -> Constant nodes to add
    dead_initializers: dict[int, set[str]] = {}  # scope id -> initializers no longer read
    for fix in fixes:
        info = graph.nodes[fix.nid]
        node = info.proto
        scope = graph.scopes[info.scope]
        old_axes = node.input[1] if len(node.input) > 1 and node.input[1] else None
        if fix.keep:
            _set_axes(node, info.since_version or 1, fix.keep, scope, names, prepends)
        elif _needs_identity(graph, info.scope, node.output[0]):
            _make_identity(node)
        else:
            _bypass(graph, info.scope, node)
            removals.setdefault(info.scope, []).append(info.index)
        _drop_value_info(scope.proto, node.output[0])
        if old_axes is not None and (fix.keep == () or old_axes not in node.input):
            _forget_axes(graph, fix.nid, old_axes, dead_initializers, removals)
    for sid, names in dead_initializers.items():
        body = graph.scopes[sid].proto
        kept = [t for t in body.initializer if t.name not in names]  # type: ignore[union-attr]
        del body.initializer[:]  # type: ignore[union-attr]
        body.initializer.extend(kept)  # type: ignore[union-attr]
    for sid, indexes in removals.items():
        body = graph.scopes[sid].proto
        for i in sorted(indexes, reverse=True):  # from the end, so earlier indexes stay valid
            del body.node[i]
    for sid, nodes in prepends.items():
        body = graph.scopes[sid].proto
        # Constants have no inputs: placed first, they come before every reader (sorted order kept).
        existing = list(body.node)
        del body.node[:]
        body.node.extend(nodes + existing)
    return len(fixes)


class _Names:
    """Every tensor name of the model, to make new ones that collide with none (a subgraph must not
    shadow an outer name either, so uniqueness is model-wide)."""

    def __init__(self, graph: ModelGraph) -> None:
        self.used: set[str] = set()
        for scope in graph.scopes:
            self.used.update(scope.producer)
            self.used.update(scope.consumers)
            self.used.update(scope.inputs)
            self.used.update(scope.outputs)

    def fresh(self, base: str) -> str:
        name, k = base, 0
        while name in self.used:
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        return name


def _set_axes(node: onnx.NodeProto, since: int, keep: tuple[int, ...], scope, names: _Names,
              prepends: dict[int, list[onnx.NodeProto]]) -> None:
    attrs = [a for a in node.attribute if a.name != "axes"]
    del node.attribute[:]
    node.attribute.extend(attrs)
    if since < AXES_INPUT_SINCE:
        node.attribute.append(onnx.helper.make_attribute("axes", list(keep)))
        del node.input[1:]
        return
    name = names.fresh(f"{node.output[0]}_axes")
    import numpy as np  # here, not at the top: lint imports this module and needs no numpy

    tensor = onnx.numpy_helper.from_array(np.asarray(keep, dtype=np.int64), name)
    if isinstance(scope.proto, onnx.GraphProto):
        scope.proto.initializer.append(tensor)
    else:
        prepends.setdefault(scope.id, []).append(onnx.helper.make_node("Constant", [], [name], value=tensor))
    if len(node.input) >= 2:
        node.input[1] = name
    else:
        node.input.append(name)


def _forget_axes(graph: ModelGraph, nid: int, name: str, dead: dict[int, set[str]],
                 removals: dict[int, list[int]]) -> None:
    """Remove the old axes tensor when the fixed node was its only reader: an initializer of the
    node's own graph (not one doubling as a graph input), or a Constant node. Anything shared stays."""
    info = graph.nodes[nid]
    scope = graph.scopes[info.scope]
    if scope.consumers.get(name) != [nid] or name in scope.outputs:
        return
    producer = scope.producer.get(name)
    if producer is None:
        return
    if name in scope.initializers and name not in scope.inputs:
        dead.setdefault(scope.id, set()).add(name)
    elif producer >= 0:
        pinfo = graph.nodes[producer]
        if pinfo.proto.op_type == "Constant" and pinfo.domain == "" and list(pinfo.proto.output) == [name]:
            removals.setdefault(scope.id, []).append(pinfo.index)


def _needs_identity(graph: ModelGraph, scope_id: int, output: str) -> bool:
    scope = graph.scopes[scope_id]
    if output in scope.outputs:
        return True
    for r in scope.consumers.get(output, []):
        for sid in graph.nodes[r].subscopes:
            if output in graph.scopes[sid].free:
                return True
    return False


def _make_identity(node: onnx.NodeProto) -> None:
    node.op_type = "Identity"
    del node.input[1:]
    del node.attribute[:]


def _bypass(graph: ModelGraph, scope_id: int, node: onnx.NodeProto) -> None:
    """Make every reader of the node's output read its input instead."""
    src, dst = node.output[0], node.input[0]
    for r in graph.scopes[scope_id].consumers.get(src, []):
        inputs = graph.nodes[r].proto.input
        for k, name in enumerate(inputs):
            if name == src:
                inputs[k] = dst


def _drop_value_info(body: onnx.GraphProto | onnx.FunctionProto, name: str) -> None:
    entries = getattr(body, "value_info", None)
    if entries is None:
        return
    keep = [vi for vi in entries if vi.name != name]
    if len(keep) != len(entries):
        del entries[:]
        entries.extend(keep)
