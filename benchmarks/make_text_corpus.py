"""Export a corpus of small text transformers with dynamic batch and sequence axes.

Random small configurations (2 layers, hidden 64-128, vocab 1000, random weights) of Hugging Face
``transformers`` families: GPT-2, BERT, RoBERTa, DistilBERT, ALBERT, ELECTRA, Llama, Mistral, Qwen2,
Phi, GPT-Neo, the T5 encoder and the BART encoder. Each takes ``input_ids`` and ``attention_mask``
(int64, ``[batch, seq]``) and returns its last hidden state. Each is exported with the TorchScript
exporter (``dynamo=False``, opset 14-17, chosen per model) and with the dynamo exporter (its default
opset) where it works; the families or exporters that fail are listed at the end, not fatal.

The files go to ``benchmarks/text_corpus/`` (git-ignored): ``<name>.onnx`` (weights inline) and
``<name>.inputs.npz`` (batch 1, sequence 5), plus ``manifest.json``. Existing files are kept unless
``--force``. Needs ``torch``, ``transformers`` and, for the dynamo exporter, ``onnxscript``::

    python benchmarks/make_text_corpus.py [--out DIR] [--seed N] [--force] [--families gpt2,bert]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

HERE = Path(__file__).resolve().parent
VOCAB = 1000
LAYERS = 2


def _dims(rng: random.Random) -> tuple[int, int]:
    """(hidden, heads): hidden 64-128 in steps that every head count divides."""
    heads = rng.choice([2, 4])
    return rng.choice([64, 96, 128]), heads


# family -> builder(rng) -> (Hugging Face model, whether it reads attention_mask)
def _gpt2(rng: random.Random) -> nn.Module:
    from transformers import GPT2Config, GPT2Model

    h, n = _dims(rng)
    return GPT2Model(GPT2Config(n_embd=h, n_layer=LAYERS, n_head=n, vocab_size=VOCAB, n_positions=256))


def _bert(rng: random.Random) -> nn.Module:
    from transformers import BertConfig, BertModel

    h, n = _dims(rng)
    return BertModel(BertConfig(hidden_size=h, num_hidden_layers=LAYERS, num_attention_heads=n,
                                intermediate_size=2 * h, vocab_size=VOCAB, max_position_embeddings=256),
                     add_pooling_layer=False)


def _roberta(rng: random.Random) -> nn.Module:
    from transformers import RobertaConfig, RobertaModel

    h, n = _dims(rng)
    return RobertaModel(RobertaConfig(hidden_size=h, num_hidden_layers=LAYERS, num_attention_heads=n,
                                      intermediate_size=2 * h, vocab_size=VOCAB, max_position_embeddings=258),
                        add_pooling_layer=False)


def _distilbert(rng: random.Random) -> nn.Module:
    from transformers import DistilBertConfig, DistilBertModel

    h, n = _dims(rng)
    return DistilBertModel(DistilBertConfig(dim=h, n_layers=LAYERS, n_heads=n, hidden_dim=2 * h, vocab_size=VOCAB,
                                            max_position_embeddings=256))


def _albert(rng: random.Random) -> nn.Module:
    from transformers import AlbertConfig, AlbertModel

    h, n = _dims(rng)
    return AlbertModel(AlbertConfig(embedding_size=32, hidden_size=h, num_hidden_layers=LAYERS, num_attention_heads=n,
                                    intermediate_size=2 * h, vocab_size=VOCAB, max_position_embeddings=256),
                       add_pooling_layer=False)


def _electra(rng: random.Random) -> nn.Module:
    from transformers import ElectraConfig, ElectraModel

    h, n = _dims(rng)
    return ElectraModel(ElectraConfig(embedding_size=32, hidden_size=h, num_hidden_layers=LAYERS,
                                      num_attention_heads=n, intermediate_size=2 * h, vocab_size=VOCAB,
                                      max_position_embeddings=256))


def _llama_like(config_cls: Any, model_cls: Any, rng: random.Random, **extra: Any) -> nn.Module:
    h, n = _dims(rng)
    return model_cls(config_cls(hidden_size=h, intermediate_size=2 * h, num_hidden_layers=LAYERS,
                                num_attention_heads=n, num_key_value_heads=max(1, n // 2), vocab_size=VOCAB,
                                max_position_embeddings=256, **extra))


def _llama(rng: random.Random) -> nn.Module:
    from transformers import LlamaConfig, LlamaModel

    return _llama_like(LlamaConfig, LlamaModel, rng)


def _mistral(rng: random.Random) -> nn.Module:
    from transformers import MistralConfig, MistralModel

    return _llama_like(MistralConfig, MistralModel, rng, sliding_window=None)


def _qwen2(rng: random.Random) -> nn.Module:
    from transformers import Qwen2Config, Qwen2Model

    return _llama_like(Qwen2Config, Qwen2Model, rng)


def _phi(rng: random.Random) -> nn.Module:
    from transformers import PhiConfig, PhiModel

    return _llama_like(PhiConfig, PhiModel, rng)


def _gpt_neo(rng: random.Random) -> nn.Module:
    from transformers import GPTNeoConfig, GPTNeoModel

    h, n = _dims(rng)
    return GPTNeoModel(GPTNeoConfig(hidden_size=h, num_layers=LAYERS, num_heads=n, vocab_size=VOCAB,
                                    attention_types=[[["global", "local"], 1]], window_size=16,
                                    max_position_embeddings=256))


def _t5_encoder(rng: random.Random) -> nn.Module:
    from transformers import T5Config, T5EncoderModel

    h, n = _dims(rng)
    return T5EncoderModel(T5Config(d_model=h, d_kv=h // n, d_ff=2 * h, num_layers=LAYERS, num_heads=n,
                                   vocab_size=VOCAB))


def _bart_encoder(rng: random.Random) -> nn.Module:
    from transformers import BartConfig, BartModel

    h, n = _dims(rng)
    model = BartModel(BartConfig(d_model=h, encoder_layers=LAYERS, decoder_layers=LAYERS, encoder_attention_heads=n,
                                 decoder_attention_heads=n, encoder_ffn_dim=2 * h, decoder_ffn_dim=2 * h,
                                 vocab_size=VOCAB, max_position_embeddings=256))
    return model.get_encoder()


FAMILIES: dict[str, Callable[[random.Random], nn.Module]] = {
    "gpt2": _gpt2, "bert": _bert, "roberta": _roberta, "distilbert": _distilbert, "albert": _albert,
    "electra": _electra, "llama": _llama, "mistral": _mistral, "qwen2": _qwen2, "phi": _phi,
    "gpt_neo": _gpt_neo, "t5_encoder": _t5_encoder, "bart_encoder": _bart_encoder,
}


class LastHidden(nn.Module):
    """(input_ids, attention_mask) -> last hidden state, without caches or dict outputs."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        kw: dict[str, Any] = {"input_ids": input_ids, "attention_mask": attention_mask, "return_dict": False}
        if "use_cache" in getattr(self.inner.forward, "__code__").co_varnames:
            kw["use_cache"] = False
        return self.inner(**kw)[0]


