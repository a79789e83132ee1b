"""The model builders give valid models that run, and the example files are reproducible."""

from __future__ import annotations

import collections
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from model_builders import (
    OPSETS,
    VOCAB,
    attention_block,
    bert_like,
    gpt2_like,
    paddle_squeeze_cases,
    squeeze_unsqueeze_chain,
    unsqueeze_doc_cases,
)

ort = pytest.importorskip("onnxruntime")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(REPO, "examples")
BINDINGS = [(1, 1), (2, 7)]
TRANSFORMERS = [attention_block, bert_like, gpt2_like]


# -- helpers ---------------------------------------------------------------------------------------


def session(model: onnx.ModelProto):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def transformer_feeds(model: onnx.ModelProto, batch: int, seq: int, seed: int = 1) -> dict:
    rng = np.random.default_rng(seed)
    feeds = {}
    for value in model.graph.input:
        if value.name == "input_ids":
            feeds[value.name] = rng.integers(0, VOCAB, (batch, seq), dtype=np.int64)
        elif value.name == "token_type_ids":
            feeds[value.name] = rng.integers(0, 2, (batch, seq), dtype=np.int64)
        elif value.name == "attention_mask":
            mask = rng.integers(0, 2, (batch, seq), dtype=np.int64)
            mask[:, 0] = 1
            feeds[value.name] = mask
        else:
            raise AssertionError(f"unexpected input {value.name}")
    return feeds


def declared_shape(value: onnx.ValueInfoProto) -> list:
    return [d.dim_param or d.dim_value for d in value.type.tensor_type.shape.dim]


def op_counts(model: onnx.ModelProto) -> collections.Counter:
    return collections.Counter(n.op_type for n in model.graph.node)


class Index:
    """Producer lookup and constant axes of one graph."""

    def __init__(self, model: onnx.ModelProto) -> None:
        self.graph = model.graph
        self.producer = {o: n for n in self.graph.node for o in n.output}
        self.initializers = {t.name: t for t in self.graph.initializer}

    def op_of(self, name: str) -> str | None:
        node = self.producer.get(name)
        return None if node is None else node.op_type

    def axes(self, node: onnx.NodeProto) -> list[int] | None:
        for attr in node.attribute:
            if attr.name == "axes":
                return list(attr.ints)
        if len(node.input) < 2 or not node.input[1]:
            return None
        name = node.input[1]
        if name in self.initializers:
            return numpy_helper.to_array(self.initializers[name]).tolist()
        constant = self.producer[name]
        assert constant.op_type == "Constant"
        return numpy_helper.to_array(constant.attribute[0].t).tolist()

    def axes_forms(self) -> set[str]:
        forms = set()
        for node in self.graph.node:
            if node.op_type in ("Squeeze", "Unsqueeze"):
                if any(a.name == "axes" for a in node.attribute):
                    forms.add("attribute")
                elif node.input[1] in self.initializers:
                    forms.add("initializer")
                else:
                    forms.add(self.op_of(node.input[1]))
        return forms

    def shape_gather_unsqueezes(self) -> int:
        """Count ``Unsqueeze(Gather(Shape(x), i), 0)``."""
        count = 0
        for node in self.graph.node:
            if node.op_type == "Unsqueeze" and self.op_of(node.input[0]) == "Gather":
                gather = self.producer[node.input[0]]
                if self.op_of(gather.input[0]) == "Shape" and self.axes(node) == [0]:
                    count += 1
        return count

    def pairs(self, first: str, second: str) -> list[tuple[list[int], list[int]]]:
        """Axes of every ``second(first(..))`` where ``first``'s output has one consumer."""
        uses = collections.Counter(i for n in self.graph.node for i in n.input)
        found = []
        for node in self.graph.node:
            if node.op_type != second or self.op_of(node.input[0]) != first:
                continue
            inner = self.producer[node.input[0]]
            if uses[inner.output[0]] == 1:
                found.append((self.axes(inner), self.axes(node)))
        return found


