"""Standard ops without a rule of our own: ask onnx's per-node shape inference.

Symbolic dims cross the boundary as ``dim_param`` names of our own, one per distinct expression
(``sf0``, ``sf1``...), and are mapped back to the same expressions, so ``seq + 1`` in gives
``seq + 1`` out. The text of a dim is never what goes across: onnx compares dim_params by their
text, and a graph input's dim declared ``"c + 1"`` (an opaque name) must not meet a computed
``c + 1``. A dim_param onnx hands back that is not one of ours is unknown. Known small integer
values go in as constant inputs.
"""

from __future__ import annotations

import re
from typing import Any

from .._onnx import onnx
from ..dims import Dim, Sym
from ..graph import INITIALIZER
from ..opsets import schema
from ..signatures import DTYPES, input_type_error, signature
from ..tensorinfo import TensorInfo
from .base import OpCall
from .constants import FLOAT_TYPES, is_external

# Ops whose shape function in onnx is known to disagree with onnxruntime on models it runs: never
# asked (inference uses a rule of its own, or leaves the outputs unknown). Each entry says why;
# tests/test_defaults.py shows every disagreement still holds and that the rule in its place is right.
UNTRUSTED: dict[str, str] = {
    "STFT": "reads an absent `onesided` as 0 (its default is 1): states frame_length bins where "
            "onnxruntime gives frame_length // 2 + 1 (ops/signal.py has the rule)",
}


class Atoms:
    """The dim_param names given to symbolic dims on their way to onnx, and the way back."""

    def __init__(self) -> None:
        self.names: dict[str, Dim] = {}
        self._given: dict[Sym, str] = {}

    def name(self, d: Sym) -> str:
        found = self._given.get(d)
        if found is None:
            found = self._given[d] = f"sf{len(self._given)}"
            self.names[found] = d
        return found


def type_proto(t: TensorInfo, atoms: Atoms | None = None) -> onnx.TypeProto:
    """``t`` as an onnx type: symbols become ``dim_param``s (their text, or with ``atoms`` names
    that map back to them), unknown dims are left empty."""
    tp = onnx.TypeProto()
    tt = tp.tensor_type
    tt.elem_type = t.dtype
    if t.shape is not None:
        shape = tt.shape
        shape.SetInParent()  # a scalar has a shape, with no dims (no shape field: rank unknown)
        for d in t.shape:
            dim = shape.dim.add()
            if type(d) is int:
                dim.dim_value = d
            elif d is not None:
                dim.dim_param = atoms.name(d) if atoms is not None else str(d)  # type: ignore[arg-type]
    return tp


def _from_type(tp: onnx.TypeProto, names: dict[str, Dim]) -> TensorInfo | None:
    if tp.WhichOneof("value") != "tensor_type":
        return None
    tt = tp.tensor_type
    if not tt.HasField("shape"):
        return TensorInfo(tt.elem_type, None)
    dims: list[Dim] = []
    for d in tt.shape.dim:
        which = d.WhichOneof("value")
        if which == "dim_value":
            dims.append(int(d.dim_value))
        elif which == "dim_param":
            dims.append(names.get(d.dim_param))  # (one onnx made up itself: unknown)
        else:
            dims.append(None)
    return TensorInfo(tt.elem_type, tuple(dims))


def infer_with_onnx(call: OpCall) -> list[TensorInfo | None]:
    node = call.node
    n_out = len(node.output)
    if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
        return [None] * n_out  # bodies are ours to infer; onnx would re-infer them without context
    sch = schema("", node.op_type, call.since)
    if sch is None:
        return [None] * n_out
    atoms = Atoms()
    types: dict[str, onnx.TypeProto] = {}
    data: dict[str, onnx.TensorProto] = {}
    for name, t in zip(node.input, call.inputs):
        if not name or t is None:
            continue
        types[name] = type_proto(t, atoms)
        if t.value is not None and t.shape is not None and all(type(v) is int for v in t.value):
            if all(type(d) is int for d in t.shape) and t.dtype not in FLOAT_TYPES:
                try:
                    import numpy as np  # with onnx itself, which this rule imports anyway

                    arr = np.array(t.value, dtype=onnx.helper.tensor_dtype_to_np_dtype(t.dtype)).reshape(t.shape)
                    data[name] = onnx.numpy_helper.from_array(arr, name)
                except Exception:
                    pass
    opsets = call.engine.graph.scopes[call.scope].opsets
    imports = [onnx.helper.make_opsetid(d, v) for d, v in opsets.items()]
    try:
        outs = onnx.shape_inference.infer_node_outputs(sch, node, types, data, opset_imports=imports)
    except Exception:  # onnx refuses what it cannot infer; for us that is "unknown"
        call.doubt()  # (and onnxruntime may refuse the model for it)
        return [None] * n_out
    result = [_from_type(outs[o], atoms.names) if o in outs else None for o in node.output]
    if any(t is not None and t.shape is not None and any(type(d) is not int for d in t.shape)
           for t in call.inputs):
        _distrust_numbers_from_symbols(result, sch, node, call.inputs, types, data, imports)
    return result


# Some of onnx's shape functions read a symbolic or unknown dim as 0 (``dim_value()`` of a dim
# that has none): Attention-23 infers [batch, seq, 0] for a symbolic hidden size, where the run
# gives [batch, seq, 24]. A number that onnx computed from a non-numeric input dim is not to be
# trusted, so the node is inferred a second time with every such input dim set to this probe;
# an output dim that comes out different depended on them and becomes unknown.
_PROBE_DIM = 7919


