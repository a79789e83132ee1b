"""Suppressions written in the model (SPEC.md section 7), the unused-suppression rule SF008, graph
order of findings, and ``lint --add-ignore``.

Markers:

- a node's ``metadata_props`` entry ``shapeflow.ignore`` = ``"SF105,SF11"`` (IR 10 and later have
  node metadata);
- ``shapeflow: ignore[SF105,SF11]`` in a node's ``doc_string`` (any IR);
- the model's own ``metadata_props`` entry ``shapeflow.ignore``: the whole file.

The grammar of a marker's value, exactly: entries separated by ``,``, blanks around an entry
ignored, empty entries skipped; an entry is a code (``SF`` and three digits: ``SF105``), a code
prefix (``SF`` and one or two digits: ``SF1``, ``SF10``) or a rule name as ``shapeflow rules``
lists it (``squeeze-symbolic-dim``). Upper-case ``SF``, ASCII digits, nothing else: a bare
``SF``, a lower-case ``sf104`` or a name in another case names no rule (SF008 says so), so the
file under review cannot hide every rule at once. In a ``doc_string`` the value is what lies
between ``shapeflow:``, blanks, ``ignore[`` and the next ``]``.

A marker never hides a finding whose code means onnxruntime refuses the model (``Code.refusal``,
``codes.REFUSAL_CODES``): the model is the input under review, and it cannot vouch for itself
(SPEC.md section 8). An entry that names only such codes is reported by SF008. ``lint
--isolated`` reads no marker at all.

The lint driver calls ``apply`` once per file, after the rules (and ``--fix``) have run: it drops
the suppressed findings, adds an SF008 finding for each marker entry that suppressed nothing, and
puts the findings in graph order (scope, then node position in its graph; not by name). Finding
the markers is linear in the size of the model (``doc_markers`` scans each doc string once).
"""

from __future__ import annotations

import functools
import hashlib
import re
import time
from dataclasses import dataclass, field
from typing import Iterator, Mapping, Sequence

from .._onnx import onnx
from ..codes import BY_NAME, REFUSAL_CODES
from ..diagnostics import Diagnostic, Location, Severity
from ..errors import LimitExceededError
from ..rules import ALL_RULES, REJECTION_RULES

KEY = "shapeflow.ignore"
_DOC_HEAD = "shapeflow:"
_DOC_OPEN = "ignore["
_ENTRY = re.compile(r"SF[0-9]{1,3}\Z")  # a code or a code prefix (fullmatch with \Z: no trailing newline)
UNUSED_CODE = "SF008"
UNUSED_NAME = "unused-suppression"
# What no marker hides (SPEC.md section 7): what onnxruntime refuses, and the codes of a file that
# was not checked at all (SF001, SF002, SF006; such a file never reaches the markers anyway).
UNSUPPRESSIBLE = REFUSAL_CODES | frozenset(r.code for r in REJECTION_RULES)
_MARK = KEY.encode()
_MARK_DOC = b"shapeflow:"


@dataclass
class Marker:
    """One suppression marker: where it is and the selectors it lists."""

    graph: str | None  # None: the model-wide marker
    node: str | None
    op_type: str | None
    selectors: tuple[str, ...]
    codes: dict[str, frozenset[str]] = field(default_factory=dict)  # selector -> codes it names
    used: set[str] = field(default_factory=set)  # selectors that suppressed something
    by_code: dict[str, str] = field(default_factory=dict)  # code -> the first selector naming it
    more: int = 0  # entries naming no rule past the first MAX_UNKNOWN_ENTRIES: counted, not kept

    def matching(self, code: str) -> str | None:
        return self.by_code.get(code)


def parse_list(text: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in text.split(",") if p.strip())


# A marker names at most a few hundred distinct things that are rules (codes, prefixes, names);
# what names none is kept for SF008 up to this many per marker, and only counted past it: an 8 MB
# marker of a million made-up names cost 1 GB and 52 s, one SF008 finding each.
MAX_UNKNOWN_ENTRIES = 16
# SF008 findings listed per file; past it, one more finding says how many were left out.
MAX_UNUSED_REPORTED = 1000


def _entries(text: str) -> Iterator[str]:
    """The entries of a marker's value (``parse_list``), one at a time: no list of them all."""
    pos = 0
    n = len(text)
    while pos <= n:
        comma = text.find(",", pos)
        if comma < 0:
            comma = n
        entry = text[pos:comma].strip()
        if entry:
            yield entry
        pos = comma + 1


