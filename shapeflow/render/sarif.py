"""``lint --format sarif``: SARIF 2.1.0 as GitHub code scanning ingests it.

- ``tool.driver.rules``: every rule, with its documentation from the docstrings (short and full
  description, help as text and Markdown, default level), so an alert explains itself.
- one result per finding: ``ruleId``/``ruleIndex``, ``level``, the message (with its hint), a
  physical location on the model file (a repository-relative URI with forward slashes; a binary
  file has no lines, so the region is line 1, which GitHub requires) and a logical location for the
  node (``main/sq_3``, kind ``function``: a node is an operator call) or tensor (kind ``variable``).
- ``partialFingerprints`` from the finding's rule, file, graph, node and message: GitHub would
  otherwise hash "line 1" of a binary file and merge unrelated alerts.

The log stays within code scanning's documented limits (one run of at most 20 per file; the
rules, tags and locations far below theirs): at most ``MAX_RESULTS`` results (GitHub accepts
25,000 per run but keeps only the first 5,000, by severity) and ``MAX_RESULT_BYTES`` of them
(an upload is refused above 10 MB). When findings do not fit, the most severe are kept (errors,
then warnings, then info, each in their order), and the log says so: a warning notification and
the run's ``properties`` (``resultsTruncated``, ``resultsTotal``).
"""

from __future__ import annotations

import hashlib
import json
import os
import urllib.parse
from typing import Iterable, Sequence

from ..diagnostics import Diagnostic, Severity
from .docs import flat, full_description, plain, rule_markdown, rule_text, sections
from ..rules import ALL_RULES, Rule
from .._version import PROJECT_URL, RULES_DOC_URL

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = PROJECT_URL
SRCROOT = "SRCROOT"  # the originalUriBaseIds key of the repository root

LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
# GitHub code scanning: results it keeps per run, and a budget for their bytes under its 10 MB
# upload limit (the rules' help text takes about 100 KB more)
MAX_RESULTS = 5000
MAX_RESULT_BYTES = 8_000_000


def relative_path(path: str, base: str | None = None) -> str:
    """``path`` with forward slashes, relative to ``base`` (default: the current directory) when
    it lies inside it; otherwise as given (normalised)."""
    base = os.path.abspath(base or os.getcwd())
    p = os.path.normpath(path)
    rel = os.path.relpath(os.path.abspath(p), base)
    if rel != os.pardir and not rel.startswith(os.pardir + os.sep):
        p = rel
    return p.replace(os.sep, "/")


def artifact_uri(path: str, base: str | None = None) -> str:
    """``relative_path`` as a URI reference (percent-encoded; ``file://`` when still absolute)."""
    p = relative_path(path, base)
    quoted = urllib.parse.quote(p, safe="/")
    return "file://" + quoted if p.startswith("/") else quoted


def rule_descriptor(rule: type[Rule]) -> dict[str, object]:
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": plain(flat(sections(rule)["summary"]))},
        "fullDescription": {"text": plain(full_description(rule))},
        "help": {"text": rule_text(rule), "markdown": rule_markdown(rule)},
        "helpUri": f"{RULES_DOC_URL}#{rule.code.lower()}-{rule.name}",
        "defaultConfiguration": {"level": LEVELS[rule.severity]},
        "properties": {
            "tags": ["onnx", _category(rule.code)],
            "precision": "very-high",
            "fixable": rule.fixable,
        },
    }


def _category(code: str) -> str:
    return {"SF0": "model", "SF1": "shapes", "SF2": "optimization"}.get(code[:3], "other")


def _fingerprint(d: Diagnostic, uri: str) -> str:
    loc = d.location
    key = "\x1f".join([d.code, uri, loc.graph, loc.node or "", loc.tensor or "", d.message])
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def _inside(path: str, base: str | None) -> bool:
    if base is None:
        return False
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(base))
    return rel != os.pardir and not rel.startswith(os.pardir + os.sep)


