"""Ops that compute, consume or rearrange shapes: Shape, Size, Gather, Slice, Concat, Reshape,
Expand, ConstantOfShape, Range, Transpose, Flatten.

These carry the *values* of shape tensors, so the Shape→Gather→Unsqueeze→Concat→Reshape chains
that exporters write end in symbolic shapes such as ``[batch, seq, 4, 16]``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .._onnx import onnx

from ..axes import AxisError, normalize_axis
from ..dims import (
    Dim, Shape, broadcast_dim, dim_add, dim_bounds, dim_floordiv, dim_max, dim_min, dim_mul, dim_sub,
    dims_equal, monomial_symbols, prove_at_least,
)
from ..tensorinfo import MAX_VALUE_ELEMS, TensorInfo
from .base import OpCall, make_value, numel, register
from .numeric import FLOAT_FORMATS, SLICE_TO_END, canonical_element, slice_range

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


def _clamp_start(d: Dim, s: Dim, step: int) -> Dim:
    """onnxruntime's start index on a dim of length ``d`` (see numeric.slice_range)."""
    if type(s) is int:
        if s == -1 and step < 0:
            return dim_sub(d, 1)  # max(d - 1, 0) clamped to d - 1 is d - 1, even for d = 0
        if s < 0:
            s = dim_add(d, s)
            return dim_max(s, 0) if step > 0 else dim_min(dim_max(s, 0), dim_sub(d, 1))
        return dim_min(s, d) if step > 0 else dim_min(s, dim_sub(d, 1))
    lo, hi = dim_bounds(s)
    if lo is not None and lo >= 0:
        return dim_min(s, d) if step > 0 else dim_min(s, dim_sub(d, 1))
    if hi is not None and hi < 0:
        s = dim_add(d, s)
        return dim_max(s, 0) if step > 0 else dim_min(dim_max(s, 0), dim_sub(d, 1))
    return None  # the sign of a computed start decides how it counts: unknown


def _clamp_end(d: Dim, e: Dim, step: int) -> Dim:
    if type(e) is int:
        if e in SLICE_TO_END:
            return d if step > 0 else -1
        if e < 0:
            return dim_max(dim_add(d, e), 0 if step > 0 else -1)
        return dim_min(e, d)
    lo, hi = dim_bounds(e)
    if lo is not None and lo >= 0:
        return dim_min(e, d)
    if hi is not None and hi < 0:
        return dim_max(dim_add(d, e), 0 if step > 0 else -1)
    return None


def _slice_len(d: Dim, start: Dim, end: Dim, step: int) -> Dim:
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
            span = dim_max(dim_sub(d, start), 0) if start >= 0 else dim_min(-start, d)
        elif end <= start and (end >= 0) == (start >= 0):
            return 0
        elif start >= 0 and end >= 0:
            span = dim_min(dim_max(dim_sub(d, start), 0), end - start)
        elif start < 0 and end < 0:
            span = dim_min(dim_max(dim_add(d, end), 0), end - start)
        elif start >= 0:  # end < 0
            span = dim_max(dim_sub(dim_add(d, end), start), 0)
        else:
            span = None
        if span is not None:
            return span if step == 1 else dim_floordiv(dim_add(span, step - 1), step)
    s = _clamp_start(d, start, step)
    e = _clamp_end(d, end, step)
    if s is None or e is None:
        return None
    if step > 0:
        return dim_max(dim_floordiv(dim_add(dim_sub(e, s), step - 1), step), 0)
    return dim_max(dim_floordiv(dim_add(dim_sub(s, e), -step - 1), -step), 0)


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
        steps: list | None = None
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
        out[a] = _slice_len(data.shape[a], s, e, st)
        spec[a] = (s, e, st)
    value = None
    if data.value is not None and numel(data.shape) == len(data.value):
        # the elements of a small static tensor (a shape vector, a pads table), axis by axis
        picks: list = [range(d) for d in data.shape]  # type: ignore[arg-type]  # every dim is an int: numel() is
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
            out.append(_concat_dim([t.shape[k] for t in known], known))  # type: ignore[index]
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


