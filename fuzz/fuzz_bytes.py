"""atheris harness: raw bytes -> load -> infer -> lint -> optimize, in memory.

    python fuzz/fuzz_bytes.py fuzz/corpus/bytes -max_total_time=60      (see fuzz/README.md)

Any exception other than ShapeflowError, or a broken invariant (fuzz/pipeline.py), is a crash:
libFuzzer writes the input to ``-artifact_prefix`` and exits non-zero. A hang is caught by
``-timeout``, a memory blow-up by ``-rss_limit_mb``.
"""

from __future__ import annotations

import os
import sys

import atheris

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

with atheris.instrument_imports(include=["shapeflow", "pipeline"]):
    import pipeline


def test_one_input(data: bytes) -> None:
    pipeline.run(data)


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
