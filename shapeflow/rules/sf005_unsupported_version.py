from __future__ import annotations

from typing import Iterator

from .._onnx import onnx

from ..diagnostics import Location
from ..opsets import MAX_KNOWN_OPSET, canonical_domain
from ..signatures import domain_max
from .base import Finding, LintContext, Rule

# The domains of onnxruntime's own operators, with the one opset each has: onnxruntime refuses a
# model that imports a newer one, as it does for the onnx domains.
ONNXRUNTIME_DOMAINS = {"com.microsoft": 1, "com.microsoft.nchwc": 1, "com.microsoft.experimental": 1,
                       "org.pytorch.aten": 1}


class UnsupportedVersion(Rule):
    """Flags a model whose IR version or opset imports are newer than onnx and onnxruntime know.

    ## What it does
    Compares the model's ``ir_version`` and its opset imports (the model's and every model-local
    function's) with the newest ones the installed onnx knows: ai.onnx, ai.onnx.ml and the
    training domains; and onnxruntime's own domains (``com.microsoft``) with their one opset.

    ## Why is this bad?
    onnxruntime refuses to load a model stamped with an IR version or an opset newer than the onnx
    release it was built with ("Unsupported model IR version", "opset 30 is under development"),
    even an opset import that no node uses. Operators of a newer opset may also change meaning,
    and shapeflow would check them as the newest version it knows. (A version outside any
    plausible range, such as 2^62, is not new but corrupt: that is SF001.) The installed onnx
    stands for the onnxruntime release of its time (onnx 1.23 and onnxruntime 1.32 both stop at
    IR 14 and opset 28): with an older onnx than your onnxruntime, upgrade onnx.

    ## Example
    ``opset_import: [{"": 30}]`` while the installed onnx knows opsets up to 28; ``ir_version: 99``.

    ## Fix
    Export with the opset and IR version your runtime supports, convert the model with
    ``onnx.version_converter.convert_version``, or upgrade onnx (and onnxruntime).
    """

    code = "SF005"

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        model = ctx.graph.model
        hint = "export for an opset and IR version your onnxruntime supports, or upgrade onnx and onnxruntime"
        if model.ir_version > onnx.IR_VERSION:
            yield Finding(Location(), f"IR version {model.ir_version} is newer than the newest known "
                          f"({onnx.IR_VERSION}); onnxruntime refuses to load it", hint)
        newest = {**domain_max(), "": MAX_KNOWN_OPSET, **ONNXRUNTIME_DOMAINS}
        imports = [("model", model.opset_import)]
        imports += [(f"function {fn.domain}::{fn.name}", fn.opset_import) for fn in model.functions]
        for where, opsets in imports:
            for op in opsets:
                domain = canonical_domain(op.domain)
                known = newest.get(domain)
                if known is not None and op.version > known:
                    graph = "main" if where == "model" else where.split(" ", 1)[1]
                    name = "ai.onnx" if domain == "" else domain
                    yield Finding(Location(graph=graph),
                                  f"{name} opset {op.version} is newer than the newest known ({known}); "
                                  "onnxruntime refuses to load it", hint)
