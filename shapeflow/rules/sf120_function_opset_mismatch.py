from __future__ import annotations

from typing import Iterator

from ..diagnostics import Severity
from ..opsets import AXES_INPUT_SINCE, since_version
from .base import Finding, LintContext, Rule

_AXIS_OPS = ("Squeeze", "Unsqueeze")


class FunctionOpsetMismatch(Rule):
    """Flags a node of a model-local function whose operator version depends on whose opset import is read.

    ## What it does
    A model-local function lists its own opset imports. When it imports another version of a
    domain than the model does, a node of its body may resolve to one version of its operator under
    the function's import and to another under the model's. The rule reports each such node: an
    error for a Squeeze or Unsqueeze whose axes change form between the two versions (attribute
    before opset 13, input from 13 on), a warning for any other operator.

    ## Why is this bad?
    The onnx checker rejects the model ("not compatible with the version imported by model"), and
    onnxruntime runs the body at the model's version: a Squeeze-11 body in an opset-13 model is
    refused to load ("Unrecognized attribute: axes"). shapeflow reads the body at the function's
    version, which is what the file says but not what runtimes do, so its shapes for the body may
    not be the ones that run.

    ## Example
    A model importing ai.onnx 13 that calls a function importing ai.onnx 11, whose body is
    ``y = Squeeze(x) <axes = [0]>``.

    ## Fix
    Import the same version of each domain in the functions as in the model, and write their
    nodes in that version's form.
    """

    code = "SF120"
    # the default is the worst a finding of this rule can be (optimize runs only error rules)

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        g = ctx.graph
        if not g.functions:
            return
        model_opsets = g.scopes[0].opsets
        for sid in g.functions.values():
            scope = g.scopes[sid]
            if all(model_opsets.get(d, v) == v for d, v in scope.opsets.items()):
                continue
            for nid in scope.nodes:
                info = g.nodes[nid]
                own = scope.opsets.get(info.domain)
                theirs = model_opsets.get(info.domain)
                if own is None or theirs is None or own == theirs:
                    continue
                as_model = since_version(info.domain, info.op_type, theirs)
                if as_model == info.since_version:
                    continue
                error = (info.op_type in _AXIS_OPS and info.domain == "" and as_model is not None
                         and info.since_version is not None
                         and (as_model >= AXES_INPUT_SINCE) != (info.since_version >= AXES_INPUT_SINCE))
                label = f"{info.op_type}-{info.since_version}" if info.since_version else info.op_type
                other = f"{info.op_type}-{as_model}" if as_model else f"no {info.op_type}"
                message = (f"the function imports {info.domain or 'ai.onnx'} {own} and the model {theirs}: "
                           f"this node is {label} by the function's import, {other} by the model's")
                if error:
                    message += " (runtimes use the model's, where its axes take the other form)"
                yield Finding(ctx.location_of(nid), message,
                              f"import {info.domain or 'ai.onnx'} {theirs} in the function, as the model does",
                              severity=None if error else Severity.WARNING)
