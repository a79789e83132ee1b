"""Differential fuzzer for shape arithmetic (issue 9): shapeflow's stated dims and values, and
``optimize``'s outputs, against onnxruntime.

The generator writes small random ONNX models (deterministic per seed) in which shape *values*
flow from ``Shape``/``Size`` of symbolic-dim inputs through integer and float arithmetic, casts,
comparisons and slicing, and back into tensor shapes (``Reshape``, ``Expand``, ``Tile``,
``ConstantOfShape``, ``Range``, ``Pad``, ``Slice`` of data), the way exporters write them: the last
k tokens, sliding windows, KV caches whose past is 0, Cast round trips, float Div then Ceil,
repeated chains, Identity nodes and Casts that change nothing (the clean-up rules of issue 16).

The oracle, per model and per binding of its symbols (0, 1, 2, 3 and a large value all occur,
all-zero and all-one included): onnxruntime runs a copy of the model with every intermediate
tensor exposed as an output (graph optimisations off). Every dim shapeflow states (an int, or an
expression that is an int once the symbols are bound) must equal the runtime dim; every known
element of a value shapeflow tracks must equal the runtime element; unknown is always fine.
Bindings at which the model fails in onnxruntime are not checked (counted). Then ``optimize``
(a refusal is fine, counted) must keep the graph's input and output names and give bit-identical
outputs (dtype, shape, bytes) at every binding where the original runs.

    python fuzz/shapearith.py --seed 1 --seconds 120          # CI: fixed seed, exit 1 on a finding
    python fuzz/shapearith.py --seed 0 --seconds 3600         # random seed (printed), long run

onnxruntime runs in a worker process (a crash or a hang there is a failed binding, not the end of
the run). Failing models are saved in ``fuzz/crashes/`` (git-ignored), shrunk to the nodes the
failing tensor needs, and printed in ONNX text format.
"""

from __future__ import annotations

import argparse
import numbers
import os
import pickle
import random
import select
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
INT64 = TensorProto.INT64
FLOAT = TensorProto.FLOAT
DOUBLE = TensorProto.DOUBLE
SYMBOLS = ("batch", "seq", "past")
OPSETS = (11, 13, 15, 17, 18, 21)
# Cast round-trip targets (bfloat16 needs opset 13)
CAST_TYPES = (TensorProto.INT32, TensorProto.UINT8, TensorProto.INT8, TensorProto.INT16,
              TensorProto.UINT16, TensorProto.UINT32, TensorProto.UINT64, TensorProto.FLOAT16,
              TensorProto.BFLOAT16, TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.BOOL)
# A value used as a data dim is clamped below this when it could be larger (keeps runs small).
DIM_CAP = 48
MAX_INPUT_ELEMS = 400_000
RUN_TIMEOUT_S = 20.0
# What onnxruntime says when a tensor's size contradicts the shared dim names its planner relied on.
SHARED_NAME_REFUSAL = "Shape mismatch attempting to re-use buffer"
# The worker's answer when onnxruntime cannot make a session of the model at all.
LOAD_FAILED = "cannot load: "
CRASH_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "crashes")


# ================================================================================================
# The generator
# ================================================================================================

@dataclass
class Val:
    """A shape value the generator built: int64, a scalar (``length is None``) or a 1-D vector."""

    name: str
    length: int | None
    bound: int  # |element| <= bound at every binding the oracle uses (an estimate, for clamping)


@dataclass
class Data:
    """A data tensor (float, or int64 from Range) of known rank."""

    name: str
    rank: int
    dtype: int
    bound: int  # every dim <= bound


@dataclass
class Generated:
    model: onnx.ModelProto
    symbols: tuple[str, ...]
    big: int
    seed: int


