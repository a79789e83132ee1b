"""Human-readable output: diagnostics like a compiler's, and the ``infer`` tables.

Results go to stdout; the one-line summary goes to stderr (the CLI decides where each string goes).
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

from ..drivers.analysis import Analysis, dtype_name
from ..declared import Written, merged_text
from ..diagnostics import Diagnostic, Severity
from ..dims import format_shape
from ..errors import display_path
from ..facts import AxisNode


def format_diagnostic(d: Diagnostic) -> str:
    """``model.onnx: node 'sq_3' (Squeeze-13): error SF104 squeeze-non-unit-dim: axis 1 has dim 3``
    (``Diagnostic.line``) and an indented hint line. Findings inside a subgraph or function name
    its path."""
    line = d.line()
    if d.hint:
        hint = d.hint
        line = f"{line}\n    hint: {hint if hint.isprintable() else display_path(hint)}"
    return line


def count_by_severity(diags: Iterable[Diagnostic]) -> dict[str, int]:
    counts = {s.value: 0 for s in (Severity.ERROR, Severity.WARNING, Severity.INFO)}
    for d in diags:
        counts[d.severity._value_] += 1  # (the member's value field: ``.value`` is a property)
    return counts


def summary_line(counts: dict[str, int], info_hidden: bool | int = False) -> str:
    """``2 errors, 1 warning, 97 info``; ``info_hidden``: how many info findings were counted
    but not printed (True: all of them)."""
    def plural(n: int, word: str) -> str:
        return f"{n:,} {word}" + ("" if n == 1 else "s")

    hidden = counts["info"] if info_hidden is True else int(info_hidden)
    info = f"{counts['info']:,} info"
    if hidden and hidden >= counts["info"]:
        info += " not shown; --show-info"
    elif hidden:
        info += f" ({hidden:,} not shown; --show-info)"
    return ", ".join([plural(counts["error"], "error"), plural(counts["warning"], "warning"), info])


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    n = len(headers)
    if rows and all(len(row) == n for row in rows):
        return _table_columns(headers, list(zip(*rows)))
    rows = [row if "".join(row).isprintable() else [display_path(c) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in rows:
        for k, cell in enumerate(row):
            widths[k] = max(widths[k], len(cell))
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    return "\n".join(lines)


def _table_columns(headers: Sequence[str], columns: Sequence[Sequence[str]]) -> str:
    """``_table`` from full columns (one per header, all of one length): the infer table of a
    large model has hundreds of thousands of rows, and whole-column operations are cheaper.
    Names come from the model: a column with a newline or a terminal escape in it is escaped
    (one check per column, in C, for the common case where none has)."""
    columns = [col if "".join(col).isprintable() else [display_path(c) for c in col] for col in columns]
    widths = [max(len(h), max(map(len, col), default=0)) for h, col in zip(headers, columns)]
    # "{:<w}" pads exactly as str.ljust(w); the last column is not padded at all, since each line
    # is stripped of its trailing spaces anyway (a fifth fewer characters to format per row)
    fmt = "  ".join([f"{{:<{w}}}" for w in widths[:-1]] + ["{}"] * (len(widths) > 0)).format
    lines = [fmt(*headers).rstrip(), "  ".join("-" * w for w in widths)]
    lines.extend([fmt(*row).rstrip() for row in zip(*columns)])
    return "\n".join(lines)


# Whether the Squeeze/Unsqueeze table is written a row per node name and a text per distinct rest
# (``_axis_table``; tests/test_fast_paths.py compares it with the column-wise table)
FAST = True
_AXIS_HEADERS = ("node", "op", "input shape", "axes", "output shape")


def _axis_table(nodes: Sequence[AxisNode], shape_text: Callable[[object], str]) -> str | None:
    """The Squeeze/Unsqueeze table of the main graph as ``_table_columns`` writes it, with each
    distinct rest of a row (op, shapes, axes: a large model has a few) formatted once. None where
    that table differs: a node in a subgraph (a graph column), a cell to escape, an empty rest."""
    names: list[str] = []
    rows: list[int] = []
    index: dict[tuple[object, ...], int] = {}
    rests: list[tuple[str, str, str, str]] = []
    for n in nodes:
        if n.graph != "main":
            return None
        names.append(n.node)
        ax = n.axes
        # shapes and axes by identity (inference interns them; the nodes keep them alive)
        key = (n.op_type, n.since_version, id(n.input_shape), id(ax.values), ax.source, id(n.output_shape))
        k = index.get(key)
        if k is None:
            values = ax.values
            if values is None:
                axes_text = "none" if ax.source == "absent" else "?"
            else:
                axes_text = "[" + ", ".join(str(x) for x in values) + "]"
            k = index[key] = len(rests)
            rests.append((f"{n.op_type}-{n.since_version}", shape_text(n.input_shape), axes_text,
                          shape_text(n.output_shape)))
        rows.append(k)
    if not "".join(names).isprintable() or not "".join("".join(r) for r in rests).isprintable():
        return None
    widths = [max(len(h), max((len(r[k]) for r in rests), default=0)) for k, h in enumerate(_AXIS_HEADERS[1:])]
    name_width = max(len(_AXIS_HEADERS[0]), max(map(len, names)))
    fmt = ("{:<%d}  {:<%d}  {:<%d}  {}" % tuple(widths[:3])).format
    texts = ["  " + fmt(*r).rstrip() for r in rests]
    if any(len(t) == 2 for t in texts):
        return None
    all_widths = [name_width, *widths]
    head = "  ".join([f"{{:<{w}}}" for w in all_widths[:-1]] + ["{}"]).format(*_AXIS_HEADERS).rstrip()
    lines = [head, "  ".join("-" * w for w in all_widths)]
    lines.extend([name.ljust(name_width) + texts[k] for name, k in zip(names, rows)])
    return "\n".join(lines)


def _axis_columns(a: Analysis, nodes: Sequence[AxisNode], declared: dict[tuple[int, str], list[Written]],
                  shape_texts: dict[int, str], shape_text: Callable[[object], str]) -> str:
    """The Squeeze/Unsqueeze table column by column: any model (subgraphs, declared dims, escapes)."""
    names, ops, ins, axes, outs = [], [], [], [], []
    op_texts: dict[tuple[str, int], str] = {}
    axes_texts: dict[int, str] = {}
    get_shape = shape_texts.get
    graph_nodes = a.graph.nodes
    for n in nodes:
        names.append(n.node)
        op = op_texts.get((n.op_type, n.since_version))
        if op is None:
            op = op_texts[(n.op_type, n.since_version)] = f"{n.op_type}-{n.since_version}"
        ops.append(op)
        s = n.input_shape
        text = get_shape(id(s))
        ins.append(text if text is not None else shape_text(s))
        values = n.axes.values
        if values is None:
            axes.append("none" if n.axes.source == "absent" else "?")
        else:
            text = axes_texts.get(id(values))
            if text is None:
                text = axes_texts[id(values)] = "[" + ", ".join(str(x) for x in values) + "]"
            axes.append(text)
        s = n.output_shape
        text = get_shape(id(s))
        outs.append(text if text is not None else shape_text(s))
        if declared:
            sid = graph_nodes[n.nid].scope
            written = declared.get((sid, n.input))
            if written is not None:
                ins[-1] = merged_text(n.input_shape, written)
            written = declared.get((sid, n.output))
            if written is not None:
                outs[-1] = merged_text(n.output_shape, written)
    headers = ["node", "op", "input shape", "axes", "output shape"]
    columns = [names, ops, ins, axes, outs]
    if any(n.graph != "main" for n in nodes):
        headers.insert(0, "graph")
        columns.insert(0, [n.graph for n in nodes])
    return _table_columns(headers, columns)


def infer_text(a: Analysis, *, all_tensors: bool = False) -> str:
    """The ``infer`` report: Squeeze/Unsqueeze table (or every tensor), then the diagnostics."""
    blocks: list[str] = []
    # Texts of shapes and axes by object identity: inference shares one tuple among all tensors of
    # one shape (and one axes tuple among the readers of one axes tensor), so a large model has a
    # few distinct ones to format, not one per row. The objects stay alive while this runs (the
    # analysis holds them), so their ids are theirs.
    shape_texts: dict[int, str] = {}

    def shape_text(shape: object) -> str:
        text = shape_texts.get(id(shape))
        if text is None:
            text = shape_texts[id(shape)] = format_shape(shape)  # type: ignore[arg-type]
        return text

    # What the file declares where inference proves nothing (``~4``): a few tensors, if any.
    declared = a.declared
    if all_tensors:
        dtypes: dict[int, str] = {}
        rows = []
        for scope, table in zip(a.graph.scopes, a.inference.tensors):
            path = scope.path
            for name, t in table.items():
                written = declared.get((scope.id, name)) if declared else None
                if t is None:
                    rows.append((path, name, "?", "?" if written is None else merged_text(None, written)))
                    continue
                dtype = dtypes.get(t.dtype)
                if dtype is None:
                    dtype = dtypes[t.dtype] = dtype_name(t.dtype) or "?"
                rows.append((path, name, dtype,
                             shape_text(t.shape) if written is None else merged_text(t.shape, written)))
        blocks.append(_table(["graph", "tensor", "dtype", "shape"], rows))
    nodes = a.inference.axis_nodes
    fast = _axis_table(nodes, shape_text) if nodes and FAST and not declared else None
    if fast is not None:
        blocks.append(fast)
    elif nodes:
        blocks.append(_axis_columns(a, nodes, declared, shape_texts, shape_text))
    elif not all_tensors:
        blocks.append("no Squeeze or Unsqueeze nodes")
    if a.diagnostics:
        blocks.append(lint_text(a.diagnostics))
    return "\n\n".join(blocks)


# -- lint ------------------------------------------------------------------------------------------


def lint_text(diags: Iterable[Diagnostic]) -> str:
    """Findings one per line (plus a hint line), like a compiler's: ``lint``'s output, and
    ``infer``'s after its table."""
    return "\n".join([format_diagnostic(d) for d in diags])