def _inputs(batch: int, seq: int, seed: int) -> dict[str, np.ndarray]:
    gen = np.random.default_rng(seed)
    ids = gen.integers(1, VOCAB, size=(batch, seq), dtype=np.int64)
    return {"input_ids": ids, "attention_mask": np.ones((batch, seq), dtype=np.int64)}


def export_one(model: nn.Module, path: Path, exporter: str, opset: int | None) -> str | None:
    """Export ``model`` to ``path``; None on success, else a one-line reason."""
    example = _inputs(2, 8, 0)
    args = tuple(torch.from_numpy(example[k]) for k in ("input_ids", "attention_mask"))
    names = ["input_ids", "attention_mask"]
    tmp = path.with_suffix(".tmp.onnx")
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        try:
            if exporter == "torchscript":
                axes = {k: {0: "batch", 1: "seq"} for k in names}
                torch.onnx.export(model, args, str(tmp), input_names=names, output_names=["last_hidden_state"],
                                  opset_version=opset, dynamic_axes=axes, dynamo=False)
            else:
                batch, seq = torch.export.Dim("batch", min=1, max=64), torch.export.Dim("seq", min=1, max=128)
                shapes = {k: {0: batch, 1: seq} for k in names}
                prog = torch.onnx.export(model, args, input_names=names, output_names=["last_hidden_state"],
                                         dynamic_shapes=shapes, dynamo=True, optimize=True, external_data=False)
                prog.save(str(tmp), external_data=False)
        except Exception as e:  # an exporter that refuses a family is reported, not fatal
            tmp.unlink(missing_ok=True)
            return f"{type(e).__name__}: {str(e).strip().splitlines()[0][:140] if str(e).strip() else ''}"
    return _check_and_move(model, tmp, path, args)


