from __future__ import annotations

from ..diagnostics import Diagnostic, Location
from ..errors import ShapeflowError
from .base import Finding, LintContext, Rule


class LimitExceeded(Rule):
    """Flags a model that exceeds one of shapeflow's resource limits.

    ## What it does
    Reports the limit hit while reading, indexing or inferring the model: file size
    (``--max-bytes``), nodes and subgraph or function bodies (``--max-nodes``), tensor rank
    (``--max-rank``), length of an axes list (``--max-axes-elems``), size of a symbolic dim
    (``--max-expr-size``) or time per file (``--timeout``). The file is rejected: ``lint`` exits
    with code 2 and checks nothing else in it.

    ## Why is this bad?
    Models reach a pre-commit hook from repositories nobody vetted. The limits keep a hostile or
    broken file (a rank of 100,000, an Unsqueeze with a million axes) from exhausting memory or
    time; a real model that is simply large needs a higher limit.

    ## Example
    A model whose Reshape produces a tensor of rank 100,001 (``--max-rank`` is 1,024).

    ## Fix
    If the model is trusted and really that large, raise the limit named in the message
    (``--max-nodes 5000000``). Otherwise the file is broken: re-export it.
    """

    code = "SF006"

    def check(self, ctx: LintContext) -> list[Finding]:
        # Limits stop the processing of a file before the rules run; nothing to find afterwards.
        return []

    @classmethod
    def from_error(cls, exc: ShapeflowError, file: str) -> Diagnostic:
        return cls.make(file, exc.message, hint="raise the limit with the flag named above if the model is trusted",
                        location=Location(node=exc.node, tensor=exc.tensor))
