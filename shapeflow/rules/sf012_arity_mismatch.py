from __future__ import annotations

from typing import Iterator

from ..signatures import SINGLE
from .base import Finding, LintContext, Rule
from .loadtime import AXIS_OPS, live_scopes, node_signatures


def _range(lo: int, hi: int) -> str:
    if lo == hi:
        return str(lo)
    return f"at least {lo}" if hi >= 2**31 - 1 else f"{lo} to {hi}"


class ArityMismatch(Rule):
    """Flags a node with more or fewer inputs or outputs than its operator takes.

    ## What it does
    Compares the number of inputs and outputs of every node of a standard domain with the range
    the schema of its operator version allows (trailing empty names count, as they do for
    onnxruntime), and reports a required input left empty (``""``). Squeeze and Unsqueeze inputs
    are SF108's; an empty required output is SF010's.

    ## Why is this bad?
    onnxruntime refuses to load the model ("has input size 3 not in range [min=2, max=2]", "input
    0 is marked single but has an empty string"), even when the node sits in a model-local function
    that nothing calls. Other readers take the first inputs and drop the rest, or index past the
    end: the node means something else to each of them.

    ## Example
    ``y = Add(a, b, c)`` (Add takes two inputs; ``Sum`` takes any number), ``y = Reshape(x)``
    (the target shape is missing), ``y = Add("", b)``.

    ## Fix
    Give the node the inputs its operator version defines: chain ``Add`` nodes or use ``Sum``,
    pass the missing input, or name the value an empty input was meant to be.
    """

    code = "SF012"

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        g = ctx.graph
        live = live_scopes(ctx)
        sigs = node_signatures(ctx)
        for nid, info in enumerate(g.nodes):
            sig = sigs[nid]
            if sig is None or sig.deprecated:
                continue
            axis_op = info.domain == "" and info.op_type in AXIS_OPS
            n_in, n_out = len(info.inputs), len(info.outputs)
            if not axis_op and not sig.min_inputs <= n_in <= sig.max_inputs:
                yield Finding(ctx.location_of(nid), f"{sig.label} takes {_range(sig.min_inputs, sig.max_inputs)} "
                              f"inputs; the node has {n_in}", "give the node the inputs its operator defines")
                continue
            if not sig.min_outputs <= n_out <= sig.max_outputs:
                yield Finding(ctx.location_of(nid), f"{sig.label} has {_range(sig.min_outputs, sig.max_outputs)} "
                              f"outputs; the node names {n_out}", "name the outputs the operator defines")
                continue
            if axis_op or not live[info.scope] or all(info.inputs):
                continue
            for k, name in enumerate(info.inputs):
                formal = sig.formal_input(k)
                if not name and formal is not None and formal.option == SINGLE:
                    yield Finding(ctx.location_of(nid), f"input {k} ({formal.type_str}) of {sig.label} is "
                                  "required but the node leaves it empty",
                                  "pass the tensor the input needs")
                    break
