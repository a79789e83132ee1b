"""optimize on whole models: the transformer builders at opsets 11-21, the synthetic benchmark chain,
the Paddle and ONNX doc cases, and the real exports in ../shared/corpus when present."""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest

from model_builders import (
    OPSETS, attention_block, bert_like, gpt2_like, paddle_squeeze_cases, squeeze_unsqueeze_chain,
    unsqueeze_doc_cases,
)
from shapeflow.drivers.optimizer import OptimizeRefused, optimize_model
from test_passes_support import QUIET, SO, check_rewrite, loaded_of, optimize

CORPUS = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "corpus")


def squeeze_unsqueeze(model: onnx.ModelProto) -> int:
    return sum(1 for n in model.graph.node if n.op_type in ("Squeeze", "Unsqueeze"))


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("builder", [attention_block, bert_like, gpt2_like])
def test_transformer_builders(builder, opset):
    model = builder(opset, layers=2) if builder is not attention_block else builder(opset)
    out = optimize(model)
    assert out.result.changed
    before, after = squeeze_unsqueeze(model), squeeze_unsqueeze(out.after)
    # what is left is Unsqueezes of run-time values (Range positions, a reused mask Unsqueeze)
    assert after <= max(2, before // 10), (before, after, [n.name for n in out.after.graph.node
                                                          if n.op_type in ("Squeeze", "Unsqueeze")])
    assert not out.result.notes  # nothing here relies on a symbolic dim being 1
    check_rewrite(out, values=(1, 3, 7))


@pytest.mark.parametrize("opset", [11, 13, 21])
def test_benchmark_chain_goes_to_zero(opset):
    model = squeeze_unsqueeze_chain(400, opset)
    out = optimize(model)
    assert out.count("Squeeze") == 0 and out.count("Unsqueeze") == 0
    # each segment's Reshape returns its input (no-op-reshape): it goes with its target's whole
    # computation in the round that cancels the pair its only reader begins (the editor forwards
    # the bypass to the pair's reader: rounds.Claims), so one round does it all
    assert out.count("Reshape") == 0 and out.count("Shape") == 0
    assert out.result.rounds == 1
    check_rewrite(out)


def test_paddle_cases():
    for name, model, expected in paddle_squeeze_cases():
        if expected == "SF104":
            with pytest.raises(OptimizeRefused):
                optimize_model(loaded_of(model))
            continue
        out = optimize(model)
        assert not out.result.changed, name  # a single Squeeze of a graph input: nothing to do
        assert out.data == model.SerializeToString()


def test_unsqueeze_doc_cases_untouched():
    for name, model, _ in unsqueeze_doc_cases():
        out = optimize(model)
        assert not out.result.changed, name


def _corpus(name: str) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    path = os.path.join(CORPUS, f"{name}.onnx")
    if not os.path.exists(path):
        pytest.skip("shared corpus not present")
    feeds = dict(np.load(os.path.join(CORPUS, f"{name}.inputs.npz")))
    return onnx.load(path), feeds


@pytest.mark.parametrize("name,left", [("gpt2_L2_op11", 4), ("gpt2_L2_op17", 4), ("bert_L4_op17", 3)])
def test_corpus_exports(name, left):
    import onnxruntime as ort

    model, feeds = _corpus(name)
    out = optimize(model)
    assert squeeze_unsqueeze(out.after) <= left
    want = ort.InferenceSession(model.SerializeToString(), SO, providers=["CPUExecutionProvider"]).run(None, feeds, QUIET)
    got = ort.InferenceSession(out.data, SO, providers=["CPUExecutionProvider"]).run(None, feeds, QUIET)
    assert all(a.tobytes() == b.tobytes() and a.shape == b.shape for a, b in zip(want, got))
    torch_out = np.load(os.path.join(CORPUS, f"{name}.torch_out.npy"))
    assert np.allclose(got[0], torch_out, atol=1e-5)
    check_rewrite(out, values=(1, 5))
