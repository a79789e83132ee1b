"""SF237 zero-initial-state: an RNN/GRU/LSTM initial state that is all zeros is the omitted one."""

from __future__ import annotations

from typing import Any, NamedTuple

from .._onnx import onnx
from ..codes import INFO, Code
from ..graph import INITIALIZER
from ..passes.context import RoundContext
from ..passes.edit import Editor
from ..passes.match import Match, NoMatch, Result, not_applicable
from ..passes.pattern import DATA_INPUT, Bound, Op, exclusive_cone
from ..passes.spec import Rewrite

TensorProto = onnx.TensorProto

# The inputs of each recurrent op that are initial states (omitted: zeros).
STATE_INPUTS: dict[str, tuple[int, ...]] = {"RNN": (5,), "GRU": (5,), "LSTM": (5, 6)}
_NAMES = {5: "initial_h", 6: "initial_c"}
# Ops whose output is all zeros when the inputs listed are (the others only give shapes, indices or
# types): an element of the output is a copy of an element of those inputs, or (Cast) a zero
# converted, which is +0 in every numeric type.
ZERO_CARRYING: dict[str, tuple[int, ...] | None] = {
    "Identity": (0,), "Expand": (0,), "Slice": (0,), "Squeeze": (0,), "Unsqueeze": (0,), "Reshape": (0,),
    "Flatten": (0,), "Transpose": (0,), "Tile": (0,), "Gather": (0,), "Cast": (0,), "Concat": None,
}
# A walk back from a state visits at most this many nodes (exporters' chains have a dozen).
MAX_WALK = 64
# Element types whose all-zero bytes are the number +0 (a cast of them to the state's type too).
NUMERIC = frozenset({
    TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.INT8,
    TensorProto.UINT8, TensorProto.INT16, TensorProto.UINT16, TensorProto.INT32, TensorProto.UINT32,
    TensorProto.INT64, TensorProto.UINT64, TensorProto.BOOL,
})

_NO_STATE = not_applicable("no initial state given")


class _Plan(NamedTuple):
    indices: tuple[int, ...]  # the state inputs to omit


def zero_bits(t: TensorProto) -> str | None:
    """None when every element of ``t`` is stored as all-zero bits (+0.0, not -0.0), else why not.
    An external or segmented tensor is not read."""
    if t.data_location == TensorProto.EXTERNAL or t.HasField("segment"):
        return "stored outside the model"
    if t.data_type not in NUMERIC:
        return "not a numeric tensor"
    import numpy as np  # here, not at the top: lint imports this module and needs no numpy

    try:
        arr = onnx.numpy_helper.to_array(t)
    except Exception:  # a malformed tensor is not proven zero
        return "unreadable"
    raw = np.ascontiguousarray(arr).view(np.uint8)
    return None if not raw.any() else "holds a value other than +0"


def _constant_tensor(node: onnx.NodeProto) -> TensorProto | None:
    for a in node.attribute:
        if a.ref_attr_name:
            return None
        if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
            value: TensorProto = a.t
            return value
        if a.name in ("value_float", "value_floats", "value_int", "value_ints"):
            vals = [a.f] if a.name == "value_float" else list(a.floats) if a.name == "value_floats" else \
                [a.i] if a.name == "value_int" else list(a.ints)
            dtype = TensorProto.FLOAT if "float" in a.name else TensorProto.INT64
            return onnx.helper.make_tensor("", dtype, [len(vals)], vals)
    return None


