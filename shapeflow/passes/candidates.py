"""What the rewrites would do to a model, listed without changing it (lint's SF2xx findings)."""

from __future__ import annotations

import gc
import time
from typing import Collection, Sequence

from ..errors import LimitExceededError
from ..graph import ModelGraph
from ..inference import Inference
from ..limits import deadline
from .context import RoundContext
from .dispatch import Dispatch, Place, resolve_places
from .match import Match
from .report import Candidate
from .spec import Rewrite


def find_candidates(graph: ModelGraph, inference: Inference, rewrites: Sequence[Rewrite], *,
                    strict: bool = False, codes: Collection[str] | None = None,
                    blocked: Collection[Place] = ()) -> list[Candidate]:
    """What ``rewrites`` (in priority order) would rewrite in this model, one candidate per root
    node (the rewrite that would fire first there), in scope and file order. Nothing is changed.

    ``codes`` keeps only the candidates of rewrites with those codes (rewrites after the last such
    one on a root are not tried). Roots at ``blocked`` places (the caller's nodes with
    error-level findings) are left out."""
    ctx = RoundContext.build(graph, inference, strict)
    ctx.claims = False
    chosen = list(rewrites)
    if codes is not None:
        chosen = chosen[:max((k + 1 for k, r in enumerate(chosen) if _code(r) in codes), default=0)]
    dispatch = Dispatch(chosen)
    blocked_ids = resolve_places(inference, blocked)
    out: list[Candidate] = []
    facts = ctx.facts
    # A plan entry per root (every node, with a rewrite rooted at ANY_OP): on a large model the
    # cyclic collector would walk the whole index again and again (as in ``rewrite_model``).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    # the file's --timeout holds here too: a rule's match may cost more than a node's worth (lint's
    # rules phase checks the clock only between rules, and this search is one of them)
    limits = inference.limits
    at = deadline(limits)
    try:
        for k, (nid, tried) in enumerate(dispatch.plan(ctx, latest_first=False)):
            if not k & 0xFF and time.monotonic() > at:
                raise LimitExceededError("timeout", f"{limits.timeout:g} s", "--timeout", file=graph.path)
            if nid in blocked_ids:
                continue
            for rule in tried:
                r = rule.match(ctx, nid)
                if type(r) is Match:
                    code = _code(rule)
                    if codes is None or code in codes:
                        message = r.text + (f" ({r.note})" if r.note else "")
                        out.append(Candidate(rule.name, code, nid, message, facts.get(nid)))
                    break
    finally:
        if gc_was_enabled:
            gc.enable()
    ctx.release()
    return out


def _code(rule: Rewrite) -> str | None:
    return rule.code.code if rule.code is not None else None


__all__ = ["find_candidates"]