def result(d: Diagnostic, rule_index: dict[str, int], base: str | None = None,
           root: str | None = None) -> dict[str, object]:
    """One SARIF result. With ``root`` (the repository's top level), a file inside it is named
    relative to it, against the ``SRCROOT`` base."""
    loc = d.location
    in_root = _inside(d.file, root)
    uri = artifact_uri(d.file, root if in_root else base)
    text = d.message if not d.hint else f"{d.message}\nHint: {d.hint}"
    if loc.node is not None:
        label = f" ({loc.op_label})" if loc.op_label else ""
        where = f"{loc.graph}: " if loc.graph != "main" else ""
        text = f"{where}node '{loc.node}'{label}: {text}"
    elif loc.tensor is not None:
        text = f"tensor '{loc.tensor}': {text}"
    location: dict[str, object] = {
        "physicalLocation": {"artifactLocation": {"uri": uri, "uriBaseId": SRCROOT} if in_root else {"uri": uri},
                             "region": {"startLine": 1}},
    }
    logical = []
    if loc.node is not None:
        logical.append({"name": loc.node, "fullyQualifiedName": f"{loc.graph}/{loc.node}", "kind": "function"})
    elif loc.tensor is not None:
        logical.append({"name": loc.tensor, "fullyQualifiedName": f"{loc.graph}/{loc.tensor}", "kind": "variable"})
    if logical:
        location["logicalLocations"] = logical
    out: dict[str, object] = {
        "ruleId": d.code,
        "level": LEVELS[d.severity],
        "message": {"text": text},
        "locations": [location],
        "partialFingerprints": {"primaryLocationLineHash": _fingerprint(d, uri) + ":1"},
        "properties": {"fixable": d.fixable},
    }
    if d.code in rule_index:
        out["ruleIndex"] = rule_index[d.code]
    if loc.op_type is not None:
        out["properties"]["opType"] = loc.op_label  # type: ignore[index]
    return out


def truncation_note(kept: int, total: int) -> str:
    return (f"{kept:,} of {total:,} findings are in this SARIF file (GitHub code scanning keeps "
            f"{MAX_RESULTS:,} results per run): errors first, then warnings, then info; "
            "--format json lists them all")


def kept_results(diags: Sequence[Diagnostic], index: dict[str, int], base: str | None = None,
                 root: str | None = None) -> tuple[list[dict[str, object]], int]:
    """The results of ``diags`` that fit the limits (``MAX_RESULTS``, ``MAX_RESULT_BYTES``), the
    most severe first, in their own order; and how many findings there were."""
    order = sorted(range(len(diags)), key=lambda k: -diags[k].severity.rank)  # (stable: order kept within a level)
    chosen: dict[int, dict[str, object]] = {}
    size = 0
    for k in order[:MAX_RESULTS]:
        res = result(diags[k], index, base, root)
        size += len(json.dumps(res)) + 8
        if size > MAX_RESULT_BYTES:
            break
        chosen[k] = res
    return [chosen[k] for k in sorted(chosen)], len(diags)


def sarif_log(diags: Sequence[Diagnostic], *, version: str, successful: bool = True,
              notifications: Iterable[str] = (), base: str | None = None,
              root: str | None = None) -> dict[str, object]:
    """The whole SARIF log of one lint run. ``notifications`` are one-line failures that are not
    findings (internal errors); ``successful`` is False when there were any. ``root``: the
    repository's top level (paths inside it are relative to it, ``originalUriBaseIds``)."""
    rules = list(ALL_RULES)
    index = {r.code: k for k, r in enumerate(rules)}
    results, total = kept_results(diags, index, base, root)
    invocation: dict[str, object] = {"executionSuccessful": successful}
    notes: list[dict[str, object]] = [{"level": "error", "message": {"text": n}} for n in notifications]
    run: dict[str, object] = {}
    if len(results) < total:
        notes.append({"level": "warning", "message": {"text": truncation_note(len(results), total)}})
        run["properties"] = {"resultsTruncated": True, "resultsTotal": total}
    if notes:
        invocation["toolExecutionNotifications"] = notes
    if root is not None:
        root_uri = "file://" + urllib.parse.quote(os.path.abspath(root).replace(os.sep, "/").rstrip("/"), safe="/") + "/"
        run["originalUriBaseIds"] = {SRCROOT: {"uri": root_uri if root_uri.startswith("file:///") else
                                               "file:///" + root_uri[len("file://"):]}}
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                **run,
                "tool": {
                    "driver": {
                        "name": "shapeflow",
                        "version": version,
                        "informationUri": INFORMATION_URI,
                        "rules": [rule_descriptor(r) for r in rules],
                    }
                },
                "invocations": [invocation],
                "results": results,
                "columnKind": "unicodeCodePoints",
            }
        ],
    }
