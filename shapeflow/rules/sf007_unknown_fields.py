from __future__ import annotations

from typing import Iterator

from .._onnx import onnx
from google.protobuf.message import Message
from google.protobuf.unknown_fields import UnknownFieldSet

from ..diagnostics import Location
from ..io.wire import top_level_unknown_fields
from .base import Finding, LintContext, Rule


def _unknown(msg: Message) -> list[int]:
    return sorted({f.field_number for f in UnknownFieldSet(msg)})


class UnknownFields(Rule):
    """Flags protobuf fields that this version of onnx does not know (a newer IR, or a foreign tool).

    ## What it does
    Looks for unknown fields on the model, its opset imports, every graph body (main graph,
    subgraphs), every node and every model-local function.

    ## Why is this bad?
    The file was written by a newer ONNX or by a tool that adds its own fields. shapeflow keeps them
    byte for byte (``optimize`` edits the parsed model in place), but it cannot check what they
    mean: a field that changes semantics in a future IR is invisible to every check here.

    ## Example
    A model saved by an ONNX release with IR fields that onnx 1.21 does not define.

    ## Fix
    Upgrade onnx (and shapeflow) to a version that knows the fields, or re-export the model with
    the ONNX version your runtime supports.
    """

    code = "SF007"

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        model = ctx.graph.model
        places: list[tuple[str, Location, Message]] = [("the model", Location(), model)]
        places += [(f"opset import '{o.domain or 'ai.onnx'}'", Location(), o) for o in model.opset_import]
        for scope in ctx.graph.scopes:
            what = "function" if scope.kind == "function" else "graph"
            places.append((f"{what} {scope.path}", Location(scope.path), scope.proto))
        for scope in ctx.graph.scopes:
            # Each body's nodes from its own list (a body's node ids follow its order), as
            # throwaway wrappers: checking every node keeps no per-node memory alive. First one
            # test of them all, in C (nearly every body has no node with unknown fields).
            if not any(map(UnknownFieldSet, scope.proto.node)):
                continue
            for nid, node in zip(scope.nodes, scope.proto.node):
                if UnknownFieldSet(node):  # cheap test first: nearly every node has none
                    places.append((f"node '{ctx.graph.display(nid)}'", ctx.location_of(nid), node))
        for what, loc, msg in places:
            numbers = None
            if msg is model and ctx.graph.loaded.raw:
                # from the file's bytes: UnknownFieldSet would copy a large unknown field whole
                numbers = top_level_unknown_fields(ctx.graph.loaded.raw)
            if numbers is None:
                numbers = _unknown(msg)
            if numbers:
                listed = ", ".join(str(n) for n in numbers[:5]) + (", ..." if len(numbers) > 5 else "")
                yield Finding(loc, f"{what} has unknown field(s) {listed}: written by a newer ONNX or "
                              "another tool; kept as they are but not checked",
                              f"upgrade onnx (installed: {onnx.__version__}) or re-export the model")
