"""The lint outputs added for adoption: the one-line ``concise`` format, ``--statistics``, and the
quiet gate of the text format (errors and warnings shown, info counted)."""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Sequence

from ..diagnostics import Diagnostic, Severity
from ..errors import display_path


def concise_line(d: Diagnostic) -> str:
    """``path: graph/node: CODE message``, one line, nothing else (grep- and editor-friendly)."""
    loc = d.location
    place = loc.node if loc.node is not None else loc.tensor
    where = f"{loc.graph}/{place}" if place is not None else loc.graph
    line = f"{d.file}: {where}: {d.code} {d.message}"
    return line if line.isprintable() else display_path(line)


def concise_text(diags: Iterable[Diagnostic]) -> str:
    return "\n".join(concise_line(d) for d in diags)


def statistics_text(diags: Sequence[Diagnostic]) -> str:
    """One line per code, most frequent first: count, code, name, severity, fixable."""
    counts = Counter(d.code for d in diags)
    first: dict[str, Diagnostic] = {}
    fixable: Counter[str] = Counter()
    for d in diags:
        first.setdefault(d.code, d)
        if d.fixable:
            fixable[d.code] += 1
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    width = max((len(f"{n:,}") for _, n in rows), default=1)
    name_w = max((len(first[c].name) for c, _ in rows), default=1)
    lines = []
    for code, n in rows:
        d = first[code]
        tail = f"  ({fixable[code]:,} fixable)" if fixable[code] else ""
        lines.append(f"{n:>{width},}  {code}  {d.name:<{name_w}}  {d.severity.value}{tail}".rstrip())
    return "\n".join(lines)


def shown(diags: Iterable[Diagnostic], show_info: bool) -> list[Diagnostic]:
    """What the text formats print: errors and warnings, and info only when asked for."""
    if show_info:
        return list(diags)
    return [d for d in diags if d.severity is not Severity.INFO]