def _nonempty(shape: Shape) -> bool:
    """Whether a tensor of ``shape`` has elements for every binding (every dim provably >= 1)."""
    if shape is None:
        return False
    for d in shape:
        if type(d) is int:
            if d < 1:
                return False
        else:
            lo, _ = dim_bounds(d)
            if lo is None or lo < 1:
                return False
    return True


def _concat_dim(dims: list[Dim], inputs: list[TensorInfo]) -> Dim:
    """A non-axis dim of Concat. onnxruntime takes it from the first input with elements and checks
    only those (an empty input's other dims are ignored): the dims when they are provably equal,
    else that of an input that is never empty (every input with elements agrees with it)."""
    first = dims[0]
    if first is not None and all(dims_equal(first, d) is True for d in dims[1:]):
        return first
    picked: Dim = None
    for d, t in zip(dims, inputs):
        if d is not None and _nonempty(t.shape):
            if type(d) is int:
                return d
            picked = d if picked is None else picked
    return picked


def _product(dims: list[Dim]) -> Dim:
    total: Dim = 1
    for d in dims:
        total = dim_mul(total, d)
    return total


def _infer_minus_one(in_shape: Shape, target: list[Dim], minus_at: int, allowzero: int = 0) -> Dim:
    """The -1 of a Reshape: input numel / product of the other target dims, cancelling equal
    factors first so that ``[batch, seq, 64] -> [batch, seq, 4, -1]`` gives 16, then dividing
    what is left exactly (``[batch, 4, seq, 16] -> [4*batch, -1, 16]`` gives ``seq``).
    onnxruntime refuses a -1 when the other dims multiply to 0, so a divisor that is 0 only for
    some bindings is one where the model fails: the quotient holds wherever it runs. With
    ``allowzero=1`` it does not refuse (it makes the -1 a 1), so there the other dims must be
    provably non-zero."""
    if in_shape is None:
        return None
    num = list(in_shape)
    den = [d for k, d in enumerate(target) if k != minus_at]
    if any(d is None for d in num) or any(d is None for d in den):
        return None
    if allowzero:
        lo, _ = dim_bounds(_product(den))
        if lo is None or lo < 1:
            return None
    rest_den: list[Dim] = []
    for d in den:
        for k, n in enumerate(num):
            if dims_equal(n, d) is True:
                del num[k]
                break
        else:
            rest_den.append(d)
    divisor = _product(rest_den)
    if type(divisor) is int and divisor <= 0:
        return None
    return dim_floordiv(_product(num), divisor)


def _target_dim(t: Dim, k: int, in_shape: Shape, allowzero: int) -> tuple[Dim, bool]:
    """Output dim ``k`` for a computed (symbolic) target ``t`` and whether it is certain.

    A target that may be negative may be -1 at run time, which onnxruntime infers: unknown. With
    ``allowzero=0`` a target that is 0 at run time copies the input's dim instead: ``t`` is the
    answer when it cannot be 0, or when the input's dim is the same expression."""
    if in_shape is not None and k < len(in_shape) and dims_equal(t, in_shape[k]) is True:
        return t, True  # the input's own dim: a real dim, never -1, and a 0 copies itself
    lo, _ = dim_bounds(t)
    if lo is None or lo < 0:
        return None, True  # a computed -1 asks onnxruntime to infer the dim: not t
    if allowzero:
        return t, True
    if lo >= 1:
        return t, True
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
    out: list[Dim] = []
    minus_at = -1
    doubtful: list[int] = []  # symbolic targets that might be 0 (and then copy the input's dim)
    if allowzero and -1 in target and 0 in target:
        call.doubt()  # onnxruntime cannot infer a -1 beside a literal 0 that stays 0
    for k, t in enumerate(target):
        if type(t) is int:
            if t == 0 and not allowzero:
                out.append(in_shape[k] if in_shape is not None and k < len(in_shape) else None)
            elif t == -1:
                if minus_at >= 0:
                    call.doubt()
                    return [TensorInfo(dtype, None)]
                minus_at = k
                out.append(None)
            elif t < 0:
                call.doubt()
                return [TensorInfo(dtype, None)]
            else:
                out.append(t)
        else:
            d, certain = _target_dim(t, k, in_shape, allowzero)
            out.append(d)
            if not certain:
                doubtful.append(k)
    if doubtful and not (minus_at < 0 and len(doubtful) == 1 and _zero_forces_copy(in_shape, out, doubtful[0])):
        for k in doubtful:
            # onnxruntime copies the input's dim where the target is 0; when two targets may be 0
            # at once (batch = seq = 0 in [batch*seq, 64] -> [batch, seq, 64] gives [0, 64, 64]),
            # the exact answer is no readable expression: unknown (--assume batch>=1 restores it)
            out[k] = None
    if minus_at >= 0:
        out[minus_at] = None if doubtful else _infer_minus_one(in_shape, out, minus_at, allowzero)
        if not doubtful and call.scope == 0 and not allowzero:
            # (with allowzero=1 onnxruntime infers a -1 beside a 0 without complaint)
            _prove_nonzero(out, minus_at, in_shape)
    value = data.value if data is not None else None
    return [TensorInfo(dtype, tuple(out), value)]


