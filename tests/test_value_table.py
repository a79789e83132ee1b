"""The value table (shapeflow/ops/evaluated.py) against onnxruntime, issue 21.

Every (op, element type) the table lists is run in onnxruntime over edge values by the oracle
(tests/value_oracle.py) and every element shapeflow states must be the runtime's; every entry must
be exercised (shapeflow states something for it); an (op, type) outside the table gets no value,
whatever its rule computes; and initializers are read as onnxruntime reads them, whatever field
holds them.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper

pytest.importorskip("onnxruntime")
sys.path.insert(0, str(Path(__file__).resolve().parent))
import value_oracle as vo  # noqa: E402

from shapeflow.ops import REGISTRY  # noqa: E402
from shapeflow.ops.constants import tensor_values  # noqa: E402
from shapeflow.ops.evaluated import CASTS, EVALUATED, TRACKED, keeps_value  # noqa: E402
from shapeflow.tensorinfo import TensorInfo  # noqa: E402

OPS = sorted(EVALUATED) + ["Cast", "CastLike"]


@pytest.fixture(scope="module")
def runner(ort_runner) -> Iterator[vo.shapearith.Runner]:
    yield ort_runner  # one onnxruntime worker for the session (tests/conftest.py)


def _listed(op: str) -> list[Any]:
    if op in ("Cast", "CastLike"):
        return sorted(CASTS)
    return sorted(EVALUATED[op])


@pytest.mark.parametrize("op", OPS)
def test_every_listed_type_is_onnxruntimes(op: str, runner: vo.shapearith.Runner) -> None:
    """Each (op, type) of the table: onnxruntime loads it, shapeflow states some of its elements,
    and every element stated is the runtime's (an element the runtime fails on is not stated)."""
    problems = []
    for key in _listed(op):
        report = vo.check(op, key, runner)
        if not report.supported:
            problems.append(f"{report.line()}: listed, but onnxruntime does not implement it")
        elif report.known == 0:
            problems.append(f"{report.line()}: listed, but nothing is evaluated")
        problems += [f"{report.line()}" for _ in report.mismatches[:1]]
        problems += [f"    {m}" for m in report.mismatches[:5]]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("op", OPS)
def test_no_value_outside_the_table(op: str) -> None:
    """The same models in the types the table leaves out: shapeflow states nothing (no
    onnxruntime needed: the rule may compute a value, inference drops it)."""
    if op in ("Cast", "CastLike"):
        keys: list[Any] = [(a, b) for a in sorted(TRACKED) for b in sorted(TRACKED) if (a, b) not in CASTS]
    elif op in ("Shape", "Size"):
        keys = []  # (int64 whatever they read: no other type to try)
    else:
        keys = sorted(TRACKED - EVALUATED[op])
    for key in keys:
        for group in vo.cases(op, key):
            els = [e for e in group.elements if vo._readable(e)][:group.chunk] or group.elements[:1]
            built = group.builder("n_", els)
            table = vo.shapeflow_values(vo._model([built]))
            info = table.get(built.out)
            assert info is None or info.value is None, (op, key, group.label, info)


def test_the_oracle_covers_every_op_of_the_table_and_only_those() -> None:
    for op in OPS:
        for key in _listed(op)[:1]:
            assert vo.cases(op, key), op
    with pytest.raises(KeyError):
        vo.cases("Relu", TP.FLOAT)


def test_a_value_from_a_rule_for_an_op_outside_the_table_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard is inference's, not each rule's: a rule that states a value for an op the table
    does not list (here Relu) has it dropped."""
    def relu_with_value(call: Any) -> list[TensorInfo | None]:
        t = call.input(0)
        return [TensorInfo(t.dtype, t.shape, (7,) * len(t.value))]

    monkeypatch.setitem(REGISTRY._rules, ("", "Relu"), relu_with_value)
    node = helper.make_node("Relu", ["x"], ["y"])
    built = vo.Built([node], [vo.tensor("x", TP.FLOAT, [1.0, 2.0])], "y", TP.FLOAT)
    info = vo.shapeflow_values(vo._model([built]))["y"]
    assert info.shape == (2,) and info.value is None
    assert not keeps_value("Relu", [TensorInfo(TP.FLOAT, (2,), (1, 2))], TensorInfo(TP.FLOAT, (2,), (7, 7)))


def test_int_min_by_minus_one_traps(runner: vo.shapearith.Runner) -> None:
    """Why the oracle does not run INT_MIN / -1 (value_oracle.hazard): onnxruntime's answer
    depends on its code path, a trap alone or a wrapped value in a longer vector."""
    lo = -(2**63)
    alone = vo._model([vo._binary("Div", TP.INT64, TP.INT64, TP.INT64, "vector", {})("a_", [(lo, -1)])])
    status, res = runner.run(alone.SerializeToString(), {}, [o.name for o in alone.graph.output])
    assert status != "ok" and "died" in str(res)
    assert vo.hazard("Div", TP.INT64, (lo, -1))


# -- initializers: read through the element type, whatever field holds them --------------------

_FIELDS: dict[str, list[int | float]] = {
    "int32_data": [300, -1, 200, 2, 70000, -129, 2**31 - 1, -(2**31), 0x3C00, 0x7E00, 65535],
    "int64_data": [2**40 + 5, -1, 300, 2, -(2**63), 2**63 - 1],
    "uint64_data": [2**64 - 1, 300, 2, 2**63, 2**32 + 7],
    "float_data": [3.0, -0.0, 16777217.0, 300.0, 1e30],
    "double_data": [3.0, 2.0**60, -1.0, 300.0],
}


def _stored(dtype: int, field: str, values: list[int | float]) -> TP:
    t = TP()
    t.name = "c"
    t.data_type = dtype
    t.dims.append(len(values))
    getattr(t, field).extend(values)
    return t


@pytest.mark.parametrize("dtype", sorted(TRACKED))
def test_initializers_are_read_as_onnxruntime_reads_them(dtype: int, runner: vo.shapearith.Runner) -> None:
    """Every field for every tracked type (most combinations onnxruntime refuses: shapeflow then
    reads nothing): uint8 300 in int32_data is 44, int8 200 is -56, bool 2 is true, uint32 from
    uint64_data wraps, a float16 pattern over 16 bits is refused."""
    for field, values in _FIELDS.items():
        t = _stored(dtype, field, values)
        out = TP.DOUBLE if dtype in (TP.FLOAT16, TP.BFLOAT16) else dtype  # (numpy has no bfloat16)
        node = helper.make_node("Cast", ["c"], ["y"], to=out)
        g = helper.make_graph([node], "g", [], [helper.make_tensor_value_info("y", out, None)], [t])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)
        status, res = runner.run(m.SerializeToString(), {}, ["y"])
        mine = tensor_values(t)
        if status != "ok":
            assert mine is None, (TP.DataType.Name(dtype), field, mine, res)
            continue
        runtime = np.asarray(res[0]).reshape(-1).tolist()
        if mine is None:  # (a float tensor with a fraction or an out-of-range value is not read)
            assert dtype in vo.FLOATS, (TP.DataType.Name(dtype), field, runtime)
            continue
        assert [float(v) for v in mine] == [float(v) for v in runtime], (TP.DataType.Name(dtype), field)
