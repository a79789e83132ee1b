"""Errors that show only at a call of a model-local function.

A function body's facts come from a run with unknown inputs, true of every call; an axis that is
out of range only for the rank one call passes, say, is invisible there. Inference also runs the
body at each call site (``Inference.call_facts``), and the rules that judge facts alone
(``Rule.per_call``) judge those runs too. What they find is reported at the body's node, naming
the call, when it is an error (the model fails at that call) that the generic run did not already
report. Such a finding is not fixable: ``--fix`` edits the body, shared by every call.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from ..diagnostics import Diagnostic, Severity
from ..inference import Inference
from .base import LintContext, Rule


def at_call_sites(ctx: LintContext, rule: Rule, reported: Sequence[Diagnostic]) -> list[Diagnostic]:
    """The error findings of ``rule`` on the call-site runs of function bodies, other than those
    in ``reported`` (its findings on the generic run), each once, naming the first call it holds for."""
    calls = ctx.inference.call_facts
    if not calls or not rule.per_call:
        return []
    seen = {_key(d) for d in reported}
    graph = ctx.graph
    out: list[Diagnostic] = []
    for call in calls:
        # (the call's facts, judged in the domain of the whole model's inference)
        view = LintContext(ctx.file, graph, Inference(graph, axis_nodes=list(call.facts), domain=ctx.inference.domain))
        site = None
        for d in rule.diagnostics(view):
            if d.severity is not Severity.ERROR or _key(d) in seen:
                continue
            seen.add(_key(d))
            if site is None:
                caller = graph.nodes[call.caller]
                path = graph.scopes[caller.scope].path
                site = f"node '{graph.display(call.caller)}' ({caller.op_type})" + ("" if path == "main" else f" in {path}")
            out.append(replace(d, message=f"{d.message} (at the call from {site})", fixable=False))
    return out


def _key(d: Diagnostic) -> tuple[str, str, str | None, str]:
    return (d.code, d.location.graph, d.location.node, d.message)
