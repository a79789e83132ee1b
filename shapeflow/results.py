"""The JSON shapes of shapeflow's results, as ``TypedDict``s for users of the typed API, and the
schema number every JSON output carries (``"schema"``, with ``"shapeflow_version"``).

Bump ``SCHEMA`` when a key is removed or changes meaning; adding a key keeps it.
"""

from __future__ import annotations

from typing import TypedDict

from ._version import __version__

SCHEMA = 1

# a dim: an int, a symbol's text, or None (unknown); a shape: a list of dims, or None (unknown rank)
Dim = int | str | None
Shape = list[Dim] | None


class DiagnosticJSON(TypedDict):
    code: str
    name: str
    severity: str
    file: str
    graph: str
    node: str | None
    op_type: str | None
    message: str
    hint: str
    fixable: bool


class _TensorJSONOptional(TypedDict, total=False):
    # The file's declaration (graph output or value_info) as written, only where it states a dim
    # that ``shape`` leaves unknown: ints, dim_param texts, null for a dim it leaves empty.
    declared_shape: list[int | str | None]


class TensorJSON(_TensorJSONOptional):
    name: str
    graph: str
    dtype: str | None
    shape: Shape


class NodeJSON(TypedDict):
    name: str
    graph: str
    op_type: str
    since_version: int
    input: str
    output: str
    axes: list[int] | None
    input_shape: Shape
    output_shape: Shape


class _AnalysisJSONOptional(TypedDict, total=False):
    assumptions: list[str]  # only when the output used assumptions (SPEC.md section 6)


class AnalysisJSON(_AnalysisJSONOptional):
    shapeflow_version: str
    schema: int
    model: str
    opset: dict[str, int]
    tensors: list[TensorJSON]
    nodes: list[NodeJSON]
    diagnostics: list[DiagnosticJSON]


class FileResultJSON(TypedDict):
    path: str
    exit_code: int
    rejected: bool
    error: str | None
    diagnostics: list[DiagnosticJSON]


class Counts(TypedDict):
    error: int
    warning: int
    info: int


class LintJSON(TypedDict):
    shapeflow_version: str
    schema: int
    files: int
    diagnostics: list[DiagnosticJSON]  # the reported findings (info only when shown or named)
    summary: Counts  # every finding, reported or not
    info_not_shown: int  # info findings counted in the summary but not listed (--show-info lists them)


class OpCounts(TypedDict):
    nodes: int
    Squeeze: int
    Unsqueeze: int


class OptimizeJSON(TypedDict):
    shapeflow_version: str
    schema: int
    changed: bool
    before: OpCounts
    after: OpCounts
    rewrites: dict[str, int]
    rounds: int


def header() -> dict[str, object]:
    """The two keys every JSON document starts with."""
    return {"shapeflow_version": __version__, "schema": SCHEMA}


__all__ = ["SCHEMA", "AnalysisJSON", "Counts", "DiagnosticJSON", "FileResultJSON", "LintJSON", "NodeJSON",
           "OpCounts", "OptimizeJSON", "TensorJSON", "header"]