def _prove_nonzero(out: list[Dim], minus_at: int, in_shape: Shape) -> None:
    """onnxruntime refuses a -1 when the other dims multiply to 0: wherever the model runs (a node
    of the main graph always runs), each symbol of that product is >= 1 (dims.prove_at_least)."""
    product = _product([d for j, d in enumerate(out) if j != minus_at])
    for name in monomial_symbols(product) or ():
        prove_at_least(name, 1)


def _zero_forces_copy(in_shape: Shape, out: list[Dim], k: int) -> bool:
    """Whether target dim ``k`` is right even where it is 0: the target's product equals the
    input's numel for every binding, and every other target dim is provably >= 1, so where ``k``
    is 0 the input is empty, and a model that runs has a 0 at the copied dim as well."""
    if in_shape is None or any(d is None for d in in_shape) or any(d is None for d in out):
        return False
    for j, d in enumerate(out):
        if j != k:
            lo, _ = dim_bounds(d)
            if (lo is None or lo < 1) and j < len(in_shape):  # (past the input's rank, 0 fails)
                return False
    return dims_equal(_product(list(in_shape)), _product(out)) is True


def broadcast_shapes(shapes: list[Shape], join: Callable[[Dim, Dim], Dim] | None = None) -> Shape:
    """Multidirectional (numpy) broadcasting of several shapes. ``join`` names the broadcast of two
    dims that broadcast_dim cannot tell (Inference.broadcast_join; None leaves it unknown)."""
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
                r = broadcast_dim(d, e)
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
            return [TensorInfo(dtype, broadcast_shapes([data.shape, (None,) * s[0]]))]
        return [TensorInfo(dtype, None)]
    if broadcast_conflict([data.shape if data else None, tuple(v)]):
        call.doubt()
    out = broadcast_shapes([data.shape if data else None, tuple(v)], broadcast_join(call))
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
    if t is not None and n is not None and n <= MAX_VALUE_ELEMS:
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
            vals = _accumulated(dtype, vals)
        return [TensorInfo(dtype, (n,), vals)]
    span = dim_sub(lim, s) if d > 0 else dim_sub(s, lim)
    if is_float:
        lo, hi = dim_bounds(span)
        if lo is None or hi is None or max(-lo, hi) > 2**53:
            return [TensorInfo(dtype, (None,))]
    step = d if d > 0 else -d
    n_sym = dim_max(dim_floordiv(dim_add(span, step - 1), step), 0)
    value = None
    if type(n_sym) is int and n_sym <= MAX_VALUE_ELEMS:
        value = tuple(dim_add(s, i * d) for i in range(n_sym))
        if is_float:
            value = _accumulated(dtype, value)
    return [TensorInfo(dtype, (n_sym,), value)]


def _accumulated(dtype: int, values: tuple[Dim, ...]) -> tuple[Dim, ...]:
    """The elements of a float Range up to the first one the type does not hold exactly (each is
    the previous plus delta, rounded: after a rounding they are no longer start + i*delta)."""
    out: list[Dim] = []
    for v in values:
        if canonical_element(dtype, v) is None:
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


def _row_major(shape: tuple, picks: list, perm: list[int] | None = None) -> list[int]:
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

