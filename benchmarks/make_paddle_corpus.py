"""Export a corpus of small random-weight PaddlePaddle networks through paddle2onnx, with dynamic
batch and sequence/spatial axes.

Families (two random configurations each, opset drawn from 13, 15, 17): an MLP that lifts its
features to a unit axis around a ``Linear`` (paddle2onnx's ``Unsqueeze -> MatMul -> Add ->
Squeeze``) or not; ``nn.MultiHeadAttention`` self-attention (reshape/transpose pairs); a text
encoder (``Embedding``, positions from ``arange(seq)``, ``nn.TransformerEncoder``); ``nn.LSTM``
over token embeddings and ``nn.GRU`` over float features (zero initial states built from the
input's shape); a conv net (Conv/BN/pool/adaptive pool/flatten/Linear); a squeeze-excite net; a
strided 1-D conv audio encoder. Inputs: ``input_ids`` int64 ``[batch, seq]``, or float
``x``/``image``/``waveform``/``features`` with dynamic batch and the other dynamic axes.

The files go to ``benchmarks/paddle_corpus/`` (git-ignored): ``<name>.onnx``,
``<name>.inputs.npz`` (batch 1) and ``manifest.json`` (see ``corpora.py``). Each export is kept
only if onnxruntime matches Paddle on the batch-1 inputs. Needs ``paddlepaddle``, ``paddle2onnx``,
``onnx_graphsurgeon`` (paddle2onnx tries to download it when absent, and hangs offline) and
``onnxruntime``, in a venv of their own::

    /work/venvs/paddle/bin/python benchmarks/make_paddle_corpus.py [--out DIR] [--seed N] [--force] [--families a,b]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ.setdefault("GLOG_minloglevel", "3")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpora  # noqa: E402

VOCAB = 500
TEXT_SIZES = [{"batch": 1, "seq": 5}, {"batch": 2, "seq": 11}]
FLAT_SIZES = [{"batch": 1}, {"batch": 3}]
VISION_SIZES = [{"batch": 1, "height": 32, "width": 40}, {"batch": 2, "height": 45, "width": 33}]
AUDIO_SIZES = [{"batch": 1, "samples": 400}, {"batch": 2, "samples": 1203}]
FEATURE_SIZES = [{"batch": 1, "frames": 7}, {"batch": 2, "frames": 19}]

# A family builds (layer, inputs: [(name, shape with None, dtype, logical axes)], kind, sizes).
InputSpec = tuple[str, list[int | None], str, dict[int, str]]
Spec = tuple[Any, list[InputSpec], str, list[dict[str, int]]]


def _nn() -> Any:
    import paddle.nn as nn

    return nn


def mlp(rng: random.Random) -> Spec:
    import paddle

    nn = _nn()
    f, h = rng.choice([8, 16]), rng.choice([16, 32])
    unit_axis = rng.random() < 0.7

    class MLP(nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(f, h), nn.Linear(h, 4)

        def forward(self, x: Any) -> Any:
            if unit_axis:  # tokens of length 1, as code written for sequences does it
                y = paddle.squeeze(self.fc1(paddle.unsqueeze(x, 1)), 1)
            else:
                y = self.fc1(x)
            return self.fc2(nn.functional.relu(y))

    return MLP(), [("x", [None, f], "float32", {0: "batch"})], "mlp", FLAT_SIZES


def mha(rng: random.Random) -> Spec:
    nn = _nn()
    d, heads = rng.choice([32, 64]), rng.choice([2, 4])

    class SelfAttention(nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.att = nn.MultiHeadAttention(d, heads)
            self.norm = nn.LayerNorm(d)
            self.out = nn.Linear(d, d)

        def forward(self, x: Any) -> Any:
            return self.out(self.norm(x + self.att(x, x, x)))

    return SelfAttention(), [("x", [None, None, d], "float32", {0: "batch", 1: "seq"})], "text", TEXT_SIZES


def transformer_text(rng: random.Random) -> Spec:
    import paddle

    nn = _nn()
    d, heads, layers = rng.choice([32, 64]), rng.choice([2, 4]), rng.choice([1, 2])

    class Encoder(nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.tok = nn.Embedding(VOCAB, d)
            self.pos = nn.Embedding(128, d)
            layer = nn.TransformerEncoderLayer(d, heads, 2 * d, dropout=0.0)
            self.enc = nn.TransformerEncoder(layer, layers)

        def forward(self, ids: Any) -> Any:
            pos = paddle.arange(paddle.shape(ids)[1]).unsqueeze(0)
            return self.enc(self.tok(ids) + self.pos(pos))

    return Encoder(), [("input_ids", [None, None], "int64", {0: "batch", 1: "seq"})], "text", TEXT_SIZES


def lstm(rng: random.Random) -> Spec:
    nn = _nn()
    d, h = rng.choice([16, 32]), rng.choice([16, 24])
    direction = rng.choice(["forward", "bidirect"])
    layers = rng.choice([1, 2])

    class Tagger(nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(VOCAB, d)
            self.rnn = nn.LSTM(d, h, num_layers=layers, direction=direction)
            self.out = nn.Linear(h * (2 if direction == "bidirect" else 1), 4)

        def forward(self, ids: Any) -> Any:
            y, _ = self.rnn(self.emb(ids))
            return self.out(y)

    return Tagger(), [("input_ids", [None, None], "int64", {0: "batch", 1: "seq"})], "rnn", TEXT_SIZES


def gru(rng: random.Random) -> Spec:
    nn = _nn()
    f, h = rng.choice([8, 13]), rng.choice([16, 32])

    class Classifier(nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.rnn = nn.GRU(f, h)
            self.out = nn.Linear(h, 3)

        def forward(self, x: Any) -> Any:
            y, last = self.rnn(x)
            return self.out(last[-1]) + self.out(y).mean(axis=1)

    return Classifier(), [("features", [None, None, f], "float32", {0: "batch", 1: "frames"})], "rnn", FEATURE_SIZES


def conv_net(rng: random.Random) -> Spec:
    import paddle

    nn = _nn()
    c = rng.choice([8, 16])

    class Net(nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.c1 = nn.Conv2D(3, c, 3, stride=2, padding=1)
            self.bn = nn.BatchNorm2D(c)
            self.pool = nn.MaxPool2D(2, 2)
            self.c2 = nn.Conv2D(c, 2 * c, 3, padding=1)
            self.gap = nn.AdaptiveAvgPool2D(1)
            self.fc = nn.Linear(2 * c, 10)

        def forward(self, x: Any) -> Any:
            y = self.pool(nn.functional.relu(self.bn(self.c1(x))))
            y = self.gap(nn.functional.relu(self.c2(y)))
            return self.fc(paddle.flatten(y, 1))

    return Net(), [("image", [None, 3, None, None], "float32", {0: "batch", 2: "height", 3: "width"})], \
        "vision", VISION_SIZES


def se_net(rng: random.Random) -> Spec:
    import paddle

    nn = _nn()
    c = rng.choice([8, 16])

    class SE(nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2D(3, c, 3, padding=1)
            self.gap = nn.AdaptiveAvgPool2D(1)
            self.fc1, self.fc2 = nn.Linear(c, max(4, c // 4)), nn.Linear(max(4, c // 4), c)

        def forward(self, x: Any) -> Any:
            y = nn.functional.relu(self.conv(x))
            s = paddle.flatten(self.gap(y), 1)
            s = nn.functional.sigmoid(self.fc2(nn.functional.relu(self.fc1(s))))
            return y * paddle.reshape(s, [-1, c, 1, 1])

    return SE(), [("image", [None, 3, None, None], "float32", {0: "batch", 2: "height", 3: "width"})], \
        "vision", VISION_SIZES


def audio_conv1d(rng: random.Random) -> Spec:
    nn = _nn()
    c = rng.choice([8, 16])

    class Encoder(nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.convs = nn.LayerList([nn.Conv1D(1, c, 10, stride=5)] +
                                      [nn.Conv1D(c, c, 3, stride=2) for _ in range(rng.choice([1, 2]))])
            self.norm = nn.LayerNorm(c)
            self.proj = nn.Linear(c, 2 * c)

        def forward(self, x: Any) -> Any:
            for conv in self.convs:
                x = nn.functional.gelu(conv(x))
            return self.proj(self.norm(x.transpose([0, 2, 1])))

    return Encoder(), [("waveform", [None, 1, None], "float32", {0: "batch", 2: "samples"})], "audio", AUDIO_SIZES


FAMILIES: dict[str, Callable[[random.Random], Spec]] = {
    "mlp": mlp, "mha": mha, "transformer_text": transformer_text, "lstm": lstm, "gru": gru,
    "conv_net": conv_net, "se_net": se_net, "audio_conv1d": audio_conv1d,
}


def _feeds(inputs: list[InputSpec], sizes: dict[str, int], seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds = {}
    for name, shape, dtype, axes in inputs:
        concrete = [sizes[axes[i]] if d is None else d for i, d in enumerate(shape)]
        if dtype == "int64":
            feeds[name] = rng.integers(1, VOCAB, size=concrete).astype(np.int64)
        else:
            feeds[name] = rng.standard_normal(concrete).astype(np.float32)
    return feeds


def export_one(name: str, build: Callable[[random.Random], Spec], seed: int, opset: int, out: Path,
               vers: dict[str, str]) -> tuple[dict[str, Any] | None, str | None]:
    import paddle

    paddle.seed(seed)
    try:
        layer, inputs, kind, sizes = build(random.Random(seed))
        layer.eval()
    except Exception as e:  # noqa: BLE001  # a family this Paddle cannot build is reported, not fatal
        return None, f"build failed: {type(e).__name__}: {str(e)[:160]}"
    path = out / f"{name}.onnx"
    spec = [paddle.static.InputSpec(list(shape), dtype, n) for n, shape, dtype, _ in inputs]
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings(), \
            contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        try:
            prefix = os.path.join(tmp, name)
            paddle.onnx.export(layer, prefix, input_spec=spec, opset_version=opset)
            import onnx

            proto = onnx.load(prefix + ".onnx")
            onnx.save(proto, str(path))
        except Exception as e:  # noqa: BLE001
            msg = str(e).strip().splitlines()[0][:160] if str(e).strip() else ""
            return None, f"paddle2onnx failed: {type(e).__name__}: {msg}"
    feeds = _feeds(inputs, sizes[0], seed)
    with paddle.no_grad():
        ref = layer(*(paddle.to_tensor(feeds[n]) for n, *_ in inputs))
    refs = [r.numpy() for r in (ref if isinstance(ref, (list, tuple)) else [ref])]
    why = corpora.check_and_record(path, feeds, refs, tol=2e-3)
    if why:
        return None, why
    axes = {n: ax for n, _, _, ax in inputs}
    return corpora.model_entry(path, "paddle2onnx", vers, name.rsplit("_", 2)[0], kind, axes, sizes, seed=seed), None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE / "paddle_corpus")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--per-family", type=int, default=2, help="random configurations per family")
    ap.add_argument("--force", action="store_true", help="export again models whose files exist")
    ap.add_argument("--families", default=",".join(FAMILIES), help="comma-separated subset of the families")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    vers = corpora.versions("paddlepaddle", "paddle2onnx", "onnx", "onnxruntime")
    rng = random.Random(args.seed)
    entries: dict[str, Any] = {}
    failed = []
    for family, build in FAMILIES.items():
        for i in range(args.per_family):
            seed, opset = rng.randrange(2**31), rng.choice([13, 15, 17])
            if family not in args.families.split(","):
                continue
            name = f"{family}_{i}_op{opset}"
            if (args.out / f"{name}.inputs.npz").exists() and not args.force:
                print(f"  {name}.onnx (kept)", file=sys.stderr)
                continue
            entry, why = export_one(name, build, seed, opset, args.out, vers)
            if why:
                failed.append(f"{name}: {why}")
                print(f"  {name}: FAILED {why}", file=sys.stderr, flush=True)
                continue
            assert entry is not None
            entries[f"{name}.onnx"] = entry
            print(f"  {name}.onnx: {entry['nodes']} nodes, {entry['bytes'] // 1024} KiB", file=sys.stderr, flush=True)
            corpora.write_manifest(args.out, entries)
    corpora.write_manifest(args.out, entries)
    print(f"{len(list(args.out.glob('*.onnx')))} models in {args.out}; versions {vers}", file=sys.stderr)
    if failed:
        print("skipped:\n  " + "\n  ".join(failed), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