class _Collected:
    """The distinct entries of one marker, in order: every one that names a rule (a bounded set),
    the first ``MAX_UNKNOWN_ENTRIES`` that name none, and how many more of those there were."""

    def __init__(self, deadline: Deadline | None) -> None:
        self.kept: dict[str, None] = {}
        self.unknown = 0
        self.more = 0
        self.deadline = deadline

    def add(self, text: str) -> None:
        kept, tick = self.kept, self.deadline.tick if self.deadline is not None else None
        for entry in _entries(text):
            if tick is not None:
                tick()
            if entry in kept:
                continue
            if (entry.startswith("SF") or entry in BY_NAME) and _codes_of(entry):
                kept[entry] = None
            elif self.unknown < MAX_UNKNOWN_ENTRIES:
                kept[entry] = None
                self.unknown += 1
            else:
                self.more += 1


def marker_codes(entry: str) -> frozenset[str]:
    """The codes one marker entry names (the grammar of the module docstring); empty when it names
    no rule. Stricter than ``--select``'s selectors on purpose: the model is untrusted input."""
    if _ENTRY.match(entry):
        return frozenset(r.code for r in ALL_RULES if r.code.startswith(entry))
    code = BY_NAME.get(entry)
    if code is not None and any(r.code == code.code for r in ALL_RULES):
        return frozenset((code.code,))
    return frozenset()


_codes_of = functools.lru_cache(maxsize=4096)(marker_codes)  # (the entries that name rules are few)


def doc_markers(doc: str) -> list[str]:
    """The values of the ``shapeflow: ignore[...]`` markers of a doc string, in order, found in one
    pass (a regular expression with a ``[^]]*`` group rescans the rest of the text at each unclosed
    ``ignore[``: quadratic on a hostile doc string)."""
    out: list[str] = []
    n = len(doc)
    pos = 0
    while True:
        k = doc.find(_DOC_HEAD, pos)
        if k < 0:
            return out
        j = k + len(_DOC_HEAD)
        while j < n and doc[j].isspace():
            j += 1
        if not doc.startswith(_DOC_OPEN, j):
            pos = j  # (no marker starts inside "shapeflow:" or the blanks after it)
            continue
        start = j + len(_DOC_OPEN)
        close = doc.find("]", start)
        if close < 0:
            return out  # no later marker can be closed either
        out.append(doc[start:close])
        pos = close + 1


@dataclass
class ScopeIndex:
    """Node positions by graph path and display id (name, or ``#index`` for an unnamed node),
    walked from the proto in the index's order of scopes."""

    rank: dict[str, int] = field(default_factory=dict)  # graph path -> order of discovery
    position: dict[str, dict[str, int]] = field(default_factory=dict)  # graph -> display id -> index
    bodies: dict[str, object] = field(default_factory=dict)  # graph path -> GraphProto / FunctionProto

    def node(self, graph: str, display: str) -> onnx.NodeProto | None:
        pos = self.position.get(graph, {}).get(display)
        return None if pos is None else self.bodies[graph].node[pos]  # type: ignore[attr-defined]


def iter_bodies(model: onnx.ModelProto, deep: bool = True) -> Iterator[tuple[str, object]]:
    """(path, body) of the main graph, the functions, then (``deep``) every nested graph,
    breadth-first, named as ``graph.build_graph`` names them."""
    pending: list[tuple[str, object]] = [("main", model.graph)]
    pending += [(f"{fn.domain}::{fn.name}", fn) for fn in model.functions]
    k = 0
    while k < len(pending):
        path, body = pending[k]
        k += 1
        yield path, body
        if not deep:
            continue
        for index, node in enumerate(body.node):  # type: ignore[attr-defined]
            if not node.attribute:
                continue
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    pending.append((f"{path}/{node.name or f'#{index}'}.{attr.name}", attr.g))
                elif attr.type == onnx.AttributeProto.GRAPHS:
                    for j, sub in enumerate(attr.graphs):
                        pending.append((f"{path}/{node.name or f'#{index}'}.{attr.name}[{j}]", sub))


def node_anchor(node: onnx.NodeProto) -> str:
    """What identifies a node across unrelated edits: its name, or for an unnamed node its op
    and outputs (never its index)."""
    if node.name:
        return node.name
    return f"{node.domain + '::' if node.domain else ''}{node.op_type}({','.join(node.output)})"


def fingerprint(d: Diagnostic, anchor: str | None) -> str:
    """A short hash of what a finding says and where, for the baseline."""
    loc = d.location
    text = "\x1f".join((d.code, loc.graph, anchor or loc.node or "", loc.tensor or "", d.message))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _index(model: onnx.ModelProto, graphs: set[str] | None) -> ScopeIndex:
    """Index the scopes named in ``graphs`` (None: all). Nested graphs are walked only when one is
    asked for: for the main graph of a large model this is one pass over the node names."""
    deep = graphs is None or any(g != "main" and "/" in g for g in graphs)
    idx = ScopeIndex()
    for rank, (path, body) in enumerate(iter_bodies(model, deep)):
        idx.rank[path] = rank
        if graphs is not None and path not in graphs:
            continue
        names = [n.name for n in body.node]  # type: ignore[attr-defined]
        # the first of equal names wins: built from the end
        pos = dict(zip(reversed(names), range(len(names) - 1, -1, -1)))
        pos.pop("", None)
        if len(pos) < len(names):  # unnamed nodes: "#index"
            pos.update({f"#{i}": i for i, name in enumerate(names) if not name})
        idx.position[path] = pos
        idx.bodies[path] = body
    return idx


