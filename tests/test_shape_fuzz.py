"""The differential shape-arithmetic fuzzer (fuzz/shapearith.py) for a fixed seed and a fixed number
of models: reproducible, a few seconds. Every dim and value shapeflow states must match
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
MODELS = 200  # (.ci/run runs the same fuzzer from this seed for two minutes: fuzz/README.md)


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


def test_independent_bindings_give_each_input_its_own_size() -> None:
    import onnx.parser

    m = onnx.parser.parse_model('<ir_version: 8, opset_import: ["" : 17]>\n'
                                "g (float[b, s] x0, float[b, 3] x1) => (float[b, s] y)\n{ y = Add(x0, x0) }")
    bs = shapearith.independent_for(m, 37)
    assert {"b": 1, "s": 1, "b@x1": 37} in bs and {"b": 37, "s": 37, "b@x1": 1} in bs
    feeds = shapearith.make_feeds(m, bs[0], 0)
    assert feeds is not None and feeds["x0"].shape == (1, 1) and feeds["x1"].shape == (37, 3)
    single = onnx.parser.parse_model('<ir_version: 8, opset_import: ["" : 17]>\n'
                                     "g (float[b, s] x0) => (float[b, s] y)\n{ y = Add(x0, x0) }")
    assert shapearith.independent_for(single, 37) == []


def test_shape_arithmetic_fuzz_fixed_seed(tmp_path: Path, ort_runner) -> None:
    logged: list[str] = []
    stats = shapearith.fuzz(SEED, models=MODELS, out_dir=str(tmp_path), log=logged.append, runner=ort_runner)
    # the run must have checked something, or a broken harness would pass
    assert stats.models == MODELS
    assert stats.dims_checked > 1000 and stats.values_checked > 1000
    assert stats.bindings_run - stats.bindings_failed > 5 * MODELS
    if stats.findings:
        pytest.fail(f"{len(stats.findings)} findings ({stats.summary()}):\n" + "\n".join(logged),
                    pytrace=False)


# -- the oracle itself catches what it is for (so a green fuzz run means something) -----------------

_SLICE = """<ir_version: 8, opset_import: ["" : 17]>
g (float[seq] x) => (int64[1] y, float[?] z)
<int64[1] s = {-3}, int64[1] e = {9223372036854775807}>
{
  z = Slice(x, s, e)
  y = Shape(z)
}
"""


def _bindings() -> list[dict[str, int]]:
    return [{"seq": s} for s in (0, 1, 2, 5)]


def test_oracle_reports_a_wrong_dim_and_value(monkeypatch: pytest.MonkeyPatch, ort_runner) -> None:
    import onnx.parser

    from shapeflow.drivers import api
    from shapeflow.tensorinfo import TensorInfo

    real = api.infer

    def lying_infer(path, **kw):  # type: ignore[no-untyped-def]
        a = real(path, **kw)
        table = a.inference.tensors[0]
        table["z"] = TensorInfo(1, (3,), None)  # as if x[-3:] were always 3 long
        table["y"] = TensorInfo(7, (1,), (3,))
        return a

    monkeypatch.setattr(api, "infer", lying_infer)
    stats = shapearith.check_model(onnx.parser.parse_model(_SLICE), _bindings(), ort_runner)
    found = {(f.category, f.tensor) for f in stats.findings}
    assert ("unsound-dim", "z") in found
    # y is computed from z, which is already wrong: only the first wrong tensor of a chain is reported
    assert ("unsound-value", "y") not in found
    f = next(f for f in stats.findings if f.tensor == "z")
    assert f.binding["seq"] in (0, 1, 2) and "runtime" in f.line() and "Slice" in f.line()


def test_oracle_reports_an_optimize_that_changes_a_result(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path, ort_runner) -> None:
    import onnx.parser

    from shapeflow.drivers import api

    real = api.optimize

    def folding_optimize(path, output=None, **kw):  # type: ignore[no-untyped-def]
        result = real(path, output, **kw)
        m = onnx.parser.parse_model(_SLICE.replace("y = Shape(z)", "y = Constant<value_ints=[3]>()"))
        onnx.save(m, output)
        result.changed = True
        return result

    monkeypatch.setattr(api, "optimize", folding_optimize)
    stats = shapearith.check_model(onnx.parser.parse_model(_SLICE), _bindings(), ort_runner)
    assert any(f.category == "optimize-mismatch" and f.tensor == "y" for f in stats.findings)


def test_worker_survives_a_crashing_run() -> None:
    """INT64_MIN / -1 kills onnxruntime (SIGFPE): the run fails, the next one works."""
    import numpy as np
    import onnx.parser

    m = onnx.parser.parse_model('<ir_version: 8, opset_import: ["" : 17]>\n'
                                "g (int64[1] a, int64[1] b) => (int64[1] y)\n{ y = Div(a, b) }")
    with shapearith.Runner() as r:
        status, _ = r.run(m.SerializeToString(), {"a": np.array([-2**63]), "b": np.array([-1])}, ["y"])
        assert status == "err"
        status, res = r.run(m.SerializeToString(), {"a": np.array([7]), "b": np.array([-2])}, ["y"])
        assert status == "ok" and res[0].tolist() == [-3]  # truncation toward zero
