from __future__ import annotations

from typing import Iterator

from .._onnx import onnx

from ..opsets import AXES_INPUT_SINCE
from .base import Finding, LintContext, Rule
_TYPE_NAMES = {v: k for k, v in onnx.AttributeProto.AttributeType.items()}


class InvalidAttribute(Rule):
    """Flags a Squeeze or Unsqueeze attribute its version does not define, or a mistyped ``axes``.

    ## What it does
    Squeeze and Unsqueeze define one attribute, ``axes`` (type ``ints``), and only before opset 13.
    This rule reports any other attribute (an ``axes`` attribute from opset 13 on is SF108's) and
    an ``axes`` attribute of another type, such as a single ``int`` or ``floats``.

    ## Why is this bad?
    onnxruntime refuses to load the model ("Unrecognized attribute", "Mismatched attribute
    type"), and the onnx checker rejects it. Other tools may read a mistyped ``axes`` as an empty
    list, which means something else entirely. shapeflow treats such axes as unknown and never
    rewrites the node.

    ## Example
    ``Unsqueeze(x) axes=0`` (an ``int``, not ``ints``), or ``Squeeze(x) axes=[0] keepdims=1``.

    ## Fix
    Write ``axes`` as a list of ints (``axes=[0]``) and remove the attributes Squeeze and Unsqueeze
    do not have.
    """

    code = "SF117"

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        for a in ctx.axis_nodes():
            info = ctx.graph.nodes[a.nid]
            if not info.has_attrs:
                continue
            op = f"{a.op_type}-{a.since_version}"
            for attr in info.peek().attribute[:]:
                if attr.name != "axes":
                    yield Finding(self.at(a), f"{op} has no attribute '{attr.name}'",
                                  f"remove the '{attr.name}' attribute")
                elif a.since_version < AXES_INPUT_SINCE and attr.type != onnx.AttributeProto.INTS:
                    kind = _TYPE_NAMES.get(attr.type, str(attr.type)).lower()
                    yield Finding(self.at(a), f"attribute 'axes' is of type {kind}, not ints",
                                  "write the axes as a list of ints, e.g. axes=[0]")
