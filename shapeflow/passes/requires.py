"""What the engine requires of a model before it rewrites a node: every driver (``optimize``,
``lint --fix``, the API) goes through these, so they all refuse the same inputs (exit 2).

* a format this onnx knows: the IR version, and ai.onnx opsets (of the model and of its
  functions) no newer than the operator table (RELIABILITY.md row 11: ops of unverified
  semantics are not rewritten);
* external data whose locations stay inside the model's folder (row 37);
* known semantics for every ai.onnx node: an unknown op (a typo such as ``Sqeeze``) is refused
  (row 14), as its outputs could not be reasoned about.

The first two need only the loaded file (:func:`require_file`), the last the graph index
(:func:`require_known_ops`); :func:`requires` is both.
"""

from __future__ import annotations

from .._onnx import onnx
from ..errors import ShapeflowError
from ..graph import ModelGraph
from ..io import LoadedModel, refuse_unsafe_external_data
from ..opsets import MAX_KNOWN_OPSET, canonical_domain


def require_file(loaded: LoadedModel) -> None:
    """Refuse (``ShapeflowError``) a model whose format, opsets or external data the engine does
    not rewrite, before looking at a node."""
    model = loaded.proto
    if model.ir_version > onnx.IR_VERSION:
        raise ShapeflowError(f"IR version {model.ir_version} is newer than this onnx knows ({onnx.IR_VERSION}); "
                             "refusing to rewrite a model whose format is not verified", file=loaded.path)
    for imp in list(model.opset_import) + [o for f in model.functions for o in f.opset_import]:
        if canonical_domain(imp.domain) == "" and imp.version > MAX_KNOWN_OPSET:
            raise ShapeflowError(f"ai.onnx opset {imp.version} is newer than this onnx knows "
                                 f"({MAX_KNOWN_OPSET}); refusing to rewrite ops of unverified semantics",
                                 file=loaded.path)
    # The check walks every tensor of the model; skip it when the bytes prove that no tensor is
    # external. Not by looking for b"location": an external tensor *without* that key is the
    # worst case (its location is empty). A tensor is external only through data_location
    # (TensorProto field 14, varint) = EXTERNAL (1): its tag is 0x70, or starts 0xf0 when a
    # hostile file pads the varint, and its value starts 0x01 or 0x81. A file with none of
    # those byte pairs (most files without weights in them) has no external tensor.
    raw = loaded.raw
    if raw and b"\xf0" not in raw and b"\x70\x01" not in raw and b"\x70\x81" not in raw:
        return
    refuse_unsafe_external_data(loaded)


def require_known_ops(graph: ModelGraph) -> None:
    """Refuse a model with an ai.onnx node of unknown semantics (an unknown op type)."""
    for nid, info in enumerate(graph.nodes):
        if info.domain != "" or info.since_version is not None:
            continue
        node = info.peek()
        if (node.domain, node.op_type) not in graph.functions:
            version = graph.scopes[info.scope].opsets.get("")
            what = f"operator '{node.op_type}'" if node.op_type else "empty op_type"
            raise ShapeflowError(f"unknown {what} in ai.onnx opset {version}",
                                 file=graph.path, node=graph.display(nid))


def requires(loaded: LoadedModel, graph: ModelGraph) -> None:
    """Everything the engine requires of ``loaded`` (indexed as ``graph``) before it rewrites."""
    require_file(loaded)
    require_known_ops(graph)


__all__ = ["require_file", "require_known_ops", "requires"]
