"""Attribute defaults: an absent attribute means its default, for every op inference knows.

The sweep: every single-node model of onnx's backend tests, stamped at every version of its op's
schema, is inferred twice, once as written and once with one optional attribute changed between
absent and its default value (removed where the case writes the default, added where it leaves
it out); the two must not contradict each other (where both state a dim or a value, it is the
same). A rule that reads a default of its own
(Concat-1's axis as 0, where the spec says 1) or onnx's shape function misreading one (STFT's
``onesided``) makes the two differ. Small integer inputs of a case are made initializers with
the case's data, so that shape arguments (frame_step, a Reshape target) are known; each model is
inferred with its input dims as written and with every input dim a symbol.

Defaults come from the schema's ``default_value``; the attributes whose default the schema states
only in words (strides "default to 1 along each spatial axis") are written out by
``PROSE_DEFAULTS``, and a test keeps that table complete.

Also here: the ops whose onnx shape function is known to disagree with onnxruntime
(``fallback.UNTRUSTED``), each shown to disagree still, and never asked.
"""

from __future__ import annotations

import functools
import re
import warnings
from typing import Callable, Iterator

import numpy as np
import onnx
import onnx.defs
import pytest
from onnx import helper, numpy_helper

from helpers import ort_session
from shapeflow.errors import ShapeflowError
from shapeflow.graph import build_graph
from shapeflow.inference import infer
from shapeflow.io import load_model_bytes
from shapeflow.ops import REGISTRY
from shapeflow.ops.fallback import UNTRUSTED

INTS = onnx.AttributeProto.INTS

# (op, attribute) -> the default the description states in words, as an attribute value, from
# (node, rank of input 0, number of spatial axes)
Prose = Callable[[onnx.NodeProto, int, int], onnx.AttributeProto | None]


def _ints(name: str, values: list[int]) -> onnx.AttributeProto:
    return helper.make_attribute(name, values, attr_type=INTS)


_SPATIAL_ONES: Prose = lambda n, r, s: _ints("?", [1] * s)  # noqa: E731
_SPATIAL_PADS: Prose = lambda n, r, s: _ints("?", [0] * (2 * s))  # noqa: E731
_CONV_LIKE = ("Conv", "ConvInteger", "QLinearConv", "ConvTranspose", "DeformConv", "MaxPool", "AveragePool",
              "LpPool", "MaxUnpool", "Col2Im")
_REDUCE = ("ReduceMax", "ReduceMin", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMean",
           "ReduceProd", "ReduceSum", "ReduceSumSquare")

PROSE_DEFAULTS: dict[tuple[str, str], Prose] = {
    ("Concat", "axis"): lambda n, r, s: helper.make_attribute("axis", 1),  # Concat-1: "Default value is 1"
    **{(op, "strides"): _SPATIAL_ONES for op in _CONV_LIKE},
    **{(op, "dilations"): _SPATIAL_ONES for op in _CONV_LIKE},
    **{(op, "pads"): _SPATIAL_PADS for op in _CONV_LIKE},
    ("ConvTranspose", "output_padding"): lambda n, r, s: _ints("?", [0] * s),
    **{(op, "axes"): (lambda n, r, s: _ints("?", list(range(r)))) for op in _REDUCE},
    ("Transpose", "perm"): lambda n, r, s: _ints("?", list(range(r))[::-1]),
    ("ConstantOfShape", "value"): lambda n, r, s: helper.make_attribute(
        "value", helper.make_tensor("value", onnx.TensorProto.FLOAT, [1], [0.0])),
}
# Attributes whose description speaks of a default that no attribute value can write here.
NOT_WRITTEN = {
    ("Attention", "scale"): "1/sqrt(head_size): a float computed from the inputs",
    ("GRU", "activations"): "a list whose length depends on the direction",
    ("LSTM", "activations"): "a list whose length depends on the direction",
    ("RNN", "activations"): "a list whose length depends on the direction",
    **{(op, a): "per activation, consumed in order: no single value"
       for op in ("GRU", "LSTM", "RNN") for a in ("activation_alpha", "activation_beta")},
    ("TfIdfVectorizer", "weights"): "one weight per n-gram of the pool",
    ("SequenceEmpty", "dtype"): "the output is a sequence, not a tensor inference describes",
    ("EyeLike", "dtype"): "the input's element type",
    ("StringNormalizer", "locale"): "platform specific",
}
# Words that mark a default stated in an attribute's description.
_MENTIONS_DEFAULT = re.compile(r"[Dd]efault")