def lint_summary(n_files: int, diags: Sequence[Diagnostic], *, rejected: int = 0, failed: int = 0,
                 fixed: int = 0, changed: int = 0, fix: bool = False, diff: bool = False,
                 info_hidden: bool | int = False, fixable: int | None = None) -> str:
    """The one stderr line of ``lint``: ``3 files: 2 errors, 1 warning, 0 info``, with what was
    rejected, fixed or fixable when there is any. ``fixable``: the reported findings --fix would
    act on (default: every fixable finding of ``diags``)."""
    head = f"{n_files:,} file" + ("" if n_files == 1 else "s")
    notes = []
    if rejected:
        notes.append(f"{rejected:,} rejected")
    if failed:
        notes.append(f"{failed:,} failed")
    if notes:
        head += " (" + ", ".join(notes) + ")"
    line = f"{head}: {summary_line(count_by_severity(diags), info_hidden)}"
    if fixable is None:
        fixable = sum(1 for d in diags if d.fixable)
    if diff:
        line += f"; --fix would fix {fixed:,} in {changed:,} file" + ("" if changed == 1 else "s")
    elif fix:
        line += f"; fixed {fixed:,} in {changed:,} file" + ("" if changed == 1 else "s")
        if fixable:
            line += f", {fixable:,} fixable left"
    elif fixable:
        line += f" ({fixable:,} fixable with --fix)"
    return line


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain aligned table (``shapeflow rules``)."""
    return _table(headers, rows)
