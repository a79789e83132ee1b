"""Resize and Upsample (sizes and scales), DepthToSpace and SpaceToDepth.

With ``sizes`` the output is the sizes (symbolic where shape arithmetic computes them). With
``scales`` onnxruntime computes ``int(float32(scale) * float32(d))`` in single precision, which is
``floor(d * scale)`` only while ``d * m < 2**24`` (``scale = m / 2**e``): past that, even a scale
of 1.0 rounds (``2**24 + 1`` becomes ``2**24``). A known length is therefore computed the runtime's
way, and a symbolic one only when the symbols' bounds (``--assume``) keep the product exact;
otherwise it is unknown.
"""

from __future__ import annotations

from fractions import Fraction

from .._onnx import onnx
from ..axes import AxisError, normalize_axis
from ..dims import Dim, Domain, dim_floordiv, dim_mul
from ..tensorinfo import TensorInfo
from .base import OpCall, register
from .constants import flat_values, is_external

# the bounds of the symbols' domain (--assume): without them no symbolic product is exact
from ..dims import dim_bounds as _dim_bounds

_F32_EXACT = 2**24


def _float_constant(call: OpCall, i: int) -> list[float] | None:
    """The elements of float input ``i`` when it is an initializer or a Constant (small)."""
    if not call.has_input(i):
        return None
    name = call.input_names[i]
    g = call.engine.graph
    where = g.definition(call.scope, name)
    if where is None:
        return None
    sid, producer = where
    body = g.scopes[sid].proto
    if any(getattr(v, "name", v) == name for v in getattr(body, "input", ())):
        return None  # an initializer that is also an input is only a default a caller may replace
    tensor: onnx.TensorProto | None = g.scopes[sid].initializers.get(name)
    if tensor is None and producer >= 0:
        node = g.nodes[producer]
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            for a in node.peek().attribute:
                if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
                    tensor = a.t
                elif a.name == "value_floats":
                    return [float(x) for x in a.floats]
    if tensor is None or is_external(tensor) or tensor.data_type not in (
            onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16):
        return None
    n = 1
    for d in tensor.dims:
        n *= int(d)
    if n > 64:
        return None
    try:
        flat = flat_values(tensor)
    except Exception:
        return None
    return [float(x) for x in flat] if len(flat) == n else None


def scaled_dim(d: Dim, scale: float, dom: Domain) -> Dim:
    """The runtime's ``int(float32(scale) * float32(d))``, in ``dom``."""
    import numpy as np  # with onnx, which this module needs anyway

    s32 = np.float32(scale)
    if not np.isfinite(s32) or s32 < 0:
        return None
    if type(d) is int:
        return int(np.float32(s32 * np.float32(d)))
    if d is None:
        return None
    frac = Fraction(float(s32))
    hi = _dim_bounds(d, dom)[1]
    if hi is None or hi * frac.numerator >= _F32_EXACT or hi >= _F32_EXACT:
        return None
    return dim_floordiv(dim_mul(d, frac.numerator), frac.denominator, dom)


def _axes(call: OpCall, rank: int) -> list[int] | None:
    given = call.attr_ints("axes") if call.since >= 18 else None
    if given is None:
        return list(range(rank))
    try:
        axes = [normalize_axis(a, rank) for a in given]
    except AxisError:
        return None
    return axes if len(set(axes)) == len(axes) else None


@register("Resize", "Upsample")
def resize(call: OpCall) -> list[TensorInfo | None]:
    x = call.input(0)
    dtype = x.dtype if x is not None else 0
    shape = x.shape if x is not None else None
    if shape is None:
        return [TensorInfo(dtype, None)]
    rank = len(shape)
    unknown: list[TensorInfo | None] = [TensorInfo(dtype, (None,) * rank)]
    axes = _axes(call, rank)
    if axes is None:
        return unknown
    out = list(shape)
    sizes: tuple[Dim, ...] | None = None
    scales: list[float] | None = None
    if call.op_type == "Upsample" and call.since < 9:
        attr = call.attrs.get("scales")
        scales = [float(v) for v in attr.floats] if attr is not None else None
    elif call.since < 11:  # Upsample-9/10, Resize-10: (X, scales)
        scales = _float_constant(call, 1)
    else:
        if call.has_input(3):
            sizes = call.value(3)
            if sizes is None:
                sz = call.shape(3)
                if not (sz is not None and sz == (0,)):
                    return unknown
                sizes = None
            elif len(sizes) == 0:
                sizes = None
        if sizes is None:
            if call.since >= 18 and call.attrs.get("keep_aspect_ratio_policy") is not None:
                call.doubt()  # a policy other than "stretch" goes with sizes, not scales
            scales = _float_constant(call, 2)
            if scales is None:
                return unknown
    if sizes is not None:
        policy = call.attrs.get("keep_aspect_ratio_policy") if call.since >= 18 else None
        if policy is not None and policy.s not in (b"stretch", "stretch"):
            return unknown  # the sizes are a bound there, the output depends on the aspect ratio
        if len(sizes) != len(axes):
            return unknown
        for a, v in zip(axes, sizes):
            out[a] = v
        return [TensorInfo(dtype, tuple(out))]
    if scales is None or len(scales) != len(axes):
        return unknown
    for a, sc in zip(axes, scales):
        out[a] = scaled_dim(shape[a], sc, call.domain)
    return [TensorInfo(dtype, tuple(out))]


@register("DepthToSpace", "SpaceToDepth")
def depth_space(call: OpCall) -> list[TensorInfo | None]:
    x = call.input(0)
    dtype = x.dtype if x is not None else 0
    shape = x.shape if x is not None else None
    b = call.attr_int("blocksize")
    if shape is None or len(shape) != 4 or b is None or b < 1:
        return [TensorInfo(dtype, None if shape is None else (None,) * len(shape))]
    n, c, h, w = shape
    if call.op_type == "DepthToSpace":
        # The runtime refuses a channel count that b*b does not divide.
        out = (n, dim_floordiv(c, b * b, call.domain), dim_mul(h, b), dim_mul(w, b))
    else:
        out = (n, dim_mul(c, b * b), dim_floordiv(h, b, call.domain), dim_floordiv(w, b, call.domain))
    return [TensorInfo(dtype, out)]
