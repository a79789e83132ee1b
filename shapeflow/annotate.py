"""Recording inferred shapes in a model as value_info (``infer -o``).

Every node output of a graph body (not functions, whose shapes depend on the call site) whose type
is known either gets a new value_info entry, or, when the model already declares one (the dynamo
exporter declares almost every tensor, often with unknown dims), has that declaration refined:

* a declared dim with neither a value nor a name becomes the inferred one (an int, or a symbolic
  expression written as its text);
* a declaration without a shape gets the whole inferred shape, one without an element type the
  inferred type;
* a declared int or name is kept as written, and so is every dim of a declaration that contradicts
  the inferred shape (a different rank, or a different int): that is SF112's finding to report;
* a scalar is written as a rank-0 shape (a ``shape`` field without dims), which ONNX reads as
  rank 0 and not as an unknown rank.

Graph inputs are the user's; graph outputs are refined the same way only when asked
(``refine_outputs``), as the signature is the user's too. The body of a Loop with scan outputs, and
what computes the outer tensors it reads, are left alone (``ops.control.zero_trip_nodes``):
onnxruntime shapes those outputs after zero iterations from its own inference of the body, which
recorded shapes would change.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._onnx import onnx
from .dims import Dim
from .graph import ModelGraph
from .inference import Inference
from .ops.control import zero_trip_nodes
from .ops.fallback import type_proto
from .tensorinfo import TensorInfo


@dataclass(frozen=True, slots=True)
class AnnotateResult:
    added: int  # value_info entries added
    filled: int  # dims filled in existing declarations (a missing shape counts its known dims)
    kept: int  # declarations left as written because they contradict the inferred shape


def _type_proto(t: TensorInfo) -> onnx.TypeProto:
    tp = type_proto(t)
    if t.shape is not None:
        tp.tensor_type.shape.SetInParent()  # rank 0 too: a present shape without dims
    return tp


def _set_dim(dim: onnx.TensorShapeProto.Dimension, d: Dim) -> None:
    if type(d) is int:
        dim.dim_value = d
    else:
        dim.dim_param = str(d)


def _declared_unknown(dim: onnx.TensorShapeProto.Dimension) -> bool:
    which = dim.WhichOneof("value")
    return which is None or (which == "dim_value" and dim.dim_value < 0) or (which == "dim_param" and not dim.dim_param)


def refine(vi: onnx.ValueInfoProto, t: TensorInfo) -> tuple[int, bool]:
    """Fill what ``vi`` leaves unknown from ``t`` (element type, shape, dims); returns (dims filled,
    contradicted). A declaration that contradicts ``t`` is left as it is."""
    tp = vi.type
    which = tp.WhichOneof("value")
    if which not in (None, "tensor_type"):
        return 0, False  # sequences, maps, optionals: left as declared
    tt = tp.tensor_type
    filled = 0
    if tt.elem_type and t.dtype and tt.elem_type != t.dtype:
        return 0, True
    if t.shape is not None and tt.HasField("shape"):
        dims = tt.shape.dim
        if len(dims) != len(t.shape):
            return 0, True
        for dim, d in zip(dims, t.shape):
            if dim.WhichOneof("value") == "dim_value" and dim.dim_value >= 0 and type(d) is int and d != dim.dim_value:
                return 0, True
    if not tt.elem_type and t.dtype:
        tt.elem_type = t.dtype
    if t.shape is None:
        return filled, False
    if not tt.HasField("shape"):
        tt.shape.SetInParent()
        for d in t.shape:
            dim = tt.shape.dim.add()
            if d is not None:
                _set_dim(dim, d)
                filled += 1
        return filled, False
    for dim, d in zip(tt.shape.dim, t.shape):
        if d is not None and _declared_unknown(dim):
            _set_dim(dim, d)
            filled += 1
    return filled, False


def annotate(graph: ModelGraph, inference: Inference, refine_outputs: bool = False) -> AnnotateResult:
    """Record the inferred shapes in the model (mutated in place): new value_info entries and
    refined declarations, as the module docstring says."""
    added = filled = kept = 0
    # (onnxruntime shapes a Loop's scan outputs after zero iterations from its own inference of
    # the body, which recorded shapes would change: what it rests on is left as it is)
    frozen = zero_trip_nodes(graph)
    for scope, table in zip(graph.scopes, inference.tensors):
        body = scope.proto
        if scope.kind != "graph" or not isinstance(body, onnx.GraphProto):
            continue
        declared: dict[str, onnx.ValueInfoProto | None] = {vi.name: None for vi in body.input}
        outputs = {vi.name: vi for vi in body.output}
        for name, vi in outputs.items():
            declared[name] = vi if refine_outputs else None
        for vi in body.value_info:
            if vi.name not in declared:
                declared[vi.name] = vi
        for nid in scope.order:
            if nid in frozen:
                continue
            for name in graph.nodes[nid].proto.output:
                t = table.get(name)
                if not name or t is None or not (t.dtype or t.shape is not None):
                    continue
                if name in declared:
                    vi = declared[name]
                    if vi is None:
                        continue
                    n, contradicted = refine(vi, t)
                    filled += n
                    kept += contradicted
                    declared[name] = None  # a name declared twice is refined once
                    continue
                if not t.dtype:
                    continue
                entry = onnx.ValueInfoProto()
                entry.name = name
                entry.type.CopyFrom(_type_proto(t))
                body.value_info.append(entry)
                declared[name] = None
                added += 1
    return AnnotateResult(added, filled, kept)
