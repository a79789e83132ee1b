"""Ops that compute, consume or rearrange shapes: Shape, Size, Gather, Slice, Concat, Reshape,
Expand, ConstantOfShape, Range, Transpose, Flatten.

These carry the *values* of shape tensors, so the Shape→Gather→Unsqueeze→Concat→Reshape chains
that exporters write end in symbolic shapes such as ``[batch, seq, 4, 16]``.
"""

from __future__ import annotations

from typing import Any

from collections.abc import Callable, Sequence

from .._onnx import onnx

from ..axes import AxisError, normalize_axis
from ..dims import (
    Dim, Domain, Shape, Sym, affine_symbol, broadcast_dim, dim_add, dim_bounds, dim_floordiv, dim_max, dim_min,
    dim_mul, dim_sub, dims_equal, join_pieces, prove_broadcast, rebuild, substitute, zero_forcing_symbols,
    zero_implies, zero_symbol,
)
from ..tensorinfo import MAX_VALUE_ELEMS, TensorInfo
from .base import OpCall, make_value, numel, register
from .numeric import FLOAT_FORMATS, SLICE_TO_END, canonical_element, reshape_dims, slice_range

TensorProto = onnx.TensorProto

INT64 = TensorProto.INT64


@register("Shape")
def shape(call: OpCall) -> list[TensorInfo | None]:
    s = call.shape(0)
    if s is None:
        return [TensorInfo(INT64, (None,))]
    rank = len(s)
    start, end = 0, rank
    if call.since >= 15:
        start = call.attr_int("start", 0) or 0
        end_attr = call.attr_int("end", rank)
        end = rank if end_attr is None else end_attr
        start = min(max(start + rank if start < 0 else start, 0), rank)
        end = min(max(end + rank if end < 0 else end, 0), rank)
    dims = s[start:end] if end > start else ()
    return [make_value(INT64, (len(dims),), dims)]


@register("Size")
def size(call: OpCall) -> list[TensorInfo | None]:
    s = call.shape(0)
    total: Dim = None
    if s is not None:
        total = 1
        for d in s:
            total = dim_mul(total, d)
    return [TensorInfo(INT64, (), (total,))]


@register("Gather")
def gather(call: OpCall) -> list[TensorInfo | None]:
    data, idx = call.input(0), call.input(1)
    if data is None or data.shape is None or idx is None or idx.shape is None:
        return [TensorInfo(data.dtype if data else 0, None)]
    rank = len(data.shape)
    try:
        axis = normalize_axis(call.attr_int("axis", 0) or 0, rank)
    except AxisError:
        call.doubt()
        return [None]
    out_shape = data.shape[:axis] + idx.shape + data.shape[axis + 1:]
    value = None
    if rank == 1 and data.value is not None and idx.value is not None:
        n = len(data.value)
        picked: list[Dim] = []
        for i in idx.value:
            if type(i) is not int or not -n <= i < n:
                picked = []
                break
            picked.append(data.value[i + n if i < 0 else i])
        if len(picked) == len(idx.value):
            value = tuple(picked)
    return [TensorInfo(data.dtype, out_shape, value)]


def _clamp_start(d: Dim, s: Dim, step: int, dom: Domain) -> Dim:
    """onnxruntime's start index on a dim of length ``d`` (see numeric.slice_range)."""
    if type(s) is int:
        if s == -1 and step < 0:
            return dim_sub(d, 1)  # max(d - 1, 0) clamped to d - 1 is d - 1, even for d = 0
        if s < 0:
            s = dim_add(d, s)
            return dim_max(s, 0, dom) if step > 0 else dim_min(dim_max(s, 0, dom), dim_sub(d, 1), dom)
        return dim_min(s, d, dom) if step > 0 else dim_min(s, dim_sub(d, 1), dom)
    lo, hi = dim_bounds(s, dom)
    if lo is not None and lo >= 0:
        return dim_min(s, d, dom) if step > 0 else dim_min(s, dim_sub(d, 1), dom)
    if hi is not None and hi < 0:
        s = dim_add(d, s)
        return dim_max(s, 0, dom) if step > 0 else dim_min(dim_max(s, 0, dom), dim_sub(d, 1), dom)
    return None  # the sign of a computed start decides how it counts: unknown


def _clamp_end(d: Dim, e: Dim, step: int, dom: Domain) -> Dim:
    if type(e) is int:
        if e in SLICE_TO_END:
            return d if step > 0 else -1
        if e < 0:
            return dim_max(dim_add(d, e), 0 if step > 0 else -1, dom)
        return dim_min(e, d, dom)
    lo, hi = dim_bounds(e, dom)
    if lo is not None and lo >= 0:
        return dim_min(e, d, dom)
    if hi is not None and hi < 0:
        return dim_max(dim_add(d, e), 0 if step > 0 else -1, dom)
    return None


