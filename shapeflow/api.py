"""The typed Python API, under the names of the commands: ``infer``, ``lint``, ``optimize``, ``diff``;
and ``load_graph``, the model as a networkx graph."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Mapping, Sequence

from .analysis import Analysis, analyze
from .assume import parse_assumptions
from .io import load_model, save_model
from .limits import DEFAULT_LIMITS, Limits
from .linter import FileResult, LintOptions, lint_paths
from .modeldiff import ModelDiff, diff_models
from .passes import OptimizeResult, optimize_model

if TYPE_CHECKING:
    import networkx as nx

PathLike = str | os.PathLike[str]


def infer(path: PathLike, *, dims: Mapping[str, int] | None = None,
          assume: Sequence[str] = (), limits: Limits = DEFAULT_LIMITS) -> Analysis:
    """Load ``path``, infer every tensor's shape and run the structure and axis rules.

    ``assume`` states ranges of symbols, as ``--assume`` does (``["seq>=3"]``).
    Raises ``ShapeflowError`` when the model cannot be read or understood.
    """
    assumptions = parse_assumptions(assume)
    loaded = load_model(path, limits)
    return analyze(loaded, dims=dims, limits=limits, assumptions=assumptions)


def load_graph(path: PathLike, *, dims: Mapping[str, int] | None = None,
               limits: Limits = DEFAULT_LIMITS) -> "nx.MultiDiGraph":
    """``infer(path, ...).to_networkx()``: the model as a networkx MultiDiGraph whose nodes are
    its ONNX nodes, graph inputs, initializers and outputs and whose edges are its tensors, with
    inferred shapes and findings on them (README, "The model as a networkx graph").

    Raises ``ShapeflowError`` when the model cannot be read or understood.
    """
    return infer(path, dims=dims, limits=limits).to_networkx()


def lint(paths: PathLike | Sequence[PathLike], *, select: Sequence[str] | None = None,
         ignore: Sequence[str] = (), dims: Mapping[str, int] | None = None,
         assume: Sequence[str] = (), limits: Limits = DEFAULT_LIMITS, jobs: int = 1) -> list[FileResult]:
    """Lint one or more models, as ``shapeflow lint`` does (without ``--fix``): one ``FileResult``
    per path, in order. Unreadable files are results with SF001, not exceptions."""
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    options = LintOptions(select=tuple(select) if select is not None else None, ignore=tuple(ignore),
                          dims=tuple((dims or {}).items()),
                          assume=tuple(parse_assumptions(assume).items()), limits=limits)
    return lint_paths([os.fspath(p) for p in items], options, jobs=jobs)


def optimize(path: PathLike, output: PathLike | None = None, *, rules: Sequence[str] | None = None,
             strict: bool = False, force: bool = False, assume: Sequence[str] = (),
             limits: Limits = DEFAULT_LIMITS) -> OptimizeResult:
    """Run the rewrite rules on ``path`` to a fixpoint; write the result to ``output`` when given
    (atomically; byte-identical to the input when nothing changed).

    Raises ``ShapeflowError``: exit code 1 for a model with error-level findings (it is refused,
    not repaired), 2 for one that cannot be read or optimized safely.
    """
    loaded = load_model(path, limits)
    result = optimize_model(loaded, rules=rules, strict=strict, limits=limits,
                            assumptions=parse_assumptions(assume))
    if output is not None:
        save_model(result.model if result.changed else loaded.raw, output, input_path=path, force=force)
    return result


def diff(a: PathLike, b: PathLike, *, dims: Mapping[str, int] | None = None, signature: bool = True,
         shapes: bool = True, limits: Limits = DEFAULT_LIMITS) -> ModelDiff:
    """Compare two models as ``shapeflow diff`` does: their signatures (graph inputs and outputs)
    and the inferred shapes of the tensors present in both. ``result.exit_code`` is 1 when they
    differ. Raises ``ShapeflowError`` when a model cannot be read or understood."""
    return diff_models(os.fspath(a), os.fspath(b), dims=dims, signature=signature, shapes=shapes, limits=limits)
