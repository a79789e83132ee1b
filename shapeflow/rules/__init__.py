"""The lint rules, one per file, and the registry that selects them.

Each judging rule's code, name, default severity and fixable flag are in ``shapeflow/codes.py``; a
rule class holds its check and its docstring (the docs). The SF2xx rules are made from the rewrite
specs (``rules/rewrites.py``). The hundreds group the codes: SF0xx the file and its graph, SF1xx
axes and shapes, SF2xx what ``optimize`` would rewrite.
"""

from __future__ import annotations

import warnings
from typing import Iterable, Sequence

from .. import codes
from ..codes import Code
from ..diagnostics import Diagnostic
from ..errors import DeprecatedNameWarning
from ..errors import GraphInvalidError
from ..errors import LimitExceededError
from ..errors import ShapeflowError
from .base import Finding, LintContext, Rule
from .sf001_model_unreadable import ModelUnreadable
from .sf002_graph_invalid import GraphInvalid
from .sf003_nodes_not_sorted import NodesNotSorted
from .sf004_unknown_operator import UnknownOperator
from .sf005_unsupported_version import UnsupportedVersion
from .sf006_limit_exceeded import LimitExceeded
from .sf007_unknown_fields import UnknownFields
from .sf008_unused_suppression import UnusedSuppression
from .sf009_duplicate_attribute import DuplicateAttribute
from .sf010_empty_output_name import EmptyOutputName
from .sf011_attribute_mismatch import AttributeMismatch
from .sf012_arity_mismatch import ArityMismatch
from .sf013_type_mismatch import TypeMismatch
from .sf014_invalid_attribute_value import InvalidAttributeValue
from .sf015_shape_inference_error import ShapeInferenceError
from .sf016_invalid_element_type import InvalidElementType
from .sf017_invalid_sparse_tensor import InvalidSparseTensor
from .sf018_duplicate_function import DuplicateFunction
from .sf101_axes_out_of_range import AxesOutOfRange
from .sf102_duplicate_axes import DuplicateAxes
from .sf103_squeeze_duplicate_axes import SqueezeDuplicateAxes
from .sf104_squeeze_non_unit_dim import SqueezeNonUnitDim
from .sf105_squeeze_symbolic_dim import SqueezeSymbolicDim
from .sf106_squeeze_rank_unknowable import SqueezeRankUnknowable
from .sf107_negative_axes_opset1 import NegativeAxesOpset1
from .sf108_axes_form_mismatch import AxesFormMismatch
from .sf109_axes_bad_tensor import AxesBadTensor
from .sf110_axes_not_constant import AxesNotConstant
from .sf111_unsqueeze_empty_axes import UnsqueezeEmptyAxes
from .sf112_shape_conflict import ShapeConflict
from .sf113_squeeze_empty_axes import SqueezeEmptyAxes
from .sf114_invalid_dim_value import InvalidDimValue
from .sf115_rank_above_64 import RankAbove64
from .sf116_control_flow_signature import ControlFlowSignature
from .sf117_invalid_attribute import InvalidAttribute
from .sf118_attribute_ref_type import AttributeRefType
from .sf119_attribute_ref_missing import AttributeRefMissing
from .sf120_function_opset_mismatch import FunctionOpsetMismatch
from ..rewrites import ALIASES, deprecated
from .rewrites import HINT_RULES

ALL_RULES: tuple[type[Rule], ...] = tuple(
    sorted(
        (
            ModelUnreadable, GraphInvalid, NodesNotSorted, UnknownOperator, UnsupportedVersion, LimitExceeded, UnknownFields,
            UnusedSuppression,
            AxesOutOfRange, DuplicateAxes, SqueezeDuplicateAxes, SqueezeNonUnitDim, SqueezeSymbolicDim,
            SqueezeRankUnknowable, NegativeAxesOpset1, AxesFormMismatch, AxesBadTensor, AxesNotConstant,
            UnsqueezeEmptyAxes, ShapeConflict, SqueezeEmptyAxes, InvalidDimValue, RankAbove64,
            ControlFlowSignature, InvalidAttribute,
            DuplicateAttribute, EmptyOutputName, AttributeMismatch, ArityMismatch, TypeMismatch,
            InvalidAttributeValue, ShapeInferenceError, InvalidElementType, InvalidSparseTensor, DuplicateFunction,
            AttributeRefType, AttributeRefMissing, FunctionOpsetMismatch,
            *HINT_RULES,
        ),
        key=lambda r: r.code,
    )
)

