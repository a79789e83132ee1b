"""The baseline file (SPEC.md section 7): today's findings, recorded so that only new ones count.

``lint --write-baseline FILE`` records the run's errors and warnings (info findings fail nothing,
so a baseline of them would only be noise); ``lint --baseline FILE`` (or ``baseline = "FILE"`` in
the config) hides the findings it lists. An entry is keyed by the file
(relative to the repository root, so the baseline works from any directory), the code, the graph
path, the node and a fingerprint of the finding (code, graph, node name or, for an unnamed node,
its op and outputs, and the message): editing another node, or inserting nodes before it, does not
change it. A finding that was fixed simply no longer matches; its entry is never an error.
Entries count: two identical findings need two entries.

The file is JSON written for review in a pull request: one entry per line, sorted (file, code,
graph, node, fingerprint), so a new or fixed finding is a one-line diff; it is created with the
permissions of any file the user makes (``0o666`` less the umask).

A baseline is a file a pull request can write, so it is read as a model is (a regular file, at
most 256 MiB, UTF-8 JSON nested as the format is, never more), and it never hides an error whose
code means onnxruntime refuses the model (``codes.REFUSAL_CODES``, docs/threat-model.md).
``--write-baseline`` replaces its file atomically (through a link: the link stays) and refuses a
file the same run reads (a model, a settings file, the baseline in force).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence, TypedDict

from ..codes import REFUSAL_CODES
from .config import relative_to_root
from ..diagnostics import Diagnostic, Severity
from ..errors import EXIT_CLEAN, EXIT_FINDINGS, UsageError
from ..io.files import MAX_BASELINE_BYTES, decode_text, read_small_file, write_small_file
from ..io.memory import require_memory
from ..limits import DEFAULT_LIMITS
from .linter import FileResult
from .suppress import fingerprint

SCHEMA = 1


class EntryJSON(TypedDict):
    file: str
    code: str
    graph: str
    node: str | None
    fingerprint: str


ENTRY_KEYS = ("file", "code", "graph", "node", "fingerprint")


@dataclass(frozen=True)
class Baseline:
    path: str
    entries: Counter[tuple[str, str, str]]  # (file, code, fingerprint) -> count


def file_key(path: str, root: str | None) -> str:
    """``path`` relative to ``root`` (the repository), with ``/``; as given when outside it."""
    return relative_to_root(path, root)


def entries_of(results: Sequence[FileResult], root: str | None) -> list[EntryJSON]:
    """The entries of the errors and warnings of ``results``, sorted."""
    out: list[EntryJSON] = []
    for r in results:
        key = file_key(r.path, root)
        for d in r.diagnostics:
            if d.severity is Severity.INFO:
                continue
            fp = fingerprint(d, r.anchors.get((d.location.graph, d.location.node or "")))
            out.append({"file": key, "code": d.code, "graph": d.location.graph, "node": d.location.node,
                        "fingerprint": fp})
    out.sort(key=lambda e: (e["file"], e["code"], e["graph"], e["node"] or "", e["fingerprint"]))
    return out


def refuse_inputs(path: str, inputs: Iterable[str]) -> None:
    """Refuse (exit 2) to write the baseline over a file the run reads: ``inputs`` are the models
    linted and the settings and baseline files in force (the same file by any name or link)."""
    try:
        st = os.stat(path)
    except OSError:
        return  # a new file (or a dangling link): nothing of the run's is there
    for other in inputs:
        try:
            ot = os.stat(other)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == (ot.st_dev, ot.st_ino):
            raise UsageError(f"refusing to write the baseline over {other}, which this run reads", file=path)


def write_baseline(path: str, results: Sequence[FileResult], root: str | None, version: str,
                   inputs: Iterable[str] = ()) -> int:
    """Write the baseline of ``results`` to ``path`` atomically; the number of entries. ``inputs``:
    the files the run read, which the baseline must not replace (``refuse_inputs``)."""
    entries = entries_of(results, root)
    text = baseline_text(entries, version)
    refuse_inputs(path, [*inputs, *(r.path for r in results)])
    write_small_file(path, text.encode("utf-8"), "baseline")  # (with the user's umask, write_small_file)
    return len(entries)


def baseline_text(entries: Sequence[EntryJSON], version: str) -> str:
    """The file: a JSON object whose ``entries`` list holds one entry per line (``json.dumps``
    of each, keys in a fixed order), so that the file diffs line by line."""
    lines = [json.dumps({k: e[k] for k in ENTRY_KEYS}) for e in entries]  # type: ignore[literal-required]
    body = ",\n".join("    " + line for line in lines)
    return ("{\n"
            f'  "shapeflow_version": {json.dumps(version)},\n'
            f'  "schema": {SCHEMA},\n'
            + ('  "entries": [\n' + body + "\n  ]\n" if lines else '  "entries": []\n')
            + "}\n")


# What reading costs per byte of baseline: the bytes, the text, the parsed entries (a dict and
# five strings each) and the counts. Measured: a 48 MB baseline of 300,000 entries peaks at
# 10x its size while read and keeps 4x; with room.
_MEMORY_PER_BYTE = 12


def load_baseline(path: str, max_memory: int = DEFAULT_LIMITS.max_memory) -> Baseline:
    """Read a baseline; a missing or malformed file is a usage error (exit 2)."""
    try:
        data = read_small_file(path, MAX_BASELINE_BYTES, "baseline")
    except FileNotFoundError:
        raise UsageError("baseline file not found (create it with --write-baseline)", file=path) from None
    require_memory(len(data) * _MEMORY_PER_BYTE, max_memory, path)
    text = decode_text(data, path, "baseline")
    del data
    try:
        doc = json.loads(text)
    except RecursionError:
        raise UsageError("cannot read baseline: JSON nested too deep (a baseline is 3 levels deep)",
                         file=path) from None
    except ValueError as exc:
        raise UsageError(f"cannot read baseline: {exc}", file=path) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("entries"), list):
        raise UsageError('not a shapeflow baseline (no "entries" list)', file=path)
    if doc.get("schema", SCHEMA) != SCHEMA:
        raise UsageError(f"baseline schema {doc.get('schema')!r} is not {SCHEMA}", file=path)
    counts: Counter[tuple[str, str, str]] = Counter()
    for e in doc["entries"]:
        if not isinstance(e, dict) or not all(isinstance(e.get(k), str) for k in ("file", "code", "fingerprint")):
            raise UsageError("baseline entry without file, code and fingerprint", file=path)
        counts[(e["file"], e["code"], e["fingerprint"])] += 1
    return Baseline(path, counts)


def unlisted(path: str, diags: Sequence[Diagnostic], anchors: Mapping[tuple[str, str], str],
             baseline: Baseline, root: str | None) -> list[Diagnostic]:
    """The findings of the file ``path`` that ``baseline`` does not list (``lint --fix`` leaves
    the listed ones alone, as it does suppressed ones)."""
    probe = FileResult(path, diagnostics=list(diags), anchors=dict(anchors))
    apply_baseline([probe], baseline, root)
    return probe.diagnostics


def apply_baseline(results: Sequence[FileResult], baseline: Baseline, root: str | None,
                   diff: bool = False) -> int:
    """Drop the findings the baseline lists (in place) and recompute each file's exit code; the
    number of findings hidden."""
    left = Counter(baseline.entries)
    hidden = 0
    for r in results:
        if r.rejected or r.error or not r.diagnostics:
            continue
        key = file_key(r.path, root)
        kept = []
        for d in r.diagnostics:
            if d.code in REFUSAL_CODES and d.severity is Severity.ERROR:
                kept.append(d)  # onnxruntime refuses the model: a file cannot vouch for it
                continue
            k = (key, d.code, fingerprint(d, r.anchors.get((d.location.graph, d.location.node or ""))))
            if left[k] > 0:
                left[k] -= 1
                hidden += 1
            else:
                kept.append(d)
        r.diagnostics = kept
        if r.exit_code == EXIT_FINDINGS and not (diff and r.changed) and \
                not any(d.severity is Severity.ERROR for d in kept):
            r.exit_code = EXIT_CLEAN
    return hidden
