"""benchmarks/bench_dims.py and corpora.py on small models made here (the exporter corpora are
generated and git-ignored; these tests need onnx, onnxruntime and sympy only)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

pytest.importorskip("onnxruntime")
pytest.importorskip("sympy")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))

import bench_dims  # noqa: E402
import corpora  # noqa: E402


def _two_input_model() -> onnx.ModelProto:
    """tf2onnx's naming: ids [b1, s1] and mask [b2, s2] stand for the same axes. The mask is
    broadcast against the embeddings (Mul), so the model also runs when b2 or s2 is 1, and a tool
    that equates b1 with b2 states wrong dims there."""
    n = helper.make_node
    nodes = [
        n("Gather", ["table", "ids"], ["emb"]),  # [b1, s1, 4]
        n("Cast", ["mask"], ["maskf"], to=TensorProto.FLOAT),  # [b2, s2]
        n("Unsqueeze", ["maskf", "axes2"], ["mask3"]),  # [b2, s2, 1]
        n("Mul", ["emb", "mask3"], ["masked"]),  # broadcast of b1/b2 and s1/s2
        n("Shape", ["ids"], ["shape"]),
        n("Reshape", ["masked", "flat"], ["y"]),  # [b*s*4] from the broadcast
    ]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["b1", "s1"]),
         helper.make_tensor_value_info("mask", TensorProto.INT64, ["b2", "s2"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("shape", TensorProto.INT64, None)],
        [helper.make_tensor("table", TensorProto.FLOAT, [10, 4], np.arange(40, dtype=np.float32)),
         helper.make_tensor("axes2", TensorProto.INT64, [1], [2]),
         helper.make_tensor("flat", TensorProto.INT64, [1], [-1])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _corpus(tmp_path: Path, model: onnx.ModelProto) -> corpora.CorpusModel:
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    sizes = [{"batch": 1, "seq": 5}, {"batch": 2, "seq": 3}]
    entry = corpora.model_entry(path, "test", {}, "m", "text", {"ids": {0: "batch", 1: "seq"},
                                                                "mask": {0: "batch", 1: "seq"}}, sizes)
    np.savez(tmp_path / "m.inputs.npz", ids=np.array([[1, 9]]), mask=np.ones((1, 2), dtype=np.int64))
    (tmp_path / "manifest.json").write_text(json.dumps({"m.onnx": entry}))
    [cm] = corpora.load("test", tmp_path)
    return cm


def test_corpus_reads_the_logical_axes_of_every_symbol(tmp_path: Path) -> None:
    cm = _corpus(tmp_path, _two_input_model())
    assert cm.symbols == {"b1": "batch", "s1": "seq", "b2": "batch", "s2": "seq"}
    assert cm.bind({"batch": 2, "seq": 3}) == {"b1": 2, "b2": 2, "s1": 3, "s2": 3}
    feeds = cm.feeds(onnx.load(str(cm.path)), {"b1": 2, "s1": 3, "b2": 2, "s2": 3})
    assert feeds["ids"].shape == (2, 3) and feeds["ids"].min() >= 1 and feeds["ids"].max() <= 9  # template range
    assert (feeds["mask"] == 1).all()


def test_split_sizes_expose_a_merge_of_input_symbols(tmp_path: Path) -> None:
    """ORT-SSI (auto_merge) equates b2 with b1 and s2 with s1 at the Mul; onnxruntime runs the model
    with the mask's dims 1, where its stated dims are wrong. shapeflow states none of them wrong."""
    row = bench_dims.measure(_corpus(tmp_path, _two_input_model()), [])
    assert row.ssi_status == "ok"
    assert row.ssi_merges, "the merge of b1/b2 (or s1/s2) is not tracked"
    assert all("=" in m for m in row.ssi_merges)
    assert any(r.startswith("split") for r in row.runs), row.refused
    assert row.ort_ssi.wrong_split > 0 and row.rests_on_merge
    assert row.shapeflow.wrong == row.shapeflow.wrong_split == 0
    assert row.onnx.wrong == 0


