"""Human-readable output: diagnostics like a compiler's, and the ``infer`` tables.

Results go to stdout; the one-line summary goes to stderr (the CLI decides where each string goes).
"""

from __future__ import annotations

from typing import Iterable, Sequence

from .analysis import Analysis, dtype_name
from .diagnostics import Diagnostic, Severity
from .dims import format_shape


def format_diagnostic(d: Diagnostic) -> str:
    """``model.onnx: node 'sq_3' (Squeeze-13): error SF104 squeeze-non-unit-dim: axis 1 has dim 3``
    and an indented hint line. Findings inside a subgraph or function name its path."""
    loc = d.location
    parts = [f"{d.file}:"]
    if loc.graph and loc.graph != "main":
        parts.append(f"{loc.graph}:")
    if loc.node is not None:
        label = f" ({loc.op_label})" if loc.op_label else ""
        parts.append(f"node '{loc.node}'{label}:")
    elif loc.tensor is not None:
        parts.append(f"tensor '{loc.tensor}':")
    parts.append(f"{d.severity.value} {d.code} {d.name}: {d.message}")
    line = " ".join(parts)
    if d.hint:
        line += f"\n    hint: {d.hint}"
    return line


def count_by_severity(diags: Iterable[Diagnostic]) -> dict[str, int]:
    counts = {s.value: 0 for s in (Severity.ERROR, Severity.WARNING, Severity.INFO)}
    for d in diags:
        counts[d.severity.value] += 1
    return counts


def summary_line(counts: dict[str, int]) -> str:
    def plural(n: int, word: str) -> str:
        return f"{n} {word}" + ("" if n == 1 else "s")

    return ", ".join([plural(counts["error"], "error"), plural(counts["warning"], "warning"),
                      f"{counts['info']} info"])


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [len(h) for h in headers]
    for row in rows:
        for k, cell in enumerate(row):
            widths[k] = max(widths[k], len(cell))
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    return "\n".join(lines)


def infer_text(a: Analysis, *, all_tensors: bool = False) -> str:
    """The ``infer`` report: Squeeze/Unsqueeze table (or every tensor), then the diagnostics."""
    blocks: list[str] = []
    if all_tensors:
        rows = []
        for scope, table in zip(a.graph.scopes, a.inference.tensors):
            for name, t in table.items():
                rows.append([scope.path, name, (dtype_name(t.dtype) or "?") if t else "?",
                             format_shape(t.shape) if t else "?"])
        blocks.append(_table(["graph", "tensor", "dtype", "shape"], rows))
    nodes = a.inference.axis_nodes
    if nodes:
        show_graph = any(n.graph != "main" for n in nodes)
        rows = []
        for n in nodes:
            axes = "none" if n.axes.values is None and n.axes.source == "absent" else (
                "?" if n.axes.values is None else "[" + ", ".join(str(x) for x in n.axes.values) + "]")
            row = [n.node, f"{n.op_type}-{n.since_version}", format_shape(n.input_shape), axes,
                   format_shape(n.output_shape)]
            rows.append(([n.graph] if show_graph else []) + row)
        headers = (["graph"] if show_graph else []) + ["node", "op", "input shape", "axes", "output shape"]
        blocks.append(_table(headers, rows))
    elif not all_tensors:
        blocks.append("no Squeeze or Unsqueeze nodes")
    if a.diagnostics:
        blocks.append("\n".join(format_diagnostic(d) for d in a.diagnostics))
    return "\n\n".join(blocks)


# -- lint ------------------------------------------------------------------------------------------


def lint_text(diags: Iterable[Diagnostic]) -> str:
    """The findings of ``lint``, one per line (plus its hint line), like a compiler's."""
    return "\n".join(format_diagnostic(d) for d in diags)


def lint_json(n_files: int, diags: Sequence[Diagnostic]) -> dict[str, object]:
    """The ``lint --format json`` object of SPEC.md section 3."""
    return {"files": n_files, "diagnostics": [d.to_json() for d in diags], "summary": count_by_severity(diags)}


def lint_summary(n_files: int, diags: Sequence[Diagnostic], *, rejected: int = 0, failed: int = 0,
                 fixed: int = 0, changed: int = 0, fix: bool = False, diff: bool = False) -> str:
    """The one stderr line of ``lint``: ``3 files: 2 errors, 1 warning, 0 info``, with what was
    rejected, fixed or fixable when there is any."""
    head = f"{n_files} file" + ("" if n_files == 1 else "s")
    notes = []
    if rejected:
        notes.append(f"{rejected} rejected")
    if failed:
        notes.append(f"{failed} failed")
    if notes:
        head += " (" + ", ".join(notes) + ")"
    line = f"{head}: {summary_line(count_by_severity(diags))}"
    fixable = sum(1 for d in diags if d.fixable)
    if diff:
        line += f"; --fix would fix {fixed} in {changed} file" + ("" if changed == 1 else "s")
    elif fix:
        line += f"; fixed {fixed} in {changed} file" + ("" if changed == 1 else "s")
        if fixable:
            line += f", {fixable} fixable left"
    elif fixable:
        line += f" ({fixable} fixable with --fix)"
    return line


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain aligned table (``shapeflow rules``)."""
    return _table(headers, rows)
