"""The differential check over the hostile-input corpus (issue 11): onnxruntime loads a model if and
only if ``shapeflow lint`` finds no error in it (and does not reject it).

Every row of the contract suite whose input is a regular model file is built and given to both.
Where they disagree on purpose, the row is listed in ``KNOWN`` with the reason; a listed row that
starts to agree fails too, so the list cannot go stale.
"""

from __future__ import annotations

import importlib
import os
import stat
from pathlib import Path

import pytest

from shapeflow.drivers.api import lint

from .harness import Row

ort = pytest.importorskip("onnxruntime")

MODULES = ("test_rows_files", "test_rows_structure", "test_rows_axes", "test_rows_graphs", "test_rows_external",
           "test_rows_ort_refused")
MAX_SIZE = 64 << 20  # the 2.5 GiB rows test memory, not this

# row id -> why onnxruntime and shapeflow disagree there
KNOWN = {
    # onnxruntime refuses, shapeflow does not call it an error
    "13-custom-domain-squeeze": "a custom operator: loading it needs a runtime that implements it",
    "26-axes-external": "onnxruntime's shape inference cannot read axes kept in external data; "
                        "shapeflow reports them as not constant (SF110, info)",
    "40-unknown-key": "onnxruntime refuses an unknown external-data key; shapeflow warns (SF001 warning)",
    "42-sparse-huge-dims": "onnxruntime densifies sparse initializers at load (4 TiB here); shapeflow "
                           "never densifies them",
    # shapeflow reports an error (or rejects), onnxruntime loads
    "10-no-ai-onnx-opset": "onnxruntime assumes a default opset; shapeflow refuses to guess (SF001)",
    "12-custom-domain-opset-0": "opset 0 is invalid; onnxruntime ignores a custom domain it never uses",
    "21-axes-rank-2": "onnxruntime fails when the node runs, not at load (SF109)",
    "28-negative-dim": "a declared dim of -1 is invalid ONNX; onnxruntime ignores declared shapes (SF114)",
    "29-rank-100001": "a resource limit of shapeflow (SF006), not a property of the model",
    "30-unsqueeze-100000-axes": "a resource limit of shapeflow (SF006), not a property of the model",
    "30-unsqueeze-100000-axes-attribute": "a resource limit of shapeflow (SF006), not a property of the model",
    "33-value-info-contradicts": "onnxruntime ignores a value_info that contradicts the data flow (SF112)",
}


def _rows() -> list[tuple[str, Row]]:
    out = []
    for name in MODULES:
        module = importlib.import_module(f"{__package__}.{name}")
        out.extend((name, row) for row in getattr(module, "ROWS", []))
    return out


def _ort_loads(path: str) -> tuple[bool, str]:
    so = ort.SessionOptions()
    so.log_severity_level = 4
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own exception types for every refusal
        return False, str(exc).splitlines()[0][:300]
    return True, ""


ROWS = _rows()


@pytest.mark.parametrize("module, row", ROWS, ids=[row.id for _, row in ROWS])
def test_onnxruntime_loads_iff_no_error(module: str, row: Row, tmp_path: Path) -> None:
    setup = row.build(tmp_path)
    path = os.path.join(setup.cwd or str(tmp_path), setup.model)
    try:
        st = os.stat(path)
    except OSError:
        pytest.skip("no model file (a dangling link or a path that is not there)")
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_SIZE:
        pytest.skip("not a regular model file of a testable size")
    loads, why = _ort_loads(path)
    (result,) = lint([path])
    errors = sorted({d.code for d in result.diagnostics if d.severity.value == "error"})
    clean = result.exit_code == 0 and not errors
    if row.id in KNOWN:
        assert loads != clean, f"{row.id} now agrees ({'loads' if loads else why}): remove it from KNOWN"
        return
    assert loads == clean, (f"{row.id}: onnxruntime {'loads it' if loads else 'refuses it: ' + why}; "
                            f"shapeflow exit {result.exit_code}, errors {errors}")
