"""The codes of the judging rules in one table: kebab-case name, default severity and whether
``--fix`` acts on it (as mypy's ``errorcodes.py`` does for its codes).

The lint rules (``shapeflow/rules/``) take their identity from here; a rule class keeps only its
docstring (the docs) and its check. The rewrites (SF2xx, what ``optimize`` and ``lint --fix``
would rewrite) declare their :class:`Code` in their own spec file (``shapeflow/rewrites/``), and
the dead-node sweep its own (SF205, ``shapeflow/passes/sweep.py``): a rewrite is one file. The
whole table, both parts, is ``shapeflow.rules.ALL_CODES``, checked there for duplicates. Codes are
fixed (SPEC.md section 2): a code is never renumbered, new rules take new codes. The hundreds group
them: SF0xx the file and its graph, SF1xx axes and shapes, SF2xx rewrites (the next free one is
SF222).
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

ALL_CODES: tuple[Code, ...] = tuple(v for v in list(globals().values()) if isinstance(v, Code))
BY_CODE: dict[str, Code] = {c.code: c for c in ALL_CODES}
BY_NAME: dict[str, Code] = {c.name: c for c in ALL_CODES}

# The codes whose error-level findings only the command line may hide (``Code.refusal``).
REFUSAL_CODES: frozenset[str] = frozenset(c.code for c in ALL_CODES if c.refusal)


def lookup(code: str) -> Code:
    """The entry of ``code``; a KeyError names a code missing from the table."""
    try:
        return BY_CODE[code]
    except KeyError:
        raise KeyError(f"rule code {code} is not in shapeflow/codes.py") from None
