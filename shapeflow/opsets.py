"""Which version of an operator a node runs: (domain, op_type, since_version) from the opset imports."""

from __future__ import annotations

from functools import lru_cache

import onnx
import onnx.defs

DEFAULT_DOMAINS = ("", "ai.onnx")

# The highest ai.onnx opset that the installed onnx knows; above it we cannot vouch for semantics.
MAX_KNOWN_OPSET = onnx.defs.onnx_opset_version()


def canonical_domain(domain: str) -> str:
    return "" if domain in DEFAULT_DOMAINS else domain


def opset_map(imports: "list[onnx.OperatorSetIdProto] | object") -> dict[str, int]:
    """The opset imports as {domain: version}, with ai.onnx folded into ""."""
    return {canonical_domain(o.domain): int(o.version) for o in imports}  # type: ignore[attr-defined]


@lru_cache(maxsize=4096)
def since_version(domain: str, op_type: str, opset: int) -> int | None:
    """The since_version of the schema that ``op_type`` resolves to at ``opset``, or None when onnx
    has no schema for it (custom domain, unknown op, or a model-local function)."""
    try:
        return int(onnx.defs.get_schema(op_type, opset, domain).since_version)
    except Exception:  # onnx raises SchemaError; any failure means "not a known op"
        return None


@lru_cache(maxsize=4096)
def schema(domain: str, op_type: str, opset: int) -> "onnx.defs.OpSchema | None":
    try:
        return onnx.defs.get_schema(op_type, opset, domain)
    except Exception:
        return None


def is_standard(domain: str) -> bool:
    return canonical_domain(domain) == ""
