from __future__ import annotations

from typing import Iterator

from .._onnx import onnx
from ..diagnostics import Location
from ..signatures import DTYPES
from .base import Finding, LintContext, Rule


def _what(dtype: int) -> str:
    return "element type 0 (UNDEFINED)" if dtype == 0 else f"element type {dtype}, which no ONNX release defines"


class InvalidElementType(Rule):
    """Flags a declared tensor type or a stored tensor whose element type is not a data type.

    ## What it does
    Checks the element type of every graph input, graph output and ``value_info`` entry (main graph
    and subgraphs), of every initializer and sparse initializer, and of every Constant node's
    tensor: 0 (UNDEFINED) and numbers that ``TensorProto.DataType`` does not define are reported,
    and so is a main-graph input with no type at all.

    ## Why is this bad?
    onnxruntime refuses to load the model ("Invalid tensor data type 0", "Model input (x) does not
    have type information"). Other tools read such a tensor as float, as raw bytes, or not at all.
    A type of 0 usually comes from a hand-built ``make_tensor_value_info(name, 0, ...)`` or from a
    converter that did not know a tensor's type and left it unset.

    ## Example
    A graph input ``x`` declared with ``elem_type: 0``; an initializer with ``data_type: 999``.

    ## Fix
    Declare the tensor's real element type (``TensorProto.FLOAT``, ``INT64``, ...), or, for a
    graph output or ``value_info`` entry whose type you do not know, leave its type out instead.
    """

    code = "SF016"

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        g = ctx.graph
        for scope in g.scopes:
            body = scope.proto
            if not isinstance(body, onnx.GraphProto):
                continue
            for what, infos in (("graph input", body.input), ("graph output", body.output),
                                ("value_info", body.value_info)):
                for vi in infos:
                    kind = vi.type.WhichOneof("value")
                    if kind is None:
                        if what == "graph input" and scope.parent is None:
                            yield Finding(Location(scope.path, tensor=vi.name),
                                          f"graph input '{vi.name}' has no type", "declare its type and shape")
                        continue
                    if kind == "tensor_type" and vi.type.tensor_type.elem_type not in DTYPES:
                        yield Finding(Location(scope.path, tensor=vi.name),
                                      f"{what} '{vi.name}' has {_what(vi.type.tensor_type.elem_type)}",
                                      "declare its real element type")
            for t in body.initializer:
                if t.data_type not in DTYPES:
                    yield Finding(Location(scope.path, tensor=t.name),
                                  f"initializer '{t.name}' has {_what(t.data_type)}", "store it with its real data type")
            for sp in body.sparse_initializer:
                if sp.values.data_type not in DTYPES:
                    yield Finding(Location(scope.path, tensor=sp.values.name),
                                  f"sparse initializer '{sp.values.name}' has {_what(sp.values.data_type)}",
                                  "store it with its real data type")
        for nid, info in enumerate(g.nodes):
            if info.op_type != "Constant" or info.domain != "" or not info.has_attrs:
                continue
            for attr in info.peek().attribute[:]:
                if attr.name == "value" and attr.HasField("t") and attr.t.data_type not in DTYPES:
                    yield Finding(ctx.location_of(nid), f"the Constant's tensor has {_what(attr.t.data_type)}",
                                  "store the value with its real data type")
