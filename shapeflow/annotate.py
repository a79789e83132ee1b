"""Recording inferred shapes in a model as value_info (``infer -o``).

Adds a value_info entry for every node output that has no declaration yet and whose type is known;
symbolic dims are written as ``dim_param`` (an expression as its text, e.g. ``seq + 1``), unknown dims
are left empty. Existing declarations, graph inputs and outputs are left as they are: the only change
is the added entries.
"""

from __future__ import annotations

from ._onnx import onnx

from .graph import ModelGraph
from .inference import Inference
from .ops.fallback import type_proto
from .tensorinfo import TensorInfo


def _value_info(name: str, t: TensorInfo) -> onnx.ValueInfoProto:
    vi = onnx.ValueInfoProto()
    vi.name = name
    vi.type.CopyFrom(type_proto(t))
    return vi


def annotate(graph: ModelGraph, inference: Inference) -> int:
    """Add value_info for inferred tensors of every graph body (not functions, whose shapes depend on
    the call site). Mutates the model in place; returns how many entries were added."""
    added = 0
    for scope, table in zip(graph.scopes, inference.tensors):
        body = scope.proto
        if scope.kind != "graph" or not isinstance(body, onnx.GraphProto):
            continue
        declared = {vi.name for vi in body.value_info}
        declared.update(vi.name for vi in body.input)
        declared.update(vi.name for vi in body.output)
        for nid in scope.order:
            for name in graph.nodes[nid].proto.output:
                t = table.get(name)
                if not name or name in declared or t is None or not t.dtype:
                    continue
                body.value_info.append(_value_info(name, t))
                declared.add(name)
                added += 1
    return added
