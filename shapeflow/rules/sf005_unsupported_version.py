from __future__ import annotations

from typing import Iterator

from .._onnx import onnx

from ..diagnostics import Location
from ..opsets import MAX_KNOWN_OPSET, canonical_domain
from .base import Finding, LintContext, Rule


class UnsupportedVersion(Rule):
    """Flags a model whose IR version or ai.onnx opset is newer than the ones shapeflow knows.

    ## What it does
    Compares the model's ``ir_version`` and its ai.onnx opset imports (the model's and every
    model-local function's) with the newest ones known to the installed onnx package.

    ## Why is this bad?
    Operators of a newer opset may change meaning; shapeflow checks them as the newest version it
    knows, which may be wrong, so its verdicts on such a model are not verified. (A version outside
    any plausible range, such as 2^62, is not new but corrupt: that is SF001.)

    ## Example
    ``opset_import: [{"": 30}]`` while the installed onnx knows opsets up to 24.

    ## Fix
    Upgrade shapeflow and onnx, or convert the model to a supported opset with
    ``onnx.version_converter.convert_version``.
    """

    code = "SF005"

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        model = ctx.graph.model
        hint = "upgrade shapeflow/onnx, or convert the model to a supported opset"
        if model.ir_version > onnx.IR_VERSION:
            yield Finding(Location(), f"IR version {model.ir_version} is newer than the newest known "
                          f"({onnx.IR_VERSION}); results are not verified", hint)
        imports = [("model", model.opset_import)]
        imports += [(f"function {fn.domain}::{fn.name}", fn.opset_import) for fn in model.functions]
        for where, opsets in imports:
            for op in opsets:
                if canonical_domain(op.domain) == "" and op.version > MAX_KNOWN_OPSET:
                    graph = "main" if where == "model" else where.split(" ", 1)[1]
                    yield Finding(Location(graph=graph),
                                  f"ai.onnx opset {op.version} is newer than the newest known ({MAX_KNOWN_OPSET}); "
                                  f"operators of opset {op.version} are checked as opset {MAX_KNOWN_OPSET}", hint)