class _Gen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        self.opset = self.rng.choice(OPSETS)
        self.big = self.rng.choice((37, 300))
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.vals: list[Val] = []
        self.datas: list[Data] = []
        self.used_syms: set[str] = set()
        self.counter = 0
        self.types: dict[str, int] = {}
        self.lens: dict[str, int | None] = {}  # length of every 1-D int tensor, None = scalar
        self.ranks: dict[str, int] = {}  # rank of every tensor the generator made

    # -- plumbing --------------------------------------------------------------------------------
    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def node(self, op: str, inputs: Sequence[str], dtype: int, **attrs: Any) -> str:
        out = self.fresh(op[:1].lower() + op[1:3].lower() + "_")
        self.nodes.append(helper.make_node(op, list(inputs), [out], **attrs))
        self.types[out] = dtype
        return out

    def const(self, values: Sequence[int] | int | float, dtype: int = INT64) -> str:
        """An int64 (or other) constant: an initializer, or (sometimes) a Constant node."""
        scalar = isinstance(values, (int, float))
        arr = np.array(values, dtype=helper.tensor_dtype_to_np_dtype(dtype))
        name = self.fresh("c")
        t = numpy_helper.from_array(arr, name)
        if self.rng.random() < 0.3:
            self.nodes.append(helper.make_node("Constant", [], [name], value=t))
        else:
            self.inits.append(t)
        self.types[name] = dtype
        self.lens[name] = None if scalar else len(arr.reshape(-1))
        return name

    def axes_form(self, op: str, data: str, axes: list[int], dtype: int) -> str:
        """Squeeze/Unsqueeze: axes attribute before opset 13, an input from 13."""
        if self.opset < 13:
            return self.node(op, [data], dtype, axes=axes)
        return self.node(op, [data, self.const(axes)], dtype)

    def axes_form_none(self, op: str, data: str, dtype: int) -> str:
        """Squeeze with no axes (attribute absent / input omitted)."""
        return self.node(op, [data], dtype)

    # -- inputs ----------------------------------------------------------------------------------
    def make_inputs(self) -> None:
        rng = self.rng
        kv = rng.random() < 0.3
        n = rng.choice((2, 3) if kv else (1, 1, 2, 2, 3))
        syms = list(SYMBOLS)
        for i in range(n):
            rank = rng.choice((1, 2, 2, 3, 3))
            dims: list[int | str] = []
            nsym = 0
            for _ in range(rank):
                if nsym < 2 and rng.random() < 0.65:
                    dims.append(rng.choice(syms))
                    nsym += 1
                else:
                    dims.append(rng.choice((1, 2, 3, 4)))
            if kv and i == 0:
                dims = ["batch", "past", 4]
            elif kv and i == 1:
                dims = ["batch", "seq", 4]
            name = f"x{i}"
            self.inputs.append(helper.make_tensor_value_info(name, FLOAT, dims))
            self.used_syms.update(d for d in dims if isinstance(d, str))
            bound = max([self.big if isinstance(d, str) else d for d in dims])
            self.datas.append(Data(name, len(dims), FLOAT, bound))
            self.types[name] = FLOAT
        if kv:
            # the KV-cache step: past ++ new along the sequence axis (past may be 0)
            cat = self.node("Concat", ["x0", "x1"], FLOAT, axis=1)
            self.datas.append(Data(cat, 3, FLOAT, 2 * self.big))

    # -- choosing operands -----------------------------------------------------------------------
    def pick_val(self, want: str = "any") -> Val:
        cands = [v for v in self.vals if want == "any" or (want == "vec") == (v.length is not None)]
        if not cands or self.rng.random() < 0.1:
            return self.new_shape_val(vec=(want == "vec") if want != "any" else None)
        # recent values are likelier: chains, as exporters write them
        return cands[-1 - min(int(self.rng.expovariate(0.5)), len(cands) - 1)]

    def pick_data(self, float_only: bool = False) -> Data:
        cands = [d for d in self.datas if not float_only or d.dtype == FLOAT]
        return cands[-1 - min(int(self.rng.expovariate(0.4)), len(cands) - 1)]

    def scalar_of(self, v: Val) -> Val:
        if v.length is None:
            return v
        idx = self.rng.randrange(-v.length, v.length)
        return self.add_val(self.node("Gather", [v.name, self.const(idx)], INT64, axis=0), None, v.bound)

    def vec_of(self, v: Val) -> Val:
        if v.length is not None:
            return v
        return self.add_val(self.axes_form("Unsqueeze", v.name, [0], INT64), 1, v.bound)

    def add_val(self, name: str, length: int | None, bound: int) -> Val:
        v = Val(name, length, min(bound, 2**63))
        self.vals.append(v)
        self.lens[name] = length
        return v

    def add_data(self, name: str, rank: int, bound: int, dtype: int = FLOAT) -> Data:
        d = Data(name, rank, dtype, bound)
        self.datas.append(d)
        self.types[name] = dtype
        self.ranks[name] = rank
        return d

    # -- shape values ----------------------------------------------------------------------------
    def new_shape_val(self, vec: bool | None = None) -> Val:
        rng = self.rng
        d = self.pick_data()
        if vec is False or (vec is None and rng.random() < 0.3):
            if rng.random() < 0.3:
                return self.add_val(self.node("Size", [d.name], INT64), None, d.bound ** d.rank)
            return self.scalar_of(self.new_shape_val(vec=True))
        if self.opset >= 15 and rng.random() < 0.35:
            start = rng.randrange(-d.rank - 1, d.rank + 1)
            attrs: dict[str, int] = {"start": start}
            if rng.random() < 0.5:
                attrs["end"] = rng.randrange(-d.rank - 1, d.rank + 2)
            length = len(range(d.rank)[slice(start, attrs.get("end"))])
            if length == 0:
                attrs = {}
                length = d.rank
            return self.add_val(self.node("Shape", [d.name], INT64, **attrs), length, d.bound)
        return self.add_val(self.node("Shape", [d.name], INT64), d.rank, d.bound)

    def op_gather(self) -> None:
        v = self.pick_val("vec")
        assert v.length is not None
        if self.rng.random() < 0.6:
            self.scalar_of(v)
            return
        k = self.rng.randint(1, 3)
        idx = [self.rng.randrange(-v.length, v.length) for _ in range(k)]
        self.add_val(self.node("Gather", [v.name, self.const(idx)], INT64, axis=0), k, v.bound)

    def op_slice_val(self) -> None:
        rng = self.rng
        v = self.pick_val("vec")
        assert v.length is not None
        n = v.length
        for _ in range(10):
            step = rng.choice((1, 1, 1, 2, -1, -1, -2))
            start = rng.choice((rng.randrange(-n - 2, n + 2), 0, -1, INT64_MIN, INT64_MAX))
            end = rng.choice((rng.randrange(-n - 2, n + 2), INT64_MAX, INT64_MIN, -1))
            if step > 0 and start == INT64_MAX:
                continue
            length = len(range(n)[slice(start, end, step)])
            if length:
                break
        else:
            return
        ins = [v.name, self.const([start]), self.const([end])]
        if step != 1 or rng.random() < 0.5:
            ins.append(self.const([0]))
            if step != 1 or rng.random() < 0.5:
                ins.append(self.const([step]))
        self.add_val(self.node("Slice", ins, INT64), length, v.bound)

    def op_concat_val(self) -> None:
        parts = [self.vec_of(self.pick_val()) for _ in range(self.rng.randint(1, 3))]
        if self.rng.random() < 0.4:
            parts.insert(self.rng.randrange(len(parts) + 1),
                         Val(self.const([self.rng.choice((-1, 0, 1, 2, 4))]), 1, 4))
        length = sum(p.length or 0 for p in parts)
        if length > 5:
            return
        self.add_val(self.node("Concat", [p.name for p in parts], INT64, axis=0), length,
                     max(p.bound for p in parts))

    def safe_divisor(self, like: Val) -> tuple[str, int]:
        """A divisor: mostly one that is never 0 (a constant, or ``max(v, 1)`` of a shape value);
        sometimes a raw shape value, which may be 0 (onnxruntime then fails the run, and
        simplifications such as ``(batch*seq)/seq = batch`` meet a symbolic divisor), or -1
        (``INT64_MIN / -1`` kills onnxruntime: the worker absorbs it)."""
        rng = self.rng
        if rng.random() < 0.6:
            k = rng.choice((2, 3, 4, 5, 8, -2, -3, -1 if rng.random() < 0.1 else 7))
            shape = [] if like.length is None else ([1] if rng.random() < 0.5 else [like.length])
            return self.const(np.full(shape, k).tolist() if shape else k), abs(k)
        v = self.pick_val()
        if like.length is not None and v.length is not None and v.length not in (1, like.length):
            v = self.scalar_of(v)
        if like.length is None and v.length is not None:
            v = self.scalar_of(v)
        if rng.random() < 0.25:
            return v.name, max(v.bound, 1)
        return self.max_(v.name, self.const(1 if v.length is None else [1])), max(v.bound, 1)

    def max_(self, a: str, b: str) -> str:
        if self.opset >= 12 and self.rng.random() < 0.7:
            return self.node("Max", [a, b], INT64)
        less = self.node("Less", [a, b], TensorProto.BOOL)
        return self.node("Where", [less, b, a], INT64)

    def min_(self, a: str, b: str) -> str:
        if self.opset >= 12 and self.rng.random() < 0.7:
            return self.node("Min", [a, b], INT64)
        less = self.node("Less", [a, b], TensorProto.BOOL)
        return self.node("Where", [less, a, b], INT64)

    def other_operand(self, a: Val) -> tuple[str, int]:
        rng = self.rng
        if rng.random() < 0.45:
            k = rng.choice((0, 1, 2, 3, -1, -2, -3, -5, 5, 7, 64))
            if rng.random() < 0.04:
                k = rng.choice((2**62, INT64_MAX, INT64_MIN + 1, 2**32 + 3))
            if a.length is None or rng.random() < 0.4:
                return self.const(k if a.length is None or rng.random() < 0.5 else [k]), abs(k)
            return self.const([k] * a.length), abs(k)
        b = self.pick_val()
        if b.length is not None and not (a.length is not None and b.length in (1, a.length)):
            b = self.scalar_of(b)
        return b.name, b.bound

    def op_arith(self) -> None:
        rng = self.rng
        a = self.pick_val()
        op = rng.choice(("Add", "Add", "Sub", "Sub", "Mul", "Mul", "Div", "Mod", "Mod", "Min", "Max", "Neg", "Abs"))
        if op in ("Neg", "Abs"):
            self.add_val(self.node(op, [a.name], INT64), a.length, a.bound)
            return
        if op in ("Div", "Mod"):
            b, bb = self.safe_divisor(a)
            if op == "Div":
                self.add_val(self.node("Div", [a.name, b], INT64), a.length, a.bound)
            else:
                self.add_val(self.node("Mod", [a.name, b], INT64, fmod=rng.randint(0, 1)), a.length, bb)
            return
        b, bb = self.other_operand(a)
        length = self.blen(a.name, b)
        if length is False:
            return
        a_name = a.name
        if rng.random() < 0.3:
            a_name, b = b, a_name  # either operand order
        if op == "Min":
            out = self.min_(a_name, b)
        elif op == "Max":
            out = self.max_(a_name, b)
        else:
            out = self.node(op, [a_name, b], INT64)
        bound = a.bound * bb if op == "Mul" else a.bound + bb
        self.add_val(out, length, bound)  # type: ignore[arg-type]

    def blen(self, *names: str) -> int | None | bool:
        """The broadcast length of 1-D/scalar int tensors; False if they do not broadcast."""
        out: int | None = None
        for n in names:
            if n not in self.lens:
                return False
            k = self.lens[n]
            if k is None:
                continue
            if out is None or out == 1:
                out = k
            elif k not in (1, out):
                return False
        return out

    def op_cast(self) -> None:
        rng = self.rng
        a = self.pick_val()
        types = [t for t in CAST_TYPES if t != TensorProto.BFLOAT16 or self.opset >= 13]
        t = rng.choice(types)
        mid = self.node("Cast", [a.name], t, to=t)
        if rng.random() < 0.25 and t not in (TensorProto.BOOL,):
            # a second hop through another type
            t2 = rng.choice(types)
            mid = self.node("Cast", [mid], t2, to=t2)
        self.add_val(self.node("Cast", [mid], INT64, to=INT64), a.length, max(a.bound, 2**16))

    def op_float(self) -> None:
        """Cast to float, float arithmetic, Floor/Ceil (or none: Cast truncates), back to int64."""
        rng = self.rng
        a = self.pick_val()
        ft = rng.choice((FLOAT, FLOAT, TensorProto.DOUBLE))
        npt = helper.tensor_dtype_to_np_dtype(ft)
        f = self.node("Cast", [a.name], ft, to=ft)
        op = rng.choice(("Div", "Div", "Mul", "Add", "Sub"))
        if rng.random() < 0.7:
            k = rng.choice((2.0, 3.0, 4.0, 0.5, 1.5, -2.0))
            b = self.const(np.array(k, dtype=npt).item(), ft)
        else:
            o = self.scalar_of(self.pick_val())
            b = self.node("Cast", [o.name], ft, to=ft)
        f = self.node(op, [f, b], ft)
        r = rng.choice(("Floor", "Ceil", "Ceil", None))
        if r:
            f = self.node(r, [f], ft)
        self.add_val(self.node("Cast", [f], INT64, to=INT64), a.length, a.bound * 4 + 4)

    def op_where(self) -> None:
        rng = self.rng
        a = self.pick_val()
        b, bb = self.other_operand(a)
        x, xb = self.other_operand(a)
        length = self.blen(a.name, b, x)
        if length is False:
            return
        cmp = rng.choice(("Equal", "Less", "Greater"))
        cond = self.node(cmp, [a.name, b], TensorProto.BOOL)
        out = self.node("Where", [cond, a.name, x] if rng.random() < 0.5 else [cond, x, a.name], INT64)
        self.add_val(out, length, max(a.bound, xb, bb))  # type: ignore[arg-type]

    def op_squeeze_val(self) -> None:
        v = self.pick_val()
        if v.length == 1:
            self.add_val(self.axes_form("Squeeze", v.name, [0], INT64), None, v.bound)
        else:
            self.vec_of(v) if v.length is None else self.scalar_of(v)

    # -- back into tensor shapes -----------------------------------------------------------------
    def as_dims(self, v: Val, lo: int | None = None, hi: int = DIM_CAP) -> Val:
        """``v`` clamped to ``[lo, hi]`` where it could leave it (so runs stay small)."""
        name = v.name
        if v.bound > hi:
            c = self.const(hi if v.length is None else [hi] * v.length)
            name = self.min_(name, c)
        if lo is not None and self.rng.random() < 0.8:
            if self.rng.random() < 0.5:
                name = self.node("Abs", [name], INT64)
            else:
                name = self.max_(name, self.const(lo if v.length is None else [lo] * v.length))
        if name == v.name:
            return v
        return self.add_val(name, v.length, min(v.bound, hi))

    def op_constant_of_shape(self) -> None:
        v = self.vec_of(self.pick_val())
        assert v.length is not None
        if v.length > 4:
            return
        n = v.length
        v = self.as_dims(v, lo=0, hi=DIM_CAP if n <= 2 else 12)
        value = numpy_helper.from_array(np.array([self.rng.choice((0.0, 1.0, -2.5))], np.float32))
        out = self.node("ConstantOfShape", [v.name], FLOAT, value=value)
        self.add_data(out, n, v.bound)

    def op_range(self) -> None:
        rng = self.rng
        start = self.as_dims(self.scalar_of(self.pick_val()), hi=DIM_CAP) if rng.random() < 0.4 else \
            Val(self.const(rng.choice((0, 0, 1, -3, 5))), None, 5)
        limit = self.as_dims(self.scalar_of(self.pick_val()), hi=DIM_CAP)
        if rng.random() < 0.4:
            k = self.const(rng.choice((-5, -3, 2, 1)))
            limit = Val(self.node("Add", [limit.name, k], INT64), None, limit.bound + 5)
        if start.bound > DIM_CAP:
            start = self.as_dims(start, hi=DIM_CAP)
        delta = self.const(rng.choice((1, 1, 1, 2, 3, -1, -2)))
        out = self.node("Range", [start.name, limit.name, delta], INT64)
        d = self.add_data(out, 1, 2 * DIM_CAP + 10, INT64)
        if rng.random() < 0.5:
            self.add_val(self.node("Shape", [d.name], INT64), 1, d.bound)

    def op_expand(self) -> None:
        d = self.pick_data()
        if d.rank < 4 and self.rng.random() < 0.5:
            # exporter form: a new leading dim from a shape value, then the tensor's own shape
            # (broadcasting is then valid at every binding where the new dim is >= 0)
            lead = self.vec_of(self.as_dims(self.scalar_of(self.pick_val()), lo=0, hi=8))
            target = self.node("Concat", [lead.name, self.node("Shape", [d.name], INT64)], INT64, axis=0)
            out = self.node("Expand", [d.name, target], d.dtype)
            self.add_data(out, d.rank + 1, max(d.bound, 8), d.dtype)
            return
        v = self.vec_of(self.pick_val())
        assert v.length is not None
        n = v.length
        if max(n, d.rank) > 4:
            return
        v = self.as_dims(v, lo=None, hi=DIM_CAP if n <= 2 else 8)
        if d.bound > 8 and n >= 3:
            return
        out = self.node("Expand", [d.name, v.name], d.dtype)
        self.add_data(out, max(n, d.rank), max(d.bound, v.bound), d.dtype)

    def op_reshape(self) -> None:
        rng = self.rng
        d = self.pick_data()
        kind = rng.choice(("keep_prefix", "zero", "flat", "any", "split"))
        shape = self.node("Shape", [d.name], INT64)
        attrs: dict[str, int] = {}
        if kind == "keep_prefix" and d.rank >= 2:
            k = rng.randint(1, d.rank - 1)
            head = self.node("Slice", [shape, self.const([0]), self.const([k])], INT64)
            target = self.node("Concat", [head, self.const([-1])], INT64, axis=0)
            rank = k + 1
        elif kind == "zero":
            target = self.const([0] * (d.rank - 1) + [-1] if rng.random() < 0.5 else [0] * d.rank)
            rank = d.rank
            if self.opset >= 14 and rng.random() < 0.5:
                attrs["allowzero"] = 0
        elif kind == "split" and d.rank >= 1:
            last = self.node("Gather", [shape, self.const([d.rank - 1])], INT64, axis=0)
            two = rng.choice((1, 2))
            half = self.node("Div", [last, self.const([two])], INT64)
            parts = [self.node("Slice", [shape, self.const([0]), self.const([d.rank - 1])], INT64)] \
                if d.rank > 1 else []
            target = self.node("Concat", parts + [half, self.const([two])], INT64, axis=0)
            rank = d.rank + 1
            if self.opset >= 14 and rng.random() < 0.3:
                attrs["allowzero"] = 1
        elif kind == "any":
            v = self.vec_of(self.pick_val())
            assert v.length is not None
            if v.length > 4:
                return
            target = self.as_dims(v, hi=DIM_CAP).name
            rank = v.length
            if self.opset >= 14 and rng.random() < 0.3:
                attrs["allowzero"] = 1
        else:
            target = self.const([-1])
            rank = 1
        out = self.node("Reshape", [d.name, target], d.dtype, **attrs)
        self.add_data(out, rank, d.bound * d.bound if rank < d.rank else d.bound, d.dtype)

    def op_tile(self) -> None:
        d = self.pick_data()
        if d.bound > 64 and d.rank >= 2:
            return
        parts = []
        for _ in range(d.rank):
            if self.rng.random() < 0.5:
                parts.append(self.const([self.rng.choice((1, 1, 2, 0))]))
            else:
                parts.append(self.vec_of(self.as_dims(self.scalar_of(self.pick_val()), lo=0, hi=3)).name)
        reps = parts[0] if len(parts) == 1 else self.node("Concat", parts, INT64, axis=0)
        out = self.node("Tile", [d.name, reps], d.dtype)
        self.add_data(out, d.rank, d.bound * 3, d.dtype)

    def op_pad(self) -> None:
        d = self.pick_data(float_only=True)
        axes: list[int] | None = None
        if self.opset >= 18 and self.rng.random() < 0.3:
            # the axes input (opset 18): pads for some axes only, negative axes too
            axes = self.rng.sample(range(-d.rank, 0) if self.rng.random() < 0.5 else range(d.rank),
                                   self.rng.randint(1, d.rank))
        parts = []
        for _ in range(2 * (d.rank if axes is None else len(axes))):
            if self.rng.random() < 0.6:
                parts.append(self.const([self.rng.choice((0, 0, 1, 2, -1))]))
            else:
                v = self.scalar_of(self.pick_val())
                v = self.as_dims(v, hi=4)
                if v.bound > 4 or self.rng.random() < 0.5:
                    v = Val(self.max_(v.name, self.const(-1)), None, 4)
                parts.append(self.vec_of(v).name)
        pads = parts[0] if len(parts) == 1 else self.node("Concat", parts, INT64, axis=0)
        ins = [d.name, pads]
        if self.rng.random() < 0.4 or axes is not None:
            ins.append(self.const(0.5, FLOAT) if self.rng.random() < 0.6 else "")
        if axes is not None:
            ins.append(self.const(axes))
        out = self.node("Pad", ins, FLOAT, mode="constant")
        self.add_data(out, d.rank, d.bound + 8)

    def op_slice_data(self) -> None:
        """x[..., -k:], sliding windows, reversed slices, with computed starts/ends."""
        rng = self.rng
        d = self.pick_data()
        axis = rng.randrange(d.rank)
        if rng.random() < 0.3:
            axis = axis - d.rank
        kind = rng.choice(("last_k", "window", "const", "computed", "reverse"))
        steps: str | None = None
        if kind == "last_k":
            k = self.const([rng.choice((1, 2, 3, 4))])
            starts = self.node("Neg", [k], INT64)
            ends = self.const([rng.choice((INT64_MAX, 2**31 - 1, INT64_MAX))])
        elif kind == "window":
            n = self.node("Gather", [self.node("Shape", [d.name], INT64), self.const([axis])], INT64, axis=0)
            w = self.const([rng.choice((2, 3, 8))])
            starts = self.max_(self.node("Sub", [n, w], INT64), self.const([0]))
            ends = n
        elif kind == "const":
            starts = self.const([rng.choice((-3, -2, -1, 0, 1, 2, INT64_MIN))])
            ends = self.const([rng.choice((-2, -1, 1, 3, INT64_MAX, 2**31 - 1))])
        elif kind == "reverse":
            starts = self.const([rng.choice((-1, INT64_MAX, 2, -2))])
            ends = self.const([rng.choice((INT64_MIN, -(2**31), 0, -4))])
            steps = self.const([rng.choice((-1, -1, -2))])
        else:
            starts = self.vec_of(self.scalar_of(self.pick_val())).name
            ends = self.vec_of(self.scalar_of(self.pick_val())).name if rng.random() < 0.6 else \
                self.const([INT64_MAX])
        ins = [d.name, starts, ends]
        if steps is not None or rng.random() < 0.7:
            ins.append(self.const([axis]))
            if steps is not None:
                ins.append(steps)
        elif axis not in (0, -d.rank):
            ins.append(self.const([axis]))
        out = self.node("Slice", ins, d.dtype)
        self.add_data(out, d.rank, d.bound, d.dtype)

    def op_squeeze_data(self) -> None:
        d = self.pick_data()
        if self.rng.random() < 0.5 and d.rank < 4:
            ax = self.rng.randrange(-d.rank - 1, d.rank + 1)
            self.add_data(self.axes_form("Unsqueeze", d.name, [ax], d.dtype), d.rank + 1, d.bound, d.dtype)
        elif self.rng.random() < 0.3:
            # Squeeze without axes drops every dim that is 1 at run time: a symbolic dim may be
            # 1, so the rank is not the generator's to know (only Size of it is used further)
            sq = self.axes_form_none("Squeeze", d.name, d.dtype)
            self.add_val(self.node("Size", [sq], INT64), None, d.bound ** d.rank)
        else:
            # Unsqueeze then Squeeze the same axis (always valid)
            ax = self.rng.randrange(0, d.rank + 1)
            u = self.axes_form("Unsqueeze", d.name, [ax], d.dtype)
            self.add_data(self.axes_form("Squeeze", u, [ax], d.dtype), d.rank, d.bound, d.dtype)

    def op_fan_out(self) -> None:
        """A Squeeze or Unsqueeze read by 2-3 Squeeze/Unsqueeze nodes (torch's dynamo exporter:
        ``Unsqueeze(Range, [0, 1])`` read by ``Unsqueeze[3]`` and ``Unsqueeze[2]``): merging and
        cancelling readers, sometimes a reader that absorbs nothing or one of another op."""
        rng = self.rng
        d = self.pick_data()
        if d.rank > 3:
            return
        squeezed: int | None = None
        if d.rank >= 2 and rng.random() < 0.35:
            # a Squeeze of a dim that may be 1 (symbolic, or static 1 when onnx proves it)
            squeezed = rng.randrange(d.rank)
            first = self.axes_form("Squeeze", d.name, [squeezed - d.rank if rng.random() < 0.3 else squeezed],
                                   d.dtype)
            rank, ones = d.rank - 1, []
        else:
            k = rng.choice((1, 2))
            rank = d.rank + k
            ones = sorted(rng.sample(range(rank), k))
            first = self.axes_form("Unsqueeze", d.name, [p - rank if rng.random() < 0.3 else p for p in ones],
                                   d.dtype)
        self.ranks[first] = rank
        for _ in range(rng.choice((2, 2, 3))):
            pick = rng.random()
            if ones and pick < 0.45:
                sub = sorted(rng.sample(ones, rng.randint(1, len(ones))))
                if rank - len(sub) < 1:
                    continue
                if rng.random() < 0.2:  # also a dim that is not one the Unsqueeze inserted
                    extra = [p for p in range(rank) if p not in ones]
                    if extra:
                        sub = sorted(sub + [rng.choice(extra)])
                if rank - len(sub) < 1:
                    continue
                axes = [p - rank if rng.random() < 0.3 else p for p in sub]
                self.add_data(self.axes_form("Squeeze", first, axes, d.dtype), rank - len(sub), d.bound, d.dtype)
            elif squeezed is not None and pick < 0.6:
                self.add_data(self.axes_form("Unsqueeze", first, [squeezed], d.dtype), d.rank, d.bound, d.dtype)
            elif squeezed is not None and rank >= 2 and pick < 0.7:
                ax = rng.randrange(rank)
                self.add_data(self.axes_form("Squeeze", first, [ax], d.dtype), rank - 1, d.bound, d.dtype)
            elif rank < 5:
                ax = rng.randrange(-rank - 1, rank + 1)
                self.add_data(self.axes_form("Unsqueeze", first, [ax], d.dtype), rank + 1, d.bound, d.dtype)
        if rng.random() < 0.15:  # a reader of another op: the first node stays
            self.add_data(self.node("Abs", [first], d.dtype), rank, d.bound, d.dtype)

    def op_positions(self) -> None:
        """Exporter form of position ids and a causal mask: past = a dim of one tensor, seq = a
        dim of another, Range(past, past + seq), mask ConstantOfShape([seq, past + seq]), and
        the mask's last seq columns."""
        rng = self.rng
        a, b = self.pick_data(), self.pick_data()
        if max(a.bound, b.bound) > 2 * self.big:
            return
        pa = self.node("Gather", [self.node("Shape", [a.name], INT64), self.const(rng.randrange(-a.rank, a.rank))],
                       INT64, axis=0)
        sb = self.node("Gather", [self.node("Shape", [b.name], INT64), self.const(rng.randrange(-b.rank, b.rank))],
                       INT64, axis=0)
        total = self.node("Add", [pa, sb], INT64)
        self.add_val(pa, None, a.bound)
        self.add_val(sb, None, b.bound)
        self.add_val(total, None, a.bound + b.bound)
        pos = self.node("Range", [pa, total, self.const(1)], INT64)
        self.add_data(self.axes_form("Unsqueeze", pos, [0], INT64), 2, b.bound, INT64)
        if rng.random() < 0.6:
            shape = self.node("Concat", [self.axes_form("Unsqueeze", sb, [0], INT64),
                                         self.axes_form("Unsqueeze", total, [0], INT64)], INT64, axis=0)
            mask = self.node("ConstantOfShape", [shape], FLOAT,
                             value=numpy_helper.from_array(np.array([1.0], np.float32)))
            self.add_data(mask, 2, a.bound + b.bound)
            start = self.node("Neg", [self.axes_form("Unsqueeze", sb, [0], INT64)], INT64)
            last = self.node("Slice", [mask, start, self.const([INT64_MAX]), self.const([1])], FLOAT)
            self.add_data(last, 2, b.bound)

    def op_own_shape(self) -> None:
        """Reshape/Expand to a tensor's own dims, computed as exporters do (``Shape -> Gather ->
        Unsqueeze -> Concat``), now and then merging two dims or putting a constant 0/-1/1 in:
        what static-reshape-target and no-op-reshape rewrite."""
        rng = self.rng
        d = self.pick_data()
        if d.rank < 1 or d.rank > 4:
            return
        shape = self.node("Shape", [d.name], INT64)
        parts = [self.axes_form("Unsqueeze", self.node("Gather", [shape, self.const(i)], INT64, axis=0), [0], INT64)
                 for i in range(d.rank)]
        kind = rng.choice(("same", "same", "merge", "expand", "expand"))
        attrs: dict[str, int] = {}
        if kind == "merge" and d.rank >= 2:
            i = rng.randrange(d.rank - 1)
            a = self.node("Gather", [shape, self.const(i)], INT64, axis=0)
            b = self.node("Gather", [shape, self.const(i + 1)], INT64, axis=0)
            m = self.axes_form("Unsqueeze", self.node("Mul", [a, b], INT64), [0], INT64)
            parts = parts[:i] + [m] + parts[i + 2:]
            if rng.random() < 0.5:  # another Reshape proves the dims >= 1, sometimes
                parts[rng.randrange(len(parts))] = self.const([-1])
        elif kind == "expand":
            if rng.random() < 0.4:
                target = shape
            else:
                k = rng.randint(1, d.rank)
                target = self.node("Concat", [p if rng.random() < 0.6 else self.const([1]) for p in parts[-k:]],
                                   INT64, axis=0) if k > 1 else parts[-1]
            out = self.node("Expand", [d.name, target], d.dtype)
            self.add_data(out, d.rank, d.bound, d.dtype)
            return
        elif rng.random() < 0.4:
            parts[rng.randrange(len(parts))] = self.const([rng.choice((0, -1))])
        if self.opset >= 14 and rng.random() < 0.3:
            attrs["allowzero"] = rng.choice((0, 1))
        target = self.node("Concat", parts, INT64, axis=0) if len(parts) > 1 else parts[0]
        out = self.node("Reshape", [d.name, target], d.dtype, **attrs)
        self.add_data(out, len(parts), d.bound * d.bound, d.dtype)

    def op_shape_of_new(self) -> None:
        self.new_shape_val()

    # -- what the clean-up rules target (issue 16) --------------------------------------------------
    def op_duplicate(self) -> None:
        """Repeat the last few nodes (a chain, as exporters repeat ``Shape -> Gather -> Unsqueeze``
        once per use): the copies read each other, so merging them takes several rounds."""
        k = self.rng.randint(1, 4)
        tail = [n for n in self.nodes[-k:] if n.op_type != "Constant"]
        renamed: dict[str, str] = {}
        for n in tail:
            copy = onnx.NodeProto()
            copy.CopyFrom(n)
            del copy.input[:]
            copy.input.extend(renamed.get(i, i) for i in n.input)
            del copy.output[:]
            for o in n.output:
                new = self.fresh("dup_") if o else ""
                renamed[o] = new
                copy.output.append(new)
                if not o:
                    continue
                if o in self.types:
                    self.types[new] = self.types[o]
                if o in self.lens:
                    self.lens[new] = self.lens[o]
                if o in self.ranks:
                    self.ranks[new] = self.ranks[o]
            self.nodes.append(copy)
        for v in list(self.vals):
            if v.name in renamed:
                self.vals.append(Val(renamed[v.name], v.length, v.bound))
        for d in list(self.datas):
            if d.name in renamed:
                self.datas.append(Data(renamed[d.name], d.rank, d.dtype, d.bound))

    def op_identity(self) -> None:
        if self.rng.random() < 0.5:
            a = self.pick_val()
            self.add_val(self.node("Identity", [a.name], INT64), a.length, a.bound)
        else:
            d = self.pick_data()
            self.add_data(self.node("Identity", [d.name], d.dtype), d.rank, d.bound, d.dtype)

    def op_cast_chain(self) -> None:
        """Casts that may change nothing: to the value's own type, or through a wider type and back
        (int64 -> S -> T1 -> T2 [-> int64])."""
        rng = self.rng
        a = self.pick_val()
        if rng.random() < 0.3:
            self.add_val(self.node("Cast", [a.name], INT64, to=INT64), a.length, a.bound)
            return
        types = [t for t in CAST_TYPES if t != TensorProto.BFLOAT16 or self.opset >= 13] + [INT64]
        ints = [t for t in types if t not in (TensorProto.FLOAT16, TensorProto.BFLOAT16, FLOAT,
                                               TensorProto.DOUBLE)]
        src = rng.choice(ints)
        x = self.node("Cast", [a.name], src, to=src)
        mid = self.node("Cast", [x], (t1 := rng.choice(types)), to=t1)
        t2 = rng.choice([src, src, INT64, rng.choice(types)])
        out = self.node("Cast", [mid], t2, to=t2)
        if t2 != INT64:
            out = self.node("Cast", [out], INT64, to=INT64)
        self.add_val(out, a.length, max(a.bound, 2**16))

    def op_round_trip(self) -> None:
        """A Reshape, elementwise ops with one-element constants, and a Reshape back to the first
        one's input shape (dynamo's ``view -> GELU -> view``): what reshape-round-trip removes.
        Now and then a constant of more elements, or a region tensor others read too."""
        rng = self.rng
        d = self.pick_data(float_only=True)
        if d.rank < 1 or d.rank > 3:
            return
        shape = self.node("Shape", [d.name], INT64)
        kind = rng.choice(("flat", "split", "own"))
        if kind == "flat":
            r1_target, rank1 = self.const([-1]), 1
        elif kind == "split":
            last = self.node("Gather", [shape, self.const([d.rank - 1])], INT64, axis=0)
            head = [self.node("Slice", [shape, self.const([0]), self.const([d.rank - 1])], INT64)] \
                if d.rank > 1 else []
            r1_target = self.node("Concat", head + [self.const([1]), last], INT64, axis=0)
            rank1 = d.rank + 1
        else:
            r1_target, rank1 = shape, d.rank
        attrs = {"allowzero": 1} if self.opset >= 14 and rng.random() < 0.3 else {}
        cur = self.node("Reshape", [d.name, r1_target], FLOAT, **attrs)
        region = [cur]
        for _ in range(rng.randint(0, 4)):
            op = rng.choice(("Tanh", "Neg", "Abs", "Sigmoid", "Add", "Mul", "Sub", "Max", "Pow", "Self"))
            if op == "Self":
                other = rng.choice(region)
                cur = self.node(rng.choice(("Add", "Mul")), [cur, other], FLOAT)
            elif op in ("Add", "Mul", "Sub", "Max", "Pow"):
                if rng.random() < 0.15:
                    c = self.const([0.5] * 2, FLOAT)  # two elements: broadcasts (or fails)
                else:
                    c = self.const(rng.choice(([1.5], 2.0, [-0.5], 0.25)), FLOAT)
                ins = [cur, c] if rng.random() < 0.8 else [c, cur]
                cur = self.node(op, ins, FLOAT)
            else:
                cur = self.node(op, [cur], FLOAT)
            region.append(cur)
        back = shape if rng.random() < 0.7 else self.const([-1] + [0] * (d.rank - 1) if d.rank > 1 else [-1])
        out = self.node("Reshape", [cur, back], FLOAT)
        if rng.random() < 0.7:  # a reader, so that the Reshape's output need not stay a graph output
            out = self.node("Neg", [out], FLOAT)
        self.add_data(out, d.rank, d.bound, FLOAT)
        if rng.random() < 0.15:  # a region tensor read outside the region
            self.add_data(rng.choice(region), rank1, d.bound ** d.rank, FLOAT)

    # -- issue 22: what exporters write that inference now states --------------------------------
    def op_heads(self) -> None:
        """Dynamo's attention split: Reshape(x, Concat(Shape(x)[0:r-1], [-1, h])), allowzero 0 or
        1, so that -1 sits beside dims that may be 0; sometimes a computed ``h*dim`` target."""
        rng = self.rng
        d = self.pick_data()
        if d.rank < 1 or d.rank > 3:
            return
        shape = self.node("Shape", [d.name], INT64)
        head = [self.node("Slice", [shape, self.const([0]), self.const([d.rank - 1])], INT64)] if d.rank > 1 else []
        tail = self.const([-1, rng.choice((1, 2, 4))]) if rng.random() < 0.7 else self.const([rng.choice((1, 2)), -1])
        if head and rng.random() < 0.3:
            # a target k*dim at a position whose input dim is dim: 0 only where the dim is
            k = self.const([rng.choice((1, 2, 4))])
            head = [self.node("Mul", [head[0], k], INT64)] if d.rank == 2 else head
        target = self.node("Concat", head + [tail], INT64, axis=0)
        attrs = {"allowzero": rng.choice((0, 1))} if self.opset >= 14 else {}
        out = self.node("Reshape", [d.name, target], d.dtype, **attrs)
        self.add_data(out, d.rank + 1, d.bound, d.dtype)

    def op_reduce_val(self) -> None:
        """ReduceProd/Sum/Min/Max of a shape vector (tf2onnx builds Einsum and LayerNorm shapes
        so), in int64 or after a Cast to int32, keepdims or not."""
        rng = self.rng
        v = self.vec_of(self.pick_val())
        assert v.length is not None
        op = rng.choice(("ReduceProd", "ReduceSum", "ReduceMin", "ReduceMax"))
        name, dtype = v.name, INT64
        if rng.random() < 0.4:
            dtype = TensorProto.INT32
            name = self.node("Cast", [name], dtype, to=dtype)
        keep = rng.randint(0, 1)
        since = 13 if op == "ReduceSum" else 18
        if rng.random() < 0.5:
            ins, attrs = [name], {"keepdims": keep}
        elif self.opset >= since:
            ins, attrs = [name, self.const([0])], {"keepdims": keep}
        else:
            ins, attrs = [name], {"keepdims": keep, "axes": [0]}
        r = self.node(op, ins, dtype, **attrs)
        if dtype != INT64:
            r = self.node("Cast", [r], INT64, to=INT64)
        bound = v.bound ** v.length if op == "ReduceProd" else v.bound * v.length
        self.add_val(r, 1 if keep else None, min(bound, 2**63))

    def op_int32_chain(self) -> None:
        """tf2onnx's shape arithmetic: Cast to int32, Gather / Mul / Add / Sub / Concat in int32,
        back to int64."""
        rng = self.rng
        v = self.pick_val()
        i32 = TensorProto.INT32
        cur = self.node("Cast", [v.name], i32, to=i32)
        bound = v.bound
        length = v.length
        for _ in range(rng.randint(1, 3)):
            op = rng.choice(("Mul", "Add", "Sub", "Gather", "Concat"))
            if op == "Gather" and length is not None:
                idx = rng.randrange(-length, length)
                cur = self.node("Gather", [cur, self.const(idx, i32)], i32, axis=0)
                length = None
            elif op == "Concat":
                if length is None:
                    cur = self.axes_form("Unsqueeze", cur, [0], i32)
                    length = 1
                if length >= 4:
                    continue
                cur = self.node("Concat", [cur, self.const([rng.choice((-1, 1, 4))], i32)], i32, axis=0)
                length += 1
            elif op in ("Mul", "Add", "Sub"):
                k = rng.choice((2, 3, 4, 64, -1, 2**20))
                cur = self.node(op, [cur, self.const(k, i32)], i32)
                bound = bound * abs(k) if op == "Mul" else bound + abs(k)
        self.add_val(self.node("Cast", [cur], INT64, to=INT64), length, min(bound, 2**63))

    def op_kernel_fixed(self) -> None:
        """A dim only a kernel fixes (issue 22): tf2onnx's LayerNorm scale ``Expand(1.0, n)`` with
        ``n`` the int32 product of a tensor's dims (unknown where it may wrap), against the
        tensor's elements as channels of BatchNormalization / InstanceNormalization, as a MatMul's
        or Gemm's inner dim, or as Conv's input channels; or ``n`` made of another product that
        matches only at some bindings (the oracle checks the bindings onnxruntime runs)."""
        rng = self.rng
        d = self.pick_data(float_only=True)
        if d.bound ** d.rank > 100_000:
            return
        i32 = TensorProto.INT32
        other = self.pick_data(float_only=True) if rng.random() < 0.25 else d
        dims = self.node("Cast", [self.node("Shape", [other.name], INT64)], i32, to=i32)
        n = self.node("Cast", [self.node("ReduceProd", [dims], i32, keepdims=1)], INT64, to=INT64)
        one = self.const(1.0, FLOAT)
        op = rng.choice(("BatchNormalization", "InstanceNormalization", "MatMul", "Gemm", "Conv"))
        if op in ("BatchNormalization", "InstanceNormalization"):
            x = self.node("Reshape", [d.name, self.const([1, -1, 1])], FLOAT)
            scale = self.node("Expand", [one, n], FLOAT)
            ins = [x, scale, scale] + ([scale, scale] if op == "BatchNormalization" else [])
            out = self.node(op, ins, FLOAT)
            self.add_data(scale, 1, d.bound ** d.rank)
            self.add_data(out, 3, d.bound ** d.rank)
            return
        flat = self.node("Reshape", [d.name, self.const([-1, 1] if op != "Conv" else [1, -1, 1])], FLOAT)
        if op == "Conv":
            w = self.node("Expand", [one, self.node("Concat", [self.const([2]), n, self.const([1])], INT64, axis=0)],
                          FLOAT)
            out = self.node("Conv", [flat, w], FLOAT)
            self.add_data(w, 3, d.bound ** d.rank)
            self.add_data(out, 3, 2)
            return
        trans = rng.randint(0, 1) if op == "Gemm" else 0
        parts = [n, self.const([2])] if trans else [self.const([2]), n]
        lhs = self.node("Expand", [one, self.node("Concat", parts, INT64, axis=0)], FLOAT)
        out = self.node(op, [lhs, flat], FLOAT, **({"transA": 1} if trans else {}))
        self.add_data(lhs, 2, d.bound ** d.rank)
        self.add_data(out, 2, 2)

    def op_broadcast_data(self) -> None:
        """Two data tensors whose dims are different symbols (or a symbol and a constant),
        broadcast by Add, Mul, Where or Expand: valid only at some bindings, and what a run proves
        (equal, or one of them 1) then holds for the nodes after it."""
        rng = self.rng
        x, y = self.pick_data(float_only=True), self.pick_data(float_only=True)
        if x.name == y.name or max(x.rank, y.rank) > 4:
            return
        op = rng.choice(("Add", "Mul", "Where", "Expand"))
        if op == "Expand":
            out = self.node("Expand", [x.name, self.node("Shape", [y.name], INT64)], FLOAT)
        elif op == "Where":
            cond = self.node("Less", [x.name, self.const(0.0, FLOAT)], TensorProto.BOOL)
            out = self.node("Where", [cond, x.name, y.name], FLOAT)
        else:
            out = self.node(op, [x.name, y.name], FLOAT)
        self.add_data(out, max(x.rank, y.rank), max(x.bound, y.bound))

    # -- value arithmetic in every type (issue 21) ---------------------------------------------------
    def in_type(self, v: Val, t: int) -> str:
        """``v`` as a tensor of element type ``t`` (a Cast, unless it already is one)."""
        return v.name if t == INT64 else self.node("Cast", [v.name], t, to=t)

    def back(self, name: str, t: int) -> str:
        return name if t == INT64 else self.node("Cast", [name], INT64, to=INT64)

    def typed_const(self, t: int, length: int | None) -> str:
        """A constant of type ``t`` from its edge values: one element, or ``length`` of them."""
        vals = _edge_values(t)
        if length is None:
            return self.const(self.rng.choice(vals), t)
        n = length if self.rng.random() < 0.6 else 1
        return self.const([self.rng.choice(vals) for _ in range(n)], t)

    def op_pow(self) -> None:
        """Pow in int64, int32, float, double, float16: through double in onnxruntime, by
        multiplying for a scalar exponent 2 or 3; overflowing powers (3**39, 3**20 in int32)."""
        rng = self.rng
        a = self.pick_val()
        t = rng.choice((INT64, INT64, TensorProto.INT32, FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16))
        base = self.in_type(a, t) if rng.random() < 0.7 else self.const(rng.choice((3, 2, -3, 7, 1, 0)), t)
        te = rng.choice((t, INT64, TensorProto.INT32, FLOAT, TensorProto.DOUBLE))
        exps = (0, 1, 2, 3, 4, 5, 20, 31, 39, 40, 63, 64)
        if rng.random() < 0.6 or a.length is None:
            e = self.const(rng.choice(exps), te)
        else:
            e = self.const([rng.choice(exps) for _ in range(a.length)], te)
        out = self.node("Pow", [base, e], t)
        if t != INT64 and rng.random() < 0.5:
            out = self.node("Add", [out, self.typed_const(t, None)], t)
        self.add_val(self.back(out, t), a.length, 2**63)

    def op_variadic(self) -> None:
        """Sum/Mean/Max/Min of 1-4 operands: shape values cast to a type and edge constants
        (2**24 beside 1s: float32 rounds after each addition)."""
        rng = self.rng
        op = rng.choice(("Sum", "Sum", "Mean", "Max", "Min"))
        floats = (FLOAT, FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16)
        if op in ("Sum", "Mean"):
            t = rng.choice(floats)
        else:
            t = rng.choice(floats + (INT64, TensorProto.INT32, TensorProto.UINT8, TensorProto.INT8,
                                     TensorProto.UINT32, TensorProto.UINT64))
        a = self.pick_val()
        parts = [self.in_type(a, t)]
        for _ in range(rng.randint(0, 3)):
            if rng.random() < 0.5:
                b = self.pick_val()
                if b.length is not None and not (a.length is not None and b.length in (1, a.length)):
                    b = self.scalar_of(b)
                parts.append(self.in_type(b, t))
            else:
                parts.append(self.typed_const(t, a.length))
        rng.shuffle(parts)
        # every operand is a scalar, one element or a.length elements: the result has a's length
        # unless a is a scalar and a constant has one element (then [1])
        const_lens = [self.lens.get(p_) for p_ in parts if p_ in self.lens]
        length = a.length if a.length is not None else (1 if any(n == 1 for n in const_lens) else None)
        out = self.node(op, parts, t)
        self.add_val(self.back(out, t), length, 2**63)

    def op_int_arith(self) -> None:
        """Arithmetic in the narrow integer types: a shape value cast to int8/uint8/.../uint64,
        an edge constant of that type (its extremes, -1), the result cast back."""
        rng = self.rng
        t = rng.choice((TensorProto.INT32, TensorProto.UINT8, TensorProto.INT8, TensorProto.INT16,
                        TensorProto.UINT16, TensorProto.UINT32, TensorProto.UINT64))
        a = self.pick_val()
        x = self.in_type(a, t)
        op = rng.choice(("Add", "Sub", "Mul", "Mul", "Div", "Mod", "Max", "Min", "Abs", "Neg", "Equal", "Less"))
        if op in ("Max", "Min") and t in (TensorProto.INT16, TensorProto.UINT16):
            op = "Add"
        if op == "Neg" and t in (TensorProto.UINT8, TensorProto.UINT16, TensorProto.UINT32, TensorProto.UINT64):
            op = "Abs"
        if op in ("Abs", "Neg"):
            out = self.node(op, [x], t)
        else:
            c = self.typed_const(t, a.length)
            if op in ("Div", "Mod"):
                c = self.const(rng.choice((2, 3, 7, 100)), t)  # (a constant 0 makes the model fail to load)
            attrs = {"fmod": rng.randint(0, 1)} if op == "Mod" else {}
            ins = [x, c] if rng.random() < 0.7 or op in ("Div", "Mod") else [c, x]
            if op in ("Equal", "Less"):
                out = self.node("Cast", [self.node(op, ins, TensorProto.BOOL)], t, to=t)
            else:
                out = self.node(op, ins, t, **attrs)
        self.add_val(self.back(out, t), a.length, 2**63)

    def op_float_range(self) -> None:
        """Range in float, double or int32 near the type's rounding border (float32 2**24 + k:
        onnxruntime adds delta to the previous element and rounds), its length read back by Shape
        and its elements cast to int64."""
        rng = self.rng
        t = rng.choice((FLOAT, FLOAT, TensorProto.DOUBLE, TensorProto.INT32))
        base = rng.choice((0, 2**24 - 3, 2**24, -(2**24), 2**53 - 2, 5))
        if t == TensorProto.INT32 and abs(base) >= 2**31:
            base = 7
        v = self.as_dims(self.scalar_of(self.pick_val()), lo=0, hi=12)
        start = self.const(base, t) if rng.random() < 0.5 else \
            self.node("Add", [self.const(base, t), self.in_type(v, t)], t)
        span = self.const(rng.choice((3, 8, 12, 0, -4)), t) if rng.random() < 0.5 else self.in_type(v, t)
        limit = self.node("Add", [start, span], t)
        delta = self.const(rng.choice((1, 1, 2, 3, -1)), t)
        r = self.node("Range", [start, limit, delta], t)
        self.add_val(self.node("Shape", [r], INT64), 1, 32)
        self.add_data(self.back(r, t), 1, 32, INT64)

    def op_stored_const(self) -> None:
        """A constant stored in each field a reader may meet: int32_data holding 300 for a uint8
        (44 at run time), 200 for an int8, 2 for a bool, uint64_data for a uint32, float16 bit
        patterns; raw data too; as an initializer, a Constant node or a ConstantOfShape fill."""
        rng = self.rng
        t = rng.choice(tuple(_STORED))
        field, choices = _STORED[t]
        n = rng.randint(1, 3)
        vals = [rng.choice(choices) for _ in range(n)]
        tensor = TensorProto()
        tensor.data_type = t
        tensor.dims.append(n)
        if field == "raw":
            arr = np.array(vals, dtype=helper.tensor_dtype_to_np_dtype(t))
            tensor.raw_data = arr.tobytes()
        else:
            getattr(tensor, field).extend(vals)
        name = self.fresh("st")
        tensor.name = name
        where = rng.random()
        if where < 0.5:
            self.inits.append(tensor)
        elif where < 0.8 or n != 1:
            self.nodes.append(helper.make_node("Constant", [], [name], value=tensor))
        else:
            shape = self.const([rng.randint(1, 3)])
            del tensor.dims[:]
            tensor.dims.append(1)
            self.nodes.append(helper.make_node("ConstantOfShape", [shape], [name], value=tensor))
        self.types[name] = t
        out = self.node("Cast", [name], INT64, to=INT64)
        if rng.random() < 0.6:
            a = self.pick_val()
            if a.length is None or a.length in (1, n):
                out = self.node("Add", [a.name, out], INT64)
        self.add_val(out, n, 2**16)

    def op_absorb_reshape(self) -> None:
        """A Squeeze or Unsqueeze read by a Reshape (tf2onnx's ``GlobalAveragePool -> Squeeze ->
        Reshape``, its Conv1D's ``Unsqueeze -> Reshape [0, 1, 1, -1]``): what squeeze-into-reshape
        absorbs. Targets with 0s that may move, allowzero=1 now and then, a second reader."""
        rng = self.rng
        d = self.pick_data()
        if d.rank < 1 or d.rank > 3:
            return
        if rng.random() < 0.4:
            ax = rng.randrange(d.rank)  # (a dim that may not be 1: then the original fails there)
            su, rank = self.axes_form("Squeeze", d.name, [ax], d.dtype), d.rank - 1
        else:
            k = rng.choice((1, 1, 2))
            rank = d.rank + k
            su = self.axes_form("Unsqueeze", d.name, sorted(rng.sample(range(rank), k)), d.dtype)
        self.ranks[su] = rank
        kind = rng.choice(("flat", "zeros", "own", "own"))
        attrs = {"allowzero": 1} if self.opset >= 14 and kind != "zeros" and rng.random() < 0.3 else {}
        if kind == "flat":
            target, out_rank = self.const([-1]), 1
        elif kind == "zeros":
            j = rng.randint(0, min(rank, 2))
            target, out_rank = self.const([0] * j + [-1]), j + 1
        else:  # back to the input's own shape, computed from the input (no second reader of su)
            target, out_rank = self.node("Shape", [d.name], INT64), d.rank
        out = self.node("Reshape", [su, target], d.dtype, **attrs)
        if rng.random() < 0.7:
            out = self.node("Neg", [out], d.dtype) if d.dtype == FLOAT else out
        self.add_data(out, out_rank, d.bound ** max(d.rank, 1), d.dtype)
        if rank >= 1 and rng.random() < 0.15:  # (the other steps take data of rank >= 1)
            self.add_data(su, rank, d.bound, d.dtype)  # a second reader: nothing to absorb

    def op_unit_region(self) -> None:
        """Unit axes inserted, carried through elementwise ops, MatMul with a 2-D right operand and
        unary ops, then squeezed (paddle2onnx's ``Unsqueeze(1) -> MatMul -> Add -> Squeeze(1)``):
        what cancel-across-region removes. Now and then an operand that reaches the unit axes or
        adds rank, a region tensor read outside, or a Squeeze of other axes."""
        rng = self.rng
        d = self.pick_data(float_only=True)
        if d.rank < 1 or d.rank > 3:
            return
        k = rng.choice((1, 1, 1, 2))
        rank = d.rank + k
        ones = sorted(rng.sample(range(rank), k))
        cur = self.axes_form("Unsqueeze", d.name, ones, FLOAT)
        region = [cur]
        last: int | None = None  # the region's last dim when static (after a MatMul)
        for _ in range(rng.randint(1, 4)):
            op = rng.choice(("MatMul", "MatMul", "Tanh", "Relu", "Identity", "Add", "Mul", "Sub", "Div", "Pow",
                             "Max", "Min", "Self", "Cast"))
            if op == "MatMul" and rank - 1 not in ones:
                n = rng.choice((1, 3))
                if last is None:  # [K, n] with K the input's last dim, read from the input's shape
                    kdim = self.node("Slice", [self.node("Shape", [d.name], INT64), self.const([-1]),
                                              self.const([d.rank])], INT64)
                    w = self.node("Expand", [self.const([[0.5]], FLOAT),
                                             self.node("Concat", [kdim, self.const([n])], INT64, axis=0)], FLOAT)
                else:
                    w = self.const([[0.25 * (i - j) for j in range(n)] for i in range(last)], FLOAT)
                if rng.random() < 0.1:
                    w = self.axes_form("Unsqueeze", w, [0], FLOAT)  # a 3-D right operand
                cur, last = self.node("MatMul", [cur, w], FLOAT), n
            elif op in ("Add", "Mul", "Sub", "Div", "Pow", "Max", "Min"):
                shape = rng.choice(((), (1,), (1, 1), (1, 1, 1), (1,) * rank, (2,)))
                c = self.const(np.full(shape, 0.75).tolist() if shape else 0.75, FLOAT)
                cur = self.node(op, [cur, c] if rng.random() < 0.8 else [c, cur], FLOAT)
            elif op == "Self":
                cur = self.node(rng.choice(("Add", "Mul")), [cur, rng.choice(region)], FLOAT)
            elif op == "Cast":
                cur = self.node("Cast", [self.node("Cast", [cur], DOUBLE, to=DOUBLE)], FLOAT, to=FLOAT)
            elif op != "MatMul":
                cur = self.node(op, [cur], FLOAT)
            region.append(cur)
        axes = ones if rng.random() < 0.9 else [rng.randrange(rank)]
        out = self.axes_form("Squeeze", cur, axes, FLOAT)
        self.add_data(out, rank - len(axes), max(d.bound, 3), FLOAT)
        if rng.random() < 0.15:
            self.add_data(rng.choice(region), rank, max(d.bound, 3), FLOAT)

    # -- the model -------------------------------------------------------------------------------
    def build(self) -> Generated:
        rng = self.rng
        self.make_inputs()
        target = rng.randint(5, 34)
        ops: list[tuple[Callable[[], None], float]] = [
            (self.op_shape_of_new, 2), (self.op_gather, 2), (self.op_slice_val, 1.5),
            (self.op_concat_val, 1.5), (self.op_arith, 4), (self.op_cast, 1.5), (self.op_float, 1.2),
            (self.op_where, 1), (self.op_squeeze_val, 0.6), (self.op_constant_of_shape, 1.2),
            (self.op_range, 1), (self.op_expand, 1), (self.op_reshape, 1.2), (self.op_tile, 0.6),
            (self.op_pad, 0.6), (self.op_slice_data, 1.5), (self.op_squeeze_data, 0.6),
            (self.op_positions, 0.5), (self.op_fan_out, 1.5), (self.op_own_shape, 1),
            (self.op_duplicate, 0.8), (self.op_identity, 0.4),
            (self.op_cast_chain, 0.6), (self.op_round_trip, 0.8),
            (self.op_heads, 0.8), (self.op_reduce_val, 0.8), (self.op_int32_chain, 0.8),
            (self.op_broadcast_data, 0.8), (self.op_kernel_fixed, 1.0),
            (self.op_pow, 0.8), (self.op_variadic, 0.8), (self.op_int_arith, 0.8), (self.op_stored_const, 0.6),
            (self.op_float_range, 0.4),
            (self.op_absorb_reshape, 0.6), (self.op_unit_region, 0.6),
        ]
        checked = {self.op_expand, self.op_reshape, self.op_tile, self.op_pad, self.op_arith,
                   self.op_where, self.op_concat_val, self.op_fan_out, self.op_own_shape,
                   self.op_round_trip, self.op_heads, self.op_broadcast_data, self.op_int32_chain,
                   self.op_kernel_fixed,
                   self.op_absorb_reshape, self.op_unit_region}
        funcs = [f for f, _ in ops]
        weights = [w for _, w in ops]
        self.new_shape_val()
        while len(self.nodes) < target:
            mark = (len(self.nodes), len(self.inits), len(self.vals), len(self.datas))
            step = rng.choices(funcs, weights)[0]
            step()
            over = len(self.nodes) > 40
            if over or (step in checked and not self.statically_valid()):
                # undo the step: it overshot, or onnx's own inference proves it fails everywhere
                n0, i0, v0, d0 = mark
                del self.nodes[n0:], self.inits[i0:], self.vals[v0:], self.datas[d0:]
                if over:
                    break
        return Generated(self.finish(), tuple(sorted(self.used_syms)), self.big, self.seed)

    def statically_valid(self) -> bool:
        """onnx's strict shape inference accepts the graph so far (a model that fails for every
        binding, e.g. Expand of incompatible static dims, checks nothing)."""
        probe = helper.make_model(helper.make_graph(self.nodes, "probe", self.inputs, [],
                                                    initializer=self.inits),
                                  opset_imports=[helper.make_opsetid("", self.opset)])
        try:
            onnx.shape_inference.infer_shapes(probe, strict_mode=True, data_prop=True)
        except Exception:
            return False
        return True

    def output_info(self, name: str) -> onnx.ValueInfoProto | None:
        """A graph output of the right type and rank, every dim left unnamed (the checker wants a
        shape; the dims are not the generator's to state)."""
        rank = self.ranks.get(name)
        if rank is None and name in self.lens:
            rank = 0 if self.lens[name] is None else 1
        if rank is None:
            rank = self.inferred_ranks.get(name)
        if rank is None or name not in self.types or self.types[name] in _NO_NUMPY:
            return None
        return helper.make_tensor_value_info(name, self.types[name], [None] * rank)

    def finish(self) -> onnx.ModelProto:
        probe = helper.make_model(helper.make_graph(self.nodes, "probe", self.inputs, [],
                                                    initializer=self.inits),
                                  opset_imports=[helper.make_opsetid("", self.opset)])
        self.inferred_ranks: dict[str, int] = {}
        try:
            for vi in onnx.shape_inference.infer_shapes(probe).graph.value_info:
                if vi.type.tensor_type.HasField("shape"):
                    self.inferred_ranks[vi.name] = len(vi.type.tensor_type.shape.dim)
        except Exception:
            pass

        consumed = {i for n in self.nodes for i in n.input}
        produced = [o for n in self.nodes for o in n.output if n.op_type != "Constant"]
        outs = [o for o in produced if o not in consumed]
        extra = [o for o in produced if o in consumed]
        if extra:
            outs += self.rng.sample(extra, min(len(extra), self.rng.randint(0, 2)))
        if not outs:
            outs = [produced[-1]] if produced else []
        outputs = [vi for vi in (self.output_info(o) for o in outs) if vi is not None]
        graph = helper.make_graph(self.nodes, f"shapearith_{self.seed}", self.inputs, outputs,
                                  initializer=self.inits)
        ir = 7 if self.opset <= 15 else (8 if self.opset <= 18 else 10)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)],
                                  ir_version=ir, producer_name="shapearith")
        return model


