from __future__ import annotations

from typing import Iterator

from .base import Finding, LintContext, Rule


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


class ControlFlowSignature(Rule):
    """Flags an If, Loop or Scan whose bodies do not take and return what the node passes it.

    ## What it does
    Checks the arity of If, Loop and Scan bodies against their node. Both branches of an If
    return one value per output of the node. A Loop with N carried values needs
    a body with 2 + N inputs (iteration number, condition, the N values) and at least 1 + N outputs
    (condition, the N values, then any scan outputs), one per node output after the condition. A
    Scan with N state values and M scan inputs needs a body with N + M inputs and one output per
    node output.

    ## Why is this bad?
    onnxruntime refuses to load the model; other tools read values from the wrong positions. It
    usually comes from editing a body by hand or from a converter that dropped a carried value.

    ## Example
    ``Loop(M, "", v)`` whose body returns only the condition: the carried ``v`` has no new value.

    ## Fix
    Make the body's inputs and outputs match the node: add the missing carried value or scan
    output, or remove the extra ones from the node.
    """

    code = "SF116"

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        g = ctx.graph
        # the nodes that own a body, in node order (not a walk over every node: few own one)
        for nid in sorted({s.owner for s in g.scopes if s.owner is not None}):
            info = g.nodes[nid]
            if info.domain != "" or info.op_type not in ("If", "Loop", "Scan") or not info.subscopes:
                continue
            if info.op_type == "If":
                yield from self._branches(ctx, nid)
                continue
            body = g.scopes[info.subscopes[0]]
            n_in, n_out = len(body.inputs), len(body.outputs)
            node_outs = len(info.outputs)
            if info.op_type == "Loop":
                carried = max(len(info.inputs) - 2, 0)
                if n_in != 2 + carried:
                    yield Finding(ctx.location_of(nid), f"Loop body has {_plural(n_in, 'input')}, expected "
                                  f"{2 + carried} (iteration, condition, {carried} carried)",
                                  "make the body's inputs match the node")
                if n_out < 1 + carried or n_out != 1 + node_outs:
                    yield Finding(ctx.location_of(nid), f"Loop body has {_plural(n_out, 'output')}, expected "
                                  f"≥ 1 + carried ({1 + carried}) and 1 + node outputs ({1 + node_outs})",
                                  "return the condition, then every carried value, then the scan outputs")
            else:
                m = next((a.i for a in info.proto.attribute if a.name == "num_scan_inputs"), None)
                if m is None:
                    continue
                state_and_scan = len(info.inputs) - (1 if info.since_version == 8 else 0)
                if n_in != state_and_scan:
                    yield Finding(ctx.location_of(nid), f"Scan body has {_plural(n_in, 'input')}, expected "
                                  f"{state_and_scan} ({state_and_scan - m} state, {m} scan)",
                                  "make the body's inputs match the node")
                if n_out != node_outs:
                    yield Finding(ctx.location_of(nid), f"Scan body has {_plural(n_out, 'output')}, expected "
                                  f"{node_outs}, one per node output", "make the body's outputs match the node")

    @staticmethod
    def _branches(ctx: LintContext, nid: int) -> Iterator[Finding]:
        g = ctx.graph
        info = g.nodes[nid]
        counts = {g.scopes[sid].attr: len(g.scopes[sid].outputs) for sid in info.subscopes}
        then, other = counts.get("then_branch"), counts.get("else_branch")
        if then is None or other is None:
            return  # a missing branch is a missing required attribute (SF011)
        node_outs = len(info.outputs)
        if then != other:
            yield Finding(ctx.location_of(nid), f"If branches return different numbers of values "
                          f"(then_branch {then}, else_branch {other})",
                          "return one value per output of the node from both branches")
        elif then != node_outs:
            yield Finding(ctx.location_of(nid), f"If branches return {_plural(then, 'value')}, the node has "
                          f"{_plural(node_outs, 'output')}", "return one value per output of the node")