def proven_zero(ctx: RoundContext, nid: int, name: str) -> str | None:
    """None when tensor ``name`` (read by ``nid``) is all +0 on every run, else why not: a walk back
    through ops that carry zeros (``ZERO_CARRYING``) to constants and ConstantOfShape nodes that
    are all +0."""
    sid = ctx.sid(nid)
    seen: set[str] = set()
    stack = [name]
    visited = 0
    while stack:
        t = stack.pop()
        if t in seen:
            continue
        seen.add(t)
        where = ctx.definition(sid, t)
        if where is None:
            return f"'{t}' is not defined"
        def_sid, p = where
        if p == INITIALIZER:
            if (def_sid, t) in ctx.overridable:
                return f"initializer '{t}' is also a graph input (overridable)"
            init = ctx.scope(def_sid).initializers.get(t)
            if init is None:
                return f"'{t}' is a sparse initializer"
            why = zero_bits(init)
            if why is not None:
                return f"initializer '{t}' {why}"
            continue
        if p < 0 or def_sid != sid:
            return f"'{t}' is a graph input or a tensor of an enclosing scope"
        info = ctx.info(p)
        if info.domain != "" or info.since_version is None or info.subscopes:
            return f"{ctx.display(p)} is not a standard op"
        visited += 1
        if visited > MAX_WALK:
            return f"more than {MAX_WALK} nodes build '{name}'"
        if info.has_attrs and ctx.refers_to_function_attributes(p):
            return f"{ctx.display(p)}: attributes refer to the function's attributes"
        if info.op_type == "Constant":
            value = _constant_tensor(ctx.peek(p))
            why = "holds no numeric tensor" if value is None else zero_bits(value)
            if why is not None:
                return f"{ctx.display(p)} {why}"
            continue
        if info.op_type == "ConstantOfShape":
            fill = None
            for a in ctx.peek(p).attribute:
                if a.name == "value":
                    fill = a.t
            if fill is not None:  # (absent: float +0)
                why = zero_bits(fill)
                if why is not None:
                    return f"{ctx.display(p)} {why}"
            continue
        if info.op_type not in ZERO_CARRYING:
            return f"{ctx.display(p)} is not known to carry zeros"
        data = ZERO_CARRYING[info.op_type]
        names = info.inputs if data is None else tuple(info.inputs[k] for k in data if k < len(info.inputs))
        if not names or not all(names):
            return f"{ctx.display(p)} has no data input"
        stack.extend(names)
    return None


class ZeroInitialState(Rewrite):
    """An RNN/GRU/LSTM whose initial_h (initial_c) is all zeros is the one with that input omitted.

    ## What it does
    Reports an ``RNN``, ``GRU`` or ``LSTM`` whose ``initial_h`` (or an ``LSTM``'s ``initial_c``) is
    provably all zeros on every run: built from constants or ``ConstantOfShape`` whose elements are
    all ``+0``, through ops that only copy, broadcast or convert those elements (``Expand``,
    ``Slice``, ``Unsqueeze``, ``Reshape``, ``Concat``, ``Cast``...). ``shapeflow optimize`` omits the
    input (an empty name), which the ONNX operators define as zeros, and the dead-node sweep removes
    the chain that built it, typically ``Expand(0.0, Concat(Shape(x)[0:1], [hidden]))``.

    ## Why is this bad?
    It is not wrong, but each run computes a shape, allocates and fills a zero tensor the operator
    would use anyway, and the shape arithmetic hides the recurrence from tools that read the graph.
    paddle2onnx and tf2onnx build the states this way.

    ## Example
    ``h0 = Unsqueeze(Expand(0.0, Concat(Slice(Shape(x), 0, 1), [16])), [0]);
    y, h = GRU(x, W, R, B, "", h0)`` is ``GRU(x, W, R, B)``.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` omits it. onnxruntime
    gives the same bits with the state given as +0 and omitted (checked for every direction, with
    and without ``sequence_lens``, zero-length sequences included, at sizes 0, 1, 2, 3 and larger).

    ## When it does not fire
    When an element of the state may be anything but ``+0``: a constant holding ``-0.0`` (left
    alone: it is another bit pattern, though onnxruntime 1.32 gives the same outputs), a value
    computed by arithmetic, a graph input, an initializer that is also a graph input (it can be
    overridden), a tensor of an enclosing scope, or an external-data constant (never read).
    """

    code = Code("SF237", "zero-initial-state", INFO, fixable=True)
    order = 560
    pattern = Op(tuple(STATE_INPUTS), guards=(DATA_INPUT,))

    def check(self, ctx: RoundContext, b: Bound) -> Result:
        nid = b.root
        info = ctx.info(nid)
        names = info.inputs
        given = [k for k in STATE_INPUTS[info.op_type] if k < len(names) and names[k]]
        if not given:
            return _NO_STATE
        zero: list[int] = []
        why = ""
        for k in given:
            problem = proven_zero(ctx, nid, names[k])
            if problem is None:
                zero.append(k)
            else:
                why = f"{ctx.display(nid)}: {_NAMES[k]} '{names[k]}' is not proven zero: {problem}"
        if not zero:
            return NoMatch(why)
        states = tuple(names[k] for k in zero)
        shown = " and ".join(f"{_NAMES[k]} '{names[k]}'" for k in zero)

        def message() -> str:
            return f"{ctx.display(nid)}: {shown} all zeros, omitted"

        return Match(nid, sweeps=exclusive_cone(ctx, nid, states), message=message, payload=_Plan(tuple(zero)))

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[Any]) -> None:
        for k in m.payload.indices:
            edit.set_input(m.nid, k, "")


__all__ = ["ZeroInitialState", "proven_zero", "zero_bits"]