def _edge_values(t: int) -> list[Any]:
    """Values of element type ``t`` at the edges: 0, 1, 2, 3, -1, the extremes, rounding borders."""
    if t in _FLOAT_BITS:
        p, largest = _FLOAT_BITS[t]
        return [0.0, -0.0, 1.0, 2.0, 3.0, -1.0, float(2**p - 1), float(2**p), float(2**p + 2), 0.5, -2.5,
                largest, float(-(2**p))]
    info = np.iinfo(helper.tensor_dtype_to_np_dtype(t))
    vals = [0, 1, 2, 3, -1, int(info.max), int(info.min), int(info.max) - 1, 2 ** (info.bits // 2)]
    return [v for v in vals if info.min <= v <= info.max]


_FLOAT_BITS = {TensorProto.FLOAT16: (11, 65504.0), FLOAT: (24, 3.4028234663852886e38),
               TensorProto.DOUBLE: (53, 1.7976931348623157e308)}
# element type -> (the field its values go in, values to store there)
_STORED: dict[int, tuple[str, tuple[Any, ...]]] = {
    TensorProto.UINT8: ("int32_data", (300, 44, -1, 255, 256, 2, 70000)),
    TensorProto.INT8: ("int32_data", (200, -56, 127, -129, 3, 2**31 - 1)),
    TensorProto.INT16: ("int32_data", (40000, -1, 3, 65535)),
    TensorProto.UINT16: ("int32_data", (-1, 70000, 3, 65535)),
    TensorProto.BOOL: ("int32_data", (2, 0, 1, -1, 256)),
    TensorProto.UINT32: ("uint64_data", (2**32 + 5, 2**64 - 1, 3)),
    TensorProto.INT32: ("int32_data", (3, -5, 2**31 - 1)),
    TensorProto.INT64: ("int64_data", (3, -5, 2**40)),
    TensorProto.UINT64: ("uint64_data", (3, 2**63 + 1, 2**64 - 1)),
    TensorProto.FLOAT16: ("int32_data", (0x3C00, 0x4000, 0x4248, 0x4200, 0x7BFF, 0x8000)),
    TensorProto.BFLOAT16: ("int32_data", (0x3F80, 0x4040, 0x4B80, 0x4B81)),
    FLOAT: ("float_data", (3.0, -0.0, 16777217.0, 2.5)),
    TensorProto.DOUBLE: ("double_data", (3.0, 2.0**60, -1.0)),
}


def generate(seed: int) -> Generated:
    """A random model for ``seed`` (the same model for the same seed)."""
    return _Gen(seed).build()


def bindings_for(symbols: Sequence[str], big: int, seed: int) -> list[dict[str, int]]:
    """All-0, all-1, all-2, all-3, all-big; then each symbol 0 while the others are not (a KV
    cache's first step: past = 0, seq > 0); then random mixes. 0, 1, 2, 3 and ``big`` all occur."""
    if not symbols:
        return [{}]
    rng = random.Random(seed * 7919 + 1)
    out = [{s: v for s in symbols} for v in (0, 1, 2, 3, big)]
    if len(symbols) > 1:
        for zero in symbols:
            out.append({s: 0 if s == zero else rng.choice((1, 2, 3, 5, big)) for s in symbols})
    for _ in range(2):
        b = {s: rng.choice((0, 1, 2, 3, 5, big)) for s in symbols}
        if b not in out:
            out.append(b)
    return out


def independent_for(model: onnx.ModelProto, big: int) -> list[dict[str, int]]:
    """Bindings that give each graph input its own size for a dim name it shares with an earlier
    input (``batch@x1``: see check_model): 1 beside ``big`` both ways (a broadcast onnxruntime
    accepts), 0 beside 1, and 2 beside 3 (which most models refuse). Empty when no name is
    shared."""
    first: dict[str, str] = {}
    later: list[str] = []
    for vi in model.graph.input:
        for d in vi.type.tensor_type.shape.dim:
            if d.dim_param:
                if first.setdefault(d.dim_param, vi.name) != vi.name and f"{d.dim_param}@{vi.name}" not in later:
                    later.append(f"{d.dim_param}@{vi.name}")
    if not later:
        return []
    out = []
    for a, b in ((1, big), (big, 1), (0, 1), (2, 3)):
        binding = {name: a for name in first}
        binding.update({copy: b for copy in later})
        out.append(binding)
    return out


# ================================================================================================
# onnxruntime in a worker process
# ================================================================================================

def _send(stream: Any, obj: object) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack("<Q", len(data)))
    stream.write(data)
    stream.flush()


def _recv(stream: Any) -> Any:
    head = stream.read(8)
    if len(head) < 8:
        raise EOFError
    (n,) = struct.unpack("<Q", head)
    return pickle.loads(stream.read(n))


def _worker_main() -> None:
    import resource

    try:
        resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))
    except (ValueError, OSError):
        pass
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 4
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    cached: tuple[bytes, Any] | None = None
    while True:
        try:
            model_bytes, feeds, names = _recv(inp)
        except EOFError:
            return
        try:
            if cached is None or cached[0] != model_bytes:
                try:
                    session = ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])
                except Exception as e:  # said apart from a failing run: the model is refused outright
                    cached = None
                    _send(out, ("err", LOAD_FAILED + (str(e).splitlines()[0][:300] if str(e) else type(e).__name__)))
                    continue
                cached = (model_bytes, session)
            res = cached[1].run(names, feeds)
            _send(out, ("ok", [np.asarray(r) for r in res]))
        except Exception as e:  # the model fails at this binding: an answer, not a crash
            _send(out, ("err", str(e).splitlines()[0][:1000] if str(e) else type(e).__name__))


