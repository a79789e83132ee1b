"""Every rule code in one table: its kebab-case name, default severity and whether ``--fix`` acts
on it (as mypy's ``errorcodes.py`` does for its codes).

The lint rules (``shapeflow/rules/``) and the rewrite rules (``shapeflow/passes/``) take their
identity from here; a rule class keeps only its docstring (the docs) and its check. Codes are
fixed (SPEC.md section 2): a code is never renumbered, new rules take new codes. The hundreds
group them: SF0xx the file and its graph, SF1xx axes and shapes, SF2xx what ``optimize`` (and
``lint --fix``) would rewrite. Ranges reserved for work in progress: SF216-SF219.
"""

from __future__ import annotations

from dataclasses import dataclass

from .diagnostics import Severity


@dataclass(frozen=True)
class Code:
    code: str  # "SF104"
    name: str  # "squeeze-non-unit-dim"
    severity: Severity  # the default; --severity and the config file may change it
    fixable: bool = False  # ``lint --fix`` has a rewrite for it
    # onnxruntime refuses to load a model with this finding (checked against an InferenceSession
    # in tests/test_trust.py and tests/test_load_validity.py). Nothing a pull request can write (a marker in the model, the
    # repository's config or baseline, a cache entry) lowers the verdict on such an error: only
    # the command line can (SPEC.md sections 7 and 8, docs/threat-model.md).
    refusal: bool = False


ERROR, WARNING, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO

MODEL_UNREADABLE = Code("SF001", "model-unreadable", ERROR, refusal=True)
GRAPH_INVALID = Code("SF002", "graph-invalid", ERROR, refusal=True)
NODES_NOT_SORTED = Code("SF003", "nodes-not-sorted", WARNING)
UNKNOWN_OPERATOR = Code("SF004", "unknown-operator", ERROR, refusal=True)
UNSUPPORTED_VERSION = Code("SF005", "unsupported-version", ERROR, refusal=True)
LIMIT_EXCEEDED = Code("SF006", "limit-exceeded", ERROR)
UNKNOWN_FIELDS = Code("SF007", "unknown-fields", WARNING)
UNUSED_SUPPRESSION = Code("SF008", "unused-suppression", INFO)
DUPLICATE_ATTRIBUTE = Code("SF009", "duplicate-attribute", ERROR, refusal=True)
EMPTY_OUTPUT_NAME = Code("SF010", "empty-output-name", ERROR, refusal=True)

# What onnxruntime checks when it loads a model (onnx's node checks, type constraints, shape
# inference, its kernels' attribute checks): a model with one of these never gets a session.
ATTRIBUTE_MISMATCH = Code("SF011", "attribute-mismatch", ERROR, refusal=True)
ARITY_MISMATCH = Code("SF012", "arity-mismatch", ERROR, refusal=True)
TYPE_MISMATCH = Code("SF013", "type-mismatch", ERROR, refusal=True)
INVALID_ATTRIBUTE_VALUE = Code("SF014", "invalid-attribute-value", ERROR, refusal=True)
SHAPE_INFERENCE_ERROR = Code("SF015", "shape-inference-error", ERROR, refusal=True)
INVALID_ELEMENT_TYPE = Code("SF016", "invalid-element-type", ERROR, refusal=True)
INVALID_SPARSE_TENSOR = Code("SF017", "invalid-sparse-tensor", ERROR, refusal=True)
DUPLICATE_FUNCTION = Code("SF018", "duplicate-function", ERROR, refusal=True)

