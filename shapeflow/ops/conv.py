"""Sliding-window ops: Conv, ConvTranspose, MaxPool/AveragePool/LpPool and the global pools.

The output length of one spatial axis follows onnxruntime's CPU kernels, which the tests check at
small and large lengths. With ``L`` the input length, ``k`` the kernel, ``s`` the stride, ``d`` the
dilation, ``pb``/``pe`` the pads at the two ends and ``dk = d*(k-1) + 1``:

* Conv with explicit pads (``NOTSET``) or ``VALID``: ``floor((L + pb + pe - dk) / s) + 1``. The
  runtime refuses a window that does not fit (``L + pb + pe < dk``), so the formula holds whenever
  the model runs.
* ``SAME_UPPER`` / ``SAME_LOWER``: ``ceil(L / s)``.
* pools without ``ceil_mode`` divide with truncation and accept a window that overhangs the
  padded input (a length-1 axis under a 2-wide, stride-2 MaxPool gives 1, not 0):
  ``trunc(span / s) + 1`` with ``span = L + pb + pe - dk``, which is the floor form above when
  ``span >= 0`` for every ``L`` (``pb + pe >= dk``) or ``s == 1``, and otherwise needs ``max``.
* pools with ``ceil_mode``: ``ceil((L + pb + pe - dk) / s) + 1``, minus one when the last window
  would start past the input and its leading pad: ``min(that, ceil((L + pb) / s))``, which is the
  first form whenever ``pe + s - 1 < dk``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._onnx import onnx
from ..dims import BASE, Dim, Domain, Shape, dim_add, dim_floordiv, dim_max, dim_min, dim_mul, dim_sub, require_at_least, \
    simplest
from ..tensorinfo import TensorInfo
from .base import OpCall, register

if TYPE_CHECKING:
    from ..graph import NodeInfo

_NOTSET, _VALID, _SAME_UPPER, _SAME_LOWER = "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"


def _auto_pad(call: OpCall) -> str | None:
    a = call.attrs.get("auto_pad")
    if a is None:
        return _NOTSET
    mode = a.s.decode("utf-8", "replace") if isinstance(a.s, bytes) else str(a.s)
    return mode if mode in (_NOTSET, _VALID, _SAME_UPPER, _SAME_LOWER) else None


def _ceil_div(n: Dim, s: int, dom: Domain) -> Dim:
    return dim_floordiv(dim_add(n, s - 1), s, dom)


def window_out(length: Dim, k: int, s: int, d: int, pb: int, pe: int, mode: str, ceil_mode: bool,
               truncating: bool, dom: Domain = BASE) -> Dim:
    """Output length of one sliding-window axis (see the module docstring), decided in ``dom``.
    ``truncating``: the runtime accepts a window that overhangs the padded input and divides with
    truncation (pools); otherwise it refuses it (Conv), so floor division holds whenever the model
    runs."""
    if length is None or k < 1 or s < 1 or d < 1:
        return None
    if mode in (_SAME_UPPER, _SAME_LOWER):
        # With a dilation the runtime pads for the undilated kernel, then slides the dilated one
        # (pools), or refuses the node (Conv).
        return _ceil_div(length, s, dom) if d == 1 else None
    if mode == _VALID:
        pb = pe = 0
    dk = d * (k - 1) + 1
    span = dim_sub(dim_add(length, pb + pe), dk)
    if not ceil_mode and not truncating:
        return dim_add(dim_floordiv(span, s, dom), 1)
    if not ceil_mode:
        if type(span) is int:
            # The runtime divides with truncation: a window that overhangs by less than a stride
            # still gives one output.
            return (-(-span // s) if span < 0 else span // s) + 1
        c = pb + pe - dk
        if s == 1 or c >= 0:  # truncation and floor agree: the span is a multiple of 1, or >= 0
            return dim_add(dim_floordiv(span, s, dom), 1)
        # trunc(x/s) == floor(max(x, 0)/s) - floor(max(-x, 0)/s); the second term is 0 while
        # x >= -(s-1), which holds for every length when c does.
        out = dim_add(dim_floordiv(dim_max(span, 0, dom), s, dom), 1)
        if c < 1 - s:
            out = dim_sub(out, dim_floordiv(dim_max(dim_sub(0, span), 0, dom), s, dom))
        return simplest(out, dom)
    out = dim_add(_ceil_div(span, s, dom), 1)
    if type(length) is int and type(out) is int:
        # The last window must start inside the input or its leading pad.
        return out - 1 if (out - 1) * s >= length + pb else out
    if pe + s - 1 < dk:  # the end pad is too short for the last window ever to start past the input
        return out
    # Windows start at i*s - pb for i < out; the runtime keeps those that start before L, and with
    # every pad below the kernel (which it requires) at most the last one goes:
    # min(out, ceil((L + pb)/s)).
    return simplest(dim_min(out, _ceil_div(dim_add(length, pb), s, dom), dom), dom)


def _spatial_attr(call: OpCall, name: str, n: int, default: int) -> list[int] | None:
    v = call.attr_ints(name)
    if v is None:
        return [default] * n
    return v if len(v) == n else None


def _window_shape(call: OpCall, x: Shape, kernel: list[int] | None, lead: tuple[Dim, ...],
                  ceil_mode: bool, truncating: bool, has_dilations: bool = True) -> Shape:
    """``lead`` followed by the windowed spatial dims of ``x`` (rank known), unknown where the
    attributes are unusable."""
    if x is None:
        return None
    n = len(x) - 2
    if n < 0:
        return None
    unknown = lead + (None,) * n
    mode = _auto_pad(call)
    if kernel is None or len(kernel) != n or mode is None:
        return unknown
    strides = _spatial_attr(call, "strides", n, 1)
    dilations = _spatial_attr(call, "dilations", n, 1) if has_dilations else [1] * n
    pads = _spatial_attr(call, "pads", 2 * n, 0) if n else []
    if strides is None or dilations is None or pads is None:
        return unknown
    if mode != _NOTSET and call.has_attr("pads") and mode != _VALID:
        pads = [0] * (2 * n)  # ignored by the runtime under SAME_*
    if any(p < 0 for p in pads):
        return unknown
    dom = call.domain
    out = [window_out(x[2 + i], kernel[i], strides[i], dilations[i], pads[i], pads[n + i], mode, ceil_mode,
                      truncating, dom) for i in range(n)]
    return lead + tuple(out)


@register("Conv")
def conv(call: OpCall) -> list[TensorInfo | None]:
    x, w = call.input(0), call.input(1)
    dtype = x.dtype if x is not None else (w.dtype if w is not None else 0)
    xs = x.shape if x is not None else None
    ws = w.shape if w is not None else None
    if xs is None:
        return [TensorInfo(dtype, None if ws is None else (None,) * len(ws))]
    channels: Dim = ws[0] if ws is not None and ws else None
    kernel = call.attr_ints("kernel_shape")
    if kernel is None and ws is not None:
        k = ws[2:]
        kernel = list(k) if all(type(d) is int for d in k) else None  # type: ignore[arg-type]
    lead = (xs[0] if xs else None, channels)
    if call.scope == 0 and kernel is not None:
        _prove_window_fits(call, xs, kernel)
    blank = len(xs) < 2 or xs[1] is None or ws is None or len(ws) < 2 or ws[1] is None
    if call.scope == 0 and blank and call.attr_int("group", 1) == 1 and _fed(call, 1):
        # onnxruntime refuses input channels other than W's; but not when W is a constant: its
        # default optimisations rewrite such a 2-D Conv to the NCHWc layout, which pads the input's
        # channels to the block with zeros and checks nothing ([1, 4, 2, 2] against [16, 16, 1, 1])
        call.same_dims((0, 1), (1, 1))
    return [TensorInfo(dtype, _window_shape(call, xs, kernel, lead, False, False))]


def _fed(call: OpCall, i: int) -> bool:
    """Input ``i`` (main graph) depends on the values of a graph input that has no default, so
    onnxruntime cannot fold it to a constant. An initializer (not also an input), a Shape or Size
    of a tensor with no symbolic dim (onnxruntime folds it when it knows the dims), or anything
    computed from those only, may be one; so may a call of a function (it is inlined)."""
    names = call.input_names
    if i >= len(names) or not names[i]:
        return False
    g = call.engine.graph
    scope = g.scopes[0]
    tensors = call.engine.tensors[0]
    overridable = g.model.ir_version >= 4
    seen: dict[str, bool] = {}
    stack = [names[i]]
    while stack:  # an explicit walk: chains may be long
        name = stack[-1]
        if name in seen:
            stack.pop()
            continue
        nid = scope.producer.get(name)
        if nid is None or nid < 0:
            seen[name] = name in scope.inputs and (overridable or name not in scope.initializers)
            stack.pop()
            continue
        info = g.nodes[nid]
        if info.op_type in ("Shape", "Size") and info.domain == "":
            t = tensors.get(info.inputs[0]) if info.inputs else None
            seen[name] = t is not None and t.shape is not None and any(
                d is not None and type(d) is not int for d in _shape_slice(info, t.shape))
            stack.pop()
            continue
        if info.domain not in ("", "ai.onnx") or info.subscopes or (info.domain, info.op_type) in g.functions:
            seen[name] = False  # a function (inlined) or a subgraph: not looked into
            stack.pop()
            continue
        todo = [n for n in info.inputs if n and n not in seen]
        if todo:
            stack.extend(todo)
            continue
        seen[name] = any(seen[n] for n in info.inputs if n)
        stack.pop()
    return seen[names[i]]


def _shape_slice(info: NodeInfo, shape: tuple[Dim, ...]) -> tuple[Dim, ...]:
    """The dims a Shape node reads (its start and end, clamped as the runtime does)."""
    if info.op_type != "Shape":
        return shape
    attrs = {a.name: a.i for a in info.peek().attribute if a.name in ("start", "end")}
    r = len(shape)
    lo, hi = attrs.get("start", 0), attrs.get("end", r)
    lo, hi = (lo + r if lo < 0 else lo), (hi + r if hi < 0 else hi)
    return shape[max(0, min(lo, r)):max(0, min(hi, r))]


def _prove_window_fits(call: OpCall, x: tuple[Dim, ...], kernel: list[int]) -> None:
    """onnxruntime refuses a Conv whose dilated kernel is longer than the padded input, so
    wherever the model runs (a main-graph node always runs) each spatial length is at least that:
    a fact about the length's symbol (``samples >= 10``) that keeps later dims exact."""
    n = len(x) - 2
    if n != len(kernel) or _auto_pad(call) not in (_NOTSET, _VALID):
        return
    dilations = _spatial_attr(call, "dilations", n, 1)
    pads = _spatial_attr(call, "pads", 2 * n, 0) if _auto_pad(call) == _NOTSET else [0] * (2 * n)
    if dilations is None or pads is None:
        return
    for i in range(n):
        extent = dilations[i] * (kernel[i] - 1) + 1
        call.learn(require_at_least(dim_add(x[2 + i], pads[i] + pads[n + i]), extent, call.domain))


