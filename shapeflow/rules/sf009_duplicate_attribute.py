from __future__ import annotations

from typing import Iterator


from .base import Finding, LintContext, Rule


class DuplicateAttribute(Rule):
    """Flags a node that gives one attribute more than once.

    ## What it does
    Looks at the attributes of every node (main graph, subgraphs and function bodies) and reports
    each name that appears more than once, such as a Squeeze-11 with two ``axes`` attributes.

    ## Why is this bad?
    onnxruntime refuses to load the model ("Attribute 'axes' appeared multiple times"), and other
    tools disagree on which copy wins: one reads the first, another the last. The axes (or any
    other attribute) of the node mean different things to different readers, so shapeflow cannot
    vouch for its shapes either.

    ## Example
    ``Squeeze-11(x: [1, 3]) axes=[0] axes=[1]``.

    ## Fix
    Keep one copy of the attribute, the one the model's author meant.
    """

    code = "SF009"

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        for nid, names in ctx.graph.duplicate_attributes:
            counts: dict[str, int] = {}
            for name in names:
                counts[name] = counts.get(name, 0) + 1
            for name, n in counts.items():
                if n > 1:
                    yield Finding(ctx.location_of(nid), f"attribute '{name}' is given {n} times",
                                  f"keep one '{name}' attribute")
