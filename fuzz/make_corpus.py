"""(Re)build the seed corpus in fuzz/corpus/ deterministically.

    python fuzz/make_corpus.py

``bytes/``: serialized models for fuzz_bytes.py: valid and odd ones from graphgen, the project's
example models, and a few hostile files (empty, truncated, git-lfs pointer, deep nesting).
``graphs/``: random choice streams for fuzz_graphs.py (any bytes are a valid input there).
libFuzzer adds what it finds to a *copy* of these folders (fuzz/run_ci.sh); keep new crashers
as regression tests (tests/test_fuzz_regressions.py), not here.
"""

from __future__ import annotations

import hashlib
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import graphgen  # noqa: E402


class _Random:
    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    def int(self, lo: int, hi: int) -> int:
        return self.r.randint(lo, hi)

    def bool(self) -> bool:
        return self.r.random() < 0.5


def _put(folder: Path, data: bytes) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)


def main() -> None:
    out = HERE / "corpus"
    for sub in ("bytes", "graphs"):
        for f in (out / sub).glob("*"):
            f.unlink()
    for seed in range(40):
        _put(out / "bytes", graphgen.generate(_Random(seed), odd=seed % 2 == 1).SerializeToString())
    examples = HERE.parent / "examples"
    for f in sorted(examples.glob("*.onnx")):
        if f.stat().st_size <= 64 << 10:
            _put(out / "bytes", f.read_bytes())
    valid = graphgen.generate(_Random(1000)).SerializeToString()
    for data in (b"", valid[: len(valid) // 2], valid + valid,
                 b"version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 1\n"):
        _put(out / "bytes", data)
    rng = random.Random(7)
    for n in (16, 64, 256, 512, 1024, 2048, 4096):
        for _ in range(3):
            _put(out / "graphs", bytes(rng.getrandbits(8) for _ in range(n)))


if __name__ == "__main__":
    main()
