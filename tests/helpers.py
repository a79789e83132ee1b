"""Shared test helpers: build tiny models, analyze them in memory, run them in onnxruntime."""

from __future__ import annotations

import json
import os
from typing import Mapping, Sequence

import numpy as np
import onnx

from shapeflow.assume import parse_assumptions
from onnx import TensorProto, helper

from shapeflow.drivers.analysis import Analysis, analyze
from shapeflow.dims import Dim, Shape, dim_to_json, substitute
from shapeflow.io import load_model_bytes


def analyze_model(model: onnx.ModelProto, dims: Mapping[str, int] | None = None,
                  assume: Sequence[str] = ()) -> Analysis:
    return analyze(load_model_bytes(model.SerializeToString(), "m.onnx"), dims=dims,
                   assumptions=parse_assumptions(assume))


def axes_node_model(op: str, shape: Sequence[object], axes: Sequence[int] | None, opset: int,
                    *, form: str | None = None, dtype: int = TensorProto.FLOAT) -> onnx.ModelProto:
    """One Squeeze/Unsqueeze over input ``x`` of ``shape`` (ints or symbol names).

    ``form``: "attribute" or "input" (default: the opset's own form); axes None = no axes given.
    """
    if form is None:
        form = "attribute" if opset < 13 else "input"
    inits = []
    inputs = ["x"]
    kwargs: dict[str, object] = {}
    if axes is not None:
        if form == "attribute":
            kwargs["axes"] = list(axes)
        else:
            inits.append(helper.make_tensor("axes", TensorProto.INT64, [len(axes)], list(axes)))
            inputs.append("axes")
    node = helper.make_node(op, inputs, ["y"], name="n0", **kwargs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", dtype, list(shape))],
        [helper.make_tensor_value_info("y", dtype, None)], inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def ort_session(model: onnx.ModelProto):  # type: ignore[no-untyped-def]
    ort = __import__("onnxruntime")
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def random_inputs(model: onnx.ModelProto, bindings: Mapping[str, int], seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    init_names = {t.name for t in model.graph.initializer}
    feeds: dict[str, np.ndarray] = {}
    for vi in model.graph.input:
        if vi.name in init_names:
            continue
        tt = vi.type.tensor_type
        shape = []
        for d in tt.shape.dim:
            if d.HasField("dim_value"):
                shape.append(d.dim_value)
            else:
                shape.append(bindings.get(d.dim_param, 2))
        np_dtype = helper.tensor_dtype_to_np_dtype(tt.elem_type)
        if np.issubdtype(np_dtype, np.integer):
            feeds[vi.name] = rng.integers(0, 2, size=shape).astype(np_dtype)
        elif np_dtype == np.bool_:
            feeds[vi.name] = rng.integers(0, 2, size=shape).astype(np.bool_)
        else:
            feeds[vi.name] = rng.standard_normal(shape).astype(np_dtype)
    return feeds


def bound(shape: Shape, bindings: Mapping[str, int]) -> list[Dim] | None:
    """A shape with its symbols replaced by their values (unknown dims stay None)."""
    if shape is None:
        return None
    return [substitute(d, bindings) for d in shape]


def json_shape(shape: Shape) -> list | None:
    return None if shape is None else [dim_to_json(d) for d in shape]


def expose_tensors(model: onnx.ModelProto, names: Sequence[str]) -> onnx.ModelProto:
    """A copy of ``model`` with extra graph outputs so onnxruntime reports intermediate tensors."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    have = {o.name for o in m.graph.output}
    for name in names:
        if name not in have:
            m.graph.output.append(onnx.ValueInfoProto(name=name))
            have.add(name)
    return m


def read_cache_entry(path: "os.PathLike[str] | str") -> dict:  # type: ignore[type-arg]
    """The record of a lint cache entry (shapeflow/cache.py: a MAC line, then the JSON)."""
    with open(path, "rb") as f:
        _, _, body = f.read().partition(b"\n")
    return json.loads(body)  # type: ignore[no-any-return]


def write_cache_entry(path: "os.PathLike[str] | str", doc: "dict | bytes") -> None:  # type: ignore[type-arg]
    """Write ``doc`` (a record, or the raw bytes of one) as an entry this user's shapeflow would
    trust: signed with the user's key, as the cache signs what it writes."""
    from shapeflow.drivers.cache import LintCache, user_key

    body = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    key = os.path.basename(os.fspath(path))[:-len(".json")]
    mac = LintCache("unused", secret=user_key())._mac(key, body)
    with open(path, "wb") as f:
        f.write(mac + b"\n" + body)


# -- building the package (tests/test_packaging.py, test_sdist.py) ---------------------------------

# Build requirement of pyproject.toml: setuptools 77 is the first to read `license = "Apache-2.0"`.
SETUPTOOLS_NEEDED = (77,)
# what pip and build print when the index cannot be reached (or holds no such setuptools)
_OFFLINE = ("No matching distribution found", "Could not find a version that satisfies",
            "Failed to establish a new connection", "Temporary failure in name resolution",
            "Network is unreachable", "NewConnectionError", "ProxyError", "ConnectTimeoutError")


def _setuptools_version() -> tuple[int, ...]:
    from importlib import metadata

    try:
        version = metadata.version("setuptools")
    except metadata.PackageNotFoundError:
        return ()
    return tuple(int(p) for p in version.split(".")[:2] if p.isdigit())


def build_dist(src: str, out: str, kind: str) -> str:
    """Build the ``kind`` ("sdist" or "wheel") of the project at ``src`` into ``out``; its path.

    With the environment's setuptools when it is new enough (no network needed), else in an
    isolated environment that pip fills from the index (the build requirement), as a user's
    ``pip install`` does; a test that cannot reach the index is skipped, not failed."""
    import glob
    import importlib.util
    import subprocess
    import sys

    import pytest

    local = _setuptools_version() >= SETUPTOOLS_NEEDED
    if kind == "wheel":
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", out, src]
        if local:
            cmd.insert(4, "--no-build-isolation")
    else:
        if importlib.util.find_spec("build") is None:
            pytest.skip("the 'build' package is not installed (pip install -e \".[test]\")")
        cmd = [sys.executable, "-m", "build", "--sdist", "--outdir", out, src]
        if local:
            cmd.insert(3, "--no-isolation")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0 and not local and any(s in proc.stdout + proc.stderr for s in _OFFLINE):
        pytest.skip(f"setuptools >= {SETUPTOOLS_NEEDED[0]} is not installed and the package index "
                    "cannot be reached to build in isolation")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    (found,) = glob.glob(os.path.join(out, "shapeflow-*.whl" if kind == "wheel" else "shapeflow-*.tar.gz"))
    return found