AXES_OUT_OF_RANGE = Code("SF101", "axes-out-of-range", ERROR)
DUPLICATE_AXES = Code("SF102", "duplicate-axes", ERROR)
SQUEEZE_DUPLICATE_AXES = Code("SF103", "squeeze-duplicate-axes", WARNING)
SQUEEZE_NON_UNIT_DIM = Code("SF104", "squeeze-non-unit-dim", ERROR, fixable=True)
SQUEEZE_SYMBOLIC_DIM = Code("SF105", "squeeze-symbolic-dim", WARNING)
SQUEEZE_RANK_UNKNOWABLE = Code("SF106", "squeeze-rank-unknowable", WARNING)
NEGATIVE_AXES_OPSET1 = Code("SF107", "negative-axes-opset1", WARNING)
AXES_FORM_MISMATCH = Code("SF108", "axes-form-mismatch", ERROR, refusal=True)
AXES_BAD_TENSOR = Code("SF109", "axes-bad-tensor", ERROR)
AXES_NOT_CONSTANT = Code("SF110", "axes-not-constant", INFO)
UNSQUEEZE_EMPTY_AXES = Code("SF111", "unsqueeze-empty-axes", WARNING)
SHAPE_CONFLICT = Code("SF112", "shape-conflict", ERROR)
SQUEEZE_EMPTY_AXES = Code("SF113", "squeeze-empty-axes", WARNING)
INVALID_DIM_VALUE = Code("SF114", "invalid-dim-value", ERROR)
RANK_ABOVE_64 = Code("SF115", "rank-above-64", WARNING)
CONTROL_FLOW_SIGNATURE = Code("SF116", "control-flow-signature", ERROR, refusal=True)
INVALID_ATTRIBUTE = Code("SF117", "invalid-attribute", ERROR, refusal=True)
ATTRIBUTE_REF_TYPE = Code("SF118", "attribute-ref-type", ERROR, refusal=True)
ATTRIBUTE_REF_MISSING = Code("SF119", "attribute-ref-missing", ERROR, refusal=True)
FUNCTION_OPSET_MISMATCH = Code("SF120", "function-opset-mismatch", ERROR, refusal=True)

# One code per kind of rewrite: lint's info findings are exactly what the rewrite engine would do.
CANCELLING_PAIR = Code("SF201", "cancelling-pair", INFO, fixable=True)
MERGEABLE_CHAIN = Code("SF202", "mergeable-chain", INFO, fixable=True)
FOLDABLE_CONSTANT = Code("SF203", "foldable-constant", INFO, fixable=True)
SHAPE_SLICE = Code("SF204", "shape-slice", INFO, fixable=True)
DEAD_NODES = Code("SF205", "dead-nodes", INFO, fixable=True)
FAN_OUT_MERGE = Code("SF206", "fan-out-merge", INFO, fixable=True)
COMMON_SUBEXPRESSION = Code("SF207", "common-subexpression", INFO, fixable=True)
NO_OP_CAST = Code("SF208", "no-op-cast", INFO, fixable=True)
IDENTITY_NODE = Code("SF209", "identity-node", INFO, fixable=True)
CONSTANT_NODE = Code("SF210", "constant-node", INFO, fixable=True)
STATIC_RESHAPE_TARGET = Code("SF211", "static-reshape-target", INFO, fixable=True)
NO_OP_RESHAPE = Code("SF212", "no-op-reshape", INFO, fixable=True)
IDENTITY_ELEMENT = Code("SF213", "identity-element", INFO, fixable=True)
MERGE_CONCAT = Code("SF214", "merge-concat", INFO, fixable=True)
RESHAPE_ROUND_TRIP = Code("SF215", "reshape-round-trip", INFO, fixable=True)

ALL_CODES: tuple[Code, ...] = tuple(v for v in list(globals().values()) if isinstance(v, Code))
BY_CODE: dict[str, Code] = {c.code: c for c in ALL_CODES}
BY_NAME: dict[str, Code] = {c.name: c for c in ALL_CODES}

# The codes whose error-level findings only the command line may hide (``Code.refusal``).
REFUSAL_CODES: frozenset[str] = frozenset(c.code for c in ALL_CODES if c.refusal)

# The rewrite codes: what ``--select SF2`` / ``--ignore`` choose for ``lint --fix``.
REWRITE_CODES: frozenset[str] = frozenset(c.code for c in ALL_CODES if c.code.startswith("SF2"))


def lookup(code: str) -> Code:
    """The entry of ``code``; a KeyError names a code missing from the table."""
    try:
        return BY_CODE[code]
    except KeyError:
        raise KeyError(f"rule code {code} is not in shapeflow/codes.py") from None