BY_CODE: dict[str, type[Rule]] = {r.code: r for r in ALL_RULES}


def _table() -> tuple[Code, ...]:
    """Every code: the judging rules' (``codes.py``) and the rewrites' (their specs). A code or a
    name used twice is a bug, caught at import."""
    table = (*codes.ALL_CODES, *(r.entry for r in HINT_RULES))  # type: ignore[attr-defined]
    for key in ("code", "name"):
        seen: dict[str, Code] = {}
        for c in table:
            other = seen.setdefault(getattr(c, key), c)
            if other is not c:
                raise ImportError(f"{key} {getattr(c, key)} is used by {other.code} and {c.code}")
    return tuple(sorted(table, key=lambda c: c.code))


ALL_CODES: tuple[Code, ...] = _table()

# Rules whose verdicts come from an exception that stops the processing of a file, not from check().
REJECTION_RULES = (ModelUnreadable, GraphInvalid, LimitExceeded)


def rule_by_code(code: str) -> type[Rule] | None:
    """A rule by its code (``SF104``, any case) or name (``squeeze-non-unit-dim``)."""
    code = code.strip()
    if code.upper() in BY_CODE:
        return BY_CODE[code.upper()]
    return next((r for r in ALL_RULES if r.name == code.lower()), None)


def rules_for_alias(name: str) -> list[type[Rule]]:
    """The rules a former name now means (``cancelling-pair``: SF201 and SF216), or ``[]``."""
    now = ALIASES.get(name.strip().lower())
    return [r for r in ALL_RULES if r.name in now] if now else []


def resolve_selector(selector: str) -> list[str]:
    """The codes a selector names: a code prefix (``SF``, ``SF1``, ``SF104``, any case), a rule
    name, or a former name (deprecated: it warns, and names every rule it now means). ``[]`` when
    it names nothing, which callers treat as a usage error (a typo in ``--ignore`` must not
    silently ignore nothing)."""
    s = selector.strip()
    if not s:
        return []
    rule = rule_by_code(s)
    if rule is not None:
        return [rule.code]
    former = rules_for_alias(s)
    if former:
        warnings.warn(deprecated(s.lower(), [r.name for r in former]), DeprecatedNameWarning, stacklevel=2)
        return [r.code for r in former]
    prefix = s.upper()
    return [r.code for r in ALL_RULES if r.code.startswith(prefix)]


def _matches(code: str, patterns: Iterable[str]) -> bool:
    return any(code in resolve_selector(p) for p in patterns)


def select_rules(select: Sequence[str] | None = None, ignore: Sequence[str] | None = None) -> list[Rule]:
    """Rules named by ``select`` (all when empty) and by none of ``ignore``; selectors are code
    prefixes or rule names."""
    chosen = []
    for r in ALL_RULES:
        if select and not _matches(r.code, select):
            continue
        if ignore and _matches(r.code, ignore):
            continue
        chosen.append(r())
    return chosen


def rejection_diagnostic(exc: ShapeflowError, file: str) -> Diagnostic:
    """The diagnostic for a file whose processing ``exc`` stopped: SF002 for an invalid graph, SF006
    for a resource limit, SF001 for everything else (the file could not be read as a model)."""
    if isinstance(exc, LimitExceededError):
        return LimitExceeded.from_error(exc, file)
    if isinstance(exc, GraphInvalidError) or exc.code == GraphInvalid.code:
        return GraphInvalid.from_error(exc, file)
    return ModelUnreadable.from_error(exc, file)


__all__ = [
    "ALL_CODES", "ALL_RULES", "BY_CODE", "REJECTION_RULES", "Finding", "LintContext", "Rule", "rejection_diagnostic",
    "resolve_selector", "rule_by_code", "rules_for_alias", "select_rules",
]
