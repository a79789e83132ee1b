"""Suppressions written in the model (SPEC.md section 7), the unused-suppression rule SF008, graph
order of findings, and ``lint --add-ignore``.

Markers:

- a node's ``metadata_props`` entry ``shapeflow.ignore`` = ``"SF105,SF11"`` (codes, prefixes or
  rule names; IR 10 and later have node metadata);
- ``shapeflow: ignore[SF105,SF11]`` in a node's ``doc_string`` (any IR);
- the model's own ``metadata_props`` entry ``shapeflow.ignore``: the whole file.

The lint driver calls ``apply`` once per file, after the rules (and ``--fix``) have run: it drops
the suppressed findings, adds an SF008 finding for each marker entry that suppressed nothing, and
puts the findings in graph order (scope, then node position in its graph; not by name).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Iterator, Mapping, Sequence

from .._onnx import onnx
from ..diagnostics import Diagnostic, Location, Severity
from ..rules import resolve_selector

KEY = "shapeflow.ignore"
_DOC = re.compile(r"shapeflow:\s*ignore\[([^\]]*)\]")
UNUSED_CODE = "SF008"
UNUSED_NAME = "unused-suppression"
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

    def matching(self, code: str) -> str | None:
        for s in self.selectors:
            if code in self.codes[s]:
                return s
        return None


def parse_list(text: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in text.split(",") if p.strip())


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


def collect_markers(model: onnx.ModelProto, idx: ScopeIndex) -> list[Marker]:
    markers: list[Marker] = []
    for entry in model.metadata_props:
        if entry.key == KEY:
            markers.append(Marker(None, None, None, parse_list(entry.value)))
    has_meta = "metadata_props" in onnx.NodeProto.DESCRIPTOR.fields_by_name
    for graph, positions in idx.position.items():
        body_nodes = idx.bodies[graph].node  # type: ignore[attr-defined]
        for display, i in positions.items():
            node = body_nodes[i]
            found: list[str] = []
            if has_meta:
                for entry in node.metadata_props:
                    if entry.key == KEY:
                        found.extend(parse_list(entry.value))
            if node.doc_string:
                for match in _DOC.finditer(node.doc_string):
                    found.extend(parse_list(match.group(1)))
            if found:
                markers.append(Marker(graph, display, node.op_type, tuple(dict.fromkeys(found))))
    for m in markers:
        m.codes = {s: frozenset(resolve_selector(s)) for s in m.selectors}
    return markers


def apply(file: str, proto: onnx.ModelProto, raw: bytes, diags: Sequence[Diagnostic],
          enabled: frozenset[str] | set[str], severity: Mapping[str, Severity]
          ) -> tuple[list[Diagnostic], dict[tuple[str, str], str]]:
    """The findings of one file after its in-model suppressions, plus SF008 findings, in graph
    order; and the anchors (``node_anchor``) of the unnamed nodes they are at, for the baseline's
    fingerprints (a named node's anchor is its name, which the finding carries)."""
    has_markers = _MARK in raw or _MARK_DOC in raw  # a byte search skips the walk for most models
    if not diags and not has_markers:
        return [], {}
    idx = _index(proto, None if has_markers else {d.location.graph for d in diags})
    kept = list(diags)
    if has_markers:
        markers = collect_markers(proto, idx)
        if markers:
            kept = _filter(kept, markers)
            if UNUSED_CODE in enabled:
                kept.extend(_unused(markers, enabled, severity, file))
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
    out = []
    for m in markers:
        for s in m.selectors:
            if s in m.used:
                continue
            codes = m.codes[s]
            if codes and not (codes & enabled):
                continue  # the rule did not run: whether the marker is needed is unknown
            if m.node is None:
                where, loc = "model metadata", Location()
            else:
                where, loc = f"node '{m.node}'", Location(m.graph or "main", m.node, m.op_type)
            what = "names no rule" if not codes else "suppresses nothing"
            out.append(Diagnostic(UNUSED_CODE, UNUSED_NAME, level, file,
                                  f"suppression '{s}' on {where} {what}",
                                  f"remove '{s}' from the {KEY} marker", False, loc))
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
            present = {c for m in _DOC.finditer(node.doc_string) for c in parse_list(m.group(1))}
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
