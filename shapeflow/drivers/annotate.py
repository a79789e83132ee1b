"""Recording inferred shapes in a model as value_info (``infer -o``).

Every node output of a graph body (not functions, whose shapes depend on the call site) whose type
is known either gets a new value_info entry, or, when the model already declares one (the dynamo
exporter declares almost every tensor, often with unknown dims), has that declaration refined:

* a declared dim with neither a value nor a name becomes the inferred one (an int, or a symbolic
  expression written as its text);
* a declaration without a shape gets the whole inferred shape, one without an element type the
  inferred type;
* a declared int, input symbol or expression over input symbols is kept as written; a name the
  exporter invented (no input symbol, no expression over them: ``unk__123``,
  ``LayerNormalization_dim_1``) becomes the inferred dim where inference proves one, as onnx's own
  inference replaces a name by a value;
* every dim of a declaration that contradicts the inferred shape (a different rank, a different
  int, a different expression: SF112's finding) is kept as written, unless ``fix_declarations``
  (``infer -o --fix-declarations``): then the contradicted rank or dims become the inferred ones;
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
from typing import Mapping, Sequence

from .._onnx import onnx
from ..declared import Conflict, DimReader, conflicts, written_shape
from ..diagnostics import Diagnostic
from ..dims import Bound, Dim, Sym
from ..graph import ModelGraph
from ..inference import Inference, declared_symbols
from ..ops.control import zero_trip_nodes
from ..ops.fallback import type_proto
from ..rules import LintContext
from ..rules.sf112_shape_conflict import ShapeConflict
from ..tensorinfo import TensorInfo


@dataclass(frozen=True, slots=True)
class AnnotateResult:
    added: int  # value_info entries added
    filled: int  # dims filled in existing declarations (a missing shape counts its known dims)
    kept: int  # declarations left as written because they contradict the inferred shape
    replaced: int = 0  # exporter-invented dim names replaced by the proven dim
    fixed: int = 0  # contradicting declarations rewritten (``fix_declarations``)


# The text of each symbolic dim written so far -> the dim it stands for. ONNX reads one
# dim_param as one size wherever it occurs (onnxruntime's memory planner reuses a buffer on it),
# and a graph input's dim_param is an opaque name whatever its spelling: a computed ``N + 1``
# must not be written where an input declares ``"N + 1"``, nor two dims that print alike.
Texts = dict[str, Dim]


def written_texts(graph: ModelGraph) -> Texts:
    """The graph inputs' dim names, each the symbol it is (what ``annotate`` starts from)."""
    return {name: Sym.symbol(name) for name in declared_symbols(graph)}


def _type_proto(t: TensorInfo, texts: Texts | None = None) -> onnx.TypeProto:
    tp = type_proto(t)
    if t.shape is not None:
        tp.tensor_type.shape.SetInParent()  # rank 0 too: a present shape without dims
        if texts is not None:
            for dim, d in zip(tp.tensor_type.shape.dim, t.shape):
                if dim.WhichOneof("value") == "dim_param":
                    _set_dim(dim, d, texts)
    return tp


def _set_dim(dim: onnx.TensorShapeProto.Dimension, d: Dim, texts: Texts | None = None) -> bool:
    """Write ``d`` into ``dim``; False when it is left unknown."""
    if type(d) is int:
        dim.dim_value = d
        return True
    if d is None:
        dim.Clear()
        return False
    text = str(d)
    if texts is not None:
        meant = texts.setdefault(text, d)
        if meant != d:  # the text already names another dim: say nothing rather than equate them
            dim.Clear()
            return False
    dim.dim_param = text
    return True


def _declared_unknown(dim: onnx.TensorShapeProto.Dimension) -> bool:
    which = dim.WhichOneof("value")
    return which is None or (which == "dim_value" and dim.dim_value < 0) or (which == "dim_param" and not dim.dim_param)


@dataclass(frozen=True, slots=True)
class Refined:
    filled: int = 0
    replaced: int = 0
    contradicted: bool = False  # the declaration contradicts the inferred shape ...
    fixed: bool = False  # ... and was rewritten


