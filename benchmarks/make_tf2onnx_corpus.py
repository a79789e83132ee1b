"""Export a corpus of small random-weight Keras models through tf2onnx, with dynamic batch and
sequence/spatial axes.

Families (two random configurations each, opset drawn from 13, 15, 17): text (a BERT-like encoder
on Keras ``MultiHeadAttention``, whose ``EinsumDense`` layers tf2onnx lowers; an attention block
written with ``tf.einsum``; a 1-D conv text classifier), vision (EfficientNet and MobileNetV2/V3
from ``tf_keras.applications`` at reduced width, random weights, with their squeeze-excite blocks;
a small SE-ResNet), audio (a strided 1-D conv on the waveform; an STFT magnitude front end) and RNN
(stacked LSTM, bidirectional GRU, an LSTM on float features). Text models take ``input_ids`` and
``attention_mask`` (int32, ``[batch, seq]``), which tf2onnx names with separate symbols
(``unk__N``), as it does every ``None`` dim. Weights are Keras' random initialisers.

The files go to ``benchmarks/tf2onnx_corpus/`` (git-ignored): ``<name>.onnx``,
``<name>.inputs.npz`` (batch 1) and ``manifest.json`` (see ``corpora.py``). Each export is kept
only if onnxruntime matches Keras on the batch-1 inputs. Existing files are kept unless
``--force``. Needs ``tensorflow-cpu``, ``tf_keras``, ``tf2onnx`` and ``onnxruntime`` (a venv of
its own: ``python -m venv /work/venvs/tf && /work/venvs/tf/bin/pip install tensorflow-cpu tf_keras
tf2onnx onnxruntime``)::

    /work/venvs/tf/bin/python benchmarks/make_tf2onnx_corpus.py [--out DIR] [--seed N] [--force] [--families a,b]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # tf2onnx reads Keras 2 models
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpora  # noqa: E402

VOCAB = 500
TEXT_SIZES = [{"batch": 1, "seq": 5}, {"batch": 2, "seq": 11}]
VISION_SIZES = [{"batch": 1, "height": 32, "width": 40}, {"batch": 2, "height": 45, "width": 33}]
AUDIO_SIZES = [{"batch": 1, "samples": 400}, {"batch": 2, "samples": 1203}]
FEATURE_SIZES = [{"batch": 1, "frames": 7}, {"batch": 2, "frames": 19}]


def _tf() -> Any:
    import tensorflow as tf

    return tf


def _keras() -> Any:
    import tf_keras

    return tf_keras


# A family builds (keras model, input specs, logical axes per input, kind, sizes).
Spec = tuple[Any, list[Any], dict[str, dict[int, str]], str, list[dict[str, int]]]


def _text_inputs() -> tuple[Any, Any, list[Any], dict[str, dict[int, str]]]:
    tf, keras = _tf(), _keras()
    ids = keras.Input(shape=(None,), dtype="int32", name="input_ids")
    mask = keras.Input(shape=(None,), dtype="int32", name="attention_mask")
    specs = [tf.TensorSpec((None, None), tf.int32, name="input_ids"),
             tf.TensorSpec((None, None), tf.int32, name="attention_mask")]
    axes = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}}
    return ids, mask, specs, axes


def _position_layer(d: int) -> Any:
    tf, keras = _tf(), _keras()

    class AddPositions(keras.layers.Layer):  # x + table[range(seq)], as BERT's position embedding
        def __init__(self) -> None:
            super().__init__()
            self.table = keras.layers.Embedding(128, d)

        def call(self, x: Any) -> Any:
            return x + self.table(tf.range(tf.shape(x)[1]))[tf.newaxis]

    return AddPositions()


def _gelu(x: Any) -> Any:
    """The tanh form: tf2onnx has no Erfc for the exact one."""
    return _tf().nn.gelu(x, approximate=True)


def bert_like(rng: random.Random) -> Spec:
    tf, keras = _tf(), _keras()
    d, heads, layers = rng.choice([32, 64]), rng.choice([2, 4]), rng.choice([1, 2])
    ids, mask, specs, axes = _text_inputs()
    x = _position_layer(d)(keras.layers.Embedding(VOCAB, d)(ids))
    x = keras.layers.LayerNormalization(epsilon=1e-6)(x)
    att_mask = keras.layers.Lambda(lambda m: tf.cast(m[:, tf.newaxis, :], tf.bool))(mask)
    for _ in range(layers):
        a = keras.layers.MultiHeadAttention(num_heads=heads, key_dim=d // heads)(x, x, attention_mask=att_mask)
        x = keras.layers.LayerNormalization(epsilon=1e-6)(x + a)
        f = keras.layers.Dense(d)(keras.layers.Dense(2 * d, activation=_gelu)(x))
        x = keras.layers.LayerNormalization(epsilon=1e-6)(x + f)
    return keras.Model([ids, mask], x), specs, axes, "text", TEXT_SIZES


def einsum_attention(rng: random.Random) -> Spec:
    """Attention written with tf.einsum on heads split by reshape to the runtime shape."""
    tf, keras = _tf(), _keras()
    d, heads = rng.choice([32, 48]), rng.choice([2, 4])
    hd = d // heads

    class Attention(keras.layers.Layer):
        def build(self, shape: Any) -> None:
            self.wq = self.add_weight(name="wq", shape=(d, heads, hd))
            self.wk = self.add_weight(name="wk", shape=(d, heads, hd))
            self.wv = self.add_weight(name="wv", shape=(d, heads, hd))
            self.wo = self.add_weight(name="wo", shape=(heads, hd, d))

        def call(self, x: Any, m: Any) -> Any:
            q = tf.einsum("bsd,dhk->bshk", x, self.wq)
            k = tf.einsum("bsd,dhk->bshk", x, self.wk)
            v = tf.einsum("bsd,dhk->bshk", x, self.wv)
            s = tf.einsum("bqhk,bshk->bhqs", q, k) / float(np.sqrt(hd))
            s += (1.0 - tf.cast(m[:, tf.newaxis, tf.newaxis, :], tf.float32)) * -1e4
            o = tf.einsum("bhqs,bshk->bqhk", tf.nn.softmax(s, axis=-1), v)
            return tf.einsum("bqhk,hkd->bqd", o, self.wo)

    ids, mask, specs, axes = _text_inputs()
    x = keras.layers.Embedding(VOCAB, d)(ids)
    x = keras.layers.LayerNormalization()(x + Attention()(x, mask))
    # [b*s, d] and back to [b, s, d] from the ids' runtime shape, as hand-written Keras code does
    x = keras.layers.Lambda(lambda t: tf.reshape(t, tf.stack([tf.shape(t)[0] * tf.shape(t)[1], d])))(x)
    x = keras.layers.Dense(d, activation="relu")(x)
    x = keras.layers.Lambda(lambda t: tf.reshape(t[0], tf.concat([tf.shape(t[1]), [d]], 0)))([x, ids])
    return keras.Model([ids, mask], x), specs, axes, "text", TEXT_SIZES


def text_cnn(rng: random.Random) -> Spec:
    keras = _keras()
    d, k = rng.choice([16, 32]), rng.choice([3, 5])
    ids, mask, specs, axes = _text_inputs()
    x = keras.layers.Embedding(VOCAB, d)(ids)
    x = x * keras.layers.Lambda(lambda m: _tf().cast(m, "float32")[..., None])(mask)
    x = keras.layers.Conv1D(2 * d, k, padding="same", activation="relu")(x)
    x = keras.layers.GlobalMaxPooling1D()(x)
    return keras.Model([ids, mask], keras.layers.Dense(4)(x)), specs, axes, "text", TEXT_SIZES


def _image_input() -> tuple[Any, list[Any], dict[str, dict[int, str]]]:
    tf, keras = _tf(), _keras()
    x = keras.Input(shape=(None, None, 3), name="image")
    return x, [tf.TensorSpec((None, None, None, 3), tf.float32, name="image")], \
        {"image": {0: "batch", 1: "height", 2: "width"}}


def efficientnet(rng: random.Random) -> Spec:
    from tf_keras.src.applications.efficientnet import EfficientNet  # B0's blocks, width and depth scaled down

    width, depth = rng.choice([0.25, 0.4]), rng.choice([0.25, 0.5])
    _, specs, axes = _image_input()
    keras = _keras()
    base = EfficientNet(width, depth, 224, model_name="efficientnet_small", include_top=False, weights=None,
                        input_shape=(None, None, 3), pooling="avg")
    model = keras.Model(base.input, keras.layers.Dense(10)(base.output))
    return model, specs, {"image": axes["image"]}, "vision", VISION_SIZES


def mobilenet(rng: random.Random) -> Spec:
    from tf_keras.applications import MobileNetV2, MobileNetV3Small

    _, specs, axes = _image_input()
    if rng.random() < 0.5:
        model = MobileNetV2(alpha=0.35, include_top=False, pooling="avg", weights=None, input_shape=(None, None, 3))
    else:
        model = MobileNetV3Small(alpha=0.75, include_top=False, pooling="avg", weights=None,
                                 input_shape=(None, None, 3), include_preprocessing=rng.random() < 0.5)
    return model, specs, axes, "vision", VISION_SIZES


def se_resnet(rng: random.Random) -> Spec:
    keras = _keras()
    c = rng.choice([8, 16])
    x, specs, axes = _image_input()
    y = keras.layers.Conv2D(c, 3, strides=2, padding="same", use_bias=False)(x)
    y = keras.layers.ReLU()(keras.layers.BatchNormalization()(y))
    for _ in range(rng.choice([1, 2])):
        r = keras.layers.Conv2D(c, 3, padding="same", activation="relu")(y)
        r = keras.layers.Conv2D(c, 3, padding="same")(r)
        s = keras.layers.GlobalAveragePooling2D()(r)
        s = keras.layers.Reshape((1, 1, c))(s)
        s = keras.layers.Conv2D(max(4, c // 4), 1, activation="relu")(s)
        s = keras.layers.Conv2D(c, 1, activation="sigmoid")(s)
        y = keras.layers.ReLU()(y + r * s)
    y = keras.layers.Conv2D(2 * c, 3, strides=2, padding="same", activation="relu")(y)
    y = keras.layers.GlobalAveragePooling2D()(y)
    return keras.Model(x, keras.layers.Dense(10)(y)), specs, axes, "vision", VISION_SIZES


def conv1d_wave(rng: random.Random) -> Spec:
    tf, keras = _tf(), _keras()
    c = rng.choice([8, 16])
    x = keras.Input(shape=(None, 1), name="waveform")
    y = keras.layers.Conv1D(c, 10, strides=5, activation=_gelu)(x)
    for _ in range(rng.choice([1, 2])):
        y = keras.layers.Conv1D(c, 3, strides=2, activation=_gelu)(y)
    y = keras.layers.LayerNormalization()(y)
    y = keras.layers.Dense(2 * c)(y)
    return keras.Model(x, y), [tf.TensorSpec((None, None, 1), tf.float32, name="waveform")], \
        {"waveform": {0: "batch", 1: "samples"}}, "audio", AUDIO_SIZES


def stft_frontend(rng: random.Random) -> Spec:
    tf, keras = _tf(), _keras()
    frame, mels = rng.choice([64, 128]), rng.choice([8, 16])

    class LogMel(keras.layers.Layer):
        def build(self, shape: Any) -> None:
            self.mel = self.add_weight(name="mel", shape=(frame // 2 + 1, mels), initializer="uniform")

        def call(self, w: Any) -> Any:
            # |DFT| of each frame from cos/sin bases (tf2onnx has no ComplexAbs for tf.signal.stft)
            frames = tf.signal.frame(w, frame, frame // 2) * tf.signal.hann_window(frame)
            t = np.arange(frame)[:, None] * np.arange(frame // 2 + 1)[None, :] * (2 * np.pi / frame)
            re = tf.matmul(frames, tf.constant(np.cos(t), tf.float32))
            im = tf.matmul(frames, tf.constant(np.sin(t), tf.float32))
            spec = tf.sqrt(re * re + im * im + 1e-9)
            return tf.math.log(tf.matmul(spec, tf.abs(self.mel)) + 1e-6)

    x = keras.Input(shape=(None,), name="waveform")
    y = keras.layers.Conv1D(mels, 3, padding="same", activation="relu")(LogMel()(x))
    return keras.Model(x, y), [tf.TensorSpec((None, None), tf.float32, name="waveform")], \
        {"waveform": {0: "batch", 1: "samples"}}, "audio", AUDIO_SIZES


def lstm_stack(rng: random.Random) -> Spec:
    keras = _keras()
    d, u = rng.choice([16, 32]), rng.choice([16, 24])
    ids, mask, specs, axes = _text_inputs()
    x = keras.layers.Embedding(VOCAB, d)(ids)
    x = keras.layers.LSTM(u, return_sequences=True)(x)
    x = keras.layers.LSTM(u, return_sequences=rng.random() < 0.5)(x)
    return keras.Model([ids, mask], keras.layers.Dense(4)(x)), specs, axes, "rnn", TEXT_SIZES


def gru_bidirectional(rng: random.Random) -> Spec:
    keras = _keras()
    d, u = rng.choice([16, 32]), rng.choice([8, 16])
    ids, mask, specs, axes = _text_inputs()
    x = keras.layers.Embedding(VOCAB, d)(ids)
    x = keras.layers.Bidirectional(keras.layers.GRU(u, return_sequences=True))(x)
    return keras.Model([ids, mask], keras.layers.Dense(4)(x)), specs, axes, "rnn", TEXT_SIZES


def lstm_features(rng: random.Random) -> Spec:
    tf, keras = _tf(), _keras()
    f, u = rng.choice([8, 13]), rng.choice([16, 32])
    x = keras.Input(shape=(None, f), name="features")
    y = keras.layers.LSTM(u, return_sequences=True)(x)
    y = keras.layers.GRU(u)(y)
    return keras.Model(x, keras.layers.Dense(3)(y)), [tf.TensorSpec((None, None, f), tf.float32, name="features")], \
        {"features": {0: "batch", 1: "frames"}}, "rnn", FEATURE_SIZES


FAMILIES: dict[str, Callable[[random.Random], Spec]] = {
    "bert_like": bert_like, "einsum_attention": einsum_attention, "text_cnn": text_cnn,
    "efficientnet": efficientnet, "mobilenet": mobilenet, "se_resnet": se_resnet,
    "conv1d_wave": conv1d_wave, "stft_frontend": stft_frontend,
    "lstm_stack": lstm_stack, "gru_bidirectional": gru_bidirectional, "lstm_features": lstm_features,
}


def _feeds(specs: list[Any], sizes: dict[str, int], axes: dict[str, dict[int, str]], seed: int,
           model: Any) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds = {}
    for spec in specs:
        name = spec.name
        shape = [sizes[axes[name][i]] if d is None else d for i, d in enumerate(spec.shape.as_list())]
        if name == "input_ids":
            feeds[name] = rng.integers(1, VOCAB, size=shape).astype(np.int32)
        elif name == "attention_mask":
            feeds[name] = np.ones(shape, dtype=np.int32)
        else:
            feeds[name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def export_one(name: str, build: Callable[[random.Random], Spec], seed: int, opset: int, out: Path,
               vers: dict[str, str]) -> tuple[dict[str, Any] | None, str | None]:
    import onnx
    import tensorflow as tf
    import tf2onnx

    tf.random.set_seed(seed)
    tf.keras.utils.set_random_seed(seed) if hasattr(tf.keras.utils, "set_random_seed") else None
    try:
        model, specs, axes, kind, sizes = build(random.Random(seed))
    except Exception as e:  # noqa: BLE001  # a family this Keras cannot build is reported, not fatal
        return None, f"build failed: {type(e).__name__}: {str(e)[:160]}"
    path = out / f"{name}.onnx"
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        try:
            proto, _ = tf2onnx.convert.from_keras(model, input_signature=specs, opset=opset)
        except Exception as e:  # noqa: BLE001
            return None, f"tf2onnx failed: {type(e).__name__}: {str(e).strip().splitlines()[0][:160] if str(e).strip() else ''}"
    onnx.save(proto, str(path))
    feeds = _feeds(specs, sizes[0], axes, seed, model)
    names = [s.name for s in specs]
    ref = model([tf.constant(feeds[n]) for n in names] if len(names) > 1 else tf.constant(feeds[names[0]]),
                training=False)
    refs = [r.numpy() for r in (ref if isinstance(ref, (list, tuple)) else [ref])]
    why = corpora.check_and_record(path, feeds, refs, tol=2e-3)
    if why:
        return None, why
    return corpora.model_entry(path, "tf2onnx", vers, name.rsplit("_", 2)[0], kind, axes, sizes, seed=seed), None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE / "tf2onnx_corpus")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--per-family", type=int, default=2, help="random configurations per family")
    ap.add_argument("--force", action="store_true", help="export again models whose files exist")
    ap.add_argument("--families", default=",".join(FAMILIES), help="comma-separated subset of the families")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    vers = corpora.versions("tensorflow-cpu", "tensorflow", "tf_keras", "tf2onnx", "onnx", "onnxruntime")
    vers = {k: v for k, v in vers.items() if v != "absent"}
    rng = random.Random(args.seed)
    entries: dict[str, Any] = {}
    failed = []
    for family, build in FAMILIES.items():
        for i in range(args.per_family):
            # draw every configuration whether or not it is selected: a subset names the same models
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
