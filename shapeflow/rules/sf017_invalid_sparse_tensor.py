from __future__ import annotations

from typing import Iterator

from .._onnx import onnx
from ..diagnostics import Location
from ..ops.constants import flat_values, is_external
from .base import Finding, LintContext, Rule


def _problem(sp: onnx.SparseTensorProto) -> str | None:
    """Why onnxruntime cannot densify ``sp`` when it loads the model, or None."""
    dims = [int(d) for d in sp.dims]
    values, indices = sp.values, sp.indices
    if is_external(values) or is_external(indices):
        return None  # (data kept outside the model file is never read)
    nnz = 1
    for d in values.dims:
        nnz *= int(d)
    if len(values.dims) != 1:
        return f"its values are {len(values.dims)}-D; they must be 1-D"
    numel = 1
    for d in dims:
        numel *= d
    try:
        flat = flat_values(indices)
    except Exception:
        return None  # undecodable data: SF001 reports the tensor itself
    if len(indices.dims) == 1:
        if len(flat) != nnz:
            return f"it has {nnz} values but {len(flat)} indices"
        bad = next((k for k, i in enumerate(flat) if not 0 <= i < numel), None)
        if bad is not None:
            return f"index {flat[bad]} (position {bad}) is outside [0, {numel - 1}]"
        return None
    if len(indices.dims) == 2:
        rows, rank = int(indices.dims[0]), int(indices.dims[1])
        if rows != nnz or rank != len(dims) or len(flat) != rows * rank:
            return f"its indices are [{rows}, {rank}]; {nnz} values of a rank-{len(dims)} tensor need [{nnz}, {len(dims)}]"
        for r in range(rows):
            for k in range(rank):
                i = flat[r * rank + k]
                if not 0 <= i < dims[k]:
                    return f"index {i} of value {r} is outside dim {k} (size {dims[k]})"
        return None
    return f"its indices are {len(indices.dims)}-D; they must be 1-D or 2-D"


class InvalidSparseTensor(Rule):
    """Flags a sparse initializer whose indices do not fit its values or its shape.

    ## What it does
    Checks every sparse initializer (main graph and subgraphs) the way onnxruntime reads it when it
    turns the initializer into a dense tensor at load: 1-D values, and either one linear index per
    value in ``[0, numel)`` or one row of coordinates per value, each inside its dim. Indices out
    of order or repeated are accepted, as onnxruntime accepts them (onnx's checker does not).

    ## Why is this bad?
    onnxruntime refuses to load the model: it cannot build the dense tensor. Other readers write
    past the end of the tensor or drop values, so the weights the model computes with are not the
    ones it stores.

    ## Example
    A sparse initializer of shape ``[4]`` with values ``[1, 2]`` and indices ``[7, 100]``.

    ## Fix
    Rebuild the sparse tensor from its dense form (``onnx.numpy_helper`` and a sparse conversion),
    or store the initializer dense.
    """

    code = "SF017"

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        for scope in ctx.graph.scopes:
            body = scope.proto
            if not isinstance(body, onnx.GraphProto):
                continue
            for sp in body.sparse_initializer:
                problem = _problem(sp)
                if problem is not None:
                    name = sp.values.name
                    yield Finding(Location(scope.path, tensor=name), f"sparse initializer '{name}': {problem}",
                                  "rebuild the sparse tensor from its dense form")
