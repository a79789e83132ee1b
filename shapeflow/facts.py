"""Facts inference records about each Squeeze and Unsqueeze, for the lint rules to judge.

Inference does not decide what is an error; it writes down what it saw (where the axes came from,
their raw values, the input shape) and the rules in ``shapeflow.rules`` read these records.
"""

from __future__ import annotations

from dataclasses import dataclass

from .dims import Shape

# Where a node's axes came from.
AXES_ATTRIBUTE = "attribute"
AXES_INITIALIZER = "initializer"
AXES_CONSTANT = "constant"  # a Constant node
AXES_COMPUTED = "computed"  # shape arithmetic that inference evaluated
AXES_RUNTIME = "runtime"  # an input whose value is not known before run time
AXES_EXTERNAL = "external"  # an initializer stored as external data (never read)
AXES_ABSENT = "absent"


@dataclass(frozen=True, slots=True)
class AxesInfo:
    source: str  # one of the AXES_* constants above
    values: tuple[int, ...] | None  # raw values as written (flattened), when known
    attr_present: bool = False
    input_present: bool = False
    dtype: int | None = None  # element type of an axes input
    rank: int | None = None  # rank of an axes input (1 expected; 0 tolerated by onnxruntime)
    count: int | None = None  # number of axes when known even if the values are not


@dataclass(frozen=True, slots=True)
class AxisNode:
    """One Squeeze or Unsqueeze node as inference saw it."""

    nid: int  # DAG node id
    graph: str  # graph path
    node: str  # display name (name or #index)
    op_type: str  # "Squeeze" | "Unsqueeze"
    since_version: int
    input: str
    output: str
    input_shape: Shape
    output_shape: Shape
    axes: AxesInfo
    # Axes normalised against the relevant rank, sorted and deduplicated; None when the axes or
    # the rank are unknown, or an axis is out of range.
    normalized: tuple[int, ...] | None
