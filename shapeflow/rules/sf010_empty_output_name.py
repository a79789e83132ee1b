from __future__ import annotations

from typing import Iterator

from .. import opsets
from .._onnx import onnx
from ..diagnostics import Location
from .base import Finding, LintContext, Rule


def _required_outputs(domain: str, op_type: str, opset: int) -> tuple[bool, ...] | None:
    """Per formal output of the op at ``opset``: whether it is a single, required output; None when
    onnx has no schema for it."""
    schema = opsets.schema(domain, op_type, opset)
    if schema is None:
        return None
    single = onnx.defs.OpSchema.FormalParameterOption.Single
    return tuple(o.option == single for o in schema.outputs)


class EmptyOutputName(Rule):
    """Flags a required output of a node, or a graph output, whose name is empty.

    ## What it does
    An empty name in a node's outputs means "this optional output is not wanted". The rule reports
    an empty name where the operator's schema declares a single, required output (output 0 of a
    Relu, of an Unsqueeze...), and a graph output with an empty name.

    ## Why is this bad?
    onnxruntime refuses to load the model ("output 0 is marked single but has an empty string").
    A reader that then takes ``""`` as an input of another node reads "no input" there, not the
    value the author meant: the dataflow the file describes is not the one that was intended.

    ## Example
    ``"" = Unsqueeze(x, axes)`` followed by ``y = Squeeze("", axes)``.

    ## Fix
    Give the output a name that is unique in its graph, and use that name where it is read.
    """

    code = "SF010"

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        g = ctx.graph
        cache: dict[tuple[str, str, int], tuple[bool, ...] | None] = {}
        for nid in g.empty_outputs:
            info = g.nodes[nid]
            outputs = info.outputs
            if info.since_version is None:
                continue
            opset = g.scopes[info.scope].opsets.get(info.domain)
            if opset is None:
                continue
            key = (info.domain, info.op_type, opset)
            required = cache.get(key)
            if key not in cache:
                required = cache[key] = _required_outputs(*key)
            if not required:
                continue
            for k, name in enumerate(outputs):
                # past the formal outputs: a variadic tail (or too many outputs, not this rule's)
                if name or k >= len(required) or not required[k]:
                    continue
                yield Finding(ctx.location_of(nid),
                              f"output {k} of {info.op_type}-{info.since_version} has an empty name; "
                              "the operator requires it",
                              "name the output (a name unique in its graph)")
        for scope in g.scopes:
            if scope.kind != "graph":
                continue
            for k, name in enumerate(scope.outputs):
                if not name:
                    where = "" if scope.path == "main" else f" of {scope.path}"
                    yield Finding(Location(scope.path), f"graph output {k}{where} has an empty name",
                                  "name the graph output after the tensor it returns")

