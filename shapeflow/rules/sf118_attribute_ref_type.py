from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from .. import opsets
from .._onnx import onnx

from .base import Finding, LintContext, Rule

_TYPE_NAMES = {v: k.lower() for k, v in onnx.AttributeProto.AttributeType.items()}


@dataclass(frozen=True)
class RefUse:
    """One ``@ref`` attribute of a function body's node, resolved at one call of the function."""

    call: int  # node id of the call
    body_node: int  # node id of the body's node that holds the reference
    function: str  # "domain::name"
    attr: str  # the attribute of the body's node
    ref: str  # the caller's attribute it names
    expected: int  # AttributeProto type the body's operator takes
    required: bool  # whether the operator requires the attribute
    given: "onnx.AttributeProto | None"  # the caller's attribute, else the function's default


def ref_uses(ctx: LintContext) -> list[RefUse]:
    """Every ``@ref`` attribute of every model-local function, at every call: what the call (or
    the function's default) gives it, and what the body's operator takes. References of operators
    onnx has no schema for, and calls that pass a reference on themselves, are left out (their
    type is not known here). Computed once per model for SF118 and SF119."""
    cached = ctx.cache.get("ref_uses")
    if cached is not None:
        return cached  # type: ignore[return-value]
    g = ctx.graph
    found: list[RefUse] = []
    ctx.cache["ref_uses"] = found
    if not g.functions:
        return found
    # (function domain, name) -> [(body node, attribute, ref name, type, required)]
    refs: dict[tuple[str, str], list[tuple[int, str, str, int, bool]]] = {}
    defaults: dict[tuple[str, str], dict[str, onnx.AttributeProto]] = {}
    for key, sid in g.functions.items():
        scope = g.scopes[sid]
        for nid in scope.nodes:
            info = g.nodes[nid]
            if not info.has_attrs:
                continue
            for attr in info.peek().attribute[:]:
                if not attr.ref_attr_name:
                    continue
                opset = scope.opsets.get(info.domain)
                schema = opsets.schema(info.domain, info.op_type, opset) if opset is not None else None
                if schema is None or attr.name not in schema.attributes:
                    continue
                formal = schema.attributes[attr.name]
                kind = int(formal.type.value)  # type: ignore[attr-defined]  # a pybind11 enum; onnx's stub omits .value
                refs.setdefault(key, []).append((nid, attr.name, attr.ref_attr_name, kind, bool(formal.required)))
        if key in refs:
            fn = scope.proto
            defaults[key] = {a.name: a for a in fn.attribute_proto}
    if not refs:
        return found
    for nid, info in enumerate(g.nodes):
        if info.op_type not in {k[1] for k in refs}:
            continue
        node = info.peek()
        key = (node.domain, info.op_type)
        uses = refs.get(key)
        if uses is None:
            continue
        given: dict[str, onnx.AttributeProto] = {}
        for a in node.attribute:
            given.setdefault(a.name, a)
        for body_nid, attr, ref, expected, required in uses:
            value = given.get(ref)
            if value is not None and value.ref_attr_name:
                continue  # passed on from an enclosing function: resolved at that one's calls
            if value is None:
                value = defaults[key].get(ref)
            found.append(RefUse(nid, body_nid, f"{key[0]}::{key[1]}", attr, ref, expected, required, value))
    return found


def describe(ctx: LintContext, use: RefUse) -> str:
    body = ctx.graph.nodes[use.body_node]
    return (f"{body.op_type}-{body.since_version} '{ctx.graph.display(use.body_node)}' "
            f"of function {use.function}")


class AttributeRefType(Rule):
    """Flags a call of a model-local function that passes an attribute of the wrong type to a node of its body.

    ## What it does
    A node in a function body may take an attribute from the call (``axes = @axes``). At every call,
    the rule compares the type of the attribute the call passes (or the function's default) with
    the type the body's operator takes, e.g. ``ints`` for the ``axes`` of a Squeeze-11.

    ## Why is this bad?
    onnxruntime refuses to load the model ("Mismatched attribute type"). Tools that inline the
    function read the attribute however they like: an ``int`` axis where a list is expected may be
    read as an empty list, which for a Squeeze means "remove every dim of size 1".

    ## Example
    ``F(x) <axes = 0>`` calling a function whose body is ``y = Squeeze-11(x) <axes = @axes>``.

    ## Fix
    Pass the attribute with the type the operator takes (``<axes = [0]>``).
    """

    code = "SF118"

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        for use in ref_uses(ctx):
            if use.given is None or use.given.type == use.expected:
                continue
            have = _TYPE_NAMES.get(use.given.type, str(use.given.type))
            want = _TYPE_NAMES.get(use.expected, str(use.expected))
            yield Finding(ctx.location_of(use.call),
                          f"attribute '{use.ref}' is of type {have}, but {describe(ctx, use)} takes "
                          f"'{use.attr}' as {want}",
                          f"pass '{use.ref}' as {want}")
