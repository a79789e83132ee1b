"""The differential shape-arithmetic fuzzer (fuzz/shapearith.py) for a fixed seed and a fixed number
of models: reproducible, about 30 s here. Every dim and value shapeflow states must match
onnxruntime at every binding where the model runs, and ``optimize`` must keep the outputs
bit-identical. A failure lists one line per finding (category, op, tensor, stated vs runtime,
binding) and the model text of the first finding of each category and op; the failing models are
saved under the test's temporary directory. Longer and random-seed runs: fuzz/README.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

import onnx
import pytest

pytest.importorskip("onnxruntime")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))
import shapearith

SEED = 1
MODELS = 500


def test_generator_is_deterministic_and_valid() -> None:
    for seed in (1, 2, 3, 1000003):
        a = shapearith.generate(seed).model
        b = shapearith.generate(seed).model
        assert a.SerializeToString() == b.SerializeToString()
        onnx.checker.check_model(a)
        assert 5 <= len(a.graph.node) <= 40


def test_bindings_cover_zero_one_two_three_and_large() -> None:
    for big in (37, 300):
        bs = shapearith.bindings_for(("batch", "seq"), big, 5)
        for sym in ("batch", "seq"):
            assert {0, 1, 2, 3, big} <= {b[sym] for b in bs}
        assert {"batch": 0, "seq": 0} in bs and {"batch": 1, "seq": 1} in bs


def test_shape_arithmetic_fuzz_fixed_seed(tmp_path: Path) -> None:
    logged: list[str] = []
    stats = shapearith.fuzz(SEED, models=MODELS, out_dir=str(tmp_path), log=logged.append)
    # the run must have checked something, or a broken harness would pass
    assert stats.models == MODELS
    assert stats.dims_checked > 1000 and stats.values_checked > 1000
    assert stats.bindings_run - stats.bindings_failed > 5 * MODELS
    if stats.findings:
        pytest.fail(f"{len(stats.findings)} findings ({stats.summary()}):\n" + "\n".join(logged),
                    pytrace=False)