def test_counts_and_contradictions_against_the_runtime(tmp_path: Path) -> None:
    """A stated dim that the runtime contradicts at one of the sizes is wrong; the others count as known."""
    model = _two_input_model()
    cm = _corpus(tmp_path, model)
    runs, split, _ = bench_dims.runtime_shapes(bench_dims._strip(model), cm)
    assert [r[0] for r in runs] == ["batch=1 seq=5", "batch=2 seq=3"]
    truth = bench_dims.ToolView({"emb": [lambda b: b["b1"], lambda b: b["s1"], 4], "shape": [2]}, {})
    assert bench_dims.count(truth, runs, split) == bench_dims.Count(known=4, wrong=0, wrong_split=0)
    liar = bench_dims.ToolView({"emb": [lambda b: b["s1"], None, 4]}, {"emb": ["s1", "?", "4"]})
    explain: list[str] = []
    assert bench_dims.count(liar, runs, split, explain) == bench_dims.Count(known=2, wrong=1)
    assert "emb[0]" in explain[0]


@pytest.mark.parametrize(("a", "b", "equates"), [
    ("unk__2", "unk__0", True),  # two input symbols
    ("Min(1000000000, unk__3)", "unk__1", True),  # an expression of one input symbol and another
    ("seq", "1", True),  # an input symbol and a constant
    ("Reshape_83_o0__d0", "Reshape_86_o0__d0", False),  # ORT-SSI's own names
    ("Reshape_83_o0__d0", "seq", False),  # its own name into an input symbol: not a premise on inputs
    ("2*seq", "seq + seq", False),  # the same input symbols
    ("DynamicDimension.0", "DynamicDimension.1", True),  # paddle2onnx's names
    ("DynamicDimension.10", "DynamicDimension.1", True),
])
def test_merges_of_input_symbols(a: str, b: str, equates: bool) -> None:
    symbols = {"unk__0", "unk__1", "unk__2", "unk__3", "seq", "DynamicDimension.0", "DynamicDimension.1",
               "DynamicDimension.10"}
    assert bench_dims._equates_inputs(a, b, symbols) is equates


def test_symbol_names_that_are_not_python_names_are_read() -> None:
    """paddle2onnx names its dims "DynamicDimension.0": a tool's "2*DynamicDimension.0" is known."""
    vi = helper.make_tensor_value_info("t", TensorProto.FLOAT, ["2*DynamicDimension.0", "DynamicDimension.10", "x"])
    graph = helper.make_graph([helper.make_node("Identity", ["i"], ["t"])], "g",
                              [helper.make_tensor_value_info("i", TensorProto.FLOAT, None)], [vi])
    model = helper.make_model(graph)
    view = bench_dims._from_value_info(model, ["t"], {"DynamicDimension.0", "DynamicDimension.10"})
    dims = view.shapes["t"]
    assert dims is not None and dims[2] is None
    assert dims[0]({"DynamicDimension.0": 3, "DynamicDimension.10": 7}) == 6  # type: ignore[operator,misc]
    assert dims[1]({"DynamicDimension.0": 3, "DynamicDimension.10": 7}) == 7  # type: ignore[operator,misc]


def test_baseline_comparison_flags_a_model_that_got_worse(tmp_path: Path) -> None:
    from dataclasses import asdict

    row = bench_dims.measure(_corpus(tmp_path, _two_input_model()), [])
    same = tmp_path / "same.json"
    same.write_text(json.dumps({"rows": [asdict(row)]}))
    assert bench_dims.compare([row], same) == []
    better = asdict(row)
    better["shapeflow"]["known"] += 1
    other_corpus = dict(asdict(row), corpus="elsewhere")  # same model name, another corpus: not compared
    other_corpus["shapeflow"] = dict(other_corpus["shapeflow"], known=row.shapeflow.known + 5)
    worse = tmp_path / "worse.json"
    worse.write_text(json.dumps({"rows": [better, other_corpus]}))
    assert bench_dims.compare([row], worse) == [
        f"m: shapeflow known {row.shapeflow.known + 1} -> {row.shapeflow.known}"]
