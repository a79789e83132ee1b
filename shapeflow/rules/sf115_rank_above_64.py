from __future__ import annotations

from operator import attrgetter
from typing import Iterator

from ..diagnostics import Location
from .base import Finding, LintContext, Rule

# Well above any real tensor (vision and language models stay under 8); a rank this high is almost
# always a runaway Unsqueeze or a corrupt shape.
HIGH_RANK = 64
_SHAPE = attrgetter("shape")


class RankAbove64(Rule):
    """Flags a tensor whose declared or inferred rank is above 64.

    ## What it does
    Reports every tensor of every graph whose shape has more than 64 dims.

    ## Why is this bad?
    No real model needs it. It is a sign of an Unsqueeze applied in a loop by a buggy exporter, or
    of a corrupt or hostile shape. Runtimes and converters with fixed-size shape buffers reject or
    mishandle such tensors, and every dim adds work to every tool that reads the model. (Ranks
    above ``--max-rank``, 1024 by default, are refused outright.)

    ## Example
    ``graph input x: float[1, 1, 1, ... 100 dims]``.

    ## Fix
    Find where the rank grows (``shapeflow infer --all``) and remove the extra dims.
    """

    code = "SF115"

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        for scope, table in zip(ctx.graph.scopes, ctx.inference.tensors):
            # the largest rank of the table first, in C: nearly every table has none above the bar
            if max(map(len, filter(None, map(_SHAPE, filter(None, table.values())))), default=0) <= HIGH_RANK:
                continue
            for name, t in table.items():
                if t is not None and t.shape is not None and len(t.shape) > HIGH_RANK:
                    yield Finding(Location(scope.path, tensor=name),
                                  f"tensor '{name}' has rank {len(t.shape)} (above {HIGH_RANK})",
                                  "find where the rank grows (`shapeflow infer --all`) and remove the extra dims")
