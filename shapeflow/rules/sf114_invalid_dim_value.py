from __future__ import annotations

from typing import Iterator

from .._onnx import onnx

from ..diagnostics import Location, Severity
from .base import Finding, LintContext, Rule

# Above this a dim cannot be a real tensor size (and no longer round-trips through a double, which
# is how JSON-based tools read it).
ABSURD_DIM = 2**53


class InvalidDimValue(Rule):
    """Flags a declared dim that is negative (error) or absurdly large (warning).

    ## What it does
    Checks every ``dim_value`` in the declared shapes of graph inputs, graph outputs and
    ``value_info``, in the main graph, every subgraph and every model-local function. A negative
    value is an error; a value above 2^53 is a warning.

    ## Why is this bad?
    A dim is a size: it cannot be negative. Some exporters write ``-1`` where they meant "dynamic",
    and tools disagree on what it means: onnx's checker accepts it, onnxruntime treats it as
    dynamic, others reject the model or allocate from it. A dim above 2^53 cannot be a real size
    and no longer survives a round trip through JSON.

    ## Example
    ``graph input x: float[-1, 3, 224, 224]``.

    ## Fix
    Write a dynamic dim as a symbol (``dim_param: "batch"``) or leave it unset; write real sizes
    as they are.
    """

    code = "SF114"

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        for scope in ctx.graph.scopes:
            body = scope.proto
            groups = [("graph input", body.input), ("graph output", body.output)] \
                if isinstance(body, onnx.GraphProto) else []
            groups.append(("value_info", getattr(body, "value_info", ())))
            for kind, entries in groups:
                for vi in entries:
                    if vi.type.WhichOneof("value") != "tensor_type" or not vi.type.tensor_type.HasField("shape"):
                        continue
                    for k, d in enumerate(vi.type.tensor_type.shape.dim):
                        if d.WhichOneof("value") != "dim_value":
                            continue
                        v = d.dim_value
                        loc = Location(scope.path, tensor=vi.name)
                        if v < 0:
                            yield Finding(loc, f"{kind} '{vi.name}' declares dim {k} as {v}: a size cannot be negative",
                                          "write a dynamic dim as a symbol (dim_param) or leave it unset")
                        elif v > ABSURD_DIM:
                            yield Finding(loc, f"{kind} '{vi.name}' declares dim {k} as {v}, above 2^53",
                                          "write the real size, or a symbol if it is dynamic",
                                          severity=Severity.WARNING)