def _schemas() -> dict[str, list[onnx.defs.OpSchema]]:
    out: dict[str, list[onnx.defs.OpSchema]] = {}
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain in ("", "ai.onnx"):
            out.setdefault(s.name, []).append(s)
    return out


SCHEMAS = _schemas()


def test_prose_defaults_table_is_complete() -> None:
    """Every optional attribute without a ``default_value`` whose description mentions a default is
    written out (PROSE_DEFAULTS) or explained (NOT_WRITTEN): a new one fails here until it is."""
    missing = set()
    for op, versions in SCHEMAS.items():
        for s in versions:
            for name, a in s.attributes.items():
                if a.required or a.default_value.type or not _MENTIONS_DEFAULT.search(a.description):
                    continue
                if (op, name) not in PROSE_DEFAULTS and (op, name) not in NOT_WRITTEN:
                    missing.add((op, name, s.since_version))
    assert not missing, sorted(missing)


# -- the sweep -------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _backend_cases() -> list:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.case.node import collect_testcases

        return collect_testcases(None)


def _constify(case) -> onnx.ModelProto:  # type: ignore[no-untyped-def]
    """The case's model with its small integer inputs made initializers holding the case's data."""
    m = onnx.ModelProto()
    m.CopyFrom(case.model)
    data = case.data_sets[0][0] if case.data_sets else []
    keep = []
    for k, vi in enumerate(m.graph.input):
        v = data[k] if k < len(data) else None
        if isinstance(v, np.ndarray) and v.dtype.kind in "iu" and v.size <= 64:
            m.graph.initializer.append(numpy_helper.from_array(v, vi.name))
        else:
            keep.append(vi)
    del m.graph.input[:]
    m.graph.input.extend(keep)
    return m


def _symbolize(model: onnx.ModelProto) -> onnx.ModelProto:
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for i, vi in enumerate(m.graph.input):
        if vi.type.WhichOneof("value") == "tensor_type" and vi.type.tensor_type.HasField("shape"):
            for k, d in enumerate(vi.type.tensor_type.shape.dim):
                d.dim_param = f"s{i}_{k}"
    return m


def _rank(m: onnx.ModelProto, name: str) -> int | None:
    for vi in m.graph.input:
        if vi.name == name and vi.type.tensor_type.HasField("shape"):
            return len(vi.type.tensor_type.shape.dim)
    for t in m.graph.initializer:
        if t.name == name:
            return len(t.dims)
    return None


def _spatial(m: onnx.ModelProto, node: onnx.NodeProto, rank: int) -> int:
    if node.op_type == "Col2Im":  # its spatial axes are the entries of image_shape (input 1)
        for t in m.graph.initializer:
            if t.name == node.input[1]:
                return int(t.dims[0]) if t.dims else 0
    return rank - 2


def _default(op: str, name: str, a: onnx.defs.OpSchema.Attribute, m: onnx.ModelProto,
             node: onnx.NodeProto) -> onnx.AttributeProto | None:
    if a.default_value.type:
        v = onnx.AttributeProto()
        v.CopyFrom(a.default_value)
    else:
        prose = PROSE_DEFAULTS.get((op, name))
        rank = _rank(m, node.input[0]) if node.input and node.input[0] else None
        if prose is None or rank is None:
            return None
        v = prose(node, rank, _spatial(m, node, rank))
        if v is None:
            return None
    v.name = name
    return v


