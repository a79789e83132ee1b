"""Which version of an operator a node runs: (domain, op_type, since_version) from the opset imports."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from functools import lru_cache

from . import _schema_data
from ._onnx import onnx, onnx_dist_version_is

DEFAULT_DOMAINS = ("", "ai.onnx")

# -- Where an operator's form changes (the opset version of ai.onnx from which the new form holds) --
# Squeeze and Unsqueeze (and ReduceSum) take their axes as an input, not an attribute.
AXES_INPUT_SINCE = 13
# The other Reduce* ops take their axes as an input.
REDUCE_AXES_INPUT_SINCE = 18
# Squeeze/Unsqueeze accept negative axes (counted from the end).
NEGATIVE_AXES_SINCE = 11
# Slice takes starts/ends/axes/steps as inputs.
SLICE_INPUTS_SINCE = 10
# Shape takes start/end attributes.
SHAPE_SLICE_SINCE = 15
# Reshape takes its shape as an input.
RESHAPE_SHAPE_INPUT_SINCE = 5
# Reshape has the allowzero attribute.
RESHAPE_ALLOWZERO_SINCE = 14

# The shipped table of operator versions (schema_table.py) when it was made from the installed
# onnx, which spares the ``import onnx`` that asking onnx's registry costs; None otherwise.
_TABLE = _schema_data.SINCE if onnx_dist_version_is(_schema_data.ONNX_VERSION) else None

# The highest ai.onnx opset that the installed onnx knows; above it we cannot vouch for semantics.
MAX_KNOWN_OPSET = _schema_data.MAX_OPSET if _TABLE is not None else onnx.defs.onnx_opset_version()


def canonical_domain(domain: str) -> str:
    return "" if domain in DEFAULT_DOMAINS else domain


def opset_map(imports: Iterable[onnx.OperatorSetIdProto]) -> dict[str, int]:
    """The opset imports as {domain: version}, with ai.onnx folded into ""."""
    return {canonical_domain(o.domain): int(o.version) for o in imports}


@lru_cache(maxsize=4096)
def since_version(domain: str, op_type: str, opset: int) -> int | None:
    """The since_version of the schema that ``op_type`` resolves to at ``opset``, or None when onnx
    has no schema for it (custom domain, unknown op, or a model-local function)."""
    if _TABLE is not None:
        versions = _TABLE.get((domain, op_type))
        if versions is None:
            return None
        k = bisect_right(versions, opset)
        return versions[k - 1] if k else None
    try:
        return int(onnx.defs.get_schema(op_type, opset, domain).since_version)
    except Exception:  # onnx raises SchemaError; any failure means "not a known op"
        return None


def operator_versions() -> dict[tuple[str, str], tuple[int, ...]]:
    """(domain, op_type) -> the opsets that introduced a version of it, for every operator onnx
    defines: the shipped table, or onnx's registry when the table is not for this onnx."""
    return _TABLE if _TABLE is not None else registry_versions()


def registry_versions() -> dict[tuple[str, str], tuple[int, ...]]:
    """``operator_versions`` from onnx's schema registry (imports onnx)."""
    found: dict[tuple[str, str], set[int]] = {}
    for s in onnx.defs.get_all_schemas_with_history():
        found.setdefault((s.domain, s.name), set()).add(int(s.since_version))
    return {key: tuple(sorted(v)) for key, v in sorted(found.items())}


@lru_cache(maxsize=4096)
def schema(domain: str, op_type: str, opset: int) -> "onnx.defs.OpSchema | None":
    try:
        return onnx.defs.get_schema(op_type, opset, domain)
    except Exception:
        return None


def is_standard(domain: str) -> bool:
    return canonical_domain(domain) == ""