def refine(vi: onnx.ValueInfoProto, t: TensorInfo, reader: DimReader | None = None, *, fix: bool = False,
           ranges: Mapping[str, Bound] | None = None, texts: Texts | None = None) -> Refined:
    """Fill what ``vi`` leaves unknown from ``t`` (element type, shape, dims) and replace the dim
    names the exporter invented (``reader``: none is replaced without one) by the proven dims. A
    declaration that contradicts ``t`` (SF112: another rank, another int, another expression) is
    left as it is, unless ``fix``: then the contradicted rank or dims are rewritten with the
    inferred ones, and the rest refined as above. An element type that differs is always left.
    ``texts``: the dim_params written so far (see ``Texts``); a dim whose text names another is
    left unknown."""
    tp = vi.type
    which = tp.WhichOneof("value")
    if which not in (None, "tensor_type"):
        return Refined()  # sequences, maps, optionals: left as declared
    tt = tp.tensor_type
    if tt.elem_type and t.dtype and tt.elem_type != t.dtype:
        return Refined(contradicted=True)
    found: list[Conflict] = []
    if t.shape is not None and tt.HasField("shape"):
        found = list(conflicts(written_shape(tp), t.shape, reader or DimReader(()), ranges))
        if found and not fix:
            return Refined(contradicted=True)
    if not tt.elem_type and t.dtype:
        tt.elem_type = t.dtype
    if t.shape is None:
        return Refined()
    filled = replaced = 0
    if found and found[0].position is None:  # another rank: the inferred shape replaces it
        tt.ClearField("shape")
    if not tt.HasField("shape"):
        tt.shape.SetInParent()
        for d in t.shape:
            dim = tt.shape.dim.add()
            if d is not None:
                filled += _set_dim(dim, d, texts)
        return Refined(0 if found else filled, 0, bool(found), bool(found))
    wrong = {c.position for c in found}
    for k, (dim, d) in enumerate(zip(tt.shape.dim, t.shape)):
        if k in wrong:
            _set_dim(dim, d, texts)
        elif d is not None and _declared_unknown(dim):
            filled += _set_dim(dim, d, texts)
        elif d is not None and reader is not None and dim.WhichOneof("value") == "dim_param" \
                and reader.invented(dim.dim_param):
            if texts is None or texts.get(str(d), d) == d:  # (else the exporter's name stays)
                replaced += _set_dim(dim, d, texts)
    return Refined(filled, replaced, bool(found), bool(found))


def annotate(graph: ModelGraph, inference: Inference, refine_outputs: bool = False,
             fix_declarations: bool = False) -> AnnotateResult:
    """Record the inferred shapes in the model (mutated in place): new value_info entries and
    refined declarations, as the module docstring says."""
    added = filled = kept = replaced = fixed = 0
    reader = DimReader.of(graph)
    # (onnxruntime shapes a Loop's scan outputs after zero iterations from its own inference of
    # the body, which recorded shapes would change: what it rests on is left as it is)
    frozen = zero_trip_nodes(graph)
    texts = written_texts(graph)
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
                    r = refine(vi, t, reader, fix=fix_declarations, ranges=inference.ranges,
                               texts=texts)
                    filled += r.filled
                    replaced += r.replaced
                    kept += r.contradicted and not r.fixed
                    fixed += r.fixed
                    declared[name] = None  # a name declared twice is refined once
                    continue
                if not t.dtype:
                    continue
                entry = onnx.ValueInfoProto()
                entry.name = name
                entry.type.CopyFrom(_type_proto(t, texts))
                body.value_info.append(entry)
                declared[name] = None
                added += 1
    return AnnotateResult(added, filled, kept, replaced, fixed)


def drop_fixed(graph: ModelGraph, inference: Inference, diagnostics: Sequence[Diagnostic],
               file: str) -> list[Diagnostic]:
    """``diagnostics`` without the SF112 findings that the model, as ``annotate`` left it, no
    longer has (``fix_declarations`` rewrote those declarations): SF112 judges it again."""
    ctx = LintContext(file, graph, inference)
    left = {(d.location.graph, d.location.tensor, d.message) for d in ShapeConflict().diagnostics(ctx)}
    return [d for d in diagnostics
            if d.code != ShapeConflict.code or (d.location.graph, d.location.tensor, d.message) in left]