def _agree(x: object, y: object) -> bool:
    """Whether two inference results state nothing contradictory: where both know a tensor's
    element type, rank, a dim or a value, they are the same (one side knowing less is not a
    misread default, only a less precise rule)."""
    if isinstance(x, str) or isinstance(y, str):
        return x == y
    assert isinstance(x, dict) and isinstance(y, dict)
    for name in x.keys() & y.keys():
        a, b = x[name], y[name]
        if a is None or b is None:
            continue
        (ta, sa, va), (tb, sb, vb) = a, b
        if ta and tb and ta != tb:
            return False
        if sa is not None and sb is not None:
            if len(sa) != len(sb) or any(p is not None and q is not None and p != q for p, q in zip(sa, sb)):
                return False
        if va is not None and vb is not None:
            if len(va) != len(vb) or any(p is not None and q is not None and p != q for p, q in zip(va, vb)):
                return False
    return True


def _shapes(m: onnx.ModelProto) -> object:
    try:
        inf = infer(build_graph(load_model_bytes(m.SerializeToString(), "m.onnx")))
    except ShapeflowError as exc:
        return f"rejected: {exc}"
    return {k: None if t is None else (t.dtype, t.shape, t.value) for k, t in inf.tensors[0].items()}


def _models() -> Iterator[tuple[str, onnx.ModelProto]]:
    """The single-node backend cases (small integer inputs made initializers), then the models of
    ``_extra_models``."""
    for case in _backend_cases():
        if len(case.model.graph.node) == 1:
            yield case.name, _constify(case)
    yield from _extra_models()


def _extra_models() -> list[tuple[str, onnx.ModelProto]]:
    """Ops with a rule of ours whose defaults no backend case exercises (each case sets the
    attribute to another value, or there is no case)."""
    T = onnx.TensorProto
    out = []
    for name, op, kw, inits in [
        ("global_lp_pool", "GlobalLpPool", {}, []),
        ("celu", "Celu", {}, []),
        ("constant_of_shape", "ConstantOfShape", {}, [helper.make_tensor("shape", T.INT64, [2], [2, 3])]),
    ]:
        inputs = [t.name for t in inits] or ["x"]
        graph_inputs = [] if inits else [helper.make_tensor_value_info("x", T.FLOAT, [1, 3, 4, 5])]
        g = helper.make_graph([helper.make_node(op, inputs, ["y"], **kw)], "g", graph_inputs,
                              [helper.make_tensor_value_info("y", T.FLOAT, None)], inits)
        out.append((name, helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])))
    return out


def _variants() -> Iterator[tuple[str, str, int, str, onnx.ModelProto, onnx.ModelProto]]:
    """(model name, op, version, attribute, model as written, model with the attribute toggled)."""
    for case_name, base in _models():
        node = base.graph.node[0]
        if node.domain not in ("", "ai.onnx") or node.op_type not in SCHEMAS:
            continue
        written = {a.name: a for a in node.attribute}
        for s in SCHEMAS[node.op_type]:
            stamped = onnx.ModelProto()
            stamped.CopyFrom(base)
            del stamped.opset_import[:]
            stamped.opset_import.append(helper.make_opsetid("", s.since_version))
            for name, a in s.attributes.items():
                if a.required:
                    continue
                dv = _default(node.op_type, name, a, stamped, node)
                if dv is None:
                    continue
                other = onnx.ModelProto()
                other.CopyFrom(stamped)
                n = other.graph.node[0]
                if name in written:
                    if written[name].SerializeToString() != dv.SerializeToString():
                        continue  # the case sets another value: absent would mean something else
                    kept = [x for x in n.attribute if x.name != name]
                    del n.attribute[:]
                    n.attribute.extend(kept)
                else:
                    n.attribute.append(dv)
                yield case_name, node.op_type, s.since_version, name, stamped, other


