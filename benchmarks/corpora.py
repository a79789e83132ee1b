"""The benchmark corpora, read one way by ``bench_dims.py`` and ``bench_optimize.py``.

Each corpus is a folder of ``<name>.onnx`` files with a ``manifest.json`` (git-ignored, built by a
``make_*_corpus.py`` script of this folder):

========== ============================== ==========================================
corpus     folder                         builder (and the venv it needs)
========== ============================== ==========================================
text       ``benchmarks/text_corpus``     ``make_text_corpus.py`` (torch, transformers, onnxscript)
vision     ``benchmarks/vision_corpus``   ``make_vision_corpus.py`` (torch, onnxscript)
tf2onnx    ``benchmarks/tf2onnx_corpus``  ``make_tf2onnx_corpus.py`` (tensorflow-cpu, tf_keras, tf2onnx)
paddle     ``benchmarks/paddle_corpus``   ``make_paddle_corpus.py`` (paddlepaddle, paddle2onnx)
jax        ``benchmarks/jax_corpus``      ``make_jax_corpus.py`` (jax, flax, jax2onnx)
========== ============================== ==========================================

A manifest entry (the newer builders write all of it; the text and vision corpora's older entries
are read with defaults) names the ``exporter``, its ``versions``, the model's ``family`` and
``kind`` (text, vision, audio, rnn), its ``opset``, ``symbols`` (each symbolic input dim name ->
the logical axis it stands for: ``batch``, ``seq``, ``height``...; tf2onnx names every ``None`` dim
separately, so several names may stand for one axis) and ``sizes`` (two bindings of the logical
axes for the runtime checks, the first with batch 1). ``<name>.inputs.npz`` holds the inputs at
one size: the dtypes and value ranges (token ids below the vocabulary) for inputs of other sizes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx

HERE = Path(__file__).resolve().parent
# corpus -> (folder, builder script, module the builder needs)
CORPORA: dict[str, tuple[Path, str, str]] = {
    "text": (HERE / "text_corpus", "make_text_corpus.py", "transformers"),
    "vision": (HERE / "vision_corpus", "make_vision_corpus.py", "torch"),
    "tf2onnx": (HERE / "tf2onnx_corpus", "make_tf2onnx_corpus.py", "tf2onnx"),
    "paddle": (HERE / "paddle_corpus", "make_paddle_corpus.py", "paddle2onnx"),
    "jax": (HERE / "jax_corpus", "make_jax_corpus.py", "jax2onnx"),
}
TEXT_SIZES = ({"batch": 1, "seq": 5}, {"batch": 2, "seq": 11})
LEGACY_KINDS = {"wav2vec2": "audio", "whisper": "audio"}  # the vision corpus's audio families
# the shared corpus (GPT-2/BERT TorchScript exports, no manifest) is text


def shared_corpus(root: Path) -> Path:
    """../shared/corpus of the checkout (a git worktree one level deeper finds it one level further up)."""
    for up in (1, 2):
        p = root.joinpath(*[".."] * up, "shared", "corpus")
        if p.is_dir():
            return p.resolve()
    return root / ".." / "shared" / "corpus"


@dataclass
class CorpusModel:
    name: str  # file name without .onnx
    path: Path
    corpus: str
    exporter: str
    family: str
    kind: str
    symbols: dict[str, str]  # input dim_param -> logical axis
    sizes: list[dict[str, int]]  # logical axis -> value; two (or more) bindings, the first with batch 1
    template: dict[str, np.ndarray] = field(default_factory=dict)  # inputs at one size
    entry: dict[str, Any] = field(default_factory=dict)

    def bind(self, sizes: Mapping[str, int]) -> dict[str, int]:
        """Input symbol -> value for a binding of the logical axes."""
        return {s: sizes[axis] for s, axis in self.symbols.items() if axis in sizes}

    def feeds(self, model: onnx.ModelProto, bindings: Mapping[str, int], seed: int = 0) -> dict[str, np.ndarray]:
        """Random inputs with the symbols bound (``bindings`` by input symbol), each in its template's
        dtype and value range (floats: standard normal; ints: the template's [min, max])."""
        return make_feeds(model, bindings, self.template, seed)


def graph_inputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    inits = {i.name for i in model.graph.initializer}
    return [vi for vi in model.graph.input if vi.name not in inits]


def input_symbols(model: onnx.ModelProto) -> list[str]:
    """The symbolic dim names of the graph inputs, in order of first appearance."""
    seen: list[str] = []
    for vi in graph_inputs(model):
        for d in vi.type.tensor_type.shape.dim:
            if d.dim_param and d.dim_param not in seen:
                seen.append(d.dim_param)
    return seen


def make_feeds(model: onnx.ModelProto, bindings: Mapping[str, int], template: Mapping[str, np.ndarray],
               seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds: dict[str, np.ndarray] = {}
    for vi in graph_inputs(model):
        tt = vi.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else bindings[d.dim_param] for d in tt.shape.dim]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
        like = template.get(vi.name)
        if dtype == np.bool_:
            feeds[vi.name] = np.ones(shape, dtype=np.bool_)
        elif np.issubdtype(dtype, np.integer):
            lo, hi = (int(like.min()), int(like.max())) if like is not None and like.size else (0, 9)
            feeds[vi.name] = rng.integers(lo, hi + 1, size=shape).astype(dtype)
        else:
            feeds[vi.name] = rng.standard_normal(shape).astype(dtype)
    return feeds


def _legacy_symbols(model: onnx.ModelProto, entry: Mapping[str, Any]) -> dict[str, str]:
    """The text and vision corpora name their symbols after the logical axes."""
    out = {}
    for s in input_symbols(model):
        out[s] = "batch" if "batch" in s else ("seq" if "seq" in s and "axes" not in entry else s)
    return out


def load(corpus: str, folder: Path | None = None) -> list[CorpusModel]:
    """The models of one corpus (none when its folder is absent)."""
    where = folder or CORPORA[corpus][0]
    manifest_path = where / "manifest.json"
    manifest: dict[str, Any] = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    models = []
    for fname in sorted(os.listdir(where)) if where.is_dir() else []:
        if not fname.endswith(".onnx") or fname.endswith(".tmp.onnx"):
            continue
        entry = manifest.get(fname, {})
        path = where / fname
        proto = onnx.load(str(path), load_external_data=False)
        symbols = dict(entry.get("symbols") or _legacy_symbols(proto, entry))
        sizes = [dict(s) for s in entry.get("sizes") or TEXT_SIZES]
        npz = path.with_suffix(".inputs.npz")
        template = dict(np.load(str(npz))) if npz.exists() else {}
        models.append(CorpusModel(
            name=fname[: -len(".onnx")], path=path, corpus=corpus,
            exporter=entry.get("exporter") or ("torchscript" if corpus == "shared" else corpus),
            family=entry.get("family", fname.split("_")[0]),
            kind=entry.get("kind") or LEGACY_KINDS.get(entry.get("family", ""), "text" if corpus == "shared" else corpus),
            symbols=symbols,
            sizes=sizes, template=template, entry=entry))
    return models


def write_manifest(folder: Path, entries: Mapping[str, Mapping[str, Any]]) -> None:
    """Merge ``entries`` into ``folder/manifest.json`` (a rerun of one family keeps the others)."""
    path = folder / "manifest.json"
    manifest: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    manifest.update(entries)
    path.write_text(json.dumps(manifest, indent=1, sort_keys=True))


def versions(*dists: str) -> dict[str, str]:
    """Installed versions of the named distributions (for the manifests)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for d in dists:
        try:
            out[d] = version(d)
        except PackageNotFoundError:
            out[d] = "absent"
    return out


def check_and_record(path: Path, feeds: Mapping[str, np.ndarray], reference: list[np.ndarray] | None,
                     tol: float = 1e-3) -> str | None:
    """Keep an export only if onnxruntime runs it on ``feeds`` (and matches the framework's
    ``reference`` outputs, when given); saves the feeds as ``<name>.inputs.npz``. None when kept,
    else why not (the file is removed)."""
    import onnxruntime as ort

    try:
        sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        got = sess.run(None, dict(feeds))
        if reference is not None:
            for g, r in zip(got, reference):
                r = np.asarray(r)
                if g.shape != r.shape or not np.allclose(g, r, atol=tol, rtol=tol):
                    raise ValueError(f"onnxruntime differs from the framework: shapes {g.shape} {r.shape}")
    except Exception as e:  # noqa: BLE001  # a failed export is reported by the builder, not fatal
        path.unlink(missing_ok=True)
        msg = " ".join(str(e).split())
        return f"check failed: {type(e).__name__}: {msg if len(msg) < 300 else msg[:120] + ' ... ' + msg[-170:]}"
    np.savez(path.with_suffix(".inputs.npz"), **dict(feeds))
    return None


def model_entry(path: Path, exporter: str, vers: Mapping[str, str], family: str, kind: str,
                axes: Mapping[str, Mapping[int, str]], sizes: list[dict[str, int]], **extra: Any) -> dict[str, Any]:
    """A manifest entry; ``axes`` names the logical axis of each dynamic input axis, by input name,
    and the symbols are read back from the saved model (an exporter names them as it likes)."""
    proto = onnx.load(str(path), load_external_data=False)
    symbols: dict[str, str] = {}
    for vi in graph_inputs(proto):
        for i, d in enumerate(vi.type.tensor_type.shape.dim):
            logical = axes.get(vi.name, {}).get(i)
            if d.dim_param and logical:
                symbols[d.dim_param] = logical
            elif d.dim_param:
                symbols[d.dim_param] = d.dim_param
    opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), None)
    return {"exporter": exporter, "versions": dict(vers), "family": family, "kind": kind, "opset": opset,
            "nodes": len(proto.graph.node), "symbols": symbols, "sizes": sizes,
            "dynamic_axes": {k: {str(i): a for i, a in v.items()} for k, v in axes.items()},
            "bytes": path.stat().st_size, **extra}