def collect_markers(model: onnx.ModelProto, idx: ScopeIndex, deadline: Deadline | None = None) -> list[Marker]:
    markers: list[Marker] = []
    # every model-wide entry in one marker: a finding is then matched against at most two
    found = _Collected(deadline)
    for entry in model.metadata_props:
        if entry.key == KEY:
            found.add(entry.value)
    if found.kept or found.more:
        markers.append(Marker(None, None, None, tuple(found.kept), more=found.more))
    has_meta = "metadata_props" in onnx.NodeProto.DESCRIPTOR.fields_by_name
    for graph, positions in idx.position.items():
        body_nodes = idx.bodies[graph].node  # type: ignore[attr-defined]
        for display, i in positions.items():
            node = body_nodes[i]
            found = _Collected(deadline)
            if has_meta:
                for entry in node.metadata_props:
                    if entry.key == KEY:
                        found.add(entry.value)
            if node.doc_string:
                for value in doc_markers(node.doc_string):
                    found.add(value)
            if found.kept or found.more:
                markers.append(Marker(graph, display, node.op_type, tuple(found.kept), more=found.more))
            if deadline is not None:
                deadline.tick()
    for m in markers:
        m.codes = {s: _codes_of(s) for s in m.selectors}
        for s in m.selectors:
            for code in m.codes[s]:
                if code not in UNSUPPRESSIBLE:  # the model cannot vouch for itself (module docstring)
                    m.by_code.setdefault(code, s)
    return markers


class Deadline:
    """The file's ``--timeout``, checked every few thousand steps of a phase that walks the model."""

    def __init__(self, timeout: float, file: str, started: float | None = None) -> None:
        self.timeout = timeout
        self.file = file
        self.at = (time.monotonic() if started is None else started) + timeout
        self.steps = 0

    def tick(self) -> None:
        self.steps += 1
        if self.steps & 4095 == 0 and time.monotonic() > self.at:
            raise LimitExceededError("timeout", f"{self.timeout:g} s", "--timeout", file=self.file)


def apply(file: str, proto: onnx.ModelProto, raw: bytes, diags: Sequence[Diagnostic],
          enabled: frozenset[str] | set[str], severity: Mapping[str, Severity], *, markers: bool = True,
          deadline: Deadline | None = None) -> tuple[list[Diagnostic], dict[tuple[str, str], str]]:
    """The findings of one file after its in-model suppressions (none read with ``markers=False``:
    ``--isolated``), plus SF008 findings, in graph order; and the anchors (``node_anchor``) of the
    unnamed nodes they are at, for the baseline's fingerprints (a named node's anchor is its name,
    which the finding carries). ``deadline``: the file's time limit (LimitExceededError)."""
    has_markers = markers and (_MARK in raw or _MARK_DOC in raw)  # a byte search skips the walk for most models
    if not diags and not has_markers:
        return [], {}
    idx = _index(proto, None if has_markers else {d.location.graph for d in diags})
    kept = list(diags)
    if has_markers:
        written = collect_markers(proto, idx, deadline)
        if written:
            kept = _filter(kept, written)
            if UNUSED_CODE in enabled:
                kept.extend(_unused(written, enabled, severity, file))
    # Graph order: scope, then the node's position in it (findings without a node first). The
    # list comes sorted by (graph, code, node name, message): a stable sort on the position alone
    # keeps code, then message, order among the findings of one node. One int key per finding.
    big = len(idx.rank) + 1
    rank, position = idx.rank, idx.position
    nowhere: dict[str, int] = {}
    last = (1 << 40) - 2
    keys = []
    for d in kept:
        loc = d.location
        node = loc.node
        pos = position.get(loc.graph, nowhere).get(node, last) if node is not None else -1
        keys.append((rank.get(loc.graph, big) << 40) + pos + 1)
    if any(a > b for a, b in zip(keys, keys[1:])):
        order = sorted(range(len(kept)), key=keys.__getitem__)
        kept = [kept[i] for i in order]
    anchors: dict[tuple[str, str], str] = {}
    for d in kept:
        loc = d.location
        if loc.node is not None and loc.node.startswith("#"):
            node = idx.node(loc.graph, loc.node)
            if node is not None:
                anchors[(loc.graph, loc.node)] = node_anchor(node)
    return kept, anchors


