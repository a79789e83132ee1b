from __future__ import annotations

from typing import Iterator

from .base import Finding, LintContext, Rule


class UnusedSuppression(Rule):
    """Flags an in-model suppression marker that suppresses nothing.

    ## What it does
    Reports each entry of a ``shapeflow.ignore`` marker (node ``metadata_props``, a node
    ``doc_string`` with ``shapeflow: ignore[...]``, or the model's own ``metadata_props``) that
    matched no finding of a rule that ran, or that names no rule at all.

    ## Why is this bad?
    A marker outlives the problem it hid: once the node is fixed, the stale marker would silently
    hide the next, different finding of that rule on the same node.

    ## Example
    A node with ``shapeflow.ignore = "SF104"`` whose Squeeze now squeezes a dim that is 1.

    ## Fix
    Remove the entry from the marker (``lint --add-ignore`` writes only what is needed).
    """

    code = "SF008"

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        # The verdicts come from the suppression step after every rule has run (shapeflow/drivers/suppress.py).
        return iter(())
