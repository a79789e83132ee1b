"""Precision and soundness in one check: what shapeflow states for a small model, against what
onnxruntime computes at bindings 0, 1, 2, 3 and a large value of every symbol (all combinations).

``stated`` asserts the dims a rule is meant to know (its text, ``"[b, s, 4, 16]"``), so a test
fails on code that knows less; ``check_model`` (fuzz/shapearith.py, the differential fuzzer's
oracle) fails on any stated dim or value the runtime contradicts and on an ``optimize`` that
changes an output.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import onnx
import onnx.parser
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))
import shapearith  # noqa: E402

from helpers import analyze_model  # noqa: E402
from shapeflow.dims import format_shape  # noqa: E402

INT64_MAX = 2**63 - 1
VALUES = (0, 1, 2, 3, 37)


def model(body: str, *, inputs: str, outputs: str, inits: str = "", opset: int = 18) -> onnx.ModelProto:
    ir = 8 if opset <= 18 else 10
    text = (f'<ir_version: {ir}, opset_import: ["" : {opset}]>\n'
            f"m ({inputs}) => ({outputs})\n" + (f"<{inits}>\n" if inits else "") + "{\n" + body + "\n}\n")
    m = onnx.parser.parse_model(text)
    onnx.checker.check_model(m)
    return m


def bindings(symbols: Sequence[str], values: Sequence[int] = VALUES) -> list[dict[str, int]]:
    return [dict(zip(symbols, vs)) for vs in itertools.product(values, repeat=len(symbols))]


def stated(m: onnx.ModelProto, assume: Sequence[str] = ()) -> dict[str, str]:
    """Every main-graph tensor's shape as shapeflow prints it."""
    a = analyze_model(m, assume=assume)
    return {name: format_shape(t.shape if t is not None else None) for name, t in a.inference.tensors[0].items()}


def check(runner: shapearith.Runner, m: onnx.ModelProto, symbols: Sequence[str],
          expect: Mapping[str, str] | None = None, values: Sequence[int] = VALUES,
          optimize: bool = True) -> None:
    """``expect``'s shapes are stated, and nothing stated is wrong at any binding that runs."""
    if expect:
        got = stated(m)
        wrong = {k: (got.get(k), v) for k, v in expect.items() if got.get(k) != v}
        assert not wrong, f"stated (got, want): {wrong}"
    bs = bindings(symbols, values)
    stats = shapearith.check_model(m, bs, runner, optimize_bindings=bs if optimize else [])
    assert stats.bindings_run > stats.bindings_failed, "the model fails in onnxruntime at every binding"
    if stats.findings:
        pytest.fail("\n".join(f.line() for f in stats.findings) + "\n" + shapearith._model_text(m), pytrace=False)