def _slice_len(d: Dim, start: Dim, end: Dim, step: int, dom: Domain) -> Dim:
    """Length of onnxruntime's ``Slice`` of a dim ``d``: exact for ints (numeric.slice_range), and
    for symbols the same clamping written with min/max, so that ``x[-3:]`` on ``seq`` is
    ``min(3, seq)`` and ``x[2:]`` is ``max(seq - 2, 0)``, true at seq = 0, 1, 2 as well."""
    if type(d) is int and type(start) is int and type(end) is int:
        return len(slice_range(d, start, end, step))
    if d is None:
        return None
    if type(start) is int and type(end) is int and step > 0:
        # the common exporter forms, in the closed forms the clamping reduces to
        if end in SLICE_TO_END:
            span = dim_max(dim_sub(d, start), 0, dom) if start >= 0 else dim_min(-start, d, dom)
        elif end <= start and (end >= 0) == (start >= 0):
            return 0
        elif start >= 0 and end >= 0:
            span = dim_min(dim_max(dim_sub(d, start), 0, dom), end - start, dom)
        elif start < 0 and end < 0:
            span = dim_min(dim_max(dim_add(d, end), 0, dom), end - start, dom)
        elif start >= 0:  # end < 0
            span = dim_max(dim_sub(dim_add(d, end), start), 0, dom)
        else:
            span = None
        if span is not None:
            return span if step == 1 else dim_floordiv(dim_add(span, step - 1), step, dom)
    s = _clamp_start(d, start, step, dom)
    e = _clamp_end(d, end, step, dom)
    if s is None or e is None:
        return _slice_len_split(d, start, end, step, dom)
    if step > 0:
        return dim_max(dim_floordiv(dim_add(dim_sub(e, s), step - 1), step, dom), 0, dom)
    return dim_max(dim_floordiv(dim_add(dim_sub(s, e), -step - 1), -step, dom), 0, dom)


# A computed start or end whose sign depends on a symbol (``T - 1``) is split on that symbol: at
# most this many small values are worked out one by one, the rest (where the sign is fixed) at once.
_SPLIT_VALUES = 8


def _slice_len_split(d: Dim, start: Dim, end: Dim, step: int, dom: Domain) -> Dim:
    """The length of a Slice whose start or end is ``a*x + b`` of unknown sign: where ``x >= c``
    the sign is fixed and the length ``high`` is an expression; below ``c`` each value of ``x`` is
    worked out. The pieces meet in one expression when one of a few clamp forms of ``high``
    matches every piece (``x[T-1:T]`` is 1 from T = 1 and 0 at T = 0: ``min(1, T)``)."""
    for v in (start, end):
        split = _sign_split(v, dom)
        if split is None:
            continue
        x, c = split
        lo_x, hi_x = dom.ranges.get(x, (None, None))
        first = max(lo_x or 0, 0)
        if c - first > _SPLIT_VALUES or (hi_x is not None and hi_x < c):
            return None
        high = _slice_len(d, start, end, step, dom.where(x, (c, hi_x)))
        if high is None:
            return None
        lows: list[Dim] = []
        for xv in range(first, c):
            b = {x: xv}
            lows.append(_slice_len(substitute(d, b, dom), substitute(start, b, dom), substitute(end, b, dom), step, dom))
        return join_pieces(x, c, first, lows, high, dom)
    return None