def _distrust_numbers_from_symbols(result: list[TensorInfo | None], sch: onnx.defs.OpSchema, node: onnx.NodeProto,
                                   inputs: list[TensorInfo | None], types: dict[str, onnx.TypeProto],
                                   data: dict[str, onnx.TensorProto], imports: list[Any]) -> None:
    probe_types = dict(types)
    for name, t in zip(node.input, inputs):
        if name and t is not None and t.shape is not None and any(type(d) is not int for d in t.shape):
            shape = tuple(d if type(d) is int else _PROBE_DIM for d in t.shape)
            probe_types[name] = type_proto(TensorInfo(t.dtype, shape))
    try:
        probed = onnx.shape_inference.infer_node_outputs(sch, node, probe_types, data, opset_imports=imports)
    except Exception:
        probed = {}
    for k, o in enumerate(node.output):
        t = result[k]
        if t is None or t.shape is None:
            continue
        p = _from_type(probed[o], {}) if o in probed else None
        same = p is not None and p.shape is not None and len(p.shape) == len(t.shape)
        dims = tuple(d if type(d) is not int or (same and p.shape[i] == d) else None  # type: ignore[union-attr, index]  # same: p.shape is set
                     for i, d in enumerate(t.shape))
        if dims != t.shape:
            result[k] = TensorInfo(t.dtype, dims, None)


# -- what onnxruntime's load-time inference says of one node -------------------------------------

# Constant inputs larger than this are not handed to onnx: its shape functions read the data of
# shape-like inputs only (a target shape, pads, axes, scales), which are small.
_MAX_DATA_ELEMS = 4096
_TAGS = re.compile(r"^\(op_type:[^)]*\):\s*|\[\w+Error\]\s*")


def load_time_error(call: OpCall) -> str | None:
    """Why onnx's shape inference of ``call``'s node fails, given what onnxruntime knows when it
    loads the model (the input types and shapes, and the values of initializers and Constant
    nodes; not values computed from shapes), or None when it does not fail or cannot be asked: an
    input of unknown type, a type error (SF013's), a body attribute (If/Loop/Scan: ours)."""
    node = call.node
    if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
        return None
    domain = call.info.domain
    dtypes = []
    for name, t in zip(node.input, call.inputs):
        if not name:
            dtypes.append(0)
            continue
        if t is None or t.dtype not in DTYPES:
            return None
        dtypes.append(t.dtype)
    sig = signature(domain, node.op_type, call.since)
    if sig is None or input_type_error(sig, dtypes) is not None:
        return None
    sch = schema(domain, node.op_type, call.since)
    if sch is None:
        return None
    types: dict[str, onnx.TypeProto] = {}
    data: dict[str, onnx.TensorProto] = {}
    for name, t in zip(node.input, call.inputs):
        if name and t is not None:
            types[name] = type_proto(t)
            const = _ort_constant(call, name)
            if const is not None:
                data[name] = const
    graph = call.engine.graph
    imports = [onnx.helper.make_opsetid(d, v) for d, v in graph.scopes[call.scope].opsets.items()]
    try:
        onnx.shape_inference.infer_node_outputs(sch, node, types, data, opset_imports=imports,
                                                ir_version=int(graph.model.ir_version))
    except Exception as exc:  # InferenceError, or a ValidationError of the node itself
        text = " ".join(str(exc).split())
        return _TAGS.sub("", text).strip() or type(exc).__name__
    return None


def _ort_constant(call: OpCall, name: str) -> onnx.TensorProto | None:
    """The value onnxruntime hands a shape function for input ``name``: an initializer that no
    caller can override, or a Constant node's tensor (onnxruntime turns those into initializers)."""
    graph = call.engine.graph
    found = graph.definition(call.scope, name)
    if found is None:
        return None
    sid, producer = found
    scope = graph.scopes[sid]
    t: onnx.TensorProto | None = None
    if producer == INITIALIZER:
        if graph.model.ir_version >= 4 and name in scope.inputs:
            return None  # a graph input's default: the caller may feed another value
        t = scope.initializers.get(name)
    elif producer >= 0:
        info = graph.nodes[producer]
        if info.op_type != "Constant" or info.domain != "" or not info.has_attrs:
            return None
        t = _constant_tensor(info.peek())
    if t is None or is_external(t):
        return None
    n = 1
    for d in t.dims:
        n *= int(d)
    return t if n <= _MAX_DATA_ELEMS else None


def _constant_tensor(node: onnx.NodeProto) -> onnx.TensorProto | None:
    helper, tp = onnx.helper, onnx.TensorProto
    for a in node.attribute:
        if a.ref_attr_name:
            return None
        if a.name == "value" and a.HasField("t"):
            t: onnx.TensorProto = a.t
            return t
        if a.name == "value_int":
            return helper.make_tensor("", tp.INT64, [], [a.i])
        if a.name == "value_ints":
            return helper.make_tensor("", tp.INT64, [len(a.ints)], list(a.ints))
        if a.name == "value_float":
            return helper.make_tensor("", tp.FLOAT, [], [a.f])
        if a.name == "value_floats":
            return helper.make_tensor("", tp.FLOAT, [len(a.floats)], list(a.floats))
    return None