@register("ConvTranspose")
def conv_transpose(call: OpCall) -> list[TensorInfo | None]:
    x, w = call.input(0), call.input(1)
    dtype = x.dtype if x is not None else (w.dtype if w is not None else 0)
    xs = x.shape if x is not None else None
    ws = w.shape if w is not None else None
    if xs is None or len(xs) < 2:
        return [TensorInfo(dtype, None)]
    n = len(xs) - 2
    group = call.attr_int("group", 1) or 1
    channels: Dim = dim_mul(ws[1], group) if ws is not None and len(ws) >= 2 else None
    lead = (xs[0], channels)
    unknown = lead + (None,) * n
    kernel = call.attr_ints("kernel_shape")
    if kernel is None and ws is not None:
        k = ws[2:]
        kernel = list(k) if all(type(d) is int for d in k) else None  # type: ignore[arg-type]
    output_shape = call.attr_ints("output_shape")
    if output_shape is not None:
        # The spatial size, whatever the pads (the runtime derives them from it).
        if len(output_shape) != n or any(d < 0 for d in output_shape):
            return [TensorInfo(dtype, unknown)]
        return [TensorInfo(dtype, lead + tuple(output_shape))]
    mode = _auto_pad(call)
    strides = _spatial_attr(call, "strides", n, 1)
    dilations = _spatial_attr(call, "dilations", n, 1)
    pads = _spatial_attr(call, "pads", 2 * n, 0)
    out_pad = _spatial_attr(call, "output_padding", n, 0)
    if (kernel is None or len(kernel) != n or mode is None or strides is None or dilations is None
            or pads is None or out_pad is None):
        return [TensorInfo(dtype, unknown)]
    out: list[Dim] = []
    for i in range(n):
        length = xs[2 + i]
        dk = dilations[i] * (kernel[i] - 1) + 1
        if mode in (_SAME_UPPER, _SAME_LOWER):
            # The runtime pads by stride*(L-1) + output_padding + dk - stride*L when that is
            # positive (the output is then stride*L); it never pads by a negative amount.
            if out_pad[i] + dk - strides[i] >= 0:
                out.append(dim_mul(length, strides[i]))
                continue
            pb = pe = 0
        else:
            pb, pe = (0, 0) if mode == _VALID else (pads[i], pads[n + i])
        # stride*(L - 1) + output_padding + dk - pads
        out.append(dim_add(dim_mul(dim_sub(length, 1), strides[i]), out_pad[i] + dk - pb - pe))
    return [TensorInfo(dtype, lead + tuple(out))]