def _filter(diags: list[Diagnostic], markers: list[Marker]) -> list[Diagnostic]:
    by_node: dict[tuple[str | None, str | None], list[Marker]] = {}
    for m in markers:
        by_node.setdefault((m.graph, m.node), []).append(m)
    model_wide = by_node.get((None, None), [])
    out = []
    for d in diags:
        loc = d.location
        suppressed = False
        for m in (*by_node.get((loc.graph, loc.node), ()), *model_wide) if loc.node is not None else model_wide:
            s = m.matching(d.code)
            if s is not None:
                m.used.add(s)
                suppressed = True
        if not suppressed:
            out.append(d)
    return out


def _unused(markers: list[Marker], enabled: frozenset[str] | set[str], severity: Mapping[str, Severity],
            file: str) -> list[Diagnostic]:
    level = severity.get(UNUSED_CODE, Severity.INFO)
    out: list[Diagnostic] = []
    left_out = 0
    for m in markers:
        if m.node is None:
            where, loc = "model metadata", Location()
        else:
            where, loc = f"node '{m.node}'", Location(m.graph or "main", m.node, m.op_type)
        if m.more:
            if len(out) < MAX_UNUSED_REPORTED:
                out.append(Diagnostic(UNUSED_CODE, UNUSED_NAME, level, file,
                                      f"{m.more:,} more entries of the marker on {where} name no rule "
                                      f"(the first {MAX_UNKNOWN_ENTRIES} are reported)",
                                      f"remove them from the {KEY} marker", False, loc))
            else:
                left_out += m.more
        for s in m.selectors:
            if s in m.used:
                continue
            codes = m.codes[s]
            if codes and not (codes & enabled):
                continue  # the rule did not run: whether the marker is needed is unknown
            if len(out) >= MAX_UNUSED_REPORTED:
                left_out += 1
                continue
            if not codes:
                what = "names no rule"
            elif codes <= UNSUPPRESSIBLE:
                what = (f"cannot suppress {', '.join(sorted(codes))}: onnxruntime refuses a model with "
                        "such a finding, and only the command line can hide it")
            else:
                what = "suppresses nothing"
            out.append(Diagnostic(UNUSED_CODE, UNUSED_NAME, level, file,
                                  f"suppression '{s}' on {where} {what}",
                                  f"remove '{s}' from the {KEY} marker", False, loc))
    if left_out:
        out.append(Diagnostic(UNUSED_CODE, UNUSED_NAME, level, file,
                              f"{left_out:,} more suppression entries suppress nothing or name no rule "
                              f"(the first {MAX_UNUSED_REPORTED:,} findings are listed)",
                              f"remove them from the {KEY} markers", False, Location()))
    return out


# -- --add-ignore ------------------------------------------------------------------------------------

def add_markers(model: onnx.ModelProto, diags: Sequence[Diagnostic]) -> int:
    """Write a marker for each finding into ``model`` (in place): the node's ``metadata_props``
    (IR 10+), else its ``doc_string``; a finding without a node goes to the model's own marker.
    Only the markers change. Returns the number of markers written or extended."""
    wanted: dict[tuple[str, str] | None, list[str]] = {}
    for d in diags:
        loc = d.location
        key = (loc.graph, loc.node) if loc.node is not None else None
        codes = wanted.setdefault(key, [])
        if d.code not in codes:
            codes.append(d.code)
    if not wanted:
        return 0
    idx = _index(model, {k[0] for k in wanted if k is not None})
    node_meta = model.ir_version >= 10 and "metadata_props" in onnx.NodeProto.DESCRIPTOR.fields_by_name
    written = 0
    for key, codes in wanted.items():
        if key is None:
            written += _merge_props(model.metadata_props, codes)
            continue
        node = idx.node(*key)
        if node is None:  # the node is gone (a --fix rewrote it): the model-wide marker would hide too much
            continue
        if node_meta:
            written += _merge_props(node.metadata_props, codes)
        else:
            present = {c for value in doc_markers(node.doc_string) for c in parse_list(value)}
            new = [c for c in codes if c not in present]
            if new:
                sep = " " if node.doc_string and not node.doc_string.endswith((" ", "\n")) else ""
                node.doc_string = f"{node.doc_string}{sep}shapeflow: ignore[{','.join(new)}]"
                written += 1
    return written


def _merge_props(props: object, codes: list[str]) -> int:
    for entry in props:  # type: ignore[attr-defined]
        if entry.key == KEY:
            present = parse_list(entry.value)
            new = [c for c in codes if c not in present]
            if not new:
                return 0
            entry.value = ",".join((*present, *new))
            return 1
    entry = props.add()  # type: ignore[attr-defined]
    entry.key = KEY
    entry.value = ",".join(codes)
    return 1
