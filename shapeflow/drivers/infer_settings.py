"""``infer`` (the command and the API) under a model's settings, and the check of ``--dim`` names.

Kept apart from the lint driver (``workspace``): ``infer`` starts fast, and the linter's imports
(process pools, the fixes) are not needed here.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from . import suppress
from .analysis import Analysis, analyze
from ..assume import parse_assumptions
from .config import CommandLine, ConfigCache, resolve, severity_table
from ..diagnostics import Severity
from ..inference import Progress
from ..io import LoadedModel
from ..limits import DEFAULT_LIMITS, Limits
from ..rules import select_rules


def infer_with_settings(loaded: LoadedModel, *, dims: Mapping[str, int] | None = None,
                        limits: Limits = DEFAULT_LIMITS, config: str | None = None, isolated: bool = False,
                        progress: Progress | None = None, assume: Sequence[str] = ()) -> Analysis:
    """``analyze`` for ``infer`` (the command and the API) under the model's settings: the rules
    its config selects (among SF0xx/SF1xx, what infer reports), their severities and the in-model
    suppressions, findings in graph order. ``assume`` (``--assume``) replaces the config's
    ``assume``; those must name symbols of the model, the config's apply where they do."""
    settings = ConfigCache(config, isolated).for_path(loaded.path or "model.onnx")
    resolved = resolve(settings, CommandLine(assume=tuple(assume)), loaded.path)
    rules = [r for r in select_rules(ignore=["SF2"]) if r.code in resolved.codes]
    assumptions = parse_assumptions(resolved.assume, "--assume" if assume else "assume")
    result = analyze(loaded, dims=dims, limits=limits, rules=rules, progress=progress,
                     assumptions=assumptions, only_known_symbols=not assume)
    table: dict[str, Severity] = severity_table(resolved.severity) if resolved.severity else {}
    diags = result.diagnostics
    if table:
        diags = [d.with_severity(table[d.code]) if d.code in table and table[d.code] is not d.severity else d
                 for d in diags]
    # --isolated: no in-model marker is read either (SPEC.md section 7)
    result.diagnostics, _ = suppress.apply(loaded.path, loaded.proto, loaded.raw, diags, resolved.codes, table,
                                           markers=not isolated)
    return result


def unknown_symbols(loaded: LoadedModel, names: Sequence[str]) -> list[str]:
    """The names among ``names`` that no ``dim_param`` of the model declares (``--dim nosuch=3``)."""
    raw = loaded.raw
    candidates = {n for n in names if n.encode() in raw}  # a byte search rules most typos out at once
    missing = set(names) - candidates
    if candidates:
        for deep in (False, True):  # nested graphs only when the top level did not declare them all
            left = candidates - _symbols(loaded, deep)
            if not left:
                break
        missing |= left
    return sorted(missing)


def _symbols(loaded: LoadedModel, deep: bool) -> set[str]:
    out: set[str] = set()
    for _, body in suppress.iter_bodies(loaded.proto, deep):
        for field_name in ("input", "output", "value_info"):
            for vi in getattr(body, field_name, ()):
                if not isinstance(vi, str):  # a function's inputs and outputs are names only
                    out.update(d.dim_param for d in vi.type.tensor_type.shape.dim if d.dim_param)
    return out
