from __future__ import annotations

from typing import Iterator


from .base import Finding, LintContext, Rule
from .sf118_attribute_ref_type import describe, ref_uses


class AttributeRefMissing(Rule):
    """Flags a call of a model-local function that leaves a required attribute of its body unset.

    ## What it does
    A node in a function body may take an attribute from the call (``axes = @axes``). When a call
    does not pass that attribute and the function declares no default for it, the body's node has
    no such attribute at that call. The rule reports it when the node's operator requires the
    attribute (the ``axes`` of an Unsqueeze before opset 13, say).

    ## Why is this bad?
    onnxruntime refuses to load the model ("Required attribute 'axes' is missing"). A tool that
    reads the body alone cannot tell what the node does at that call.

    ## Example
    ``F(x)`` with no attributes, calling a function whose body is
    ``y = Unsqueeze-11(x) <axes = @axes>``.

    ## Fix
    Pass the attribute at the call (``F<axes = [0]>(x)``), or give the function a default for it.
    """

    code = "SF119"

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        for use in ref_uses(ctx):
            if use.given is None and use.required:
                yield Finding(ctx.location_of(use.call),
                              f"no attribute '{use.ref}' is passed, and {describe(ctx, use)} requires "
                              f"'{use.attr}'",
                              f"pass '{use.ref}' at the call or give the function a default for it")
