"""Shape rules, one module per op family; importing the modules registers their rules."""

from . import (  # noqa: F401
    constants, control, conv, einsum, elementwise, fallback, normalization, resize, shape_ops, signal, squeeze,
    tile_pad, topk, unsqueeze,
)
from .base import REGISTRY, OpCall

__all__ = ["REGISTRY", "OpCall", "fallback"]