def _forkserver_main(fd: int) -> None:
    """Start workers (``_worker_main``) by forking this process, one at a time, for ``Runner``:
    a message "start" with the worker's stdin and stdout; the reply is the worker's pid, then its
    exit code when it ends ("kill" in between kills it)."""
    import signal
    import socket

    import onnxruntime  # noqa: F401 - what every worker imports, imported once

    sock = socket.socket(fileno=fd)
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(sock, 16, 2)
        except OSError:
            return
        if not msg:
            return
        if msg != b"start" or len(fds) != 2:
            for f in fds:
                os.close(f)
            continue
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                sock.close()
                os.dup2(fds[0], 0)
                os.dup2(fds[1], 1)
                for f in fds:
                    os.close(f)
                _worker_main()
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        for f in fds:
            os.close(f)
        pidfd = os.pidfd_open(pid)
        gone = False
        try:
            sock.send(struct.pack("<q", pid))
        except OSError:
            gone = True
        while True:
            if gone:
                os.kill(pid, signal.SIGKILL)
            ready, _, _ = select.select([pidfd] if gone else [pidfd, sock], [], [])
            if pidfd in ready:
                break
            if sock.recv(16) in (b"", b"kill"):  # "" : the runner went away
                gone = True
                os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        os.close(pidfd)
        try:
            sock.send(struct.pack("<q", os.waitstatus_to_exitcode(status)))
        except OSError:
            return


