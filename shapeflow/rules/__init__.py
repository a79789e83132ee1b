"""The lint rules, one per file, and the registry that selects them.

Codes are fixed (SPEC.md section 2): a code is never renumbered; new rules take new codes.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from .base import Finding, LintContext, Rule
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
from .sf113_squeeze_empty_axes import SqueezeEmptyAxes

ALL_RULES: tuple[type[Rule], ...] = tuple(
    sorted(
        (
            AxesOutOfRange, DuplicateAxes, SqueezeDuplicateAxes, SqueezeNonUnitDim, SqueezeSymbolicDim,
            SqueezeRankUnknowable, NegativeAxesOpset1, AxesFormMismatch, AxesBadTensor, AxesNotConstant,
            UnsqueezeEmptyAxes, SqueezeEmptyAxes,
        ),
        key=lambda r: r.code,
    )
)

BY_CODE: dict[str, type[Rule]] = {r.code: r for r in ALL_RULES}


def rule_by_code(code: str) -> type[Rule] | None:
    """A rule by its code (``SF104``) or name (``squeeze-non-unit-dim``)."""
    code = code.strip()
    if code.upper() in BY_CODE:
        return BY_CODE[code.upper()]
    return next((r for r in ALL_RULES if r.name == code), None)


def _matches(code: str, patterns: Iterable[str]) -> bool:
    return any(code.startswith(p.strip().upper()) for p in patterns if p.strip())


def select_rules(select: Sequence[str] | None = None, ignore: Sequence[str] | None = None) -> list[Rule]:
    """Rules whose code starts with one of ``select`` (all when empty) and with none of ``ignore``."""
    chosen = []
    for r in ALL_RULES:
        if select and not _matches(r.code, select):
            continue
        if ignore and _matches(r.code, ignore):
            continue
        chosen.append(r())
    return chosen


__all__ = ["ALL_RULES", "BY_CODE", "Finding", "LintContext", "Rule", "rule_by_code", "select_rules"]