def _check_and_move(model: nn.Module, tmp: Path, path: Path, args: tuple[torch.Tensor, ...]) -> str | None:
    """Keep the export only if onnxruntime runs it at batch 1, seq 5 and matches torch within 1e-4."""
    import onnx
    import onnxruntime as ort

    try:
        proto = onnx.load(str(tmp))
        if any(t.data_location == onnx.TensorProto.EXTERNAL for t in proto.graph.initializer):
            raise ValueError("external data")
        onnx.save(proto, str(tmp))  # one file, whatever the exporter wrote beside it
        feeds = _inputs(1, 5, 1)
        sess = ort.InferenceSession(str(tmp), providers=["CPUExecutionProvider"])
        wanted = {i.name for i in sess.get_inputs()}
        got = sess.run(None, {k: v for k, v in feeds.items() if k in wanted})[0]
        with torch.no_grad():
            ref = model(*(torch.from_numpy(feeds[k]) for k in ("input_ids", "attention_mask"))).numpy()
        if got.shape != ref.shape or not np.allclose(got, ref, atol=1e-4, rtol=1e-3):
            raise ValueError(f"onnxruntime differs from torch: shapes {got.shape} {ref.shape}")
    except Exception as e:
        tmp.unlink(missing_ok=True)
        return f"check failed: {type(e).__name__}: {str(e)[:140]}"
    tmp.replace(path)
    np.savez(path.with_suffix(".inputs.npz"), **{k: v for k, v in feeds.items() if k in wanted})
    return None


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for d in ("torch", "transformers", "onnxscript", "onnx", "onnxruntime"):
        try:
            out[d] = version(d)
        except PackageNotFoundError:
            pass
    return out


VERSIONS = _versions()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE / "text_corpus")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--force", action="store_true", help="export again models whose files exist")
    ap.add_argument("--families", default=",".join(FAMILIES), help="comma-separated subset of the families")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    manifest_path = args.out / "manifest.json"
    manifest: dict[str, Any] = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    failed: list[str] = []
    rng = random.Random(args.seed)
    for family, build in FAMILIES.items():
        # draw every family's seed and opset whether or not it is selected: a subset names the same models
        seed, opset = rng.randrange(2**31), rng.choice([14, 15, 16, 17])
        if family not in args.families.split(","):
            continue
        torch.manual_seed(seed)
        try:
            model = LastHidden(build(random.Random(seed))).eval()
        except Exception as e:
            failed.append(f"{family}: build failed: {type(e).__name__}: {str(e)[:140]}")
            continue
        for exporter, op in (("torchscript", opset), ("dynamo", None)):
            name = f"{family}_{exporter}_op{op}" if op else f"{family}_{exporter}"
            path = args.out / f"{name}.onnx"
            if path.exists() and not args.force:
                print(f"  {path.name} (kept)", file=sys.stderr)
                continue
            why = export_one(model, path, exporter, op)
            if why:
                failed.append(f"{name}: {why}")
                print(f"  {name}: FAILED {why}", file=sys.stderr, flush=True)
                continue
            import onnx

            proto = onnx.load(str(path), load_external_data=False)
            manifest[path.name] = {"family": family, "exporter": exporter, "kind": "text", "versions": VERSIONS,
                                   "dynamic_axes": {k: {"0": "batch", "1": "seq"} for k in ("input_ids", "attention_mask")},
                                   "opset": next(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")),
                                   "nodes": len(proto.graph.node)}
            print(f"  {path.name}: {len(proto.graph.node)} nodes", file=sys.stderr, flush=True)
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True))
    print(f"{len(list(args.out.glob('*.onnx')))} models in {args.out}", file=sys.stderr)
    if failed:
        print("skipped:\n  " + "\n  ".join(failed), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
