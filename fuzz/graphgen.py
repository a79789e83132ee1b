"""Random ONNX models built around Squeeze/Unsqueeze, from a stream of choices.

One generator serves two drivers: ``fuzz/fuzz_graphs.py`` (atheris's FuzzedDataProvider makes the
choices) and ``tests/test_properties.py`` (Hypothesis does). A driver passes a :class:`Chooser`.

``generate(ch, odd=False)`` builds a *valid* model that onnxruntime runs for the bindings in
:data:`BINDINGS`: chains and DAGs over ``x`` (dims from 1, 2, 3, ``batch``, ``seq``), Unsqueeze
with negative and unsorted axes, Squeeze of static 1-dims (with and without axes), cancelling
pairs, exporters' ``Shape -> Gather -> Unsqueeze -> Concat -> Reshape``, If branches and a
model-local function that use Squeeze/Unsqueeze on outer tensors, axes as attributes, fresh or
shared initializers and Constant nodes, intermediate graph outputs.

``generate(ch, odd=True)`` also breaks things the way hostile or broken files do: axes of the
wrong dtype or rank, empty, repeated, out of range, 2^62 or INT64_MIN, in the wrong form for the
opset, from a graph input, a Shape op or external data with hostile locations; Squeeze of
non-unit or symbolic dims; undefined inputs, duplicate outputs, cycles, unsorted nodes; unknown
ops and domains; odd opset and IR versions; declared dims that are negative, huge or very many;
contradicting value_info; a Constant claiming 2^62 elements; bad If branches. Any of these may
make shapeflow reject the model, which is fine; crashing is not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence, TypeVar

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

T = TypeVar("T")

DIMS: tuple[int | str, ...] = (1, 2, 3, "batch", "seq")
BINDINGS = ({"batch": 1, "seq": 1}, {"batch": 2, "seq": 3})
MAX_RANK = 6
ODD_AXES = (0, 1, -1, 5, -7, 64, 2**31, -(2**31) - 1, 2**62, -(2**63), 2**63 - 1)
ODD_LOCATIONS = ("axes.bin", "../axes.bin", "/etc/passwd", "", "a\x00b", "*/_ORT_MEM_ADDR_/*", "C:\\axes.bin",
                 "..\\..\\x", "sub/../../x")
ODD_OPSETS = (1, 7, 11, 12, 13, 21, 25, 30, 0, -1, 2**62)


class Chooser(Protocol):
    def int(self, lo: int, hi: int) -> int:
        """An int in [lo, hi]."""

    def bool(self) -> bool:
        ...


def pick(ch: Chooser, seq: Sequence[T]) -> T:
    return seq[ch.int(0, len(seq) - 1)]


def chance(ch: Chooser, one_in: int) -> bool:
    return ch.int(1, one_in) == 1


Dims = list  # of int | str


@dataclass
class _Gen:
    ch: Chooser
    opset: int
    odd: bool
    nodes: list[onnx.NodeProto] = field(default_factory=list)
    inits: list[onnx.TensorProto] = field(default_factory=list)
    functions: list[onnx.FunctionProto] = field(default_factory=list)
    inputs: list[onnx.ValueInfoProto] = field(default_factory=list)
    outputs: list[tuple[str, Dims]] = field(default_factory=list)
    value_info: list[onnx.ValueInfoProto] = field(default_factory=list)
    tensors: list[tuple[str, Dims]] = field(default_factory=list)
    shared_axes: dict[tuple[int, ...], str] = field(default_factory=dict)
    counter: int = 0
    has_cond: bool = False
    inserted: list[int] = field(default_factory=list)
    extra_opsets: dict[str, int] = field(default_factory=dict)

    # -- names -------------------------------------------------------------------------------------
    def fresh(self, prefix: str = "t") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def add(self, op: str, inputs: list[str], n_out: int = 1, domain: str = "", **attrs: object) -> list[str]:
        outs = [self.fresh() for _ in range(n_out)]
        axes = attrs.pop("axes", None)
        node = helper.make_node(op, inputs, outs, name=self.fresh("n"), domain=domain or None, **attrs)
        if axes is not None:  # make_attribute cannot type an empty list
            a = node.attribute.add()
            a.name, a.type = "axes", onnx.AttributeProto.INTS
            a.ints.extend(axes)
        self.nodes.append(node)
        return outs

    # -- axes ----------------------------------------------------------------------------------------
    def axes_input(self, axes: list[int]) -> str:
        """An int64 axes tensor for opset >= 13: a fresh or shared initializer, or a Constant node."""
        ch = self.ch
        if self.odd and chance(ch, 6):
            return self.odd_axes_tensor(axes)
        how = ch.int(0, 2)
        if how == 0:
            key = tuple(axes)
            if key not in self.shared_axes:
                name = self.fresh("axes")
                self.inits.append(numpy_helper.from_array(np.array(axes, dtype=np.int64), name))
                self.shared_axes[key] = name
            return self.shared_axes[key]
        if how == 1:
            name = self.fresh("axes")
            self.inits.append(numpy_helper.from_array(np.array(axes, dtype=np.int64), name))
            return name
        value = numpy_helper.from_array(np.array(axes, dtype=np.int64))
        return self.add("Constant", [], value=value)[0]

    def odd_axes_tensor(self, axes: list[int]) -> str:
        ch = self.ch
        kind = ch.int(0, 6)
        name = self.fresh("axes")
        if kind == 0:  # another dtype
            dtype = pick(ch, (TensorProto.INT32, TensorProto.FLOAT, TensorProto.INT8, TensorProto.UINT64,
                              TensorProto.STRING))
            vals = [str(a).encode() for a in axes] if dtype == TensorProto.STRING else \
                [float(a) for a in axes] if dtype == TensorProto.FLOAT else [int(a) % 100 for a in axes]
            self.inits.append(helper.make_tensor(name, dtype, [len(axes)], vals))
        elif kind == 1:  # scalar or 2-D
            dims = [] if len(axes) == 1 and ch.bool() else [1, len(axes)]
            self.inits.append(helper.make_tensor(name, TensorProto.INT64, dims, axes))
        elif kind == 2:  # a graph input: known only at run time
            self.inputs.append(helper.make_tensor_value_info(name, TensorProto.INT64, [len(axes)]))
        elif kind == 3:  # Shape of something: computed
            src = pick(ch, self.tensors)[0]
            return self.add("Shape", [src])[0]
        elif kind == 4:  # external data, hostile location
            t = onnx.TensorProto(name=name, data_type=TensorProto.INT64, dims=[len(axes)])
            t.data_location = TensorProto.EXTERNAL
            for k, v in (("location", pick(ch, ODD_LOCATIONS)), ("offset", pick(ch, ("0", "-8", "x", "99"))),
                         ("length", str(8 * len(axes)))):
                e = t.external_data.add()
                e.key, e.value = k, v
            self.inits.append(t)
        elif kind == 5:  # declared size without the data
            t = onnx.TensorProto(name=name, data_type=TensorProto.INT64, dims=[pick(ch, (2**40, 3, 0))])
            if ch.bool():
                t.raw_data = b"\x00" * ch.int(0, 12)
            self.inits.append(t)
        else:  # a sparse initializer
            values = numpy_helper.from_array(np.array(axes[:1] or [0], dtype=np.int64), name)
            indices = numpy_helper.from_array(np.array([0], dtype=np.int64), name + "_i")
            self.inits.append(numpy_helper.from_array(np.array([0], dtype=np.int64), name + "_dense"))
            sp = helper.make_sparse_tensor(values, indices, [max(len(axes), 1)])
            self._sparse = getattr(self, "_sparse", []) + [sp]
        return name

    def oddify(self, axes: list[int]) -> list[int]:
        """Maybe break an axes list (only in odd mode)."""
        ch = self.ch
        if not self.odd or not chance(ch, 4):
            return axes
        kind = ch.int(0, 3)
        if kind == 0:
            return axes + [pick(ch, ODD_AXES)]
        if kind == 1 and axes:
            return axes + [axes[0]]  # repeated
        if kind == 2:
            return []
        return [pick(ch, ODD_AXES) for _ in range(ch.int(1, 3))]

    def axes_node(self, op: str, src: str, axes: list[int] | None) -> str:
        """Squeeze/Unsqueeze of ``src`` in the axes form of the opset (odd mode: sometimes not)."""
        ch = self.ch
        attr_form = self.opset < 13
        if self.odd and chance(ch, 8):
            attr_form = not attr_form
        op_type, domain = op, ""
        if self.odd and chance(ch, 12):
            op_type, domain = pick(ch, ((op, "com.evil"), ("Sqeeze", ""), ("", ""), (op, "ai.onnx")))
            if domain == "com.evil":
                self.extra_opsets["com.evil"] = 1
        if axes is None:
            return self.add(op_type, [src], domain=domain)[0]
        axes = self.oddify(axes)
        if attr_form:
            return self.add(op_type, [src], domain=domain, axes=axes)[0]
        return self.add(op_type, [src, self.axes_input(axes)], domain=domain)[0]

    # -- ops on tensors -----------------------------------------------------------------------------
    def unsqueeze(self, src: str, dims: Dims) -> tuple[str, Dims] | None:
        """Unsqueeze at 1-3 random positions (unsorted, some negative); ``self.inserted`` keeps
        the sorted positions, so a caller can squeeze exactly them again."""
        ch = self.ch
        if len(dims) >= MAX_RANK:
            return None
        k = ch.int(1, min(3, MAX_RANK - len(dims)))
        out_rank = len(dims) + k
        free = list(range(out_rank))
        pos = []
        for _ in range(k):
            pos.append(free.pop(ch.int(0, len(free) - 1)))  # unsorted, unique
        axes = [p - out_rank if ch.bool() else p for p in pos]
        new = list(dims)
        for p in sorted(pos):
            new.insert(p, 1)
        self.inserted = sorted(pos)
        if self.odd and chance(ch, 15):
            return self.axes_node("Unsqueeze", src, None), new  # Unsqueeze without axes
        return self.axes_node("Unsqueeze", src, axes), new

    def squeeze(self, src: str, dims: Dims) -> tuple[str, Dims] | None:
        ch = self.ch
        ones = [i for i, d in enumerate(dims) if d == 1]
        static = all(isinstance(d, int) for d in dims)
        if self.odd and dims and chance(ch, 5):  # a non-unit or symbolic dim
            i = ch.int(0, len(dims) - 1)
            new = [d for j, d in enumerate(dims) if j != i]
            return self.axes_node("Squeeze", src, [i]), new
        if not ones:
            return None
        if static and chance(ch, 4):
            return self.axes_node("Squeeze", src, None), [d for d in dims if d != 1]
        chosen = [i for i in ones if ch.bool()] or [ones[0]]
        axes = [i - len(dims) if ch.bool() else i for i in chosen]
        if len(axes) > 1 and ch.bool():
            axes = axes[::-1]
        return self.axes_node("Squeeze", src, axes), [d for i, d in enumerate(dims) if i not in chosen]

    def step(self) -> None:
        ch = self.ch
        src, dims = self.tensors[-1] if ch.bool() else pick(ch, self.tensors)
        kind = ch.int(0, 11)
        made: tuple[str, Dims] | None = None
        if kind in (0, 1):
            made = self.unsqueeze(src, dims)
        elif kind in (2, 3):
            made = self.squeeze(src, dims)
        elif kind == 4:
            made = (self.add(pick(ch, ("Relu", "Identity", "Neg")), [src])[0], dims)
        elif kind == 5:
            made = (self.add("Add", [src, src])[0], dims)
        elif kind == 6:  # cancelling pair
            u = self.unsqueeze(src, dims)
            if u is not None:
                made = (self.axes_node("Squeeze", u[0], self.inserted), dims)
        elif kind == 7 and dims:
            made = (self.shape_chain(src, dims), dims)
        elif kind == 8:
            made = (self.if_node(src, dims), dims)
        elif kind == 9:
            made = (self.call_function(src, dims), dims) if ch.bool() else self.call_lift(src, dims)
        elif kind == 10:
            self.outputs.append((src, dims))
        else:
            made = self.squeeze(src, dims) or self.unsqueeze(src, dims)
        if made is not None:
            self.tensors.append(made)
        if self.odd and chance(ch, 10):
            self.break_graph()

    def shape_chain(self, src: str, dims: Dims) -> str:
        """Reshape(src, Concat(Unsqueeze(Gather(Shape(src), 0), 0), Slice(Shape(src), 1:)))."""
        shape = self.add("Shape", [src])[0]
        i0 = self.fresh("i")
        self.inits.append(numpy_helper.from_array(np.array(0, dtype=np.int64), i0))
        first = self.add("Gather", [shape, i0], axis=0)[0]
        first = self.axes_node("Unsqueeze", first, [0])
        if len(dims) == 1:
            target = first
        else:
            names = [self.fresh("sl") for _ in range(3)]
            for n, v in zip(names, ([1], [2**62], [0])):
                self.inits.append(numpy_helper.from_array(np.array(v, dtype=np.int64), n))
            if self.opset >= 10:
                rest = self.add("Slice", [shape, *names])[0]
            else:
                rest = self.add("Slice", [shape], starts=[1], ends=[2**62], axes=[0])[0]
            target = self.add("Concat", [first, rest], axis=0)[0]
        return self.add("Reshape", [src, target])[0]

    def if_node(self, src: str, dims: Dims) -> str:
        """If(c): then = a short Squeeze/Unsqueeze chain over the outer ``src`` back to its shape,
        else = Identity(src)."""
        ch = self.ch
        if not self.has_cond:
            self.inputs.append(helper.make_tensor_value_info("cond", TensorProto.BOOL, []))
            self.has_cond = True
        saved = self.nodes
        self.nodes = []
        u = self.unsqueeze(src, dims)
        out = self.axes_node("Squeeze", u[0], self.inserted) if u is not None else self.add("Identity", [src])[0]
        if ch.bool():
            out = self.add("Relu", [out])[0]
        then_nodes = self.nodes
        self.nodes = []
        other = self.add("Identity", [src])[0]
        if self.odd and chance(ch, 6):
            other = self.add("Unsqueeze", [other], axes=[0])[0] if self.opset < 13 else other
        else_nodes = self.nodes
        self.nodes = saved
        then = helper.make_graph(then_nodes, self.fresh("then"), [], [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)])
        if self.odd and chance(ch, 8):  # a branch with a second output: arity mismatch
            then.output.append(helper.make_tensor_value_info(src, TensorProto.FLOAT, None))
        els = helper.make_graph(else_nodes, self.fresh("else"), [], [helper.make_tensor_value_info(other, TensorProto.FLOAT, None)])
        return self.add("If", ["cond"], then_branch=then, else_branch=els)[0]

    def call_function(self, src: str, dims: Dims) -> str:
        """local::SU(x) = Squeeze(Unsqueeze(x, 0), 0): a model-local function around a cancelling pair."""
        if not any(f.name == "SU" for f in self.functions):
            f_nodes: list[onnx.NodeProto] = []
            if self.opset < 13:
                f_nodes.append(helper.make_node("Unsqueeze", ["x"], ["u"], axes=[0]))
                f_nodes.append(helper.make_node("Squeeze", ["u"], ["y"], axes=[0]))
            else:
                f_nodes.append(helper.make_node("Constant", [], ["a"],
                                                value=numpy_helper.from_array(np.array([0], dtype=np.int64))))
                f_nodes.append(helper.make_node("Unsqueeze", ["x", "a"], ["u"]))
                f_nodes.append(helper.make_node("Squeeze", ["u", "a"], ["y"]))
            self.functions.append(helper.make_function("local", "SU", ["x"], ["y"], f_nodes,
                                                       [helper.make_opsetid("", self.opset)]))
            self.extra_opsets["local"] = 1
        return self.add("SU", [src], domain="local")[0]

    def call_lift(self, src: str, dims: Dims) -> tuple[str, Dims] | None:
        """local::Lift<ax>(x) = Relu(Unsqueeze(x, @ax)): a function whose axes are the caller's
        attribute (per call-site inference), called with a random axis, sometimes negative."""
        if len(dims) >= MAX_RANK:
            return None
        if not any(f.name == "Lift" for f in self.functions):
            ref = helper.make_attribute_ref("axes" if self.opset < 13 else "value_ints",
                                            onnx.AttributeProto.INTS)
            ref.ref_attr_name = "ax"
            if self.opset < 13:
                f_nodes = [helper.make_node("Unsqueeze", ["x"], ["u"])]
                f_nodes[0].attribute.append(ref)
            else:
                f_nodes = [helper.make_node("Constant", [], ["a"]), helper.make_node("Unsqueeze", ["x", "a"], ["u"])]
                f_nodes[0].attribute.append(ref)
            f_nodes.append(helper.make_node("Relu", ["u"], ["y"]))
            self.functions.append(helper.make_function("local", "Lift", ["x"], ["y"], f_nodes,
                                                       [helper.make_opsetid("", self.opset)], ["ax"]))
            self.extra_opsets["local"] = 1
        out_rank = len(dims) + 1
        pos = self.ch.int(0, out_rank - 1)
        axis = pos - out_rank if self.ch.bool() else pos
        new = list(dims)
        new.insert(pos, 1)
        return self.add("Lift", [src], domain="local", ax=[axis])[0], new

    # -- breaking things ----------------------------------------------------------------------------
    def break_graph(self) -> None:
        ch = self.ch
        if not self.nodes:
            return
        kind = ch.int(0, 7)
        node = pick(ch, self.nodes)
        if kind == 0 and node.input:
            node.input[ch.int(0, len(node.input) - 1)] = "GHOST"
        elif kind == 1 and node.output:
            other = pick(ch, self.nodes)
            if other.output:
                node.output[0] = other.output[0]  # two producers
        elif kind == 2 and len(self.nodes) > 1:
            self.nodes.insert(0, self.nodes.pop(ch.int(1, len(self.nodes) - 1)))  # unsorted, maybe a cycle
        elif kind == 3:
            first = self.nodes[0]
            if first.input:
                first.input[0] = self.nodes[-1].output[0]  # a cycle through the whole chain
        elif kind == 4:
            self.value_info.append(helper.make_tensor_value_info(
                pick(ch, self.tensors)[0], TensorProto.FLOAT,
                [pick(ch, (7, -1, 2**60, "q", 0)) for _ in range(ch.int(0, 5))]))
        elif kind == 5:
            big = onnx.TensorProto(name="", data_type=TensorProto.FLOAT, dims=[2**31, 2**31])
            out = self.add("Constant", [], value=big)[0]
            self.tensors.append((out, [2**31, 2**31]))
        elif kind == 6:
            self.outputs.append(("NEVER_PRODUCED", [1]))
        else:
            node.op_type = pick(ch, ("Sqeeze", "", "Unsqueeze", "Squeeze", "Loop", "If", "Scan"))


def declared_input(ch: Chooser, odd: bool) -> Dims:
    rank = ch.int(0, 4)
    dims: Dims = [pick(ch, DIMS) for _ in range(rank)]
    if odd and chance(ch, 10):
        dims = [pick(ch, (-1, 2**60, 0, "", "batch")) for _ in range(pick(ch, (1, 3, 70)))]
    return dims


def generate(ch: Chooser, odd: bool = False) -> onnx.ModelProto:
    opset = pick(ch, (11, 12, 13, 17, 21)) if not odd or not chance(ch, 10) else pick(ch, ODD_OPSETS)
    g = _Gen(ch, opset if opset in (11, 12, 13, 17, 21) else 13, odd)
    x_dims = declared_input(ch, odd)
    g.inputs.append(helper.make_tensor_value_info("x", TensorProto.FLOAT, x_dims))
    g.tensors.append(("x", x_dims))
    for _ in range(ch.int(1, 10)):
        g.step()
    last, dims = g.tensors[-1]
    outputs = [(last, dims)] + [o for o in g.outputs if o[0] != last]
    seen: set[str] = set()
    out_vis = []
    for name, d in outputs:
        if name in seen:
            continue
        seen.add(name)
        # declared output shapes: the real ones in valid mode (interface identity is checked on them)
        shape = d if all(isinstance(v, (int, str)) and v != "" for v in d) else None
        out_vis.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, shape))
    graph = helper.make_graph(g.nodes, "fuzz", g.inputs, out_vis, g.inits, value_info=g.value_info)
    for sp in getattr(g, "_sparse", []):
        graph.sparse_initializer.append(sp)
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in g.extra_opsets.items()]
    model = helper.make_model(graph, opset_imports=opsets, functions=g.functions)
    model.ir_version = 8 if not odd or not chance(ch, 10) else pick(ch, (3, 7, 10, 12, 99, 2**40))
    return model


def feeds_for(model: onnx.ModelProto, bindings: dict[str, int], seed: int = 0) -> dict[str, np.ndarray]:
    """Random inputs of a generated model at ``bindings``."""
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    inits = {t.name for t in model.graph.initializer}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else bindings.get(d.dim_param, 1) for d in tt.shape.dim]
        if tt.elem_type == TensorProto.BOOL:
            out[vi.name] = np.array(bool(rng.integers(0, 2)))
        elif tt.elem_type == TensorProto.INT64:
            out[vi.name] = np.zeros(shape, dtype=np.int64)
        else:
            out[vi.name] = rng.standard_normal(shape).astype(np.float32)
    return out
