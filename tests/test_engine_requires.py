"""Every driver refuses the same inputs: what the rewrite engine requires of a model
(``shapeflow/passes/requires.py``) holds for ``optimize`` and ``lint --fix`` alike.

Each model below has a cancelling Unsqueeze/Squeeze pair, so both drivers have something to
rewrite (``lint --fix`` acts on the findings it reports: ``--show-info`` reports the pair), and
breaks one requirement. Both exit 2 and leave the input as it was. (``lint --fix`` used to rewrite
an opset-29 or IR-15 model in place and exit 0, where ``optimize`` refused it.) A ``lint --fix``
that reports nothing to fix runs no rewrite, so it has nothing to refuse: lint's own verdict.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Callable

import cli_process
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from shapeflow import rewrites
from shapeflow.errors import ShapeflowError
from shapeflow.io import load_model_bytes
from shapeflow.passes import rewrite_model


def _pair(opset: int = 17, ir: int = 8, extra: list[onnx.NodeProto] | None = None,
          inits: list[onnx.TensorProto] | None = None) -> onnx.ModelProto:
    """``y = Relu(Squeeze(Unsqueeze(x, [0]), [0]))``: a pair every driver would cancel."""
    nodes = [helper.make_node("Unsqueeze", ["x", "ax"], ["u"], name="u"),
             helper.make_node("Squeeze", ["u", "ax"], ["s"], name="s"),
             helper.make_node("Relu", ["s"], ["y"], name="relu"), *(extra or [])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])],
                          [numpy_helper.from_array(np.array([0], np.int64), "ax"), *(inits or [])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir
    return m


def _ir_too_new() -> onnx.ModelProto:
    return _pair(ir=onnx.IR_VERSION + 1)


def _opset_too_new() -> onnx.ModelProto:
    return _pair(opset=29)


def _function_opset_too_new() -> onnx.ModelProto:
    m = _pair()
    f = helper.make_function("local", "F", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"])],
                             [helper.make_opsetid("", 29)])
    m.functions.append(f)
    m.opset_import.append(helper.make_opsetid("local", 1))
    return m


def _unknown_op() -> onnx.ModelProto:
    return _pair(extra=[helper.make_node("Sqeeze", ["x"], ["typo"], name="typo")])


def _unsafe_external_data() -> onnx.ModelProto:
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[3])
    w.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "../outside.bin"), ("offset", "0"), ("length", "12")):
        e = w.external_data.add()
        e.key, e.value = key, value
    return _pair(extra=[helper.make_node("Add", ["y_pre", "w"], ["unused"], name="add"),
                        helper.make_node("Identity", ["x"], ["y_pre"], name="id")], inits=[w])


GUARDS: dict[str, tuple[Callable[[], onnx.ModelProto], str]] = {
    "ir-version": (_ir_too_new, "IR version"),
    "opset": (_opset_too_new, "ai.onnx opset 29 is newer"),
    "function-opset": (_function_opset_too_new, "ai.onnx opset 29 is newer"),
    "unknown-op": (_unknown_op, "unknown operator 'Sqeeze'"),
    "external-data": (_unsafe_external_data, "outside.bin"),
}


def _write(tmp_path: Path, model: onnx.ModelProto) -> tuple[Path, bytes]:
    path = tmp_path / "m.onnx"
    data = model.SerializeToString()
    path.write_bytes(data)
    return path, data


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return cli_process.shapeflow(*args)


def test_the_models_are_otherwise_rewritten(tmp_path: Path) -> None:
    """The control: without the broken requirement, both drivers cancel the pair."""
    path, data = _write(tmp_path, _pair())
    out = tmp_path / "out.onnx"
    assert _run("optimize", str(path), "-o", str(out)).returncode == 0
    assert [n.op_type for n in onnx.load(str(out)).graph.node] == ["Relu"]
    fixed = _run("lint", "--fix", "--show-info", "--isolated", "--no-cache", str(path))
    assert fixed.returncode == 0, fixed.stderr
    assert path.read_bytes() != data


@pytest.mark.parametrize("guard", sorted(GUARDS))
def test_optimize_refuses(tmp_path: Path, guard: str) -> None:
    make, says = GUARDS[guard]
    path, data = _write(tmp_path, make())
    out = tmp_path / "out.onnx"
    proc = _run("optimize", str(path), "-o", str(out))
    assert proc.returncode == 2, proc.stderr
    assert says in proc.stderr and not out.exists() and path.read_bytes() == data


@pytest.mark.parametrize("guard", sorted(GUARDS))
def test_lint_fix_refuses(tmp_path: Path, guard: str) -> None:
    make, says = GUARDS[guard]
    path, data = _write(tmp_path, make())
    proc = _run("lint", "--fix", "--show-info", "--isolated", "--no-cache", str(path))
    assert proc.returncode == 2, proc.stderr
    assert "fix refused" in proc.stderr and says in proc.stderr
    assert path.read_bytes() == data  # nothing written


@pytest.mark.parametrize("guard", sorted(GUARDS))
def test_lint_fix_with_nothing_reported_to_fix_runs_no_rewrite(tmp_path: Path, guard: str) -> None:
    """The pair is info, not reported without --show-info: --fix has nothing to apply, so the
    engine is not asked and there is nothing to refuse; the file stays as it was."""
    make, _ = GUARDS[guard]
    path, data = _write(tmp_path, make())
    proc = _run("lint", "--fix", "--isolated", "--no-cache", str(path))
    assert proc.returncode in (0, 1) and "fix refused" not in proc.stderr, proc.stderr
    assert path.read_bytes() == data


@pytest.mark.parametrize("guard", sorted(GUARDS))
def test_the_engine_itself_refuses(guard: str) -> None:
    """Whoever calls the engine (the API, a script): the same refusal, before any rewrite."""
    make, says = GUARDS[guard]
    loaded = load_model_bytes(make().SerializeToString(), "m.onnx")
    with pytest.raises(ShapeflowError, match=says.replace("(", r"\(")):
        rewrite_model(loaded, rewrites.select())
    assert loaded.proto.SerializeToString() == loaded.raw
