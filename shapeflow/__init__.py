"""shapeflow: symbolic shapes, axis lint and exact Squeeze/Unsqueeze rewrites for ONNX models.

The Python API mirrors the commands::

    import shapeflow
    result = shapeflow.infer("model.onnx", dims={"batch": 1})
    for d in result.diagnostics:
        print(d.code, d.message)
    for file in shapeflow.lint(["a.onnx", "b.onnx"]):
        print(file.path, file.exit_code, len(file.diagnostics))
    report = shapeflow.optimize("model.onnx", "model.opt.onnx")
    print(report.before, report.after, report.rewrites)
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from .api import infer, lint, optimize
from .analysis import Analysis
from .diagnostics import Diagnostic, Location, Severity
from .errors import ShapeflowError
from .limits import Limits

try:
    __version__ = version("shapeflow")
except PackageNotFoundError:  # a source tree that is not installed
    __version__ = "0+unknown"

__all__ = ["Analysis", "Diagnostic", "Limits", "Location", "Severity", "ShapeflowError", "__version__", "infer",
           "lint", "optimize"]
