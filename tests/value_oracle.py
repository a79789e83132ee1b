"""The differential oracle of the value table (shapeflow/ops/evaluated.py), issue 21.

For every op the table lists and every element type (Cast: every (from, to) pair), ``cases``
builds models whose inputs are constants taken from edge values of that type (0, 1, 2, 3, -1, the
type's extremes, overflow and rounding borders, values a narrower type cannot hold, NaN, +-inf,
+-0.0, fractions), in every form the runtime treats apart (a scalar operand beside a vector: Pow
squares a scalar exponent of 2 by multiplying), and ``check`` runs each model in onnxruntime
(in a worker process: an integer division crashes it) and in shapeflow's inference, and compares
every element shapeflow states with the runtime's, bit for bit (as numbers for float types, whose
tracked values are integers; see the table's docstring). A model onnxruntime refuses to load for
an implementation it lacks is "unsupported"; one that fails to run is split until the failing
elements are found, and for those shapeflow must state nothing.

    python tests/value_oracle.py            # one line per (op, type): the evaluator's report
    python tests/value_oracle.py Pow Sum    # only these ops
"""

from __future__ import annotations

import itertools
import math
import random
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))
import shapearith  # noqa: E402

from shapeflow.graph import build_graph  # noqa: E402
from shapeflow.inference import infer  # noqa: E402
from shapeflow.io import load_model_bytes  # noqa: E402
from shapeflow.ops.evaluated import TRACKED  # noqa: E402

OPSET = 19
INTS = (TP.INT8, TP.UINT8, TP.INT16, TP.UINT16, TP.INT32, TP.UINT32, TP.INT64, TP.UINT64)
FLOATS = (TP.FLOAT16, TP.BFLOAT16, TP.FLOAT, TP.DOUBLE)
# (significand bits, largest finite value)
FLOAT_FORMATS = {TP.FLOAT16: (11, 65504.0), TP.BFLOAT16: (8, float((2**8 - 1) * 2**120)),
                 TP.FLOAT: (24, float((2**24 - 1) * 2**104)), TP.DOUBLE: (53, float((2**53 - 1) * 2**971))}
CHUNK = 32  # elements per node: float constants are read when they have at most 64 elements


def type_name(t: int) -> str:
    return TP.DataType.Name(t)


def int_range(t: int) -> tuple[int, int]:
    info = np.iinfo(helper.tensor_dtype_to_np_dtype(t))
    return int(info.min), int(info.max)