# -- transformer blocks ----------------------------------------------------------------------------


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("build", TRANSFORMERS, ids=lambda f: f.__name__)
def test_transformer_is_valid_and_small(build, opset):
    model = build(opset)
    onnx.checker.check_model(model, full_check=True)
    assert [o.version for o in model.opset_import] == [opset]
    assert model.ByteSize() < 300_000
    for value in model.graph.input:
        assert declared_shape(value) == ["batch", "seq"]
    assert [declared_shape(o) for o in model.graph.output] == [["batch", "seq", 64]]
    names = [n.name for n in model.graph.node]
    assert all(names) and len(set(names)) == len(names)


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("build", TRANSFORMERS, ids=lambda f: f.__name__)
def test_transformer_runs_at_two_bindings(build, opset):
    model = build(opset)
    sess = session(model)
    for batch, seq in BINDINGS:
        (out,) = sess.run(None, transformer_feeds(model, batch, seq))
        assert out.shape == (batch, seq, 64)
        assert out.dtype == np.float32
        assert np.isfinite(out).all()


@pytest.mark.parametrize("build", TRANSFORMERS, ids=lambda f: f.__name__)
def test_opsets_compute_the_same_function(build):
    """Same weights in every opset: LayerNormalization vs its decomposition, attribute vs input
    axes and Split forms must not change the numbers."""
    feeds = transformer_feeds(build(17), 2, 7)
    reference = session(build(17)).run(None, feeds)[0]
    for opset in OPSETS:
        out = session(build(opset)).run(None, feeds)[0]
        np.testing.assert_allclose(out, reference, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("opset", [11, 17])
def test_attention_block_patterns(opset):
    model = attention_block(opset)
    index = Index(model)
    counts = op_counts(model)
    for op in ("Shape", "Gather", "Concat", "Reshape", "Transpose", "MatMul", "Softmax", "Erf",
               "Slice", "Range", "Gemm"):
        assert counts[op] > 0, op
    if opset >= 17:
        assert counts["LayerNormalization"] == 3
    else:
        for op in ("ReduceMean", "Sub", "Pow", "Sqrt", "Div"):
            assert counts[op] > 0, op
    # most Unsqueezes are Unsqueeze(Gather(Shape(x), i), 0), as in the real exports
    assert index.shape_gather_unsqueezes() / counts["Unsqueeze"] > 0.6
    # the extended mask is a mergeable chain Unsqueeze(1) -> Unsqueeze(2)
    assert ([1], [2]) in index.pairs("Unsqueeze", "Unsqueeze")
    # Conv1D's Squeeze(0) -> Unsqueeze(0) pair on a Slice of the shape
    pairs = index.pairs("Squeeze", "Unsqueeze")
    assert pairs and all(p == ([0], [0]) for p in pairs)
    squeezes = [n for n in model.graph.node if n.op_type == "Squeeze"]
    assert all(index.op_of(n.input[0]) == "Slice" for n in squeezes)
    # the head split: Reshape(x, Concat(U(G(S(x), 0)), U(G(S(x), 1)), [heads], [head_dim]))
    head_splits = 0
    for node in model.graph.node:
        if node.op_type != "Reshape" or index.op_of(node.input[1]) != "Concat":
            continue
        parts = index.producer[node.input[1]].input
        literals = [
            numpy_helper.to_array(index.producer[p].attribute[0].t).tolist()
            for p in parts[2:]
            if index.op_of(p) == "Constant"
        ]
        if [index.op_of(p) for p in parts[:2]] == ["Unsqueeze"] * 2 and literals == [[4], [16]]:
            head_splits += 1
    assert head_splits == 3  # q, k, v


@pytest.mark.parametrize("build", TRANSFORMERS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("opset", OPSETS)
def test_axes_forms(build, opset):
    forms = Index(build(opset)).axes_forms()
    if opset < 13:
        assert forms == {"attribute"}
    else:
        assert forms == {"Constant", "initializer"}


def test_bert_and_gpt2_flavours():
    bert = bert_like(17)
    assert [i.name for i in bert.graph.input] == ["input_ids", "attention_mask", "token_type_ids"]
    assert op_counts(bert)["Squeeze"] == 0  # like the real BERT export
    bert_index = Index(bert)
    assert ([1], [2]) in bert_index.pairs("Unsqueeze", "Unsqueeze")
    # (1 - mask) * -10000
    mul = next(n for n in bert.graph.node if n.op_type == "Mul" and "mask_fill" in n.input)
    assert bert_index.op_of(mul.input[0]) == "Sub"

    gpt2 = gpt2_like(17)
    gpt2_index = Index(gpt2)
    bias = gpt2_index.initializers["bias"]
    assert bias.data_type == onnx.TensorProto.BOOL and list(bias.dims)[:2] == [1, 1]
    slices = [n for n in gpt2.graph.node if n.op_type == "Slice" and n.input[0] == "bias"]
    assert len(slices) == 1
    assert gpt2_index.op_of(slices[0].input[2]) == "Unsqueeze"  # end = Unsqueeze(key_len, 0)
    assert op_counts(gpt2)["Where"] == 1 and op_counts(gpt2)["Tanh"] == 1


def test_gpt2_is_causal():
    """Position t of the output depends only on tokens 0..t."""
    model = gpt2_like(13, layers=2)
    sess = session(model)
    ids = np.random.default_rng(3).integers(0, VOCAB, (2, 7), dtype=np.int64)
    full = sess.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0]
    for t in (1, 4):
        prefix = ids[:, :t]
        out = sess.run(None, {"input_ids": prefix, "attention_mask": np.ones_like(prefix)})[0]
        np.testing.assert_allclose(out, full[:, :t], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("build", [attention_block, bert_like], ids=lambda f: f.__name__)
def test_padding_mask_hides_tokens(build):
    """Tokens where attention_mask is 0 do not change the other positions' outputs."""
    model = build(13)
    sess = session(model)
    feeds = transformer_feeds(model, 1, 6)
    feeds["attention_mask"] = np.array([[1, 1, 1, 1, 0, 0]], dtype=np.int64)
    first = sess.run(None, feeds)[0]
    feeds["input_ids"] = feeds["input_ids"].copy()
    feeds["input_ids"][:, 4:] = (feeds["input_ids"][:, 4:] + 1) % VOCAB
    second = sess.run(None, feeds)[0]
    np.testing.assert_allclose(second[:, :4], first[:, :4], rtol=1e-5, atol=1e-6)
    assert not np.allclose(second[:, 4:], first[:, 4:])


def test_transformers_are_deterministic():
    for build in TRANSFORMERS:
        assert build(13).SerializeToString() == build(13).SerializeToString()


def test_bad_arguments():
    with pytest.raises(ValueError):
        attention_block(12)
    with pytest.raises(ValueError):
        attention_block(17, hidden=64, heads=5)
    with pytest.raises(ValueError):
        squeeze_unsqueeze_chain(0)


# -- synthetic chain -------------------------------------------------------------------------------


@pytest.mark.parametrize("opset", [11, 13, 21])
def test_chain_is_valid_and_runs(opset):
    model = squeeze_unsqueeze_chain(2000, opset)
    assert abs(len(model.graph.node) - 2000) <= 100  # within 5%; in fact exact
    onnx.checker.check_model(model, full_check=True)
    assert [declared_shape(o) for o in model.graph.output] == [["batch", "seq", 8]]
    sess = session(model)
    rng = np.random.default_rng(0)
    for batch, seq in BINDINGS:
        (out,) = sess.run(None, {"x": rng.standard_normal((batch, seq, 8)).astype(np.float32)})
        assert out.shape == (batch, seq, 8)
    index = Index(model)
    counts = op_counts(model)
    assert counts["Squeeze"] > 0.15 * 2000 and counts["Unsqueeze"] > 0.25 * 2000
    assert index.shape_gather_unsqueezes() > 0
    assert ([1], [1]) in index.pairs("Unsqueeze", "Squeeze")  # cancelling pair
    assert ([0], [0]) in index.pairs("Squeeze", "Unsqueeze")  # the exporter's pair
    assert ([0], [2]) in index.pairs("Unsqueeze", "Unsqueeze")  # mergeable chain
    squeezed = {index.op_of(n.input[0]) for n in model.graph.node if n.op_type == "Squeeze"}
    assert "Constant" in squeezed and None in squeezed  # Constant node and initializer
    assert index.axes_forms() == ({"attribute"} if opset < 13 else {"initializer"})


@pytest.mark.parametrize("n_nodes", [1, 18, 19, 37, 500, 2000, 2017])
def test_chain_hits_node_count(n_nodes):
    model = squeeze_unsqueeze_chain(n_nodes)
    assert len(model.graph.node) == n_nodes
    onnx.checker.check_model(model)


def test_chain_shares_initializers():
    small, large = squeeze_unsqueeze_chain(200), squeeze_unsqueeze_chain(2000)
    assert len(small.graph.initializer) == len(large.graph.initializer)
    assert large.ByteSize() < 50 * 2000  # bytes per node; 500k nodes stay ~25 MB


# -- documentation cases ---------------------------------------------------------------------------


def test_paddle_squeeze_cases():
    cases = paddle_squeeze_cases()
    assert [expected for _, _, expected in cases] == [[3, 1, 5], [3, 5], "SF104", [1, 3, 5]]
    x = np.random.default_rng(0).standard_normal((1, 3, 1, 5)).astype(np.float32)
    for name, model, expected in cases:
        onnx.checker.check_model(model)
        assert [o.version for o in model.opset_import] == [13]
        if expected == "SF104":
            with pytest.raises(onnx.shape_inference.InferenceError, match="instead of 5"):
                onnx.checker.check_model(model, full_check=True)
            with pytest.raises(Exception):
                session(model).run(None, {"x": x})
            continue
        onnx.checker.check_model(model, full_check=True)
        (out,) = session(model).run(None, {"x": x})
        assert list(out.shape) == expected, name


def test_unsqueeze_doc_cases():
    cases = unsqueeze_doc_cases()
    assert len(cases) == 7
    for name, model, expected in cases:
        onnx.checker.check_model(model, full_check=True)
        in_shape = declared_shape(model.graph.input[0])
        axes = numpy_helper.to_array(model.graph.initializer[0]).tolist()
        x = np.random.default_rng(0).standard_normal(in_shape).astype(np.float32)
        (out,) = session(model).run(None, {"x": x})
        assert list(out.shape) == expected, name
        np.testing.assert_array_equal(out, np.expand_dims(x, tuple(axes)))


# -- examples --------------------------------------------------------------------------------------

EXAMPLE_FILES = [
    "attention.onnx",
    "axis_errors.onnx",
    "opset11_attribute_axes.onnx",
    "paddle_squeeze.onnx",
]


def test_make_examples_is_reproducible(tmp_path):
    script = os.path.join(EXAMPLES, "make_examples.py")
    subprocess.run([sys.executable, script, str(tmp_path)], check=True, capture_output=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == EXAMPLE_FILES
    for name in EXAMPLE_FILES:
        with open(os.path.join(EXAMPLES, name), "rb") as f:
            committed = f.read()
        assert (tmp_path / name).read_bytes() == committed, f"examples/{name} is stale"


def test_examples_load_and_break_as_documented():
    load = {name: onnx.load(os.path.join(EXAMPLES, name)) for name in EXAMPLE_FILES}
    for model in load.values():
        onnx.checker.check_model(model)
    onnx.checker.check_model(load["attention.onnx"], full_check=True)
    onnx.checker.check_model(load["opset11_attribute_axes.onnx"], full_check=True)

    errors = load["axis_errors.onnx"]
    assert [o.version for o in errors.opset_import] == [13]
    with pytest.raises(onnx.shape_inference.InferenceError) as caught:
        onnx.checker.check_model(errors, full_check=True)
    for node in ("sq_non_unit_node", "unsq_duplicate_node", "unsq_out_of_range_node"):
        assert node in str(caught.value)
    assert "sq_symbolic_node" not in str(caught.value)  # only a warning: fine when batch is 1

    op11 = load["opset11_attribute_axes.onnx"]
    assert Index(op11).axes_forms() == {"attribute"}
    assert any(a < 0 for n in op11.graph.node for at in n.attribute if at.name == "axes"
               for a in at.ints)
    sess = session(op11)
    for batch, seq in BINDINGS:
        heads, mean, mean_col = sess.run(None, {"x": np.ones((batch, seq, 16), np.float32)})
        assert heads.shape == (batch, seq, 4, 4)
        assert mean.shape == (batch, seq) and mean_col.shape == (batch, seq, 1)
