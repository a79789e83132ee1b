from __future__ import annotations

from functools import lru_cache
from typing import Iterator

from .. import opsets
from ..signatures import deprecated
from .base import Finding, LintContext, Rule

# Domains whose every operator onnx has a schema for; elsewhere an op we do not know is a custom op.
_STANDARD_DOMAINS = {"": "ai.onnx", "ai.onnx.ml": "ai.onnx.ml"}
# Versions onnx marks deprecated that onnxruntime still loads (it keeps kernels of its own for them).
_STILL_LOADED = frozenset({("", "GroupNormalization", 18)})


@lru_cache(maxsize=4)
def _first_versions(domain: str) -> dict[str, int]:
    """Every operator of ``domain`` that onnx knows, with the opset that introduced it."""
    return {op: versions[0] for (d, op), versions in opsets.operator_versions().items() if d == domain}


class UnknownOperator(Rule):
    """Flags a node in the ai.onnx (or ai.onnx.ml) domain whose operator does not exist at the model's opset.

    ## What it does
    Looks up every node of a standard domain in onnx's operator schemas at the opset the model
    imports (the function's own imports inside a model-local function). A node with no schema, or
    with an empty ``op_type``, is reported, with the closest known name when there is one; so is
    an operator that the imported opset deprecates (Upsample from opset 10, Scatter from 11), which
    onnxruntime refuses as well.

    ## Why is this bad?
    No runtime can create the node: onnxruntime refuses to load the model ("Could not find an
    implementation"). A typo (``Sqeeze``) or an operator newer than the imported opset (``Gelu``
    before opset 20) are the usual causes. shapeflow treats the node as opaque, so nothing after it
    is checked either.

    ## Example
    ``y = Sqeeze(x, axes)`` in an opset-13 model.

    ## Fix
    Correct the name, raise the model's opset to one that has the operator, or move a custom
    operator to its own domain (``com.example::MyOp``) with a runtime that implements it.
    """

    code = "SF004"

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        g = ctx.graph
        scopes = g.scopes
        functions = g.functions
        gone = deprecated() - _STILL_LOADED
        gone_ops = {op for _, op, _ in gone}
        for nid, info in enumerate(g.nodes):
            if info.since_version is not None:
                if info.op_type in gone_ops and (info.domain, info.op_type, info.since_version) in gone:
                    domain = _STANDARD_DOMAINS.get(info.domain, info.domain)
                    yield Finding(ctx.location_of(nid),
                                  f"operator '{info.op_type}' is deprecated in {domain} opset "
                                  f"{scopes[info.scope].opsets.get(info.domain)} (since opset {info.since_version})",
                                  "replace it with its successor (Upsample: Resize; Scatter: ScatterElements)")
                continue
            if info.domain not in _STANDARD_DOMAINS:
                continue
            node = info.proto
            if (node.domain, node.op_type) in functions:
                continue  # a call of a model-local function that lives in a standard domain
            opset = scopes[info.scope].opsets.get(info.domain)
            if opset is None:
                continue  # the domain is not imported at all: another problem, not this one
            domain = _STANDARD_DOMAINS[info.domain]
            if not node.op_type:
                yield Finding(ctx.location_of(nid), f"node has an empty op_type ({domain} opset {opset})",
                              "give the node its operator name")
                continue
            known = _first_versions(info.domain)
            since = known.get(node.op_type)
            if since is not None:
                # A known name: either too new for this opset, or a lookup we cannot explain (say
                # nothing then: a false negative beats a false positive).
                if since > opset:
                    yield Finding(ctx.location_of(nid),
                                  f"operator '{node.op_type}' does not exist in {domain} opset {opset} "
                                  f"(it was added in opset {since})",
                                  f"import {domain} opset {since} or later, or use an older equivalent")
                continue
            import difflib  # only for a model with an unknown operator (start-up time)

            close = difflib.get_close_matches(node.op_type, sorted(known), n=1)
            hint = f"did you mean '{close[0]}'?" if close else \
                "check the name and the opset; custom operators belong in their own domain"
            yield Finding(ctx.location_of(nid), f"unknown operator '{node.op_type}' in {domain} opset {opset}", hint)
