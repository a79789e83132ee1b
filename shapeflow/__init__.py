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
    g = shapeflow.load_graph("model.onnx")        # a networkx.MultiDiGraph with shapes on the edges
    changes = shapeflow.diff("model.onnx", "model.opt.onnx")
    print(changes.same_signature, changes.changed)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .drivers.analysis import Analysis
    from .drivers.api import diff, infer, lint, load_graph, optimize
    from .diagnostics import Diagnostic, Location, Severity
    from .errors import ShapeflowError
    from .limits import Limits
    from .drivers.linter import FileResult
    from .passes import OptimizeResult
    from .results import AnalysisJSON, DiagnosticJSON, FileResultJSON, LintJSON, OptimizeJSON

# The API is imported on first use: ``python -m shapeflow`` runs this file before the command line,
# and a command imports only what it needs (onnx, the rules, the passes).
_LAZY = {
    "FileResult": "drivers.linter", "OptimizeResult": "passes", "AnalysisJSON": "results",
    "DiagnosticJSON": "results", "FileResultJSON": "results", "LintJSON": "results", "OptimizeJSON": "results",
    "Analysis": "drivers.analysis", "Diagnostic": "diagnostics", "Limits": "limits", "Location": "diagnostics",
    "Severity": "diagnostics", "ShapeflowError": "errors", "infer": "drivers.api", "lint": "drivers.api",
    "optimize": "drivers.api", "load_graph": "drivers.api", "diff": "drivers.api",
}


def __getattr__(name: str) -> object:
    if name == "__version__":
        from ._version import __version__ as value
    elif name in _LAZY:
        from importlib import import_module

        value = getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = ["Analysis", "AnalysisJSON", "Diagnostic", "DiagnosticJSON", "FileResult", "FileResultJSON", "Limits",
           "LintJSON", "Location", "OptimizeJSON", "OptimizeResult", "Severity", "ShapeflowError", "__version__",
           "diff", "infer", "lint", "load_graph", "optimize"]
