"""What keeps ``shapeflow infer`` from importing onnx: the shipped operator table and the fast
decoders stand in for onnx's registry and numpy, and must say exactly what those say."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnx.defs
import pytest
from onnx import TensorProto, helper, numpy_helper

from shapeflow import _schema_data, opsets, schema_table
from shapeflow._onnx import onnx as lazy_onnx
from shapeflow._onnx import onnx_dist_version_is
from shapeflow.drivers.analysis import _DTYPE_NAMES, dtype_name
from shapeflow.io import STORAGE_FIELDS
from shapeflow.ops.constants import flat_values, tensor_values

ROOT = Path(__file__).resolve().parent.parent
SAME_ONNX = onnx_dist_version_is(_schema_data.ONNX_VERSION)


def test_message_classes_are_onnx_own() -> None:
    for name in ("ModelProto", "GraphProto", "NodeProto", "TensorProto", "AttributeProto", "FunctionProto"):
        assert getattr(lazy_onnx, name) is getattr(onnx, name)
    assert lazy_onnx.IR_VERSION == onnx.IR_VERSION
    assert lazy_onnx.helper is onnx.helper  # anything else is onnx itself


@pytest.mark.skipif(not SAME_ONNX, reason="the table is for another onnx release; opsets asks onnx instead")
def test_operator_table_is_up_to_date() -> None:
    """Stale when onnx was upgraded: regenerate with ``python -m shapeflow.schema_table``."""
    assert schema_table.main(["--check"]) == 0
    assert _schema_data.MAX_OPSET == onnx.defs.onnx_opset_version()


def test_since_version_matches_onnx_registry() -> None:
    """Every operator at every opset (and beyond the last) resolves as onnx.defs.get_schema does."""
    for (domain, op), _ in opsets.operator_versions().items():
        for opset in range(1, opsets.MAX_KNOWN_OPSET + 3):
            try:
                want = int(onnx.defs.get_schema(op, opset, domain).since_version)
            except Exception:
                want = None
            assert opsets.since_version(domain, op, opset) == want, (domain, op, opset)
    assert opsets.since_version("", "NoSuchOp", 13) is None
    assert opsets.since_version("com.example", "Squeeze", 13) is None


def test_dtype_tables_match_onnx_helper() -> None:
    for dtype, name in _DTYPE_NAMES.items():
        assert helper.tensor_dtype_to_np_dtype(dtype).name == name
    for dtype, field in STORAGE_FIELDS.items():
        assert helper.tensor_dtype_to_field(dtype) == field
    assert dtype_name(TensorProto.FLOAT8E4M3FN) == helper.tensor_dtype_to_np_dtype(TensorProto.FLOAT8E4M3FN).name
    assert dtype_name(TensorProto.STRING) == "string"
    assert dtype_name(999) == "dtype 999"


_DTYPES = [np.int64, np.int32, np.int16, np.int8, np.uint64, np.uint32, np.uint16, np.uint8, np.bool_,
           np.float32, np.float64, np.float16]


@pytest.mark.parametrize("dtype", _DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("raw", [True, False], ids=["raw_data", "typed_field"])
def test_flat_values_match_numpy_helper(dtype: type, raw: bool) -> None:
    values = np.array([[0, 1, 3], [5, 1, 0]]).astype(dtype)
    if np.issubdtype(dtype, np.signedinteger):
        values[1, 2] = -7
    t = numpy_helper.from_array(values, "t")
    if not raw:
        t = helper.make_tensor("t", t.data_type, values.shape, values.reshape(-1).tolist())
    assert t.HasField("raw_data") == raw
    assert flat_values(t) == numpy_helper.to_array(t).reshape(-1).tolist()
    assert tensor_values(t) == tuple(int(x) for x in values.reshape(-1).tolist())


def test_flat_values_refuse_a_truncated_raw_tensor() -> None:
    t = numpy_helper.from_array(np.array([1, 2], np.int64), "t")
    t.raw_data = t.raw_data[:-3]
    with pytest.raises(ValueError):
        flat_values(t)
    assert tensor_values(t) is None


@pytest.mark.skipif(not SAME_ONNX, reason="without the operator table, resolving versions needs onnx")
def test_infer_does_not_import_onnx_or_numpy() -> None:
    """On a model whose ops all have shape rules, ``infer`` reads the file without ``import onnx``
    (about 150 ms of start-up); the output is the same either way (the rest of the suite)."""
    code = ("import sys; from shapeflow.cli import main\n"
            "try:\n    main(['infer', sys.argv[1]])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('onnx', 'numpy', 'networkx') if m in sys.modules), file=sys.stderr)")
    r = subprocess.run([sys.executable, "-c", code, str(ROOT / "examples" / "attention.onnx")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip().splitlines()[-1] == "[]", r.stderr
    assert "Unsqueeze-13" in r.stdout