def test_absent_attribute_is_its_default() -> None:
    failures, compared = [], set()
    for name, op, version, attr, a, b in _variants():
        compared.add(op)
        for view in (lambda m: m, _symbolize):
            x, y = _shapes(view(a)), _shapes(view(b))
            if not _agree(x, y):
                failures.append(f"{name}: {op}-{version} {attr}: absent/default give\n  {x}\n  {y}")
                break
    assert not failures, f"{len(failures)} models read an absent attribute otherwise than its default:\n" + \
        "\n".join(failures[:20])
    # every op with a rule of ours and a defaulted attribute was compared at least once
    ruled = {op for (domain, op) in REGISTRY._rules if domain == ""}
    defaulted = {op for op, versions in SCHEMAS.items()
                 if any(not a.required and (a.default_value.type or (op, n) in PROSE_DEFAULTS)
                        for s in versions for n, a in s.attributes.items())}
    uncovered = sorted((ruled & defaulted) - compared)
    assert not uncovered, f"no case exercises the defaults of {uncovered}"


# -- onnx's shape functions that disagree with onnxruntime -------------------------------------------

def _stft_model(length: int | str, onesided: int | None, *, frame: int = 16, step: int = 8,
                window: bool = False, channels: int = 1) -> onnx.ModelProto:
    T = onnx.TensorProto
    sig = helper.make_tensor_value_info("sig", T.FLOAT, [1, length, channels])
    inits = [helper.make_tensor("step", T.INT64, [], [step])]
    inputs = ["sig", "step"]
    if window:
        inits.append(helper.make_tensor("win", T.FLOAT, [frame], [1.0] * frame))
        inputs.append("win")
    else:
        inits.append(helper.make_tensor("fl", T.INT64, [], [frame]))
        inputs += ["", "fl"]
    kw = {} if onesided is None else {"onesided": onesided}
    node = helper.make_node("STFT", inputs, ["y"], name="stft", **kw)
    g = helper.make_graph([node], "g", [sig], [helper.make_tensor_value_info("y", T.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _onnx_inferred(model: onnx.ModelProto, name: str) -> list[int | None]:
    m = onnx.shape_inference.infer_shapes(model, data_prop=True)
    for vi in list(m.graph.output) + list(m.graph.value_info):
        if vi.name == name:
            return [d.dim_value if d.HasField("dim_value") else None for d in vi.type.tensor_type.shape.dim]
    raise AssertionError(f"onnx inferred nothing for {name}")


def _runtime_shape(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> tuple[int, ...] | None:
    try:
        return tuple(ort_session(model).run(None, feeds)[0].shape)
    except Exception:
        return None


def test_untrusted_ops_still_disagree_with_onnxruntime() -> None:
    """Each UNTRUSTED entry is earned: onnx's shape function still states something onnxruntime
    contradicts (when onnx fixes it, this fails: the entry can go)."""
    assert set(UNTRUSTED) == {"STFT"}
    m = _stft_model(64, None)
    runtime = _runtime_shape(m, {"sig": np.zeros((1, 64, 1), np.float32)})
    assert runtime == (1, 7, 9, 2)
    assert _onnx_inferred(m, "y") == [1, 7, 16, 2]  # onnx reads the absent onesided as 0


def test_untrusted_ops_are_never_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """With its rule gone, an untrusted op's outputs are unknown, not onnx's answer."""
    from shapeflow.ops import base

    rules = dict(REGISTRY._rules)
    for op in UNTRUSTED:
        rules.pop(("", op), None)
    monkeypatch.setattr(REGISTRY, "_rules", rules)
    assert REGISTRY.get("", "STFT") is None and base.REGISTRY is REGISTRY
    got = _shapes(_stft_model(64, None))
    assert isinstance(got, dict) and got["y"] is None