def _sign_split(v: Dim, dom: Domain) -> tuple[str, int] | None:
    """``(x, c)`` when ``v`` is ``a*x + b`` whose sign is the same for every ``x >= c`` but not
    for every ``x >= 0``."""
    aff = affine_symbol(v)
    if aff is None:
        return None
    x, a, b = aff
    lo, hi = dim_bounds(v, dom)
    if (lo is not None and lo >= 0) or (hi is not None and hi < 0):
        return None
    # a > 0: v >= 0 from x = ceil(-b/a); a < 0: v < 0 from x = floor(b/-a) + 1
    return (x, -(b // a)) if a > 0 else (x, b // -a + 1)


@register("Slice")
def slice_(call: OpCall) -> list[TensorInfo | None]:
    data = call.input(0)
    if data is None or data.shape is None:
        return [TensorInfo(data.dtype if data else 0, None)]
    rank = len(data.shape)
    starts: Sequence[Dim] | None
    ends: Sequence[Dim] | None
    if call.since < 10:
        starts, ends = call.attr_ints("starts"), call.attr_ints("ends")
        axes = call.attr_ints("axes")
        steps: list[Any] | None = None
    else:
        given_starts, given_ends = call.value(1), call.value(2)
        starts = list(given_starts) if given_starts is not None else None
        ends = list(given_ends) if given_ends is not None else None
        axes = call.int_values(3) if call.has_input(3) else None
        steps = call.int_values(4) if call.has_input(4) else None
        if call.has_input(3) and axes is None or call.has_input(4) and steps is None:
            return [TensorInfo(data.dtype, (None,) * rank)]
    if starts is None or ends is None or len(starts) != len(ends):
        if axes is not None:  # the axes it slices are unknown, the others are kept
            try:
                sliced = {normalize_axis(a, rank) for a in axes}
            except AxisError:
                return [None]
            return [TensorInfo(data.dtype, tuple(None if k in sliced else d for k, d in enumerate(data.shape)))]
        return [TensorInfo(data.dtype, (None,) * rank)]
    if axes is None:
        axes = list(range(len(starts)))
    if steps is None:
        steps = [1] * len(starts)
    out = list(data.shape)
    try:
        norm_axes = [normalize_axis(a, rank) for a in axes]
    except AxisError:
        call.doubt()
        return [None]
    spec: dict[int, tuple[Dim, Dim, int]] = {}
    for a, s, e, st in zip(norm_axes, starts, ends, steps):
        if type(st) is not int or st == 0:
            if st == 0:
                call.doubt()
            return [None]
        out[a] = _slice_len(data.shape[a], s, e, st, call.domain)
        spec[a] = (s, e, st)
    value = None
    if data.value is not None and numel(data.shape) == len(data.value):
        # the elements of a small static tensor (a shape vector, a pads table), axis by axis
        picks: list[Any] = [range(d) for d in data.shape]  # type: ignore[arg-type]  # every dim is an int: numel() is
        for a, (s, e, st) in spec.items():
            if type(s) is not int or type(e) is not int:
                picks = []
                break
            picks[a] = slice_range(data.shape[a], s, e, st)  # type: ignore[arg-type]
            out[a] = len(picks[a])
        if picks or rank == 0:
            value = tuple(data.value[i] for i in _row_major(data.shape, picks))
    return [TensorInfo(data.dtype, tuple(out), value)]


@register("Concat")
def concat(call: OpCall) -> list[TensorInfo | None]:
    ins = call.inputs
    known = [t for t in ins if t is not None and t.shape is not None]
    dtype = next((t.dtype for t in ins if t is not None and t.dtype), 0)
    if len(known) != len(ins) or not known:
        rank = known[0].rank if known else None
        return [TensorInfo(dtype, None if rank is None else (None,) * rank)]
    rank = len(known[0].shape)  # type: ignore[arg-type]
    if any(len(t.shape) != rank for t in known):  # type: ignore[arg-type]
        call.doubt()
        return [TensorInfo(dtype, None)]
    try:
        # axis is required from Concat-4; Concat-1 without it concatenates on axis 1
        axis = normalize_axis(call.attr_int("axis", 1 if call.since < 4 else 0) or 0, rank)
    except AxisError:
        call.doubt()
        return [None]
    if _static_conflict(known, axis):
        call.doubt()
    out: list[Dim] = []
    for k in range(rank):
        if k == axis:
            total: Dim = 0
            for t in known:
                total = dim_add(total, t.shape[k])  # type: ignore[index]
            out.append(total)
        else:
            out.append(_concat_dim([t.shape[k] for t in known], known, call.domain))  # type: ignore[index]
    value = None
    if rank == 1 and any(t.value is not None for t in known):
        # an input whose value is unknown but whose length is known leaves only its own elements
        # unknown: Tile(x, Concat([2], ArgMax(..))) still knows its first repeat
        vals: list[Dim] = []
        for t in known:
            if t.value is not None:
                vals.extend(t.value)
            elif type(t.shape[0]) is int:  # type: ignore[index]
                vals.extend([None] * t.shape[0])  # type: ignore[index]
            else:
                vals = []
                break
        value = tuple(vals) if vals and len(vals) <= MAX_VALUE_ELEMS else None
    return [TensorInfo(dtype, tuple(out), value)]


def _static_conflict(inputs: list[TensorInfo], axis: int) -> bool:
    """Whether two inputs of a Concat have different known dims off the axis (onnx's shape
    inference refuses them even where one input is empty)."""
    for k in range(len(inputs[0].shape)):  # type: ignore[arg-type]
        if k != axis and len({t.shape[k] for t in inputs if type(t.shape[k]) is int}) > 1:  # type: ignore[index]
            return True
    return False


def _nonempty(shape: Shape, dom: Domain) -> bool:
    """Whether a tensor of ``shape`` has elements for every binding (every dim provably >= 1)."""
    if shape is None:
        return False
    for d in shape:
        if type(d) is int:
            if d < 1:
                return False
        else:
            lo, _ = dim_bounds(d, dom)
            if lo is None or lo < 1:
                return False
    return True


def _concat_dim(dims: list[Dim], inputs: list[TensorInfo], dom: Domain) -> Dim:
    """A non-axis dim of Concat. onnxruntime takes it from the first input with elements and checks
    only those (an empty input's other dims are ignored): the dims when they are provably equal,
    else that of an input that is never empty (every input with elements agrees with it)."""
    first = dims[0]
    if first is not None and all(dims_equal(first, d, dom) is True for d in dims[1:]):
        return first
    picked: Dim = None
    for d, t in zip(dims, inputs):
        if d is not None and _nonempty(t.shape, dom):
            if type(d) is int:
                return d
            picked = d if picked is None else picked
    return picked


def _product(dims: list[Dim]) -> Dim:
    total: Dim = 1
    for d in dims:
        total = dim_mul(total, d)
    return total


def _infer_minus_one(in_shape: Shape, target: list[Dim], minus_at: int, allowzero: int = 0, *,
                     dom: Domain) -> Dim:
    """The -1 of a Reshape: input numel / product of the other target dims, cancelling equal
    factors first so that ``[batch, seq, 64] -> [batch, seq, 4, -1]`` gives 16, then dividing
    what is left exactly (``[batch, 4, seq, 16] -> [4*batch, -1, 16]`` gives ``seq``).

    onnxruntime (checked by brute force, tests/test_reshape_rule.py): with ``allowzero=0`` it
    refuses a -1 when the other dims multiply to 0, so a divisor that is 0 only for some bindings
    is one where the model fails, and the quotient holds wherever it runs. With ``allowzero=1``
    and a 0 among the other dims, the input must be empty and the -1 is the product of the
    input's non-zero dims over that of the target's (``[0, 5, 64] -> [0, 5, -1, 16]`` gives 4).
    Cancelled pairs are equal, so zero together, and leave that ratio alone; what is left must
    be provably non-zero for the quotient to be the ratio at every binding."""
    if in_shape is None:
        return None
    num = list(in_shape)
    den = [d for k, d in enumerate(target) if k != minus_at]
    if any(d is None for d in num) or any(d is None for d in den):
        return None
    rest_den: list[Dim] = []
    for d in den:
        for k, n in enumerate(num):
            if dims_equal(n, d, dom) is True:
                del num[k]
                break
        else:
            rest_den.append(d)
    if allowzero and not _never_zero(_product(den), dom):
        if _product(den) == 0:
            # always the empty case: the ratio of the non-zero dims, max(d, 1) each
            return dim_floordiv(_product([dim_max(d, 1, dom) for d in num]), _product([dim_max(d, 1, dom) for d in rest_den]), dom)
        if not all(_never_zero(d, dom) for d in num + rest_den):
            return None
    divisor = _product(rest_den)
    if type(divisor) is int and divisor <= 0:
        return None
    return dim_floordiv(_product(num), divisor, dom)


def _never_zero(d: Dim, dom: Domain) -> bool:
    lo, _ = dim_bounds(d, dom)
    return lo is not None and lo >= 1


def _target_dim(t: Dim, k: int, in_shape: Shape, allowzero: int, dom: Domain) -> tuple[Dim, bool]:
    """Output dim ``k`` for a computed (symbolic) target ``t`` and whether it is certain.

    A target that may be negative may be -1 at run time, which onnxruntime infers: unknown. With
    ``allowzero=0`` a target that is 0 at run time copies the input's dim instead: ``t`` is the
    answer when it cannot be 0, when the input's dim is the same expression, or when the input's
    dim is 0 wherever ``t`` is (dims.zero_implies)."""
    if in_shape is not None and k < len(in_shape) and dims_equal(t, in_shape[k], dom) is True:
        return t, True  # the input's own dim: a real dim, never -1, and a 0 copies itself
    lo, _ = dim_bounds(t, dom)
    if lo is None or lo < 0:
        return None, True  # a computed -1 asks onnxruntime to infer the dim: not t
    if allowzero or lo >= 1:
        return t, True
    if in_shape is not None and k < len(in_shape) and zero_implies(t, in_shape[k], dom):
        return t, True  # where t is 0 so is the dim it copies (4*batch over batch): t either way
    if in_shape is not None and k >= len(in_shape):
        return t, True  # a 0 here has no input dim to copy: onnxruntime fails, so t is not 0
    return t, False


@register("Reshape")
def reshape(call: OpCall) -> list[TensorInfo | None]:
    data = call.input(0)
    dtype = data.dtype if data else 0
    in_shape = data.shape if data else None
    if call.since < 5:
        target_vals = call.attr_ints("shape")
        target: list[Dim] | None = list(target_vals) if target_vals is not None else None
    else:
        v = call.value(1)
        target = list(v) if v is not None else None
        if target is None:
            s = call.shape(1)
            if s is not None and len(s) == 1 and type(s[0]) is int:
                return [TensorInfo(dtype, (None,) * s[0])]
            return [TensorInfo(dtype, None)]
    if target is None:
        return [TensorInfo(dtype, None)]
    allowzero = (call.attr_int("allowzero", 0) or 0) if call.since >= 14 else 0
    ints = [t for t in target if type(t) is int]
    if (allowzero and -1 in ints and 0 in ints) or ints.count(-1) > 1 or any(t < -1 for t in ints):
        # onnxruntime cannot infer a -1 beside a literal 0 that stays 0, nor two -1s or another
        # negative target: whether it refuses the model at load is onnx's inference to say
        call.doubt()
    value = data.value if data is not None else None
    if in_shape is not None and all(type(d) is int for d in in_shape) and all(type(t) is int for t in target):
        exact = reshape_dims(in_shape, target, allowzero)  # type: ignore[arg-type]  # all ints: tested
        return [TensorInfo(dtype, tuple(exact) if exact is not None else (None,) * len(target), value)]
    return [TensorInfo(dtype, reshape_symbolic(in_shape, target, allowzero, call.domain,
                                               call.learn if call.scope == 0 else None), value)]


def reshape_symbolic_plain(in_shape: Shape, target: list[Dim], allowzero: int, dom: Domain,
                           learn: Callable[[Domain], None] | None) -> Shape:
    """The output shape of a Reshape of ``in_shape`` to a ``target`` with symbolic elements (None:
    not even the rank), decided in ``dom``. ``learn``: given each narrower domain the computation
    proves (a node of the main graph), which it then decides in; None: prove nothing."""
    now = [dom]

    def keep(d: Domain) -> None:
        now[0] = d
        if learn is not None:
            learn(d)

    lrn = keep if learn is not None else None
    out, doubtful, _ = _reshape_out(in_shape, target, allowzero, now[0], lrn)
    if out is None:
        return None
    if None in out:
        for x in _split_symbols(target, doubtful, out, allowzero, now[0]):
            split = _split_on_zero(in_shape, target, allowzero, out, x, now[0], lrn)
            if split.count(None) < out.count(None):
                out = split
                break
    if out.count(None) == 1 and in_shape is not None and None not in in_shape:
        # The output has the input's size wherever the model runs: one unknown dim beside dims
        # that are never 0 is the quotient, whatever its target was (a -1, a 0 that copies, a
        # value tf2onnx computed in int32 that may have wrapped, an element not known at all)
        k = out.index(None)
        if all(_never_zero(d, now[0]) for j, d in enumerate(out) if j != k):
            out[k] = _infer_minus_one(in_shape, out, k, dom=now[0])
    return tuple(out)


def reshape_symbolic(in_shape: Shape, target: list[Dim], allowzero: int, dom: Domain,
                     learn: Callable[[Domain], None] | None) -> Shape:
    """``reshape_symbolic_plain`` with a memo: a model repeats one Reshape (``[batch, seq, 8]`` to
    ``[batch*seq, 8]`` and back) thousands of times, and each took tens of microseconds of
    symbolic algebra.

    The answer depends on the arguments and on the domain's ranges (and cap), and its only effect
    is to hand ``learn`` a narrower domain. So the key holds the ranges as they are, and an answer
    is kept only when its computation proved nothing: given again, the call would compute the
    same and narrow nothing. (A call that proved something is computed again next time, in the
    narrower domain.) Only int, symbol and None elements are keys: ``True == 1`` and
    ``numpy.int64(1) == 1`` would share an entry."""
    ranges = dom.ranges
    if not MEMO or len(ranges) > _MEMO_MAX_RANGES or dom.aliases:
        return reshape_symbolic_plain(in_shape, target, allowzero, dom, learn)
    for part in (in_shape or (), target):
        for d in part:
            if d is not None and type(d) is not int and type(d) is not Sym:
                return reshape_symbolic_plain(in_shape, target, allowzero, dom, learn)
    key = (in_shape, tuple(target), allowzero, learn is not None, tuple(ranges.items()), dom.overflow_cap)
    found = _RESHAPES.get(key, _NOT_KEPT)
    if found is not _NOT_KEPT:
        return found  # type: ignore[return-value]
    learned: list[Domain] = []
    out = reshape_symbolic_plain(in_shape, target, allowzero, dom,
                                 learned.append if learn is not None else None)
    if learned:
        learn(learned[-1])  # type: ignore[misc]  # (learned is filled only when learn is given)
    else:
        if len(_RESHAPES) >= _MEMO_MAX_ENTRIES:
            _RESHAPES.clear()
        _RESHAPES[key] = out
    return out


# Whether ``reshape_symbolic`` keeps its memo (tests/test_fast_paths.py compares it with the plain
# one), the memo, and its bounds: past this many ranges in force the key would cost more than it
# saves; past this many entries it starts again (a process may infer many models).
MEMO = True
_RESHAPES: dict[tuple[Any, ...], Shape] = {}
_NOT_KEPT = object()
_MEMO_MAX_RANGES = 32
_MEMO_MAX_ENTRIES = 4096


def _split_symbols(target: list[Dim], doubtful: list[int], out: list[Dim], allowzero: int, dom: Domain) -> list[str]:
    """The symbols whose being 0 may leave dims of a Reshape unknown, the likeliest first: those of
    the targets that may be 0 (and copy), or, with ``allowzero=1``, of the -1's divisor. At most
    two are tried (each costs two more Reshape rules)."""
    exprs: list[Dim] = [target[k] for k in doubtful]
    if not exprs and allowzero and -1 in target:
        minus_at = target.index(-1)
        if out[minus_at] is None:
            exprs = [d for k, d in enumerate(out) if k != minus_at]
    first: list[str] = []
    rest: set[str] = set()
    for e in exprs:
        if type(e) is Sym:
            z = zero_symbol(e, dom)
            if z is not None and z not in first:
                first.append(z)
            rest |= e.symbols()
    return (first + sorted(rest - set(first)))[:2]


def _reshape_out(in_shape: Shape, target: list[Dim], allowzero: int, dom: Domain,
                 learn: Callable[[Domain], None] | None) -> tuple[list[Dim] | None, list[int], bool]:
    """The output dims of a Reshape of ``in_shape`` to ``target`` (None: no rank) in ``dom``, the
    targets left unknown because they may be 0 (and then copy the input's dim), and whether the
    Reshape fails for certain. ``learn`` keeps what a -1 proves (a node of the main graph)."""
    if in_shape is not None and all(type(d) is int for d in in_shape) and all(type(t) is int for t in target):
        exact = reshape_dims(in_shape, target, allowzero)  # type: ignore[arg-type]  # all ints: tested
        return (list(exact) if exact is not None else [None] * len(target)), [], exact is None
    out: list[Dim] = []
    minus_at = -1
    doubtful: list[int] = []  # symbolic targets that might be 0 (and then copy the input's dim)
    for k, t in enumerate(target):
        if type(t) is int:
            if t == 0 and not allowzero:
                out.append(in_shape[k] if in_shape is not None and k < len(in_shape) else None)
            elif t == -1:
                if minus_at >= 0:
                    return None, [], True
                minus_at = k
                out.append(None)
            elif t < 0:
                return None, [], True
            else:
                out.append(t)
        else:
            d, certain = _target_dim(t, k, in_shape, allowzero, dom)
            out.append(d)
            if not certain:
                doubtful.append(k)
    if doubtful and not (minus_at < 0 and len(doubtful) == 1 and _zero_forces_copy(in_shape, out, doubtful[0], dom)):
        for k in doubtful:
            # onnxruntime copies the input's dim where the target is 0; when two targets may be 0
            # at once (batch = seq = 0 in [batch*seq, 64] -> [batch, seq, 64] gives [0, 64, 64]),
            # the answer is not one expression: unknown here (_split_on_zero may join the cases)
            out[k] = None
    else:
        doubtful = []
    if minus_at >= 0:
        out[minus_at] = None if doubtful else _infer_minus_one(in_shape, out, minus_at, allowzero, dom=dom)
        if not doubtful and learn is not None and not allowzero:
            # (with allowzero=1 onnxruntime infers a -1 beside a 0 without complaint)
            learn(_prove_nonzero(out, minus_at, dom))
    return out, doubtful, False


def _split_on_zero(in_shape: Shape, target: list[Dim], allowzero: int, out: list[Dim],
                   x: str, dom: Domain, learn: Callable[[Domain], None] | None) -> list[Dim]:
    """Dims left unknown because symbol ``x`` may be 0 (a target ``s`` that copies the input's dim
    at ``s = 0`` in dynamo's ``Reshape(x[b, 4, s, 32], [-1, s, 32])``; a -1 beside ``s`` under
    allowzero=1): the Reshape worked out where ``x >= 1`` and at ``x = 0``, joined per dim
    (dims.join_pieces; ``4*b*min(1, s)`` for that -1). Where the Reshape fails at ``x = 0``, the
    first case holds wherever the model runs, and a node of the main graph (``learn``) proves
    ``x >= 1``."""
    lo, hi = dom.ranges.get(x, (None, None))
    if hi is not None and hi < 1:
        return out
    above = dom.where(x, (max(lo or 0, 1), hi))
    # (built again there: a dim joined earlier, s - 32*min(1, s) + 32, is s from s = 1 on)
    high, doubt, fails = _reshape_out(None if in_shape is None else tuple(rebuild(d, above) for d in in_shape),
                                      [rebuild(t, above) for t in target], allowzero, above, None)
    if high is None or doubt or fails:
        return out
    if lo is not None and lo >= 1:
        return high
    at0 = {x: 0}
    low, doubt, fails = _reshape_out(None if in_shape is None else tuple(substitute(d, at0, dom) for d in in_shape),
                                     [substitute(t, at0, dom) for t in target], allowzero, dom, None)
    if fails:
        if learn is not None:
            learn(dom.at_least(x, 1))
        return high
    if low is None or doubt:
        return out
    return [d if d is not None else join_pieces(x, 1, 0, [lw], hg, dom, indicator=True)
            for d, lw, hg in zip(out, low, high)]


def _prove_nonzero(out: list[Dim], minus_at: int, dom: Domain) -> Domain:
    """onnxruntime refuses a -1 when the other dims multiply to 0: wherever the model runs (a node
    of the main graph always runs), each symbol of that product is >= 1 (``dom`` with that)."""
    product = _product([d for j, d in enumerate(out) if j != minus_at])
    for name in zero_forcing_symbols(product, dom):
        dom = dom.at_least(name, 1)
    return dom


def _zero_forces_copy(in_shape: Shape, out: list[Dim], k: int, dom: Domain) -> bool:
    """Whether target dim ``k`` is right even where it is 0: the target's product equals the
    input's numel for every binding, and every other target dim is provably >= 1, so where ``k``
    is 0 the input is empty, and a model that runs has a 0 at the copied dim as well."""
    if in_shape is None or any(d is None for d in in_shape) or any(d is None for d in out):
        return False
    for j, d in enumerate(out):
        if j != k:
            lo, _ = dim_bounds(d, dom)
            if (lo is None or lo < 1) and j < len(in_shape):  # (past the input's rank, 0 fails)
                return False
    return dims_equal(_product(list(in_shape)), _product(out), dom) is True


def broadcast_shapes(shapes: list[Shape], dom: Domain, join: Callable[[Dim, Dim], Dim] | None = None,
                     learn: Callable[[Domain], None] | None = None) -> Shape:
    """Multidirectional (numpy) broadcasting of several shapes in ``dom``. ``join`` names the
    broadcast of two dims that broadcast_dim cannot tell (Inference.broadcast_join; None leaves it
    unknown). ``learn``: the broadcast runs wherever the model does (a node of the main graph), so
    what it proves about the symbols is kept (dims.prove_broadcast: ``Add(x[seq], w[3])`` makes seq
    1 or 3)."""
    if any(s is None for s in shapes):
        return None
    rank = max(len(s) for s in shapes)  # type: ignore[arg-type]
    out: list[Dim] = []
    for k in range(rank):
        d: Dim = 1
        for s in shapes:
            off = k - (rank - len(s))  # type: ignore[arg-type]
            if off >= 0:
                e = s[off]  # type: ignore[index]
                if learn is not None and d != e and d != 1 and e != 1:
                    proved = prove_broadcast(d, e, dom)
                    if proved is not dom:
                        dom = proved
                        learn(dom)
                r = broadcast_dim(d, e, dom)
                if r is None and join is not None and d is not None and e is not None:
                    r = join(d, e)
                d = r
        out.append(d)
    return tuple(out)


def broadcast_conflict(shapes: list[Shape]) -> bool:
    """Whether known dims of ``shapes`` cannot broadcast (two ints, neither 1, that differ)."""
    known = [s for s in shapes if s is not None]
    if len(known) < 2:
        return False
    rank = max(len(s) for s in known)
    for k in range(1, rank + 1):
        ints = {s[-k] for s in known if len(s) >= k and type(s[-k]) is int and s[-k] != 1}
        if len(ints) > 1:
            return True
    return False


def broadcast_shortcut(shapes: list[Shape]) -> Shape:
    """``broadcast_shapes`` of ``shapes`` in its common case, None when it is not that case: every
    shape known, and each the last dims of the longest one or all ones (``x + x``, ``x * w[8]``,
    ``x - mean[batch, seq, 1]`` is not). Then the answer is the longest shape: each dim broadcasts
    with itself or with 1, which proves nothing, names nothing and conflicts with nothing (the
    plain path's ``prove``, ``join`` and ``broadcast_conflict`` have nothing to do). The longest
    dims must be ints, symbols or None (the plain path converts others, or refuses them)."""
    longest: Shape = None
    for s in shapes:
        if s is None:
            return None
        if longest is None or len(s) > len(longest):
            longest = s
    if longest is None:
        return None
    rank = len(longest)
    for s in shapes:
        for d in s:  # type: ignore[union-attr]
            if d is not None and type(d) is not int and type(d) is not Sym:
                return None
        if s is not longest and s != longest[rank - len(s):]:  # type: ignore[arg-type]
            for d in s:  # type: ignore[union-attr]
                if d != 1:
                    return None
    return longest


def broadcast_join(call: OpCall) -> Callable[[Dim, Dim], Dim] | None:
    """The namer of unknown broadcasts for ``call``'s inference: only where graph inputs have
    symbols of their own (inference.infer, independent), where it keeps ``x + y`` of a mask
    ``[batch@mask]`` and a ``[batch]`` one dim that Shape reads back."""
    engine = call.engine
    return engine.broadcast_join if engine.independent else None


@register("Expand")
def expand(call: OpCall) -> list[TensorInfo | None]:
    data = call.input(0)
    dtype = data.dtype if data else 0
    v = call.value(1)
    if v is None:
        s = call.shape(1)
        if data is not None and data.shape is not None and s is not None and type(s[0]) is int:
            return [TensorInfo(dtype, broadcast_shapes([data.shape, (None,) * s[0]], call.domain))]
        return [TensorInfo(dtype, None)]
    if broadcast_conflict([data.shape if data else None, tuple(v)]):
        call.doubt()
    out = broadcast_shapes([data.shape if data else None, tuple(v)], call.domain, broadcast_join(call),
                           call.learn if call.scope == 0 else None)
    value = None
    if data is not None and data.value is not None and len(data.value) == 1 and out is not None:
        n = numel(out)
        if n is not None and n <= MAX_VALUE_ELEMS:
            value = data.value * n
    return [TensorInfo(dtype, out, value)]


@register("ConstantOfShape")
def constant_of_shape(call: OpCall) -> list[TensorInfo | None]:
    t = call.attr_tensor("value")
    dtype = t.data_type if t is not None else TensorProto.FLOAT
    v = call.value(0)
    if v is None:
        s = call.shape(0)
        rank = s[0] if s is not None and len(s) == 1 and type(s[0]) is int else None
        return [TensorInfo(dtype, None if rank is None else (None,) * rank)]
    out = tuple(v)
    value = None
    n = numel(out)
    # (a negative dim makes onnxruntime refuse the node; their product may be any size)
    if t is not None and n is not None and 0 <= n <= MAX_VALUE_ELEMS:
        from .constants import tensor_values  # local: constants imports base only

        fill = tensor_values(t)
        if fill is not None and len(fill) == 1:
            value = fill * n
    return [TensorInfo(dtype, out, value)]


@register("Range")
def range_(call: OpCall) -> list[TensorInfo | None]:
    """Length ``max(ceil((limit - start) / delta), 0)``: onnxruntime never gives a negative one.

    In a float type onnxruntime works the length out in double and builds the elements by adding
    delta to the previous one, rounding each sum to the type (checked by brute force): the length
    is stated where double holds ``limit - start`` exactly, and the elements up to the first sum
    the type does not hold (float32 2**24, 2**24 + 1, ... is 2**24, 2**24, ...)."""
    dtype = call.dtype(0)
    start, limit, delta = (call.value(i) for i in range(3))
    if start is None or limit is None or delta is None:
        return [TensorInfo(dtype, (None,))]
    s, lim, d = start[0], limit[0], delta[0]
    if type(d) is not int or d == 0:
        return [TensorInfo(dtype, (None,))]
    is_float = dtype in FLOAT_FORMATS
    if type(s) is int and type(lim) is int:
        if is_float and abs(lim - s) > 2**53:
            # (beyond 2**53 double rounds the difference, and the quotient past an integer)
            return [TensorInfo(dtype, (None,))]
        n = max(-((s - lim) // d), 0)  # ceil((lim - s) / d)
        vals: tuple[Dim, ...] | None = tuple(range(s, lim, d)) if n <= MAX_VALUE_ELEMS else None
        if vals is not None and is_float:
            vals = _accumulated(dtype, vals, call.domain)
        return [TensorInfo(dtype, (n,), vals)]
    span = dim_sub(lim, s) if d > 0 else dim_sub(s, lim)
    if is_float:
        lo, hi = dim_bounds(span, call.domain)
        if lo is None or hi is None or max(-lo, hi) > 2**53:
            return [TensorInfo(dtype, (None,))]
    step = d if d > 0 else -d
    n_sym = dim_max(dim_floordiv(dim_add(span, step - 1), step, call.domain), 0, call.domain)
    value = None
    if type(n_sym) is int and n_sym <= MAX_VALUE_ELEMS:
        value = tuple(dim_add(s, i * d) for i in range(n_sym))
        if is_float:
            value = _accumulated(dtype, value, call.domain)
    return [TensorInfo(dtype, (n_sym,), value)]


def _accumulated(dtype: int, values: tuple[Dim, ...], dom: Domain) -> tuple[Dim, ...]:
    """The elements of a float Range up to the first one the type does not hold exactly (each is
    the previous plus delta, rounded: after a rounding they are no longer start + i*delta)."""
    out: list[Dim] = []
    for v in values:
        if canonical_element(dtype, v, dom) is None:
            return tuple(out) + (None,) * (len(values) - len(out))
        out.append(v)
    return tuple(out)


@register("Transpose")
def transpose(call: OpCall) -> list[TensorInfo | None]:
    data = call.input(0)
    if data is None or data.shape is None:
        return [TensorInfo(data.dtype if data else 0, None)]
    perm = call.attr_ints("perm")
    rank = len(data.shape)
    if perm is None:
        perm = list(range(rank - 1, -1, -1))
    if sorted(perm) != list(range(rank)):
        call.doubt()
        return [None]
    out = tuple(data.shape[p] for p in perm)
    value = None
    if data.value is not None and rank >= 2 and numel(data.shape) == len(data.value):
        # exporters transpose small constant tables (TorchScript's pads chain); row-major indices
        value = tuple(data.value[i] for i in _row_major(data.shape, [range(d) for d in out], perm))  # type: ignore[arg-type]
    elif data.value is not None and rank < 2:
        value = data.value
    return [TensorInfo(data.dtype, out, value)]


def _row_major(shape: tuple[Any, ...], picks: list[Any], perm: list[int] | None = None) -> list[int]:
    """Flat indices into a row-major tensor of int ``shape``, for every output position in row-major
    order: output axis ``k`` takes the input indices ``picks[k]`` along input axis ``perm[k]``."""
    rank = len(shape)
    perm = perm if perm is not None else list(range(rank))
    strides = [1] * rank
    for k in range(rank - 2, -1, -1):
        strides[k] = strides[k + 1] * shape[k + 1]
    flat = [0]
    for k, idx in enumerate(picks):
        stride = strides[perm[k]]
        flat = [f + i * stride for f in flat for i in idx]
    return flat


@register("Flatten")
def flatten(call: OpCall) -> list[TensorInfo | None]:
    data = call.input(0)
    if data is None or data.shape is None:
        return [TensorInfo(data.dtype if data else 0, (None, None))]
    rank = len(data.shape)
    axis = call.attr_int("axis", 1)
    axis = 1 if axis is None else axis
    if axis < 0:
        axis += rank
    if not 0 <= axis <= rank:
        call.doubt()
        return [None]
    return [TensorInfo(data.dtype, (_product(list(data.shape[:axis])), _product(list(data.shape[axis:]))))]

