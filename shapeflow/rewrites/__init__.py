"""The rewrite rules in the order they are tried on each root node, and selection by name or code."""

from __future__ import annotations

from typing import Collection, Sequence

from ..errors import UsageError
from .base import RewriteRule
from .cancel_squeeze_unsqueeze import CancelSqueezeUnsqueeze
from .cancel_unsqueeze_squeeze import CancelUnsqueezeSqueeze
from .constant_node import ConstantNode
from .dead_nodes import NAME as DEAD_NODES
from .fan_out import FanOutMerge
from .fold_constant import FoldConstant
from .fold_known_value import FoldKnownValue
from .identity_element import IdentityElement
from .identity_node import IdentityNode
from .merge_concat import MergeConcat
from .merge_duplicates import MergeDuplicates
from .merge_squeeze import MergeSqueeze
from .merge_unsqueeze import MergeUnsqueeze
from .no_op_cast import NoOpCast
from .reshape_round_trip import ReshapeRoundTrip
from .reshape_target import NoOpReshape, StaticReshapeTarget
from .shape_slice import ShapeSlice
from .squeeze_non_unit import SqueezeNonUnitFix

# Priority on one root: folds first (they remove the most: a fold of the last node of a chain
# takes the whole chain with it), then cancels (which remove two nodes), merges, and shape slicing
# (its Unsqueeze may fold or cancel instead), and last the fan-out merge, which a node read by a
# single Squeeze/Unsqueeze leaves to the chain rules. On a Reshape/Expand: a fold of its value,
# else the removal of a Reshape round trip (two nodes) with the Reshape before it, else its
# removal when it changes nothing, else a constant target. On integer arithmetic: a fold, else
# the removal of an identity element.
# The clean-ups rooted at other ops come after them; merging duplicates is tried last of all
# (on a Constant, becoming an initializer comes first).
ALL_RULES: tuple[type[RewriteRule], ...] = (
    FoldConstant,
    FoldKnownValue,
    CancelUnsqueezeSqueeze,
    CancelSqueezeUnsqueeze,
    MergeUnsqueeze,
    MergeSqueeze,
    ShapeSlice,
    FanOutMerge,
    ReshapeRoundTrip,
    NoOpReshape,
    StaticReshapeTarget,
    IdentityElement,
    MergeConcat,
    ConstantNode,
    NoOpCast,
    IdentityNode,
    MergeDuplicates,
)

RULE_NAMES: tuple[str, ...] = tuple(r.name for r in ALL_RULES)

# Repairs of error-level findings: ``lint --fix`` runs them before the rewrites; ``optimize`` never
# does (it refuses a model with errors rather than repair it on the way).
FIX_RULES: tuple[type[RewriteRule], ...] = (SqueezeNonUnitFix,)


def rules_for_codes(wanted: Collection[str], *, repairs: bool = False) -> list[RewriteRule]:
    """The rewrite rules (or, with ``repairs``, the repairs) whose lint code is in ``wanted``, in
    priority order: what ``lint --fix`` runs for the codes the user's selection allows."""
    return [r() for r in (FIX_RULES if repairs else ALL_RULES) if r.code in wanted]


def resolve_rules(names: Sequence[str] | None = None) -> list[RewriteRule]:
    """Rules by name (``cancel-unsqueeze-squeeze`` or ``cancel_unsqueeze_squeeze``), in priority
    order whatever the order given; all of them for None. Unknown names are a usage error.
    The dead-node sweep is not a choice: it always cleans up after the chosen rules."""
    if names is None:
        return [r() for r in ALL_RULES]
    wanted = set()
    for raw in names:
        name = raw.strip().lower().replace("_", "-")
        if not name or name == DEAD_NODES:
            continue
        if name not in RULE_NAMES:
            raise UsageError(f"unknown rule '{raw.strip()}'; choose from {', '.join(RULE_NAMES)}")
        wanted.add(name)
    return [r() for r in ALL_RULES if r.name in wanted]