class _ForkedWorker:
    """What ``Runner`` uses of a ``Popen``, for a worker the fork server started."""

    def __init__(self, server: _ForkServer, pid: int, stdin: Any, stdout: Any) -> None:
        self.server, self.pid, self.stdin, self.stdout = server, pid, stdin, stdout
        self.returncode: int | None = None

    def _ended(self, timeout: float | None) -> bool:
        if self.returncode is None:
            ready, _, _ = select.select([self.server.sock], [], [], timeout)
            if not ready:
                return False
            data = self.server.sock.recv(8)
            self.returncode = struct.unpack("<q", data)[0] if len(data) == 8 else -9
            for stream in (self.stdin, self.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
        return True

    def poll(self) -> int | None:
        self._ended(0)
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            try:
                self.server.sock.send(b"kill")
            except OSError:
                pass

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended(timeout):
            raise subprocess.TimeoutExpired("shapearith worker", timeout or 0)
        assert self.returncode is not None
        return self.returncode


class _ForkServer:
    """``python shapearith.py --forkserver FD``: see ``_forkserver_main``."""

    @staticmethod
    def usable() -> bool:
        import socket

        return hasattr(os, "pidfd_open") and hasattr(socket, "send_fds") and hasattr(os, "fork")

    def __init__(self) -> None:
        import socket

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock = ours
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--forkserver", str(theirs.fileno())],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, pass_fds=(theirs.fileno(),))
        theirs.close()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def start(self) -> _ForkedWorker:
        import socket

        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        try:
            socket.send_fds(self.sock, [b"start"], [in_r, out_w])
        finally:
            os.close(in_r)
            os.close(out_w)
        data = self.sock.recv(8)
        if len(data) != 8:
            os.close(in_w)
            os.close(out_r)
            raise OSError("the shapearith fork server died")
        return _ForkedWorker(self, struct.unpack("<q", data)[0], os.fdopen(in_w, "wb"), os.fdopen(out_r, "rb"))

    def close(self) -> None:
        self.sock.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Runner:
    """onnxruntime in a child process: a crash (SIGFPE on an integer division, out of memory) or
    a hang there fails one run, and the worker is restarted."""

    def __init__(self, timeout: float = RUN_TIMEOUT_S) -> None:
        self.timeout = timeout
        self.proc: subprocess.Popen[bytes] | _ForkedWorker | None = None
        self.restarts = 0
        self._forks: _ForkServer | None = None

    def _start(self) -> subprocess.Popen[bytes] | _ForkedWorker:
        if self.proc is None or self.proc.poll() is not None:
            if _ForkServer.usable():
                # a worker is a fork of a started one: a crash costs a fork, not an interpreter
                # start and onnxruntime's import (about a second)
                if self._forks is None or not self._forks.alive():
                    self._forks = _ForkServer()
                self.proc = self._forks.start()
            else:
                self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker"],
                                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        return self.proc

    def run(self, model_bytes: bytes, feeds: Mapping[str, np.ndarray],
            names: Sequence[str]) -> tuple[str, Any]:
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            _send(proc.stdin, (model_bytes, dict(feeds), list(names)))
            ready, _, _ = select.select([proc.stdout], [], [], self.timeout)
            if not ready:
                self.kill()
                return "err", f"timeout after {self.timeout:.0f} s"
            return _recv(proc.stdout)
        except (EOFError, BrokenPipeError, OSError):
            code = proc.poll()
            self.kill()
            return "err", f"onnxruntime died (exit {code})"

    def kill(self) -> None:
        if self.proc is not None:
            self.restarts += 1
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def close(self) -> None:
        if self.proc is not None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except Exception:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        if self._forks is not None:
            self._forks.close()
            self._forks = None

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ================================================================================================
# The oracle
# ================================================================================================

@dataclass
class Finding:
    category: str  # unsound-dim / unsound-dtype / unsound-value / optimize-mismatch / crash
    op: str
    tensor: str
    stated: str
    runtime: str
    binding: dict[str, int]
    model: onnx.ModelProto | None = None
    saved: str | None = None

    def line(self) -> str:
        b = ", ".join(f"{k}={v}" for k, v in self.binding.items()) or "-"
        return (f"{self.category}: {self.op} {self.tensor!r}: shapeflow {self.stated}, "
                f"runtime {self.runtime} at {{{b}}}")

    def text(self) -> str:
        out = [self.line()]
        if self.saved:
            out.append(f"  saved: {self.saved}")
        if self.model is not None:
            out.append(_model_text(self.model))
        return "\n".join(out)


@dataclass
class Stats:
    models: int = 0
    bindings_run: int = 0
    bindings_failed: int = 0
    tensors_checked: int = 0
    dims_checked: int = 0
    dims_stated_unknown: int = 0
    values_checked: int = 0
    optimize_refused: int = 0
    optimize_changed: int = 0
    optimize_runs: int = 0
    optimize_refused_by_runtime: int = 0  # independent bindings the optimized model is refused at
    invalid_generated: int = 0
    ort_restarts: int = 0
    findings: list[Finding] = field(default_factory=list)

    def add(self, other: Stats) -> None:
        for k, v in vars(other).items():
            if k == "findings":
                self.findings.extend(v)
            else:
                setattr(self, k, getattr(self, k) + v)

    def summary(self) -> str:
        return (f"{self.models} models, {self.bindings_run} bindings run ({self.bindings_failed} failed "
                f"in onnxruntime, not checked), {self.tensors_checked} tensors / {self.dims_checked} dims / "
                f"{self.values_checked} values checked ({self.dims_stated_unknown} dims unknown), "
                f"optimize: {self.optimize_changed} changed, {self.optimize_refused} refused, "
                f"{self.optimize_runs} runs compared"
                + (f" ({self.optimize_refused_by_runtime} independent bindings refused by onnxruntime's planner)"
                   if self.optimize_refused_by_runtime else "")
                + f"; {len(self.findings)} findings")


def _model_text(model: onnx.ModelProto) -> str:
    try:
        return onnx.printer.to_text(model)
    except Exception:  # the printer is best-effort
        return str(model.graph)


def _np_dtype(elem: int) -> Any:
    return helper.tensor_dtype_to_np_dtype(elem)


def make_feeds(model: onnx.ModelProto, binding: Mapping[str, int], seed: int) -> dict[str, np.ndarray] | None:
    """Inputs of the bound shapes (random values, the same for the same seed); None if too large
    or a dim is not bound."""
    rng = np.random.default_rng(seed)
    inits = {t.name for t in model.graph.initializer}
    feeds: dict[str, np.ndarray] = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        shape = []
        for d in tt.shape.dim:
            own = f"{d.dim_param}@{vi.name}"  # (independent bindings: this input's own size)
            if d.HasField("dim_value"):
                shape.append(d.dim_value)
            elif own in binding:
                shape.append(binding[own])
            elif d.dim_param in binding:
                shape.append(binding[d.dim_param])
            else:
                return None
        if int(np.prod(shape, dtype=np.int64)) > MAX_INPUT_ELEMS:
            return None
        dt = _np_dtype(tt.elem_type)
        # np.asarray: for a scalar input (shape []) numpy gives a numpy scalar, which onnxruntime
        # refuses ("Unable to handle object of type numpy.bool")
        if np.issubdtype(dt, np.floating):
            feeds[vi.name] = np.asarray(rng.standard_normal(shape), dtype=dt)
        elif dt == np.bool_:
            feeds[vi.name] = np.asarray(rng.random(shape) < 0.5)
        else:
            feeds[vi.name] = np.asarray(rng.integers(-3, 10, size=shape), dtype=dt)
    return feeds


_NO_NUMPY = {TensorProto.BFLOAT16, TensorProto.STRING} | {
    getattr(TensorProto, n) for n in ("FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ",
                                      "UINT4", "INT4", "FLOAT4E2M1") if hasattr(TensorProto, n)}


def expose_all(model: onnx.ModelProto) -> tuple[onnx.ModelProto, list[str]]:
    """A copy whose outputs are every node output, and the list of their names in node order."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    # onnxruntime's Python API cannot return these (no numpy type): leave them inside
    hidden: set[str] = set()
    try:
        for vi in onnx.shape_inference.infer_shapes(model).graph.value_info:
            if vi.type.tensor_type.elem_type in _NO_NUMPY:
                hidden.add(vi.name)
    except Exception:  # exposing everything is the fallback
        pass
    # node order (topological), so that the first wrong tensor of a chain is met first
    names: list[str] = []
    have: set[str] = set(hidden)
    for n in m.graph.node:
        for o in n.output:
            if o and o not in have:
                names.append(o)
                have.add(o)
    outs = {o.name for o in m.graph.output}
    names += [o.name for o in m.graph.output if o.name not in have]
    for name in names:
        if name not in outs:
            m.graph.output.append(onnx.ValueInfoProto(name=name))
    return m, names


def _producers(model: onnx.ModelProto) -> dict[str, onnx.NodeProto]:
    return {o: n for n in model.graph.node for o in n.output}


def op_label(node: onnx.NodeProto | None, arr: np.ndarray | None = None) -> str:
    """``Cast(to=UINT8)``, ``Mod(fmod=1)``, ``Div->float32``: the op, with what tells cases apart."""
    if node is None:
        return "input"
    label = node.op_type
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if node.op_type == "Cast":
        label += f"(to={TensorProto.DataType.Name(attrs.get('to', 0))})"
    elif node.op_type == "Mod":
        label += f"(fmod={attrs.get('fmod', 0)})"
    elif arr is not None and arr.dtype != np.int64 and node.op_type not in ("Shape", "Size"):
        label += f"->{arr.dtype}"
    return label


def _fmt(d: object) -> str:
    return "?" if d is None else str(d)


def _as_number(x: object) -> int | float | None:
    """A stated element as a Python number (exact for integers and integral rationals), or None
    when it is not a plain number."""
    if isinstance(x, bool):
        return int(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, numbers.Rational) and x.denominator == 1:
        return int(x.numerator)
    if isinstance(x, (numbers.Real, np.floating)):
        return float(x)  # type: ignore[arg-type]
    return None


def compare_infos(infos: Mapping[str, Any], producers: Mapping[str, onnx.NodeProto],
                  runtime: Mapping[str, np.ndarray], binding: Mapping[str, int], stats: Stats,
                  seen: set[tuple[str, str]]) -> list[Finding]:
    """Every stated dim / value of ``infos`` against the runtime tensors at ``binding``."""
    from shapeflow.dims import substitute

    found: list[Finding] = []

    def report(cat: str, name: str, stated: str, rt: str) -> None:
        if (cat, name) in seen:
            return
        seen.add((cat, name))
        found.append(Finding(cat, op_label(producers.get(name), runtime[name]), name, stated, rt,
                             dict(binding)))

    for name, arr in runtime.items():
        info = infos.get(name)
        if info is None:
            continue
        stats.tensors_checked += 1
        if info.dtype and arr.dtype != np.dtype(object):
            try:
                want = np.dtype(_np_dtype(info.dtype))
            except Exception:
                want = None
            if want is not None and want != arr.dtype:
                report("unsound-dtype", name, f"dtype {want}", f"dtype {arr.dtype}")
        shape = info.shape
        if shape is not None:
            if len(shape) != arr.ndim:
                report("unsound-dim", name, f"rank {len(shape)} {_fmt_shape(shape)}",
                       f"rank {arr.ndim} {list(arr.shape)}")
                continue
            for i, d in enumerate(shape):
                if d is None:
                    stats.dims_stated_unknown += 1
                    continue
                try:
                    bound = substitute(d, binding)
                except Exception:  # not checkable here
                    bound = None
                if not isinstance(bound, (int, np.integer)):
                    stats.dims_stated_unknown += 1
                    continue
                stats.dims_checked += 1
                if int(bound) != arr.shape[i]:
                    report("unsound-dim", name, f"dim {i} = {d} (= {bound}) in {_fmt_shape(shape)}",
                           f"{arr.shape[i]} in {list(arr.shape)}")
        value = info.value
        if value is not None:
            flat = arr.reshape(-1)
            if len(value) != flat.size:
                report("unsound-value", name, f"{len(value)} elements {_fmt_value(value)}",
                       f"{flat.size} elements {_rt_value(flat)}")
                continue
            for i, e in enumerate(value):
                if e is None:
                    continue
                num = _as_number(e)
                if num is None:
                    try:
                        bound = substitute(e, binding)
                    except Exception:  # not a dim shapeflow's algebra knows: not checkable here
                        continue
                    num = _as_number(bound)
                    if num is None:
                        continue
                rt = flat[i].item()
                stats.values_checked += 1
                same = (num == rt) or (isinstance(rt, float) and isinstance(num, float)
                                       and np.isnan(rt) and np.isnan(num))
                if same and isinstance(rt, float) and rt == 0.0 and isinstance(num, float):
                    same = np.signbit(rt) == np.signbit(num)  # -0.0 and 0.0 differ in bytes
                if not same:
                    report("unsound-value", name, f"value[{i}] = {e} (= {num}) in {_fmt_value(value)}",
                           f"{rt!r} in {_rt_value(flat)}")
                    break
    return found


def _fmt_shape(shape: Sequence[object]) -> str:
    return "[" + ", ".join(_fmt(d) for d in shape) + "]"


def _fmt_value(value: Sequence[object]) -> str:
    body = ", ".join(_fmt(v) for v in value[:8])
    return "[" + body + (", ..." if len(value) > 8 else "") + "]"


def _rt_value(flat: np.ndarray) -> str:
    body = ", ".join(repr(x.item() if isinstance(x, np.generic) else x) for x in flat[:8])  # str: no .item
    return "[" + body + (", ..." if flat.size > 8 else "") + "]"


def _arrays_identical(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype == object:  # string tensors: the bytes are pointers, compare the values
        return bool(a.tolist() == b.tolist())
    return a.tobytes() == b.tobytes()


def check_model(model: onnx.ModelProto, bindings: Sequence[Mapping[str, int]], runner: Runner, *,
                optimize_bindings: Sequence[Mapping[str, int]] | None = None,
                feed_seed: int = 0, workdir: str | None = None,
                independent: Sequence[Mapping[str, int]] = ()) -> Stats:
    """The oracle for one model: stated dims and values at ``bindings``, then ``optimize``'s
    outputs bit-identical at ``optimize_bindings`` (default: the same bindings).

    ``independent`` bindings give a dim name shared by several graph inputs a size of its own on
    each (``{"batch": 1, "batch@mask": 3}``: ``batch`` on the first input that declares it, 3 on
    ``mask``), which onnxruntime accepts wherever the model does not need them equal: there the
    dims and values that inference states with ``independent=True`` (what the rewrites rely on)
    are checked, and optimize's outputs must be identical too."""
    from shapeflow.drivers import api
    from shapeflow.errors import ShapeflowError

    stats = Stats(models=1)
    own_dir = None
    if workdir is None:
        own_dir = tempfile.TemporaryDirectory(prefix="shapearith-")
        workdir = own_dir.name
    try:
        path = os.path.join(workdir, "model.onnx")
        onnx.save(model, path)
        infos: Mapping[str, Any] = {}
        analysis = None
        try:
            analysis = api.infer(path)
            infos = analysis.inference.tensors[0]
        except ShapeflowError:
            pass
        except Exception as e:
            stats.findings.append(Finding("crash", "infer", "-", f"{type(e).__name__}: {e}", "-", {}))
        checker = _BindingRuns(model, runner, stats, feed_seed)
        checker.run(infos, bindings, 0)
        if independent and analysis is not None:
            own: Mapping[str, Any] = {}
            try:
                from shapeflow.inference import infer

                own = infer(analysis.graph, independent=True).tensors[0]
            except Exception as e:  # (the contract run above worked: so must this one)
                stats.findings.append(Finding("crash", "infer", "-", f"{type(e).__name__}: {e}", "-", {}))
            checker.run(own, independent, 500)
        # optimize
        opt_path = os.path.join(workdir, "optimized.onnx")
        try:
            result = api.optimize(path, opt_path)
        except ShapeflowError:
            stats.optimize_refused += 1
            return stats
        except Exception as e:
            stats.findings.append(Finding("crash", "optimize", "-", f"{type(e).__name__}: {e}", "-", {}))
            return stats
        if result.changed:
            stats.optimize_changed += 1
            _check_optimized(model, onnx.load(opt_path), checker, optimize_bindings)
        return stats
    finally:
        stats.ort_restarts = 0
        if own_dir is not None:
            own_dir.cleanup()


class _BindingRuns:
    """Runs of the original model (every tensor exposed) at bindings, each compared with what
    inference states; the runs are kept (``originals``) for the optimized model's comparison."""

    def __init__(self, model: onnx.ModelProto, runner: Runner, stats: Stats, feed_seed: int) -> None:
        self.model, self.runner, self.stats, self.feed_seed = model, runner, stats, feed_seed
        self.producers = _producers(model)
        exposed, self.names = expose_all(model)
        self.exposed_bytes = exposed.SerializeToString()
        self.out_names = [o.name for o in model.graph.output]
        self.originals: list[tuple[dict[str, int], dict[str, np.ndarray], list[np.ndarray]]] = []
        self.seen: set[tuple[str, str]] = set()
        self.flagged: set[str] = set()

    def run(self, infos: Mapping[str, Any], bindings: Sequence[Mapping[str, int]], seed_offset: int) -> None:
        stats = self.stats
        for i, b in enumerate(bindings):
            feeds = make_feeds(self.model, b, self.feed_seed * 1000 + seed_offset + i)
            if feeds is None:
                continue
            status, res = self.runner.run(self.exposed_bytes, feeds, self.names)
            stats.bindings_run += 1
            if status != "ok":
                stats.bindings_failed += 1
                continue
            runtime = dict(zip(self.names, res))
            for f in compare_infos(infos, self.producers, runtime, b, stats, self.seen):
                # report the first wrong tensor of a chain, not everything computed from it
                node = self.producers.get(f.tensor)
                if node is None or not any(n in self.flagged for n in node.input):
                    stats.findings.append(f)
                self.flagged.add(f.tensor)
            self.originals.append((dict(b), feeds, [runtime[n] for n in self.out_names]))


def _check_optimized(model: onnx.ModelProto, opt: onnx.ModelProto, runs: _BindingRuns,
                     optimize_bindings: Sequence[Mapping[str, int]] | None) -> None:
    """The optimized model's outputs against the original's, at the bindings the original ran
    (those of ``optimize_bindings`` only, when given): bit-identical."""
    stats, runner, out_names, producers = runs.stats, runs.runner, runs.out_names, runs.producers
    inits = {t.name for t in model.graph.initializer}
    in_names = [i.name for i in model.graph.input if i.name not in inits]
    opt_inits = {t.name for t in opt.graph.initializer}
    opt_in = [i.name for i in opt.graph.input if i.name not in opt_inits]
    opt_out = [o.name for o in opt.graph.output]
    if opt_in != in_names or opt_out != out_names:
        stats.findings.append(Finding("optimize-mismatch", "graph", "inputs/outputs",
                                      f"{opt_in} -> {opt_out}", f"{in_names} -> {out_names}", {}))
        return
    opt_bytes = opt.SerializeToString()
    allowed = None if optimize_bindings is None else [dict(b) for b in optimize_bindings]
    for b, feeds, outs in runs.originals:
        if allowed is not None and b not in allowed:
            continue
        opt_feeds = {k: v for k, v in feeds.items() if k in opt_in}
        status, res = runner.run(opt_bytes, opt_feeds, out_names)
        if status != "ok" and (str(res).startswith("timeout") or "Failed to allocate memory" in str(res)
                               or str(res).startswith("MemoryError")):
            # a slow or crowded machine, not a finding (the original ran): the models allocate
            # what the bindings ask for, up to a few GB, while other work shares the memory
            continue
        if status != "ok" and any("@" in k for k in b) and SHARED_NAME_REFUSAL in str(res):
            # onnxruntime's own memory planner holds the optimized model to its shared dim
            # names (the original's Reshape to its own shape hid the relation): a refusal, not
            # a changed value (README, shared dim names)
            stats.optimize_refused_by_runtime += 1
            continue
        stats.optimize_runs += 1
        if status != "ok":
            stats.findings.append(Finding("optimize-mismatch", "optimized model", "-",
                                          f"fails: {res}", "runs", b))
            return
        mismatch = any(not _arrays_identical(a, o) for a, o in zip(outs, res))
        if mismatch:
            # Compare like with like before blaming optimize: the original ran with every
            # tensor exposed, and a float -> int Cast of an out-of-range value (float16 inf to
            # uint8) is undefined in onnxruntime, so its result may follow the execution path.
            status, plain = runner.run(model.SerializeToString(), feeds, out_names)
            if status == "ok":
                outs = plain
        for n, a, o in zip(out_names, outs, res):
            if not _arrays_identical(a, o):
                op = producers[n].op_type if n in producers else "input"
                stats.findings.append(Finding(
                    "optimize-mismatch", op, n,
                    f"optimized gives {o.dtype}{list(o.shape)} {_rt_value(o.reshape(-1))}",
                    f"{a.dtype}{list(a.shape)} {_rt_value(a.reshape(-1))}", b))
                return


# ================================================================================================
# Shrinking and reporting
# ================================================================================================

def cone(model: onnx.ModelProto, target: str) -> onnx.ModelProto | None:
    """The part of ``model`` that ``target`` needs, with ``target`` as the only output."""
    prod = _producers(model)
    if target not in prod:
        return None
    need: set[str] = set()
    keep: set[int] = set()
    index = {id(n): i for i, n in enumerate(model.graph.node)}
    stack = [target]
    while stack:
        t = stack.pop()
        if t in need:
            continue
        need.add(t)
        n = prod.get(t)
        if n is not None and index[id(n)] not in keep:
            keep.add(index[id(n)])
            stack.extend(i for i in n.input if i)
    g = model.graph
    nodes = [n for i, n in enumerate(g.node) if i in keep]
    inputs = [i for i in g.input if i.name in need]
    inits = [t for t in g.initializer if t.name in need]
    out = next((o for o in g.output if o.name == target), None)
    if out is None:
        try:
            inferred = onnx.shape_inference.infer_shapes(model)
            for vi in inferred.graph.value_info:
                tt = vi.type.tensor_type
                if vi.name == target and tt.HasField("shape"):
                    out = helper.make_tensor_value_info(target, tt.elem_type, [None] * len(tt.shape.dim))
        except Exception:
            pass
    if out is None:
        return None
    graph = helper.make_graph(nodes, g.name, inputs, [out], initializer=inits)
    m = helper.make_model(graph, opset_imports=list(model.opset_import), ir_version=model.ir_version,
                          producer_name=model.producer_name)
    return m


def shrink(model: onnx.ModelProto, finding: Finding, runner: Runner) -> onnx.ModelProto:
    """The failing tensor's cone when the same finding reproduces on it, else ``model``."""
    if finding.tensor in ("-", "inputs/outputs"):
        return model
    small = cone(model, finding.tensor)
    if small is None or len(small.graph.node) >= len(model.graph.node):
        return model
    try:
        onnx.checker.check_model(small)
    except Exception:
        return model
    if any("@" in k for k in finding.binding):  # an independent binding (check_model)
        st = check_model(small, [], runner, independent=[finding.binding])
    else:
        st = check_model(small, [finding.binding], runner)
    if any(f.category == finding.category and f.tensor == finding.tensor for f in st.findings):
        return small
    return model


def findings_markdown(findings: Iterable[Finding], seen: set[tuple[str, str]] | None = None) -> str:
    """One section per (category, op), with the smallest repro found: for the findings file."""
    best: dict[tuple[str, str], Finding] = {}
    for f in findings:
        key = (f.category, f.op)
        size = len(f.model.graph.node) if f.model is not None else 10**6
        old = best.get(key)
        if old is None or size < (len(old.model.graph.node) if old.model is not None else 10**6):
            best[key] = f
    out = []
    for (cat, op), f in sorted(best.items()):
        if seen is not None:
            if (cat, op) in seen:
                continue
            seen.add((cat, op))
        out.append(f"## {cat}: {op}\n\n{f.line()}\n\n```\n"
                   + (_model_text(f.model) if f.model is not None else "") + "\n```\n")
    return "\n".join(out)


def save_finding(model: onnx.ModelProto, finding: Finding, tag: str) -> str:
    os.makedirs(CRASH_DIR, exist_ok=True)
    path = os.path.join(CRASH_DIR, f"shapearith-{tag}-{finding.category}.onnx")
    onnx.save(model, path)
    return path


# ================================================================================================
# The run
# ================================================================================================

def fuzz(seed: int, *, seconds: float | None = None, models: int | None = None,
         out_dir: str | None = None, log: Callable[[str], None] = print,
         runner: Runner | None = None) -> Stats:
    """Generate and check models for seeds derived from ``seed`` until the time or model budget
    runs out. Each finding is shrunk, saved (``out_dir``, default ``fuzz/crashes``) and logged."""
    global CRASH_DIR
    if out_dir is not None:
        CRASH_DIR = out_dir
    total = Stats()
    own = runner is None
    runner = runner or Runner()
    deadline = None if seconds is None else time.monotonic() + seconds
    reported: set[tuple[str, str]] = set()
    try:
        i = 0
        while (models is None or i < models) and (deadline is None or time.monotonic() < deadline):
            mseed = seed * 1_000_003 + i
            i += 1
            gen = generate(mseed)
            try:
                onnx.checker.check_model(gen.model)
            except Exception as e:  # a generator bug: say so, do not stop
                total.invalid_generated += 1
                log(f"shapearith: generated model for seed {mseed} is invalid: {str(e).splitlines()[0]}")
                continue
            st = check_model(gen.model, bindings_for(gen.symbols, gen.big, mseed), runner, feed_seed=mseed,
                             independent=independent_for(gen.model, gen.big))
            for f in st.findings:
                key = (f.category, f.op)
                small = shrink(gen.model, f, runner)
                f.model = small
                f.saved = save_finding(small, f, f"{mseed}-{f.tensor}")
                if key not in reported:  # the model text once per category and op
                    reported.add(key)
                    log(f"[seed {mseed}] " + f.text())
                else:
                    log(f"[seed {mseed}] {f.line()} (saved: {f.saved})")
            total.add(st)
    finally:
        total.ort_restarts = runner.restarts
        if own:
            runner.close()
    return total


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=1, help="0 = a random seed (printed)")
    p.add_argument("--seconds", type=float, default=None, help="time budget")
    p.add_argument("--models", type=int, default=None, help="model budget")
    p.add_argument("--out", default=None, help="where failing models go (default fuzz/crashes)")
    p.add_argument("--markdown", default=None,
                   help="append one section per (category, op) with its smallest repro to this file")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--forkserver", type=int, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        _worker_main()
        return 0
    if args.forkserver is not None:
        _forkserver_main(args.forkserver)
        return 0
    if args.seconds is None and args.models is None:
        args.seconds = 60.0
    seed = args.seed or random.SystemRandom().randrange(1, 2**31)
    # this checkout's shapeflow, not whichever one is installed
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import shapeflow

    print(f"shapearith: seed {seed} (shapeflow from {os.path.dirname(shapeflow.__file__)})", flush=True)
    stats = fuzz(seed, seconds=args.seconds, models=args.models, out_dir=args.out,
                 log=lambda s: print(s, flush=True))
    print(f"shapearith: seed {seed}: {stats.summary()}", flush=True)
    if args.markdown and stats.findings:
        with open(args.markdown, "a", encoding="utf-8") as fh:
            fh.write(findings_markdown(stats.findings) + "\n")
    return 1 if stats.findings else 0


if __name__ == "__main__":
    sys.exit(main())
