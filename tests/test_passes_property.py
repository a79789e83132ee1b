"""Property test: random chains and DAGs of Squeeze/Unsqueeze/elementwise ops.

Ranks 0-6, dims from {1, 2, 3, batch, seq}, opsets 11/13/21, axes negative and unsorted, Squeezes
without axes (static shapes only, where the generator can know the result), folds of initializers
and of shapes read through Shape→Gather. For every model: onnxruntime gives bit-identical outputs
wherever the original runs (symbolic dims bound to 1 and to 3), optimize is idempotent, the node
count never grows, the signature stays, and the fast path (inference carried over between rounds,
no confirming round when nothing could change) gives the same bytes as the reference path.
"""

from __future__ import annotations

import numpy as np
import onnx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from test_passes_support import check_rewrite, optimize

DIMS = (1, 2, 3, "batch", "seq")
MAX_RANK = 6


class _Builder:
    def __init__(self, opset: int) -> None:
        self.opset = opset
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.count = 0

    def name(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def axes_node(self, op: str, x: str, axes: list[int] | None, empty: bool = False) -> str:
        out = self.name("t")
        node_name = self.name("n")
        if axes is None and not empty:
            self.nodes.append(helper.make_node(op, [x], [out], name=node_name))
        elif self.opset < 13:
            node = helper.make_node(op, [x], [out], name=node_name)
            attr = node.attribute.add()
            attr.name, attr.type = "axes", onnx.AttributeProto.INTS
            attr.ints.extend(axes or [])
            self.nodes.append(node)
        else:
            a = self.name("ax")
            self.inits.append(numpy_helper.from_array(np.array(axes or [], np.int64), a))
            self.nodes.append(helper.make_node(op, [x, a], [out], name=node_name))
        return out


@st.composite
def programs(draw: st.DrawFn) -> onnx.ModelProto:
    opset = draw(st.sampled_from([11, 13, 21]))
    b = _Builder(opset)
    rank = draw(st.integers(0, 4))
    x_dims = [draw(st.sampled_from(DIMS)) for _ in range(rank)]
    floats: list[tuple[str, list]] = [("x", x_dims)]
    outputs: list[tuple[str, int, list]] = []
    for _ in range(draw(st.integers(1, 9))):
        kind = draw(st.sampled_from(["unsqueeze", "unsqueeze", "squeeze", "squeeze", "relu", "add",
                                     "const", "shape", "roundtrip"]))
        # mostly extend the latest tensor (chains), sometimes branch from an older one (DAGs)
        src, dims = floats[-1] if draw(st.booleans()) else draw(st.sampled_from(floats))
        if kind == "unsqueeze" and len(dims) < MAX_RANK:
            k = draw(st.integers(1, MAX_RANK - len(dims)))
            out_rank = len(dims) + k
            pos = draw(st.lists(st.integers(0, out_rank - 1), min_size=k, max_size=k, unique=True))
            axes = [p - out_rank if draw(st.booleans()) else p for p in pos]
            new = list(dims)
            for p in sorted(pos):
                new.insert(p, 1)
            floats.append((b.axes_node("Unsqueeze", src, axes), new))
        elif kind == "squeeze":
            static = all(isinstance(d, int) for d in dims)
            ones = [i for i, d in enumerate(dims) if d == 1]
            maybe = [i for i, d in enumerate(dims) if d == 1 or isinstance(d, str)]
            mode = draw(st.sampled_from(["axes", "axes", "none", "empty"]))
            if mode != "axes" and static and (mode == "none" or opset >= 13):
                new = [d for d in dims if d != 1]
                floats.append((b.axes_node("Squeeze", src, None, empty=mode == "empty"), new))
                continue
            pool = maybe if draw(st.integers(0, 4)) == 0 else ones
            if not pool:
                continue
            pos = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=len(pool), unique=True))
            axes = [p - len(dims) if draw(st.booleans()) else p for p in pos]
            new = [d for i, d in enumerate(dims) if i not in pos]
            floats.append((b.axes_node("Squeeze", src, axes), new))
        elif kind == "roundtrip":
            # Squeeze then Unsqueeze of the same positions (symbolic ones too, now and then)
            pool = [i for i, d in enumerate(dims) if d == 1 or (isinstance(d, str) and draw(st.booleans()))]
            if not pool:
                continue
            pos = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=len(pool), unique=True))
            axes = [p - len(dims) if draw(st.booleans()) else p for p in pos]
            mid = b.axes_node("Squeeze", src, axes)
            back = [p - len(dims) if draw(st.booleans()) else p for p in reversed(pos)]
            floats.append((b.axes_node("Unsqueeze", mid, back), [1 if i in pos else d for i, d in enumerate(dims)]))
        elif kind == "relu":
            out = b.name("t")
            b.nodes.append(helper.make_node("Relu", [src], [out], name=b.name("n")))
            floats.append((out, list(dims)))
        elif kind == "add":
            same = [t for t in floats if t[1] == dims]
            other = draw(st.sampled_from(same))[0]
            out = b.name("t")
            b.nodes.append(helper.make_node("Add", [src, other], [out], name=b.name("n")))
            floats.append((out, list(dims)))
        elif kind == "const":
            c_dims = [draw(st.sampled_from([1, 2, 3])) for _ in range(draw(st.integers(0, 3)))]
            c = b.name("c")
            value = np.arange(int(np.prod(c_dims, dtype=np.int64)), dtype=np.float32).reshape(c_dims) + 0.25
            b.inits.append(numpy_helper.from_array(value, c))
            ones = [i for i, d in enumerate(c_dims) if d == 1]
            if ones and draw(st.booleans()):
                pos = draw(st.lists(st.sampled_from(ones), min_size=1, max_size=len(ones), unique=True))
                new = [d for i, d in enumerate(c_dims) if i not in pos]
                floats.append((b.axes_node("Squeeze", c, pos), new))
            else:
                new = list(c_dims)
                new.insert(0, 1)
                floats.append((b.axes_node("Unsqueeze", c, [0]), new))
        elif kind == "shape" and dims:
            i = draw(st.integers(-len(dims), len(dims) - 1))
            s, g, idx = b.name("s"), b.name("g"), b.name("i")
            b.inits.append(numpy_helper.from_array(np.array(i, np.int64), idx))
            b.nodes.append(helper.make_node("Shape", [src], [s], name=b.name("n")))
            b.nodes.append(helper.make_node("Gather", [s, idx], [g], name=b.name("n"), axis=0))
            d = b.axes_node("Unsqueeze", g, [0])
            outputs.append((d, TensorProto.INT64, [1]))
    last, dims = floats[-1]
    outputs.append((last, TensorProto.FLOAT, dims))
    for name, d in draw(st.lists(st.sampled_from(floats[:-1]), max_size=2, unique_by=lambda t: t[0])) if len(floats) > 1 else []:
        if name != "x":
            outputs.append((name, TensorProto.FLOAT, d))
    graph = helper.make_graph(
        b.nodes, "random",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_dims)],
        [helper.make_tensor_value_info(n, t, d) for n, t, d in dict((o[0], o) for o in outputs).values()],
        initializer=b.inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=6 if opset < 13 else 8)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_programs_stay_bit_identical(model: onnx.ModelProto) -> None:
    out = optimize(model)
    check_rewrite(out, full_check=False, must_run=False)
    # the reference way (whole-model inference and a confirming round every time) agrees
    slow = optimize(model, full_inference=True)
    assert slow.data == out.data


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_programs_strict(model: onnx.ModelProto) -> None:
    out = optimize(model, strict=True)
    assert not out.result.notes  # strict never cancels over a dim not known to be 1
    check_rewrite(out, full_check=False, must_run=False)