def edges(t: int, small: bool = False) -> list[Any]:
    """Edge values of element type ``t`` (Python ints for integer types, floats for float types)."""
    if t == TP.BOOL:
        return [0, 1]
    if t in INTS:
        lo, hi = int_range(t)
        bits = int(np.iinfo(helper.tensor_dtype_to_np_dtype(t)).bits)
        if small:
            vals = [0, 1, 2, 3, -1, hi, lo, hi - 1, 2 ** (bits // 2)]
        else:
            vals = [0, 1, 2, 3, 5, 7, 64, -1, -2, -3, -7, hi, hi - 1, lo, lo + 1, 2 ** (bits // 2) + 1,
                    2 ** (bits // 2), 2 ** (bits - 2) + 1]
            if bits == 64:
                vals += [2**31, 2**32 + 3, 2**53 + 1, 3**39, -(2**53) - 1]
        out: list[Any] = []
        for v in vals:
            if lo <= v <= hi and v not in out:
                out.append(v)
        return out
    p, largest = FLOAT_FORMATS[t]
    if small:
        return [0.0, -0.0, 1.0, -1.0, 3.0, float(2**p - 1), float(2**p), 0.5, float("nan")]
    return [0.0, -0.0, 1.0, 2.0, 3.0, -1.0, -2.0, -3.0, 5.0, 7.0, 64.0, float(2**p - 1), float(2**p),
            float(2**p + 2), float(-(2**p)), float(2 ** (p + 1)), largest, -largest, 0.5, -1.5, 2.5,
            float("inf"), float("-inf"), float("nan")]


def tensor(name: str, t: int, values: Sequence[Any], shape: Sequence[int] | None = None) -> onnx.TensorProto:
    """An initializer of element type ``t`` (raw data; bfloat16 as onnx's helper stores it)."""
    dims = [len(values)] if shape is None else list(shape)
    if t == TP.BFLOAT16:
        return helper.make_tensor(name, t, dims, [float(v) for v in values])
    with np.errstate(over="ignore"):  # (a float too large for float16 is stored as inf, on purpose)
        arr = np.array(values, dtype=helper.tensor_dtype_to_np_dtype(t)).reshape(dims)
    return numpy_helper.from_array(arr, name)


# ================================================================================================
# Cases: a builder makes one node (or a few) from a list of elements
# ================================================================================================

@dataclass
class Built:
    nodes: list[onnx.NodeProto]
    inits: list[onnx.TensorProto]
    out: str  # the tensor whose value is compared
    dtype: int  # its element type
    subgraph: bool = False  # the node has a body (If, Loop): the model needs IR 4+ anyway


Builder = Callable[[str, Sequence[Any]], Built]  # (node name prefix, elements) -> Built


@dataclass
class Group:
    """Elements checked by one builder; ``label`` says which form (vector/scalar operands...)."""

    label: str
    builder: Builder
    elements: list[Any]
    chunk: int = CHUNK


def _binary(op: str, t: int, t2: int, out_t: int, form: str, attrs: dict[str, Any]) -> Builder:
    def build(p: str, els: Sequence[Any]) -> Built:
        a = [e[0] for e in els]
        b = [e[1] for e in els]
        if form == "scalar-right":
            b = b[:1]
        elif form == "scalar-left":
            a = a[:1]
        ta = tensor(p + "a", t, a, [] if form == "scalar-left" else None)
        tb = tensor(p + "b", t2, b, [] if form == "scalar-right" else None)
        return Built([helper.make_node(op, [p + "a", p + "b"], [p + "y"], **attrs)], [ta, tb], p + "y", out_t)

    return build


def _variadic(op: str, t: int, n: int, scalar_at: int | None) -> Builder:
    def build(p: str, els: Sequence[Any]) -> Built:
        inits = []
        for k in range(n):
            col = [e[k] for e in els]
            if k == scalar_at:
                inits.append(tensor(f"{p}a{k}", t, col[:1], []))
            else:
                inits.append(tensor(f"{p}a{k}", t, col))
        node = helper.make_node(op, [x.name for x in inits], [p + "y"])
        return Built([node], inits, p + "y", t)

    return build


def _unary(op: str, t: int, out_t: int, attrs: dict[str, Any], scalar: bool = False) -> Builder:
    def build(p: str, els: Sequence[Any]) -> Built:
        x = tensor(p + "x", t, list(els)[:1] if scalar else list(els), [] if scalar else None)
        return Built([helper.make_node(op, [p + "x"], [p + "y"], **attrs)], [x], p + "y", out_t)

    return build


def _cast_like(t: int, to: int) -> Builder:
    def build(p: str, els: Sequence[Any]) -> Built:
        x = tensor(p + "x", t, list(els))
        like = tensor(p + "l", to, [0])
        return Built([helper.make_node("CastLike", [p + "x", p + "l"], [p + "y"])], [x, like], p + "y", to)

    return build


def _where(t: int) -> Builder:
    def build(p: str, els: Sequence[Any]) -> Built:
        c = tensor(p + "c", TP.BOOL, [e[0] for e in els])
        x = tensor(p + "x", t, [e[1] for e in els])
        y = tensor(p + "y_", t, [e[2] for e in els])
        return Built([helper.make_node("Where", [p + "c", p + "x", p + "y_"], [p + "y"])], [c, x, y], p + "y", t)

    return build


def _i64(name: str, values: Sequence[int], scalar: bool = False) -> onnx.TensorProto:
    return tensor(name, TP.INT64, list(values), [] if scalar else None)


def _moves(t: int) -> dict[str, list[Group]]:
    """The ops that copy elements: each moves the edge values of ``t`` somewhere."""
    vals = edges(t)[:12]
    n = len(vals)

    def one(op: str, make: Callable[[str, list[Any]], tuple[list[onnx.NodeProto], list[onnx.TensorProto]]],
            subgraph: bool = False) -> list[Group]:
        def build(p: str, els: Sequence[Any]) -> Built:
            nodes, inits = make(p, list(els))
            return Built(nodes, inits, p + "y", t, subgraph)

        return [Group(op, build, list(vals), chunk=n)]

    def body_const(p: str, els: list[Any], name: str) -> onnx.GraphProto:
        c = helper.make_node("Constant", [], [name], value=tensor(name + "v", t, els))
        return helper.make_graph([c], p + "body", [], [helper.make_tensor_value_info(name, t, None)])

    def loop_body(p: str, els: list[Any]) -> onnx.GraphProto:
        vi = helper.make_tensor_value_info
        nodes = [helper.make_node("Identity", [p + "cin"], [p + "cout"]),
                 helper.make_node("Constant", [], [p + "k"], value=tensor(p + "kv", t, els))]
        return helper.make_graph(nodes, p + "lbody", [vi(p + "it", TP.INT64, []), vi(p + "cin", TP.BOOL, []),
                                                       vi(p + "carry", t, None)],
                                 [vi(p + "cout", TP.BOOL, []), vi(p + "k", t, None)])

    return {
        "Identity": one("Identity", lambda p, e: ([helper.make_node("Identity", [p + "x"], [p + "y"])],
                                                  [tensor(p + "x", t, e)])),
        "Gather": one("Gather", lambda p, e: ([helper.make_node("Gather", [p + "x", p + "i"], [p + "y"], axis=0)],
                                              [tensor(p + "x", t, e), _i64(p + "i", [0, -1, n - 2, 1 % n])])),
        "Slice": one("Slice", lambda p, e: ([helper.make_node("Slice", [p + "x", p + "s", p + "e", p + "a", p + "st"],
                                                              [p + "y"])],
                                            [tensor(p + "x", t, e), _i64(p + "s", [-2]), _i64(p + "e", [-(2**63)]),
                                             _i64(p + "a", [0]), _i64(p + "st", [-2])])),
        "Concat": one("Concat", lambda p, e: ([helper.make_node("Concat", [p + "x", p + "z"], [p + "y"], axis=0)],
                                              [tensor(p + "x", t, e), tensor(p + "z", t, e[:3])])),
        "Reshape": one("Reshape", lambda p, e: ([helper.make_node("Reshape", [p + "x", p + "s"], [p + "y"])],
                                                [tensor(p + "x", t, e), _i64(p + "s", [2, -1])])),
        "Expand": one("Expand", lambda p, e: ([helper.make_node("Expand", [p + "x", p + "s"], [p + "y"])],
                                              [tensor(p + "x", t, e[:1], []), _i64(p + "s", [3])])),
        "Tile": one("Tile", lambda p, e: ([helper.make_node("Tile", [p + "x", p + "r"], [p + "y"])],
                                          [tensor(p + "x", t, e), _i64(p + "r", [2])])),
        "Transpose": one("Transpose", lambda p, e: ([helper.make_node("Transpose", [p + "x"], [p + "y"], perm=[1, 0])],
                                                    [tensor(p + "x", t, e, [2, len(e) // 2])])),
        "Squeeze": one("Squeeze", lambda p, e: ([helper.make_node("Squeeze", [p + "x", p + "a"], [p + "y"])],
                                                [tensor(p + "x", t, e, [1, len(e)]), _i64(p + "a", [0])])),
        "Unsqueeze": one("Unsqueeze", lambda p, e: ([helper.make_node("Unsqueeze", [p + "x", p + "a"], [p + "y"])],
                                                    [tensor(p + "x", t, e), _i64(p + "a", [-1])])),
        "Constant": one("Constant", lambda p, e: ([helper.make_node("Constant", [], [p + "y"],
                                                                    value=tensor(p + "v", t, e))], [])),
        "ConstantOfShape": [Group("ConstantOfShape", _fill(t), edges(t), chunk=1)],
        "If": one("If", lambda p, e: ([helper.make_node("If", [p + "c"], [p + "y"],
                                                        then_branch=body_const(p + "t", e, p + "tv"),
                                                        else_branch=body_const(p + "e", e[::-1], p + "ev"))],
                                      [tensor(p + "c", TP.BOOL, [1], [])]), subgraph=True),
        "Loop": one("Loop", lambda p, e: ([helper.make_node("Loop", [p + "m", p + "c", p + "k0"], [p + "y"],
                                                            body=loop_body(p, e))],
                                          [_i64(p + "m", [2], True), tensor(p + "c", TP.BOOL, [1], []),
                                           tensor(p + "k0", t, e)]), subgraph=True),
    }


def _fill(t: int) -> Builder:
    def build(p: str, els: Sequence[Any]) -> Built:
        node = helper.make_node("ConstantOfShape", [p + "s"], [p + "y"], value=tensor(p + "v", t, [els[0]]))
        return Built([node], [_i64(p + "s", [2])], p + "y", t)

    return build


def _shape_ops() -> dict[str, list[Group]]:
    groups: dict[str, list[Group]] = {"Shape": [], "Size": []}
    for src in sorted(TRACKED):
        def shape_of(p: str, els: Sequence[Any], src: int = src) -> Built:
            start, end = els[0]
            attrs = {} if start is None else {"start": start, **({} if end is None else {"end": end})}
            x = tensor(p + "x", src, [0] * 6, [1, 2, 3])
            return Built([helper.make_node("Shape", [p + "x"], [p + "y"], **attrs)], [x], p + "y", TP.INT64)

        def size_of(p: str, els: Sequence[Any], src: int = src) -> Built:
            x = tensor(p + "x", src, [0] * (els[0][0] * 2), [els[0][0], 2])
            return Built([helper.make_node("Size", [p + "x"], [p + "y"])], [x], p + "y", TP.INT64)

        ranges = [(None, None), (1, None), (-1, None), (0, 2), (-5, 9), (2, 1)]
        groups["Shape"].append(Group(f"Shape of {type_name(src)}", shape_of, ranges, chunk=1))
        groups["Size"].append(Group(f"Size of {type_name(src)}", size_of, [(0,), (3,)], chunk=1))
    return groups


def _range(t: int) -> list[Group]:
    def build(p: str, els: Sequence[Any]) -> Built:
        s, lim, d = els[0]
        return Built([helper.make_node("Range", [p + "s", p + "l", p + "d"], [p + "y"])],
                     [tensor(p + "s", t, [s], []), tensor(p + "l", t, [lim], []), tensor(p + "d", t, [d], [])],
                     p + "y", t)

    triples: list[tuple[Any, Any, Any]] = []
    if t == TP.BOOL:
        triples = [(0, 1, 1)]
    elif t in INTS:
        lo, hi = int_range(t)
        cand = [(0, 5, 1), (5, 0, -2), (0, 0, 1), (3, 10, 4), (-3, 3, 2), (lo, lo + 3, 1), (hi - 3, hi, 1),
                (hi - 2, hi, 2), (lo, hi, max(1, hi // 2)), (hi, lo, min(-1, lo // 2)), (0, hi, max(1, hi // 3)),
                (lo + 1, hi, hi), (hi, lo + 1, lo + 1), (0, 2**62 + 1, 2**62), (-(2**62) - 1, 2**62, 2**62),
                (1, 2**53 + 3, 2**52), (lo, hi, hi), (hi, lo, lo), (7, 2, 3), (2, 7, -1)]
        triples = [c for c in cand if all(lo <= v <= hi for v in c) and c[2] != 0]
    else:
        p_, largest = FLOAT_FORMATS[t]
        big = float(2**p_)
        triples = [(0.0, 5.0, 1.0), (5.0, 0.0, -2.0), (0.0, 0.0, 1.0), (-3.0, 3.0, 2.0), (big - 3, big + 2, 1.0),
                   (big - 2, big + 4, 2.0), (0.0, 2.5, 1.0), (0.5, 3.0, 1.0), (0.0, 3.0, 0.5), (-0.0, 2.0, 1.0),
                   (big, big + 8, 4.0), (-big, -big + 3, 1.0), (big * 2 - 4, big * 2, 4.0), (0.0, big, big / 4),
                   (float("nan"), 3.0, 1.0), (0.0, float("inf"), float("inf")), (1.0, 1e30, 1e29),
                   # each element is the previous plus delta, rounded to the type; the length is
                   # worked out in double (2**60 + 3 is 2**60 there)
                   (big, big + 8, 1.0), (big + 2, big + 10, 1.0), (big - 2, big + 6, 1.0), (big, big - 6, -1.0),
                   (-(2.0**60), 3.0, 2.0**59), (-(2.0**60), 2.0**59 + 256, 2.0**59), (0.0, 2.0**62, 2.0**60),
                   (-(2.0**100), 2.0**100, 2.0**99), (-big, big + 2, big / 2)]
    return [Group("Range", build, list(triples), chunk=1)]


def _pairs(a: Sequence[Any], b: Sequence[Any]) -> list[tuple[Any, Any]]:
    return list(itertools.product(a, b))


def _binary_groups(op: str, t: int, out_t: int, rights: Sequence[Any] | None = None, t2: int | None = None,
                   attrs: dict[str, Any] | None = None, tag: str = "") -> list[Group]:
    left = edges(t)
    right = list(rights) if rights is not None else edges(t)
    t2 = t if t2 is None else t2
    attrs = attrs or {}
    pairs = _pairs(left, right)
    label = f"{op}{tag}"
    groups = [Group(f"{label} vector-vector", _binary(op, t, t2, out_t, "vector", attrs), pairs)]
    # one node per scalar operand: the runtime has a path of its own for a scalar
    for b in right:
        groups.append(Group(f"{label} vector-scalar", _binary(op, t, t2, out_t, "scalar-right", attrs),
                            [(a, b) for a in left], chunk=len(left)))
    for a in left:
        groups.append(Group(f"{label} scalar-vector", _binary(op, t, t2, out_t, "scalar-left", attrs),
                            [(a, b) for b in right], chunk=len(right)))
    return groups


def _variadic_groups(op: str, t: int) -> list[Group]:
    small = edges(t, small=True)
    rng = random.Random(21)
    groups = [Group(f"{op} of 1", _variadic(op, t, 1, None), [(v,) for v in edges(t)])]
    for n in (2, 3, 4):
        combos = list(itertools.product(small, repeat=n))
        if len(combos) > 400:
            combos = rng.sample(combos, 400)
        groups.append(Group(f"{op} of {n}", _variadic(op, t, n, None), combos))
        groups.append(Group(f"{op} of {n}, one scalar", _variadic(op, t, n, n - 1),
                            [c for c in combos if c[n - 1] == small[min(3, len(small) - 1)]], chunk=400))
    if t in FLOATS:
        # rounding after each addition: 2**p + 1 + 1 is 2**p
        p, _ = FLOAT_FORMATS[t]
        big = float(2**p)
        extra = [(big, 1.0, 1.0), (1.0, 1.0, big), (big, -big, 1.0), (1.0, big, -big), (big, 1.0, -1.0),
                 (big - 1, 1.0, 1.0), (big, 2.0, 1.0, 1.0)]
        for n in (3, 4):
            groups.append(Group(f"{op} rounding of {n}", _variadic(op, t, n, None), [e for e in extra if len(e) == n]))
    return groups


def _reduce(op: str, t: int, whole: bool) -> Builder:
    """``op`` over the last axis of an [n, k] tensor (each element a k-tuple), keepdims=0, axes as
    an input (opset 18+); ``whole``: one tuple as a vector reduced over every axis (no axes)."""
    def build(p: str, els: Sequence[Any]) -> Built:
        if whole:
            x = tensor(p + "x", t, list(els[0]))
            return Built([helper.make_node(op, [p + "x"], [p + "y"], keepdims=1)], [x], p + "y", t)
        k = len(els[0])
        x = tensor(p + "x", t, [v for e in els for v in e], [len(els), k])
        axes = tensor(p + "ax", TP.INT64, [1])
        return Built([helper.make_node(op, [p + "x", p + "ax"], [p + "y"], keepdims=0)], [x, axes], p + "y", t)

    return build


def _reduce_groups(op: str, t: int) -> list[Group]:
    """Reductions of edge values in pairs and triples (products that overflow and wrap, sums past
    the extremes), and of a whole vector."""
    small = edges(t, small=True)
    rng = random.Random(22)
    triples = list(itertools.product(small, repeat=3))
    groups = [Group(f"{op} of pairs", _reduce(op, t, False), list(itertools.product(edges(t), repeat=2))),
              Group(f"{op} of triples", _reduce(op, t, False), rng.sample(triples, min(200, len(triples))))]
    groups.append(Group(f"{op} of a vector", _reduce(op, t, True), [tuple(small[:4]), tuple(small[-3:])], chunk=1))
    return groups


_COMPARISONS = ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual")
_ARITH = ("Add", "Sub", "Mul", "Div", "Max", "Min")
_REDUCE = ("ReduceProd", "ReduceSum", "ReduceMin", "ReduceMax")


def cases(op: str, key: Any) -> list[Group]:
    """The groups of elements that check ``op`` in type ``key`` (a (from, to) pair for casts)."""
    if op in ("Cast", "CastLike"):
        src, dst = key
        vals = edges(src)
        if op == "Cast":
            return [Group(f"Cast {type_name(src)}->{type_name(dst)}", _unary("Cast", src, dst, {"to": dst}), vals),
                    Group("Cast scalar", _unary("Cast", src, dst, {"to": dst}, scalar=True), vals[:1],
                          chunk=1)]
        return [Group(f"CastLike {type_name(src)}->{type_name(dst)}", _cast_like(src, dst), vals)]
    t = key
    if op in _ARITH and op not in ("Max", "Min"):
        return _binary_groups(op, t, t)
    if op in ("Max", "Min", "Sum"):
        return _variadic_groups(op, t)
    if op == "Mod":
        if t in FLOATS:  # fmod=0 is refused for floats: a few elements show that shapeflow knows
            refused = _binary_groups(op, t, t, attrs={"fmod": 0}, tag="(fmod=0)")[:1]
            refused[0].elements = refused[0].elements[:40]
            return refused + _binary_groups(op, t, t, attrs={"fmod": 1}, tag="(fmod=1)")
        return (_binary_groups(op, t, t, attrs={"fmod": 0}, tag="(fmod=0)")
                + _binary_groups(op, t, t, attrs={"fmod": 1}, tag="(fmod=1)"))
    if op == "Pow":
        groups = []
        exps: dict[int, list[Any]] = {
            TP.INT64: [0, 1, 2, 3, 4, 20, 39, 40, 62, 63, 64, 65, -1, -2, 2**40],
            TP.INT32: [0, 1, 2, 3, 19, 20, 31, 32, -1],
            TP.FLOAT: [0.0, 1.0, 2.0, 3.0, 4.0, 20.0, 0.5, -1.0, 127.0, 128.0, float("nan")],
            TP.DOUBLE: [0.0, 2.0, 3.0, 33.0, 34.0, 52.0, 53.0, -1.0, 0.5],
        }
        for t2, rights in exps.items():
            groups += _binary_groups("Pow", t, t, rights=rights, t2=t2, tag=f"^{type_name(t2)}")
        return groups
    if op in _COMPARISONS:
        return _binary_groups(op, t, TP.BOOL)
    if op in ("And", "Or", "Xor"):
        return _binary_groups(op, t, TP.BOOL)
    if op == "Not":
        return [Group("Not", _unary("Not", t, TP.BOOL, {}), edges(t))]
    if op in ("Neg", "Abs", "Floor", "Ceil", "Round"):
        return [Group(op, _unary(op, t, t, {}), edges(t)),
                Group(f"{op} scalar", _unary(op, t, t, {}, scalar=True), edges(t), chunk=1)]
    if op == "Where":
        small = edges(t, small=True)
        return [Group("Where", _where(t), [(c, x, y) for c in (0, 1) for x in small for y in small])]
    if op == "Range":
        return _range(t)
    if op in _REDUCE:
        return _reduce_groups(op, t)
    if op in ("Shape", "Size"):
        return _shape_ops()[op] if t == TP.INT64 else []
    moves = _moves(t)
    if op in moves:
        return moves[op]
    raise KeyError(f"no cases for {op}")


# ================================================================================================
# Running them
# ================================================================================================

@dataclass
class Report:
    op: str
    key: Any
    loaded: int = 0  # groups onnxruntime loaded
    unsupported: list[str] = field(default_factory=list)  # groups it refused to load
    compared: int = 0  # elements onnxruntime computed
    known: int = 0  # of those, elements shapeflow stated
    failing: int = 0  # elements onnxruntime fails on (shapeflow must state nothing)
    hazards: int = 0  # elements that crash onnxruntime: not run (shapeflow must state nothing)
    mismatches: list[str] = field(default_factory=list)

    @property
    def supported(self) -> bool:
        return self.loaded > 0

    def line(self) -> str:
        key = (f"{type_name(self.key[0])}->{type_name(self.key[1])}" if isinstance(self.key, tuple)
               else type_name(self.key))
        state = "unsupported" if not self.supported else f"{self.known}/{self.compared} known"
        extra = f", {self.failing} failing" if self.failing else ""
        bad = f", {len(self.mismatches)} MISMATCHES: {self.mismatches[0]}" if self.mismatches else ""
        return f"{self.op:<15} {key:<22} {state}{extra}{bad}"


def _model(built: list[Built]) -> onnx.ModelProto:
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    outs = []
    for b in built:
        nodes += b.nodes
        inits += b.inits
        name = b.out
        if b.dtype == TP.BFLOAT16:  # (numpy has no bfloat16: the runtime hands it back as float)
            nodes.append(helper.make_node("Cast", [b.out], [b.out + "_f32"], to=TP.FLOAT))
            name, dtype = b.out + "_f32", TP.FLOAT
        else:
            dtype = b.dtype
        outs.append(helper.make_tensor_value_info(name, dtype, None))
    g = helper.make_graph(nodes, "values", [], outs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=9)


def shapeflow_values(model: onnx.ModelProto) -> dict[str, Any]:
    inference = infer(build_graph(load_model_bytes(model.SerializeToString(), "values.onnx")))
    return inference.tensors[0]


_LOAD_ERRORS = ("NOT_IMPLEMENTED", "Could not find an implementation", "Type Error", "type inference",
                "TypeInferenceError", "INVALID_GRAPH", "Unsupported", "not supported")


def _is_load_error(msg: str) -> bool:
    return any(s.lower() in msg.lower() for s in _LOAD_ERRORS)


def _int_min_by_minus_one(key: Any, el: Any) -> bool:
    return key in (TP.INT32, TP.INT64) and el[0] == int_range(key)[0] and el[1] == -1


def hazard(op: str, key: Any, el: Any) -> bool:
    """Elements not run at all: ``INT_MIN / -1`` in int32 and int64 traps the CPU (SIGFPE) in
    onnxruntime's scalar path and wraps in its vectorized one, so the runtime has no one answer
    (``test_int_min_by_minus_one_traps`` runs it once)."""
    return op == "Div" and _int_min_by_minus_one(key, el)


def fragile(op: str, key: Any, el: Any) -> bool:
    """Elements the runtime is expected to refuse (an integer division by a constant 0 fails when
    the session is made): run by themselves, so that they do not take the others down."""
    return op in ("Div", "Mod") and key in INTS and el[1] == 0


def _readable(element: Any) -> bool:
    items = element if isinstance(element, (tuple, list)) else (element,)
    for x in items:
        if isinstance(x, tuple):
            if not _readable(x):
                return False
        elif isinstance(x, float) and not (math.isfinite(x) and x.is_integer()):
            return False
    return True


def _same(stated: Any, rt: Any, dtype: int) -> bool:
    if isinstance(rt, (np.floating, float)):
        r = float(rt)
        return not math.isnan(r) and not math.isinf(r) and r == stated
    return int(rt) == stated


@dataclass
class _Chunk:
    group: Group
    elements: list[Any]
    built: Built
    prefix: str
    alone: bool = False  # an element the runtime is expected to refuse: run by itself


def _run_one(runner: shapearith.Runner, built: list[Built]) -> tuple[str, Any]:
    m = _model(built)
    return runner.run(m.SerializeToString(), {}, [o.name for o in m.graph.output])


def _runtime(runner: shapearith.Runner, chunks: list[_Chunk]) -> list[Any]:
    """onnxruntime's result for each chunk: an array, ("unsupported", why) when it does not load
    that op and type, or ("elements", [array element or ("fails", why), ...]) when it fails."""
    results: dict[int, Any] = {}
    for k, c in enumerate(chunks):
        if c.alone:
            results[k] = _chunk_alone(runner, c)
    main = [k for k, c in enumerate(chunks) if not c.alone]
    if not main:
        return [results[k] for k in range(len(chunks))]
    status, res = _run_one(runner, [chunks[k].built for k in main])
    if status == "ok":
        results.update(zip(main, res))
        return [results[k] for k in range(len(chunks))]
    groups: dict[int, list[int]] = {}
    for k in main:
        groups.setdefault(id(chunks[k].group), []).append(k)
    for members in groups.values():
        st, r = _run_one(runner, [chunks[k].built for k in members]) if len(groups) > 1 else (status, res)
        if st == "ok":
            results.update(zip(members, r))
            continue
        if _is_load_error(str(r)) and not any(chunks[k].built.subgraph for k in members):
            results.update((k, ("unsupported", str(r))) for k in members)
            continue
        for k in members:
            results[k] = _chunk_alone(runner, chunks[k])
    return [results[k] for k in range(len(chunks))]


def _chunk_alone(runner: shapearith.Runner, c: _Chunk) -> Any:
    st1, r1 = _run_one(runner, [c.built])
    if st1 == "ok":
        return r1[0]
    if str(r1).startswith(shapearith.LOAD_FAILED) and len(c.elements) > 2:
        # refused outright (a constant divisor 0, Mod of floats with fmod=0): when its first and
        # last elements alone are refused as well, so is every element (no bisection over
        # thousands of sessions)
        ends = [c.elements[:1], c.elements[-1:]]
        if all(not _run_one(runner, [c.group.builder(f"{c.prefix}end{i}_", e)])[0] == "ok" for i, e in enumerate(ends)):
            return ("elements", [("fails", str(r1))] * len(c.elements))
    elems: list[Any] = [None] * len(c.elements)
    _bisect(runner, c, 0, len(c.elements), elems)
    return ("elements", elems)


def _bisect(runner: shapearith.Runner, c: _Chunk, lo: int, hi: int, out: list[Any]) -> None:
    """Fill ``out[lo:hi]`` with the runtime's elements of ``c``, halving the range until the
    elements onnxruntime fails on stand alone."""
    els = c.elements[lo:hi]
    st, r = _run_one(runner, [c.group.builder(f"{c.prefix}b{lo}_{hi}_", els)])
    if st == "ok" and r[0].size == len(els):
        out[lo:hi] = list(r[0].reshape(-1))
        return
    if hi - lo == 1:
        out[lo] = ("fails", str(r))
        return
    mid = (lo + hi) // 2
    _bisect(runner, c, lo, mid, out)
    _bisect(runner, c, mid, hi, out)


def check(op: str, key: Any, runner: shapearith.Runner) -> Report:
    """Every element of every group of ``cases(op, key)``: onnxruntime against shapeflow."""
    report = Report(op, key)
    chunks: list[_Chunk] = []
    hazards: list[tuple[Group, Any]] = []
    for gi, group in enumerate(cases(op, key)):
        # elements shapeflow can read (every operand integral) apart from the rest: one NaN in a
        # float constant leaves the whole constant unread
        for el in group.elements:
            if hazard(op, key, el):
                report.hazards += 1
                hazards.append((group, el))
        kept = [e for e in group.elements if not hazard(op, key, e)]
        weak = [e for e in kept if fragile(op, key, e)]
        for i in range(0, len(weak), group.chunk):
            prefix = f"g{gi}c{len(chunks)}_"
            els = weak[i:i + group.chunk]
            chunks.append(_Chunk(group, els, group.builder(prefix, els), prefix, alone=True))
        kept = [e for e in kept if not fragile(op, key, e)]
        for part in ([e for e in kept if _readable(e)], [e for e in kept if not _readable(e)]):
            for i in range(0, len(part), group.chunk):
                prefix = f"g{gi}c{len(chunks)}_"
                els = part[i:i + group.chunk]
                chunks.append(_Chunk(group, els, group.builder(prefix, els), prefix))
    for k, (group, el) in enumerate(hazards):
        # not run: shapeflow must state nothing
        b = group.builder(f"h{k}_", [el])
        info = shapeflow_values(_model([b])).get(b.out)
        if info is not None and info.value is not None and info.value[0] is not None:
            report.mismatches.append(f"{group.label} {el}: shapeflow {info.value[0]}, onnxruntime traps")
    if not chunks:
        return report
    try:
        table = shapeflow_values(_model([c.built for c in chunks]))
    except Exception as e:  # shapeflow refused the model: a bug in the oracle or in shapeflow
        report.mismatches.append(f"shapeflow raised {type(e).__name__}: {e}")
        return report
    loaded: set[int] = set()
    for c, rt in zip(chunks, _runtime(runner, chunks)):
        label, b = c.group.label, c.built
        if isinstance(rt, tuple) and rt[0] == "unsupported":
            report.unsupported.append(f"{label}: {rt[1][:120]}")
            continue
        loaded.add(id(c.group))
        info = table.get(b.out)
        value = info.value if info is not None else None
        if isinstance(rt, tuple):  # element by element
            flat: list[Any] = rt[1]
        else:
            flat = list(np.asarray(rt).reshape(-1))
            if not _shape_matches(info, np.asarray(rt).shape, report, label):
                continue
        if value is not None and len(value) != len(flat):
            report.mismatches.append(f"{label}: {len(value)} values stated, {len(flat)} computed")
            continue
        for i, r in enumerate(flat):
            v = value[i] if value is not None else None
            el = c.elements[i] if i < len(c.elements) else "?"
            if isinstance(r, tuple):
                report.failing += 1
                if v is not None:
                    report.mismatches.append(f"{label} {el}: shapeflow {v}, onnxruntime fails")
                continue
            report.compared += 1
            if v is None:
                continue
            report.known += 1
            if type(v) is not int or not _same(v, r, b.dtype):
                report.mismatches.append(f"{label} {el}: shapeflow {v}, onnxruntime {r!r}")
    report.loaded = len(loaded)
    return report


def _shape_matches(info: Any, shape: tuple[int, ...], report: Report, label: str) -> bool:
    if info is None or info.shape is None:
        return True
    if len(info.shape) != len(shape) or any(type(d) is int and d != s for d, s in zip(info.shape, shape)):
        report.mismatches.append(f"{label}: shape {info.shape} stated, {list(shape)} computed")
        return False
    return True


def all_keys(ops: Iterable[str]) -> list[tuple[str, Any]]:
    keys: list[tuple[str, Any]] = []
    for op in ops:
        if op in ("Cast", "CastLike"):
            keys += [(op, (a, b)) for a in sorted(TRACKED) for b in sorted(TRACKED)]
        elif op in ("Shape", "Size"):
            keys.append((op, TP.INT64))
        else:
            keys += [(op, t) for t in sorted(TRACKED)]
    return keys


def main(argv: Sequence[str]) -> int:
    from shapeflow.ops.evaluated import EVALUATED

    ops = list(argv) or [*EVALUATED, "Cast", "CastLike"]
    bad = 0
    with shapearith.Runner() as runner:
        for op, key in all_keys(ops):
            r = check(op, key, runner)
            print(r.line(), flush=True)
            bad += bool(r.mismatches)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
