"""Shape rules, one module per op family; importing the modules registers their rules."""

from . import constants, control, conv, elementwise, fallback, shape_ops, squeeze, unsqueeze  # noqa: F401
from .base import REGISTRY, OpCall

__all__ = ["REGISTRY", "OpCall", "fallback"]