def _pool_has(call: OpCall, what: str) -> bool:
    """Whether this version of the pool takes ``dilations`` / ``ceil_mode`` (older ones ignore
    them)."""
    op, v = call.op_type, call.since
    if what == "ceil_mode":
        return (op in ("MaxPool", "AveragePool") and v >= 10) or (op == "LpPool" and v >= 18)
    return (op == "MaxPool" and v >= 10) or (op == "AveragePool" and v >= 19) or (op == "LpPool" and v >= 18)


@register("MaxPool", "AveragePool", "LpPool")
def pool(call: OpCall) -> list[TensorInfo | None]:
    x = call.input(0)
    dtype = x.dtype if x is not None else 0
    xs = x.shape if x is not None else None
    ceil_mode = bool(call.attr_int("ceil_mode", 0)) if _pool_has(call, "ceil_mode") else False
    dil = _pool_has(call, "dilations")
    if xs is None or len(xs) < 2:
        shape = None
    else:
        shape = _window_shape(call, xs, call.attr_ints("kernel_shape"), (xs[0], xs[1]), ceil_mode, True, dil)
    outs: list[TensorInfo | None] = [TensorInfo(dtype, shape)]
    if call.op_type == "MaxPool" and len(call.output_names) > 1:
        outs.append(TensorInfo(onnx.TensorProto.INT64, shape))
    return outs


@register("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")
def global_pool(call: OpCall) -> list[TensorInfo | None]:
    x = call.input(0)
    dtype = x.dtype if x is not None else 0
    xs = x.shape if x is not None else None
    if xs is None or len(xs) < 2:
        return [TensorInfo(dtype, None)]
    return [TensorInfo(dtype, (xs[0], xs[1]) + (1,) * (len(xs) - 2))]
