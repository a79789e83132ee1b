"""Export a corpus of small vision and audio models with dynamic batch and spatial/sequence axes.

Random small configurations of five families built from ``torch.nn`` (no torchvision/torchaudio):
a conv stem (Conv/BN/ReLU/MaxPool), a patch-embedding ViT, a wav2vec2-like 1-D conv feature
encoder with a positional conv, a ResNet-ish block with a strided shortcut and global pooling, and
a Whisper-like audio encoder (two Conv1d, sliced positional embedding, attention) and a UNet step
(strided conv down, ConvTranspose up, interpolated to the skip's size, concatenated, reflect-padded). Each is exported
with the TorchScript exporter at opsets 13 and 17 and with the dynamo exporter at opset 18 where
it works. The files go to ``benchmarks/vision_corpus/`` (git-ignored), with ``<name>.inputs.npz`` (the first size) and ``manifest.json``
naming each model's input and two input sizes for the runtime check.

Needs ``torch`` (``pip install torch``) and, for the dynamo exporter, ``onnxscript``::

    python benchmarks/make_vision_corpus.py [--out DIR] [--seed N] [--per-family N]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import random
import sys
import warnings
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

HERE = Path(__file__).resolve().parent


class ConvStem(nn.Module):
    def __init__(self, rng: random.Random) -> None:
        super().__init__()
        c = rng.choice([8, 16])
        k = rng.choice([3, 5, 7])
        self.conv = nn.Conv2d(3, c, kernel_size=k, stride=rng.choice([1, 2]), padding=rng.choice([0, k // 2]),
                              bias=False)
        self.bn = nn.BatchNorm2d(c)
        pk = rng.choice([2, 3])
        self.pool = nn.MaxPool2d(kernel_size=pk, stride=rng.choice([1, 2]), padding=rng.choice([0, pk // 2]),
                                 ceil_mode=rng.choice([False, True]))
        self.conv2 = nn.Conv2d(c, 2 * c, kernel_size=3, stride=rng.choice([1, 2]), padding=1,
                               dilation=rng.choice([1, 2]))
        self.avg = nn.AvgPool2d(kernel_size=2, stride=2, ceil_mode=rng.choice([False, True]),
                                count_include_pad=rng.choice([False, True]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(F.relu(self.bn(self.conv(x))))
        return self.avg(F.relu(self.conv2(x)))


class PatchViT(nn.Module):
    def __init__(self, rng: random.Random) -> None:
        super().__init__()
        self.p = rng.choice([2, 4])
        d = rng.choice([16, 32])
        self.heads = rng.choice([2, 4])
        self.embed = nn.Conv2d(3, d, kernel_size=self.p, stride=self.p)
        self.cls = nn.Parameter(torch.zeros(1, 1, d))
        self.norm = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.embed(x).flatten(2).transpose(1, 2)  # [b, (h/p)*(w/p), d]
        b, n, d = x.shape
        x = torch.cat([self.cls.expand(b, -1, -1), x], dim=1)
        q, k, v = self.qkv(self.norm(x)).chunk(3, dim=-1)
        hd = d // self.heads
        q, k, v = (t.reshape(b, n + 1, self.heads, hd).transpose(1, 2) for t in (q, k, v))
        a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(hd), dim=-1) @ v
        x = x + self.proj(a.transpose(1, 2).reshape(b, n + 1, d))
        return x + self.mlp(self.norm(x))


class Wav2Vec2Encoder(nn.Module):
    def __init__(self, rng: random.Random) -> None:
        super().__init__()
        c = rng.choice([8, 16])
        layers = [(10, 5)] + [(3, 2)] * rng.choice([1, 2, 3]) + [(2, 2)] * rng.choice([1, 2])
        convs = []
        cin = 1
        for k, s in layers:
            convs.append(nn.Conv1d(cin, c, kernel_size=k, stride=s, bias=False))
            cin = c
        self.convs = nn.ModuleList(convs)
        self.gn = nn.GroupNorm(c, c)
        self.norm = nn.LayerNorm(c)
        self.proj = nn.Linear(c, 2 * c)
        kpos = rng.choice([4, 8])
        self.pos = nn.Conv1d(2 * c, 2 * c, kernel_size=kpos, padding=kpos // 2, groups=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, conv in enumerate(self.convs):
            x = conv(x)
            x = F.gelu(self.gn(x) if i == 0 else x)
        x = self.proj(self.norm(x.transpose(1, 2)))  # [b, t, 2c]
        p = self.pos(x.transpose(1, 2))
        p = p[:, :, :-1]  # the even kernel's extra frame, as wav2vec2 removes it
        return x + F.gelu(p).transpose(1, 2)


class ResBlock(nn.Module):
    def __init__(self, rng: random.Random) -> None:
        super().__init__()
        c = rng.choice([8, 16])
        self.stem = nn.Conv2d(3, c, 3, padding=1)
        self.c1 = nn.Conv2d(c, 2 * c, 3, stride=2, padding=1, bias=False)
        self.b1 = nn.BatchNorm2d(2 * c)
        self.c2 = nn.Conv2d(2 * c, 2 * c, 3, padding=1, bias=False)
        self.b2 = nn.BatchNorm2d(2 * c)
        self.short = nn.Conv2d(c, 2 * c, 1, stride=2, bias=False)
        self.pool = nn.MaxPool2d(2) if rng.random() < 0.5 else nn.Identity()
        self.fc = nn.Linear(2 * c, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.stem(x))
        y = F.relu(self.b1(self.c1(x)))
        y = F.relu(self.b2(self.c2(y)) + self.short(x))
        y = self.pool(y)
        feats = F.adaptive_avg_pool2d(y, 1).flatten(1)
        return self.fc(feats)


class WhisperEncoder(nn.Module):
    def __init__(self, rng: random.Random) -> None:
        super().__init__()
        mels = rng.choice([8, 16])
        d = rng.choice([16, 32])
        self.heads = rng.choice([2, 4])
        self.c1 = nn.Conv1d(mels, d, 3, padding=1)
        self.c2 = nn.Conv1d(d, d, 3, stride=2, padding=1)
        self.pos = nn.Parameter(torch.randn(1500, d) * 0.02)
        self.norm = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.gelu(self.c2(F.gelu(self.c1(x)))).transpose(1, 2)  # [b, t, d]
        b, t, d = x.shape
        x = x + self.pos[:t]
        q, k, v = self.qkv(self.norm(x)).chunk(3, dim=-1)
        hd = d // self.heads
        q, k, v = (z.reshape(b, t, self.heads, hd).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v)
        return x + self.out(a.transpose(1, 2).reshape(b, t, d))


class UNetStep(nn.Module):
    """Down (strided conv), up (ConvTranspose), resized to the skip's size, concatenated, padded."""

    def __init__(self, rng: random.Random) -> None:
        super().__init__()
        c = rng.choice([4, 8])
        self.inp = nn.Conv2d(3, c, 3, padding=1)
        self.down = nn.Conv2d(c, 2 * c, 3, stride=2, padding=1)
        self.up = nn.ConvTranspose2d(2 * c, c, kernel_size=2, stride=2)
        self.mode = rng.choice(["nearest", "bilinear"])
        self.out = nn.Conv2d(2 * c, 1, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skip = F.relu(self.inp(x))
        y = self.up(F.relu(self.down(skip)))
        if self.mode == "nearest":
            y = F.interpolate(y, size=skip.shape[2:], mode="nearest")
        else:
            y = F.interpolate(y, size=skip.shape[2:], mode="bilinear", align_corners=False)
        y = torch.cat([y, skip], dim=1)
        return self.out(F.pad(y, (1, 1, 1, 1), mode="reflect"))


# family -> (builder, input channels/mels of the model, input axes, runtime sizes: two ordinary ones,
# then a small one where the windows overhang, which is where floor and the runtime's truncation differ)
FAMILIES = {
    "conv_stem": (ConvStem, lambda m: [3], ("batch", "height", "width"),
                  ({"batch": 1, "height": 33, "width": 47}, {"batch": 2, "height": 64, "width": 61},
                   {"batch": 1, "height": 1, "width": 2})),
    "vit_patch": (PatchViT, lambda m: [3], ("batch", "height", "width"),
                  ({"batch": 1, "height": 8, "width": 12}, {"batch": 3, "height": 16, "width": 20},
                   {"batch": 1, "height": 4, "width": 5})),
    "wav2vec2": (Wav2Vec2Encoder, lambda m: [1], ("batch", "samples"),
                 ({"batch": 1, "samples": 400}, {"batch": 2, "samples": 1203}, {"batch": 1, "samples": 401})),
    "resblock": (ResBlock, lambda m: [3], ("batch", "height", "width"),
                 ({"batch": 1, "height": 9, "width": 14}, {"batch": 2, "height": 32, "width": 31},
                  {"batch": 1, "height": 2, "width": 3})),
    "unet": (UNetStep, lambda m: [3], ("batch", "height", "width"),
             ({"batch": 1, "height": 9, "width": 14}, {"batch": 2, "height": 32, "width": 31},
              {"batch": 1, "height": 2, "width": 3})),
    "whisper": (WhisperEncoder, lambda m: [m.c1.in_channels], ("batch", "frames"),
                ({"batch": 1, "frames": 20}, {"batch": 2, "frames": 61}, {"batch": 1, "frames": 1})),
}


def _example(name: str, model: nn.Module, sizes: dict) -> torch.Tensor:
    chans = FAMILIES[name][1](model)
    axes = FAMILIES[name][2]
    dims = [sizes[axes[0]], *chans, *(sizes[a] for a in axes[1:])]
    return torch.randn(*dims)


def export_one(name: str, model: nn.Module, path: Path, exporter: str, opset: int) -> bool:
    axes = FAMILIES[name][2]
    sizes = FAMILIES[name][3][1]
    x = _example(name, model, sizes)
    dyn = {0: axes[0], **{2 + i: a for i, a in enumerate(axes[1:])}}
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        try:
            if exporter == "torchscript":
                torch.onnx.export(model, (x,), str(path), input_names=["x"], output_names=["y"], opset_version=opset,
                                  dynamic_axes={"x": dyn}, dynamo=False)
            else:
                dims = {i: torch.export.Dim(a, min=_min_size(name, a), max=4096 if a != "samples" else 100_000)
                        for i, a in dyn.items()}
                prog = torch.onnx.export(model, (x,), input_names=["x"], output_names=["y"], opset_version=opset,
                                         dynamic_shapes={"x": dims}, dynamo=True, optimize=True)
                prog.save(str(path))
        except Exception as e:  # an exporter that refuses a family is reported, not fatal
            print(f"  {path.name}: {exporter} export failed: {type(e).__name__}: {str(e)[:120]}", file=sys.stderr)
            return False
    return True


def _min_size(name: str, axis: str) -> int:
    return {"samples": 400, "frames": 2, "height": 8, "width": 8}.get(axis, 1) if axis != "batch" else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE / "vision_corpus")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--per-family", type=int, default=4, help="random configurations per family")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    manifest = {}
    rng = random.Random(args.seed)
    torch.manual_seed(args.seed)
    from importlib.metadata import version

    versions = {d: version(d) for d in ("torch", "onnxscript", "onnx", "onnxruntime")}
    for name, (cls, _chans, axes, sizes) in FAMILIES.items():
        for i in range(args.per_family):
            model = cls(random.Random(rng.randrange(2**31))).eval()
            for exporter, opset in (("torchscript", 13), ("torchscript", 17), ("dynamo", 18)):
                fname = f"{name}_{i}_{exporter}_op{opset}.onnx"
                if export_one(name, model, args.out / fname, exporter, opset):
                    chans = FAMILIES[name][1](model)
                    manifest[fname] = {"family": name, "exporter": exporter, "opset": opset, "axes": list(axes),
                                       "channels": chans, "sizes": list(sizes), "versions": versions,
                                       "kind": "audio" if name in ("wav2vec2", "whisper") else "vision",
                                       "dynamic_axes": {"x": {"0": axes[0], **{str(2 + i): a
                                                                              for i, a in enumerate(axes[1:])}}}}
                    x = _example(name, model, sizes[0]).numpy()
                    np.savez(args.out / fname.replace(".onnx", ".inputs.npz"), x=x)
                    print(f"  {fname}", file=sys.stderr)
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    print(f"{len(manifest)} models in {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
