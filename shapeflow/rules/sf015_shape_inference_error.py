from __future__ import annotations

from typing import Iterator

from .base import Finding, LintContext, Rule
from .loadtime import live_scopes


class ShapeInferenceError(Rule):
    """Flags a node whose shape inference fails the way it does when onnxruntime loads the model.

    ## What it does
    onnxruntime runs onnx's type and shape inference of every node when it creates a session, with
    the declared input shapes and the values of initializers and Constant nodes, and refuses the
    model when one fails. Where shapeflow's own shape rules find a node's static inputs
    inconsistent (an axis out of range, a ``perm`` that is not a permutation, dims that cannot
    broadcast or concatenate, a Reshape target with two ``-1``, a Split given both sizes and
    ``num_outputs``...), and on every operator without a rule of its own, the node is handed to
    that same inference; its error is the finding. An inconsistency onnxruntime only meets when
    the model runs (a Reshape whose sizes do not multiply out) is not reported here.

    ## Why is this bad?
    onnxruntime refuses to load the model ("[ShapeInferenceError] axis must be in [-r, r-1]",
    "Incompatible dimensions for matrix multiplication"). Such a node cannot compute anything for
    any input: it comes from an edit that changed one tensor's shape and not its neighbours'.

    ## Example
    ``Gather(x: [2, 3], i) axis=5``; ``MatMul(a: [2, 3], b: [4, 5])``; ``Transpose(x) perm=[0, 0]``;
    ``Reshape(x, [0, -1]) allowzero=1``.

    ## Fix
    Correct the attribute or the shape the message names, or re-export the model.
    """

    code = "SF015"

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        g = ctx.graph
        if not ctx.inference.load_errors:
            return
        live = live_scopes(ctx)
        for nid, why in sorted(ctx.inference.load_errors.items()):
            info = g.nodes[nid]
            if not live[info.scope]:
                continue  # a function nothing calls: onnxruntime never infers its body
            yield Finding(ctx.location_of(nid), f"{info.op_type}-{info.since_version}'s shape inference fails: {why}",
                          "correct the attribute or input shape it names")
