"""Export a corpus of small random-weight Flax (nnx) models through jax2onnx, with symbolic batch
and sequence/spatial axes.

Families (two random configurations each, opset drawn from 17, 21, 23): an MLP; a CNN (NHWC
convolutions with SAME padding and strides, average pooling, a dense head on the spatial max: jax2onnx 0.17.1 exports a mean over symbolic axes
with wrong numbers; jax2onnx writes its
output dims as expressions such as ``-floordiv(-H, 2)``); self-attention (``nnx.MultiHeadAttention``
with LayerNorm); a token encoder (``nnx.Embed`` + attention + MLP); a strided 1-D conv audio
encoder; a GRU written with ``jax.lax.scan``. Inputs are symbolic in ``B`` and the other
dynamic axes (``S``, ``H``, ``W``, ``T``).

The files go to ``benchmarks/jax_corpus/`` (git-ignored): ``<name>.onnx``, ``<name>.inputs.npz``
(batch 1) and ``manifest.json`` (see ``corpora.py``). Each export is kept only if onnxruntime
matches JAX on the batch-1 inputs. Needs ``jax``, ``flax``, ``jax2onnx`` and ``onnxruntime`` in a
venv of their own::

    /work/venvs/jax/bin/python benchmarks/make_jax_corpus.py [--out DIR] [--seed N] [--force] [--families a,b]
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

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpora  # noqa: E402

VOCAB = 500
TEXT_SIZES = [{"batch": 1, "seq": 5}, {"batch": 2, "seq": 11}]
FLAT_SIZES = [{"batch": 1}, {"batch": 3}]
VISION_SIZES = [{"batch": 1, "height": 16, "width": 20}, {"batch": 2, "height": 23, "width": 17}]
AUDIO_SIZES = [{"batch": 1, "samples": 400}, {"batch": 2, "samples": 1203}]
FEATURE_SIZES = [{"batch": 1, "frames": 7}, {"batch": 2, "frames": 19}]
LETTER = {"batch": "B", "seq": "S", "height": "H", "width": "W", "samples": "T", "frames": "T"}

# (module, inputs: [(name, shape with logical axis names for the dynamic dims, dtype)], kind, sizes)
InputSpec = tuple[str, list[int | str], str]
Spec = tuple[Any, list[InputSpec], str, list[dict[str, int]]]


def _nnx() -> Any:
    from flax import nnx

    return nnx


def mlp(rng: random.Random) -> Spec:
    nnx = _nnx()
    import jax

    f, h = rng.choice([8, 16]), rng.choice([16, 32])

    class MLP(nnx.Module):
        def __init__(self, rngs: Any) -> None:
            self.l1, self.l2 = nnx.Linear(f, h, rngs=rngs), nnx.Linear(h, 4, rngs=rngs)

        def __call__(self, x: Any) -> Any:
            return self.l2(jax.nn.gelu(self.l1(x)))

    return MLP(nnx.Rngs(rng.randrange(2**31))), [("x", ["batch", f], "float32")], "mlp", FLAT_SIZES


def cnn(rng: random.Random) -> Spec:
    nnx = _nnx()
    import jax

    c = rng.choice([4, 8])

    class CNN(nnx.Module):
        def __init__(self, rngs: Any) -> None:
            self.c1 = nnx.Conv(3, c, kernel_size=(3, 3), strides=(2, 2), padding="SAME", rngs=rngs)
            self.c2 = nnx.Conv(c, 2 * c, kernel_size=(3, 3), padding="SAME", rngs=rngs)
            self.fc = nnx.Linear(2 * c, 10, rngs=rngs)

        def __call__(self, x: Any) -> Any:
            y = jax.nn.relu(self.c1(x))
            y = nnx.avg_pool(y, window_shape=(2, 2), strides=(2, 2), padding="VALID")
            y = jax.nn.relu(self.c2(y))
            return self.fc(y.max(axis=(1, 2)))

    return CNN(nnx.Rngs(rng.randrange(2**31))), [("image", ["batch", "height", "width", 3], "float32")], \
        "vision", VISION_SIZES


def attention(rng: random.Random) -> Spec:
    nnx = _nnx()
    d, heads = rng.choice([16, 32]), rng.choice([2, 4])

    class Block(nnx.Module):
        def __init__(self, rngs: Any) -> None:
            self.att = nnx.MultiHeadAttention(num_heads=heads, in_features=d, qkv_features=d, decode=False, rngs=rngs)
            self.norm = nnx.LayerNorm(d, rngs=rngs)

        def __call__(self, x: Any) -> Any:
            return self.norm(x + self.att(x))

    return Block(nnx.Rngs(rng.randrange(2**31))), [("x", ["batch", "seq", d], "float32")], "text", TEXT_SIZES


def token_encoder(rng: random.Random) -> Spec:
    nnx = _nnx()
    import jax

    d, heads = rng.choice([16, 32]), rng.choice([2, 4])

    class Encoder(nnx.Module):
        def __init__(self, rngs: Any) -> None:
            self.emb = nnx.Embed(VOCAB, d, rngs=rngs)
            self.att = nnx.MultiHeadAttention(num_heads=heads, in_features=d, qkv_features=d, decode=False, rngs=rngs)
            self.n1, self.n2 = nnx.LayerNorm(d, rngs=rngs), nnx.LayerNorm(d, rngs=rngs)
            self.f1, self.f2 = nnx.Linear(d, 2 * d, rngs=rngs), nnx.Linear(2 * d, d, rngs=rngs)

        def __call__(self, ids: Any) -> Any:
            x = self.emb(ids)
            x = self.n1(x + self.att(x))
            return self.n2(x + self.f2(jax.nn.gelu(self.f1(x))))

    return Encoder(nnx.Rngs(rng.randrange(2**31))), [("input_ids", ["batch", "seq"], "int32")], "text", TEXT_SIZES


def audio_conv1d(rng: random.Random) -> Spec:
    nnx = _nnx()
    import jax

    c = rng.choice([8, 16])
    more = rng.choice([1, 2])

    class Encoder(nnx.Module):
        def __init__(self, rngs: Any) -> None:
            self.c0 = nnx.Conv(1, c, kernel_size=(10,), strides=(5,), padding="VALID", rngs=rngs)
            self.cs = nnx.List([nnx.Conv(c, c, kernel_size=(3,), strides=(2,), padding="VALID", rngs=rngs)
                                for _ in range(more)]) if hasattr(nnx, "List") else \
                [nnx.Conv(c, c, kernel_size=(3,), strides=(2,), padding="VALID", rngs=rngs) for _ in range(more)]
            self.norm = nnx.LayerNorm(c, rngs=rngs)

        def __call__(self, x: Any) -> Any:
            y = jax.nn.gelu(self.c0(x))
            for conv in self.cs:
                y = jax.nn.gelu(conv(y))
            return self.norm(y)

    return Encoder(nnx.Rngs(rng.randrange(2**31))), [("waveform", ["batch", "samples", 1], "float32")], \
        "audio", AUDIO_SIZES


def rnn(rng: random.Random) -> Spec:
    """A GRU written with ``jax.lax.scan`` (``nnx.RNN`` runs its own scan transform, which jax2onnx's
    trace cannot enter), its zero first state shaped by the runtime batch."""
    nnx = _nnx()
    import jax
    import jax.numpy as jnp

    f, h = rng.choice([8, 13]), rng.choice([16, 32])

    class GRU(nnx.Module):
        def __init__(self, rngs: Any) -> None:
            self.wx = nnx.Linear(f, 3 * h, rngs=rngs)
            self.wh = nnx.Linear(h, 3 * h, use_bias=False, rngs=rngs)
            self.out = nnx.Linear(h, 3, rngs=rngs)

        def __call__(self, x: Any) -> Any:
            xs = jnp.swapaxes(self.wx(x), 0, 1)  # [T, B, 3h]
            wh = self.wh.kernel.value

            def step(hid: Any, xt: Any) -> tuple[Any, Any]:
                r, z, n = jnp.split(xt, 3, axis=-1)
                hr, hz, hn = jnp.split(hid @ wh, 3, axis=-1)
                r, z = jax.nn.sigmoid(r + hr), jax.nn.sigmoid(z + hz)
                new = (1 - z) * jnp.tanh(n + r * hn) + z * hid
                return new, new

            last, ys = jax.lax.scan(step, jnp.zeros((x.shape[0], h), x.dtype), xs)
            return self.out(last) + self.out(jnp.swapaxes(ys, 0, 1)).max(axis=1)

    return GRU(nnx.Rngs(rng.randrange(2**31))), [("features", ["batch", "frames", f], "float32")], "rnn", \
        FEATURE_SIZES


FAMILIES: dict[str, Callable[[random.Random], Spec]] = {
    "mlp": mlp, "cnn": cnn, "attention": attention, "token_encoder": token_encoder,
    "audio_conv1d": audio_conv1d, "rnn": rnn,
}


def _feeds(inputs: list[InputSpec], sizes: dict[str, int], seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds = {}
    for name, shape, dtype in inputs:
        concrete = [sizes[d] if isinstance(d, str) else d for d in shape]
        if dtype == "int32":
            feeds[name] = rng.integers(1, VOCAB, size=concrete).astype(np.int32)
        else:
            feeds[name] = rng.standard_normal(concrete).astype(np.float32)
    return feeds


def export_one(name: str, build: Callable[[random.Random], Spec], seed: int, opset: int, out: Path,
               vers: dict[str, str]) -> tuple[dict[str, Any] | None, str | None]:
    import jax
    import jax.numpy as jnp
    import onnx
    from jax2onnx import to_onnx

    try:
        module, inputs, kind, sizes = build(random.Random(seed))
    except Exception as e:  # noqa: BLE001  # a family this Flax cannot build is reported, not fatal
        return None, f"build failed: {type(e).__name__}: {str(e)[:160]}"
    path = out / f"{name}.onnx"
    scope = jax.export.SymbolicScope()
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        try:
            # int inputs (token ids) need their dtype: a ShapeDtypeStruct with the symbolic shape
            specs = [jax.ShapeDtypeStruct(jax.export.symbolic_shape(
                ", ".join(LETTER[d] if isinstance(d, str) else str(d) for d in shape), scope=scope), jnp.dtype(dtype))
                for _, shape, dtype in inputs]
            proto = to_onnx(module, specs, model_name=name, opset=opset, input_names=[n for n, _, _ in inputs])
            onnx.save(proto, str(path))
        except Exception as e:  # noqa: BLE001
            msg = str(e).strip().splitlines()[0][:200] if str(e).strip() else ""
            return None, f"jax2onnx failed: {type(e).__name__}: {msg}"
    feeds = _feeds(inputs, sizes[0], seed)
    ref = module(*(jnp.asarray(feeds[n]) for n, _, _ in inputs))
    refs = [np.asarray(r) for r in (ref if isinstance(ref, (list, tuple)) else [ref])]
    why = corpora.check_and_record(path, feeds, refs, tol=2e-3)
    if why:
        return None, why
    axes = {n: {i: d for i, d in enumerate(shape) if isinstance(d, str)} for n, shape, _ in inputs}
    return corpora.model_entry(path, "jax2onnx", vers, name.rsplit("_", 2)[0], kind, axes, sizes, seed=seed), None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE / "jax_corpus")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--per-family", type=int, default=2, help="random configurations per family")
    ap.add_argument("--force", action="store_true", help="export again models whose files exist")
    ap.add_argument("--families", default=",".join(FAMILIES), help="comma-separated subset of the families")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    vers = corpora.versions("jax", "jaxlib", "flax", "jax2onnx", "onnx", "onnxruntime")
    rng = random.Random(args.seed)
    entries: dict[str, Any] = {}
    failed = []
    for family, build in FAMILIES.items():
        for i in range(args.per_family):
            seed, opset = rng.randrange(2**31), rng.choice([17, 21, 23])
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
