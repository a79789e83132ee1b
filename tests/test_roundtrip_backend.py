"""Every model in onnx's backend test data: a load/save round trip is byte-identical, and analysis
either succeeds or rejects the model with a ShapeflowError (never a crash)."""

from __future__ import annotations

import glob
import os
from pathlib import Path

import onnx.backend.test
import pytest

from shapeflow.drivers.analysis import analyze
from shapeflow.errors import ShapeflowError
from shapeflow.io import load_model, save_model

DATA = os.path.join(os.path.dirname(onnx.backend.test.__file__), "data")
MODELS = sorted(glob.glob(os.path.join(DATA, "**", "*.onnx"), recursive=True))


def test_backend_data_present() -> None:
    assert len(MODELS) > 100


@pytest.mark.parametrize("path", MODELS, ids=lambda p: os.path.relpath(p, DATA))
def test_round_trip_is_byte_identical(path: str, tmp_path: Path) -> None:
    loaded = load_model(path)
    out = tmp_path / "out.onnx"
    save_model(loaded.raw, out, input_path=path)
    assert out.read_bytes() == Path(path).read_bytes()
    # parsing and serialising again without an edit also gives the same bytes, which is what lets
    # in-place edits of the proto leave everything they did not touch as it was
    assert loaded.proto.SerializeToString() == loaded.raw
    try:
        analyze(loaded)
    except ShapeflowError:
        pass  # rejected with a one-line reason is fine; anything else fails the test
