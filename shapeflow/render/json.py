"""JSON output: ``infer --format json`` (SPEC.md section 3) written piece by piece, ``lint --format
json`` and ``optimize --format json``.

The objects themselves are the data of the analysis (``Analysis.to_json``, ``Diagnostic.to_json``);
this module writes them exactly as ``json.dumps(obj, indent=2)`` would.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import islice
from json.encoder import encode_basestring_ascii as _json_str  # the C encoder when available

from .._version import __version__
from ..drivers.analysis import Analysis, dtype_name
from ..results import SCHEMA, LintJSON
from ..diagnostics import Diagnostic
from ..dims import Shape, shape_to_json
from ..opsets import opset_map
from .text import count_by_severity

# The counts of ``optimize``'s report (its text table shows the same three).
OPTIMIZE_COUNTS = ("nodes", "Squeeze", "Unsqueeze")


def infer_json_text(a: Analysis) -> str:
    """``json.dumps(a.to_json(), indent=2)``, byte for byte (see ``infer_json_chunks``)."""
    return "".join(infer_json_chunks(a))


def infer_json_chunks(a: Analysis) -> Iterator[str]:
    """``json.dumps(a.to_json(), indent=2)`` in pieces, to write as they come.

    With ``indent`` the json module serialises in pure Python: on a 500k-node model that took
    twenty seconds, and the whole document (200 MB) was held two or three times over. The tensor
    and node entries are written here from templates, each distinct shape encoded once
    (inference shares one tuple per shape, so identity is a good key; the analysis keeps the
    tuples alive meanwhile); the small rest goes through ``_json_indented``."""
    yield ("{\n"
           f'  "shapeflow_version": {_json_str(__version__)},\n'
           f'  "schema": {SCHEMA},\n'
           '  "model": ' + _json_indented(a.path, "  ") + ",\n"
           '  "opset": ' + _json_indented(opset_map(a.loaded.proto.opset_import), "  ") + ",\n"
           '  "tensors": ')
    yield from _json_list(_tensor_entries(a))
    yield ',\n  "nodes": '
    yield from _json_list(_node_entries(a))
    yield ',\n  "diagnostics": '
    # one at a time: a large model can have a hundred thousand info findings
    yield from _json_list("    " + _json_indented(d.to_json(), "    ") for d in a.diagnostics)
    if a.inference.premises:  # only an output that used assumptions carries them (SPEC.md section 6)
        yield ',\n  "assumptions": ' + _json_indented(list(a.inference.premises), "  ")
    yield "\n}"


def lint_json(n_files: int, diags: Sequence[Diagnostic], counted: Sequence[Diagnostic] | None = None) -> LintJSON:
    """The ``lint --format json`` object of SPEC.md section 3: the reported findings ``diags``,
    and the summary of every finding ``counted`` (default: ``diags``)."""
    c = count_by_severity(diags if counted is None else counted)
    listed = count_by_severity(diags)["info"]
    return {"shapeflow_version": __version__, "schema": SCHEMA, "files": n_files,
            "diagnostics": [d.to_json() for d in diags],
            "summary": {"error": c["error"], "warning": c["warning"], "info": c["info"]},
            "info_not_shown": c["info"] - listed}


def optimize_json(model: str, output: str | None, before: Mapping[str, int], after: Mapping[str, int],
                  rewrites: Mapping[str, int], verified: bool | None, log: Sequence[str] | None = None,
                  skipped: Sequence[str] | None = None) -> dict[str, object]:
    """The ``optimize --format json`` object: counts before and after, the rewrites that fired,
    and with -v / -vv the rewrite log and the rules that did not fire."""
    doc: dict[str, object] = {
        "model": model,
        "output": output,
        "before": {k: before.get(k, 0) for k in OPTIMIZE_COUNTS},
        "after": {k: after.get(k, 0) for k in OPTIMIZE_COUNTS},
        "rewrites": dict(rewrites),
        "verified": verified,
    }
    if log is not None:
        doc["log"] = list(log)
    if skipped is not None:
        doc["skipped"] = list(skipped)
    return doc


def optimize_refused_json(model: str, message: str, diags: Iterable[Diagnostic]) -> dict[str, object]:
    """The ``optimize --format json`` object of a model refused for its error findings."""
    return {"model": model, "output": None, "refused": message, "diagnostics": [d.to_json() for d in diags]}


def dumps(obj: object) -> str:
    """A JSON document as every command writes it (two-space indent)."""
    return json.dumps(obj, indent=2)


def _json_indented(obj: object, indent: str) -> str:
    """``json.dumps(obj, indent=2)`` for a value whose enclosing line is indented by ``indent``.
    Recursion follows the JSON nesting (four levels here), never the graph."""
    if obj is None:
        return "null"
    kind = type(obj)
    if kind is str:
        return _json_str(obj)  # type: ignore[arg-type]  # kind is str
    if kind is int:
        return int.__repr__(obj)
    if kind is bool:
        return "true" if obj else "false"
    if kind is dict:
        if not obj:
            return "{}"
        inner = indent + "  "
        items = []
        for k, v in obj.items():  # type: ignore[attr-defined]
            if type(k) is not str:
                return _json_fallback(obj, indent)
            items.append(inner + _json_str(k) + ": " + _json_indented(v, inner))
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if kind is list or kind is tuple:
        if not obj:
            return "[]"
        inner = indent + "  "
        return "[\n" + ",\n".join([inner + _json_indented(v, inner) for v in obj]) + "\n" + indent + "]"  # type: ignore[attr-defined]
    return _json_fallback(obj, indent)


def _json_fallback(obj: object, indent: str) -> str:
    # Anything else (floats, enums, subclasses) exactly as the json module writes it; its lines
    # are indented relative to the first, so shifting them by ``indent`` puts them in place.
    return json.dumps(obj, indent=2).replace("\n", "\n" + indent)


def _json_list(entries: Iterable[str], batch: int = 4096) -> Iterator[str]:
    """A list of already indented entries (its items at four spaces) as ``json.dumps`` writes it
    inside the top-level object, in pieces of ``batch`` entries (each piece taken in one C call)."""
    it = iter(entries)
    pending = list(islice(it, batch))
    if not pending:
        yield "[]"
        return
    yield "[\n" + ",\n".join(pending)
    while True:
        pending = list(islice(it, batch))
        if not pending:
            break
        yield ",\n" + ",\n".join(pending)
    yield "\n  ]"


def _tensor_entries(a: Analysis) -> Iterator[str]:
    """The entries of the ``tensors`` list of ``to_json`` (as ``tensors_json`` builds them)."""
    ind, inner = "    ", "      "
    shapes: dict[int, str] = {}
    dtypes: dict[int, str] = {}
    declared = a.declared
    for scope, table in zip(a.graph.scopes, a.inference.tensors):
        head = f",\n{inner}\"graph\": {_json_str(scope.path)},\n{inner}\"dtype\": "
        for name, t in table.items():
            if t is None:
                dtype = shape = "null"
            else:
                dtype = dtypes.get(t.dtype)  # type: ignore[assignment]
                if dtype is None:
                    dtype = dtypes[t.dtype] = _json_indented(dtype_name(t.dtype), inner)
                shape = shapes.get(id(t.shape))  # type: ignore[assignment]
                if shape is None:
                    shape = shapes[id(t.shape)] = _json_indented(shape_to_json(t.shape), inner)
            written = declared.get((scope.id, name)) if declared else None
            tail = "" if written is None else f",\n{inner}\"declared_shape\": {_json_indented(list(written), inner)}"
            yield (f"{ind}{{\n{inner}\"name\": {_json_str(name)}{head}{dtype},\n"
                   f"{inner}\"shape\": {shape}{tail}\n{ind}}}")


def _node_entries(a: Analysis) -> Iterator[str]:
    """The entries of the ``nodes`` list of ``to_json`` (as ``nodes_json`` builds them)."""
    ind, inner = "    ", "      "
    # encoded shapes, axes and graph paths by identity (separate tables: one tuple may be both)
    shapes: dict[int, str] = {}
    axes_texts: dict[int, str] = {}
    paths: dict[int, str] = {}

    def enc(cache: dict[int, str], value: object, json_value: object) -> str:
        text = cache.get(id(value))
        if text is None:
            text = cache[id(value)] = _json_indented(json_value, inner)
        return text

    def enc_shape(shape: Shape) -> str:
        # (as ``enc``, with the JSON value made only on a miss: most nodes share interned shapes)
        text = shapes.get(id(shape))
        if text is None:
            text = shapes[id(shape)] = _json_indented(shape_to_json(shape), inner)
        return text

    versions: dict[int, str] = {}  # by value: a model has a few
    # The text between the name and the input, and after the output, by what decides it: a large
    # model has a few of each (interned shapes and axes, one path object per graph)
    heads: dict[tuple[int, str, object], str] = {}
    tails: dict[tuple[int, int, int], str] = {}
    for n in a.inference.axis_nodes:
        key = (id(n.graph), n.op_type, n.since_version)
        head = heads.get(key)
        if head is None:
            since = versions.get(n.since_version) if type(n.since_version) is int else None
            if since is None:
                since = _json_indented(n.since_version, inner)
                if type(n.since_version) is int:
                    versions[n.since_version] = since
            head = heads[key] = (f",\n{inner}\"graph\": {enc(paths, n.graph, n.graph)},\n"
                                 f"{inner}\"op_type\": {_json_str(n.op_type)},\n"
                                 f"{inner}\"since_version\": {since},\n"
                                 f"{inner}\"input\": ")
        tkey = (id(n.normalized), id(n.input_shape), id(n.output_shape))
        tail = tails.get(tkey)
        if tail is None:
            axes = "null" if n.normalized is None else enc(axes_texts, n.normalized, list(n.normalized))
            tail = tails[tkey] = (f",\n{inner}\"axes\": {axes},\n"
                                  f"{inner}\"input_shape\": {enc_shape(n.input_shape)},\n"
                                  f"{inner}\"output_shape\": {enc_shape(n.output_shape)}\n"
                                  f"{ind}}}")
        yield (f"{ind}{{\n{inner}\"name\": {_json_str(n.node)}{head}{_json_str(n.input)},\n"
               f"{inner}\"output\": {_json_str(n.output)}{tail}")
