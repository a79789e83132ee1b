"""The one table of what the value evaluator computes: (op, element type) pairs (issue 21).

Inference carries the elements of small tensors (ops/numeric.py). A value it states is folded
into the model by ``optimize``, so it must be the value onnxruntime computes, bit for bit. This
table lists every (op, T) whose output values inference states; ``keeps_value`` drops any other
(inference.py asks it after every rule), so an op or an element type cannot be folded before it
is listed here, and it is listed only once the differential test
(``tests/test_value_table.py``) runs it in onnxruntime over edge values (overflow, rounding,
out-of-range storage, NaN, signed zero, 0/1/2/3/large) and finds every stated element equal to
the runtime's. The test also checks that each entry is exercised and that nothing outside the
table gets a value.

``T`` is the element type the op computes in: the output's, except for the comparisons and the
logical ops (their inputs': the output is bool) and Cast/CastLike, which are listed as
(from, to) pairs. Shape and Size compute in int64 whatever they read.

Tracked float values are integers (ops/constants.py reads a float tensor only when every element
is integral), and the table holds float ops only where their integral results do not depend on
the sign of a zero input (the test feeds both): ``optimize`` writes integer and bool constants
only, so -0.0 never has to be told apart from 0.
"""

from __future__ import annotations

from typing import Sequence

from .._onnx import onnx
from ..tensorinfo import TensorInfo

TensorProto = onnx.TensorProto

I8, U8, I16, U16 = TensorProto.INT8, TensorProto.UINT8, TensorProto.INT16, TensorProto.UINT16
I32, U32, I64, U64 = TensorProto.INT32, TensorProto.UINT32, TensorProto.INT64, TensorProto.UINT64
BOOL = TensorProto.BOOL
F16, BF16, F32, F64 = TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.FLOAT, TensorProto.DOUBLE

# The element types whose values inference tracks at all.
TRACKED: frozenset[int] = frozenset({I8, U8, I16, U16, I32, U32, I64, U64, BOOL, F16, BF16, F32, F64})

_INTS = frozenset({I8, U8, I16, U16, I32, U32, I64, U64})
_ALL = TRACKED
_NOT_BF16 = TRACKED - {BF16}
_NUMBERS = _INTS | {F16, F32, F64}  # what onnxruntime's arithmetic kernels take
_SIGNED = frozenset({I8, I16, I32, I64, F16, F32, F64})
_FLOATS = frozenset({F16, F32, F64})

# op -> the element types T in which inference computes its values (see the module docstring):
# each one onnxruntime implements (at opset 19; an older opset without the kernel refuses the
# model) and the differential test found it computing what inference states.
EVALUATED: dict[str, frozenset[int]] = {
    # reading and moving elements: the values are copied, never computed
    "Constant": _ALL,
    "Identity": _ALL,
    "Squeeze": _ALL,
    "Unsqueeze": _ALL,
    "Reshape": _ALL,
    "Gather": _ALL,
    "Slice": _ALL,
    "Concat": _ALL,
    "Transpose": _ALL,
    "If": _ALL,
    "Loop": _ALL,
    "ConstantOfShape": _ALL,
    "Expand": _NOT_BF16,
    "Tile": _NOT_BF16,
    "Where": frozenset({I8, U8, I32, U32, I64, F16, F32, F64}),
    # shapes
    "Shape": frozenset({I64}),
    "Size": frozenset({I64}),
    "Range": frozenset({I16, I32, I64, F32, F64}),
    # arithmetic
    "Neg": _SIGNED,
    "Abs": _NUMBERS,
    "Floor": _FLOATS,
    "Ceil": _FLOATS,
    "Round": _FLOATS,
    "Add": _NUMBERS,
    "Sub": _NUMBERS,
    "Mul": _NUMBERS,
    "Div": _NUMBERS,
    "Mod": _NUMBERS,
    "Pow": frozenset({I32, I64, F16, F32, F64}),
    "Max": _NUMBERS - {I16, U16},
    "Min": _NUMBERS - {I16, U16},
    "Sum": _FLOATS,
    # reductions of integer shape values (tf2onnx multiplies dims with ReduceProd); the kernels
    # accumulate in T, which wraps as the exact result wrapped once does
    "ReduceProd": frozenset({I32, I64}),
    "ReduceSum": frozenset({I32, I64}),
    "ReduceMin": frozenset({I32, I64}),
    "ReduceMax": frozenset({I32, I64}),
    # comparisons and logic (T: the inputs' type)
    "Equal": _NUMBERS | {BOOL},
    "Less": _NUMBERS,
    "Greater": _NUMBERS,
    "LessOrEqual": _NUMBERS,
    "GreaterOrEqual": _NUMBERS,
    "And": frozenset({BOOL}),
    "Or": frozenset({BOOL}),
    "Xor": frozenset({BOOL}),
    "Not": frozenset({BOOL}),
}

# Cast and CastLike: the (from, to) pairs whose conversion inference states.
CASTS: frozenset[tuple[int, int]] = frozenset((a, b) for a in TRACKED for b in TRACKED)

# Ops whose T is their first input's type (the output is bool).
_BY_INPUT = frozenset({"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Not"})


def value_type(op: str, inputs: Sequence[TensorInfo | None], out: TensorInfo) -> int:
    """The element type ``op`` computes in (0 when it is not known)."""
    if op in _BY_INPUT:
        t = inputs[0] if inputs else None
        return t.dtype if t is not None else 0
    return out.dtype


def keeps_value(op: str, inputs: Sequence[TensorInfo | None], out: TensorInfo) -> bool:
    """Whether the value a rule stated for ``out`` (an output of a standard ``op`` node) is one the
    table lists, so that inference may keep it."""
    if op == "Cast" or op == "CastLike":
        t = inputs[0] if inputs else None
        return t is not None and (t.dtype, out.dtype) in CASTS
    types = EVALUATED.get(op)
    return types is not None and value_type(op, inputs, out) in types


__all__ = ["CASTS", "EVALUATED", "TRACKED", "keeps_value", "value_type"]
