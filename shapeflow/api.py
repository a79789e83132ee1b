"""The typed Python API, under the names of the commands."""

from __future__ import annotations

import os
from typing import Mapping

from .analysis import Analysis, analyze
from .io import load_model
from .limits import DEFAULT_LIMITS, Limits


def infer(path: str | os.PathLike[str], *, dims: Mapping[str, int] | None = None,
          limits: Limits = DEFAULT_LIMITS) -> Analysis:
    """Load ``path``, infer every tensor's shape and run the axis rules.

    Raises ``ShapeflowError`` when the model cannot be read or understood.
    """
    loaded = load_model(path, limits)
    return analyze(loaded, dims=dims, limits=limits)
