"""Facts inference records about each Squeeze and Unsqueeze, for the lint rules to judge.

Inference does not decide what is an error; it writes down what it saw (where the axes came from,
their raw values, the input shape) and the rules in ``shapeflow.rules`` read these records.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from .dims import Dim, Domain, Shape, dim_is_one

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


@dataclass(frozen=True)
class CallFacts:
    """The facts of one run of a model-local function's body at a call site: they hold for that
    call (its input shapes and attribute values), not for every call as the generic run's do."""

    caller: int  # node id of the call
    function: int  # scope id of the function's body
    facts: tuple[AxisNode, ...]


def _fast_frozen_init(cls: type) -> None:
    """Give a frozen slots dataclass without defaults an ``__init__`` that writes the slots
    through their descriptors.

    The generated one calls ``object.__setattr__`` once per field, which makes an AxisNode cost
    about 2 µs: inference records one per Squeeze/Unsqueeze, hundreds of thousands in a large
    model. Same signature, same fields; instances stay frozen (``__setattr__`` still raises)."""
    names = [f.name for f in fields(cls)]
    setters = {f"_set_{n}": cls.__dict__[n].__set__ for n in names}
    src = (f"def __init__(self, {', '.join(names)}):\n"
           + "".join(f"    _set_{n}(self, {n})\n" for n in names))
    exec(src, setters)  # noqa: S102 - code built from the field names above, nothing external
    init = setters["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__  # type: ignore[misc]  # the dataclass's own __init__, read once
    cls.__init__ = init  # type: ignore[misc]


_fast_frozen_init(AxisNode)


# -- judgements on one Squeeze/Unsqueeze's facts, shared by the lint rules and the rewrite engine ---


def axes_rank(a: AxisNode) -> int | None:
    """The rank the axes of ``a`` are relative to: the input's for Squeeze, the output's for Unsqueeze."""
    if a.input_shape is None:
        return None
    if a.op_type == "Unsqueeze":
        if a.axes.values is None:
            return None
        return len(a.input_shape) + len(a.axes.values)
    return len(a.input_shape)


def non_unit_axes(a: AxisNode, dom: Domain) -> list[tuple[int, int, Dim]]:
    """``[(axis as written, position, dim)]`` for each axis of Squeeze ``a`` whose dim is known not
    to be 1 (an integer other than 1, an expression such as ``seq + 2``, or ``seq`` under
    ``--assume seq>=2``: decided in ``dom``), once per position. Shared by SF104, its fix (the engine's
    squeeze-non-unit-dim rewrite) and SF112 (which must not blame declared shapes for the output
    of a node that cannot run)."""
    if a.op_type != "Squeeze" or a.axes.values is None or a.input_shape is None:
        return []
    r = axes_rank(a)
    if r is None:
        return []
    out: list[tuple[int, int, Dim]] = []
    seen: set[int] = set()
    for ax in a.axes.values:
        if not -r <= ax < r:
            continue  # SF101's
        p = ax % r
        d = a.input_shape[p]
        if (d != 1 if type(d) is int else dim_is_one(d, dom) is False) and p not in seen:
            seen.add(p)
            out.append((ax, p, d))
    return out


def kept_axes(a: AxisNode, dom: Domain) -> tuple[int, ...]:
    """The axes as written, minus those on a dim known != 1: what Paddle's ``squeeze`` acts on."""
    bad = {p for _, p, _ in non_unit_axes(a, dom)}
    r = axes_rank(a) or 0
    assert a.axes.values is not None
    return tuple(ax for ax in a.axes.values if not (-r <= ax < r and ax % r in bad))
