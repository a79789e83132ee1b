from __future__ import annotations

from typing import Iterator

from ..diagnostics import Location
from .base import Finding, LintContext, Rule


class DuplicateFunction(Rule):
    """Flags two model-local functions with the same domain, name and overload.

    ## What it does
    Counts the model's functions by their identity: domain and name, and the ``overload`` field
    (IR 10 on), which tells apart functions that share a name on purpose. Any identity that
    appears twice is reported once.

    ## Why is this bad?
    onnxruntime refuses to load the model ("multiple local functions with the same implementation
    id"). Other tools keep the first definition or the last one, so a call runs different code
    depending on who reads the file. It happens when two exported modules are merged into one
    model and each brings its own copy of a helper function.

    ## Example
    Two functions ``local::F``, one computing ``Relu(x)`` and the other ``Neg(x)``.

    ## Fix
    Keep one definition, or rename one of them (or give it an ``overload`` name) and update its
    callers.
    """

    code = "SF018"

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        seen: dict[tuple[str, str, str], int] = {}
        for fn in ctx.graph.model.functions:
            key = (fn.domain, fn.name, fn.overload)
            seen[key] = seen.get(key, 0) + 1
        for (domain, name, overload), n in seen.items():
            if n > 1:
                label = f"{domain}::{name}" + (f" (overload '{overload}')" if overload else "")
                yield Finding(Location(f"{domain}::{name}"), f"function {label} is defined {n} times",
                              "keep one definition, or rename the others and their calls")
