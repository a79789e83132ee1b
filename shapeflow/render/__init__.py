"""Output of the commands: text like a compiler's (``text``), JSON (``json``), SARIF 2.1.0
(``sarif``) and GitHub Actions annotations (``github``).

Renderers take the results of the drivers and return strings; the CLI decides where each goes.
The text renderer's names are exported here, as ``shapeflow.render`` offered them before it was a
package.
"""

from __future__ import annotations

from .text import (
    _table,  # noqa: F401  (the fast-path tests compare it with the plain version)
    count_by_severity,
    format_diagnostic,
    infer_text,
    lint_summary,
    lint_text,
    summary_line,
    table,
)

__all__ = ["count_by_severity", "format_diagnostic", "infer_text", "lint_summary", "lint_text", "summary_line",
           "table"]
