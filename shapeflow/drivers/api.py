"""The typed Python API, under the names of the commands: ``infer``, ``lint``, ``optimize``."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Mapping, Sequence

from .analysis import Analysis
from ..assume import parse_assumptions
from .config import CommandLine
from ..io import load_model, save_model
from ..limits import DEFAULT_LIMITS, Limits
from .linter import FileResult, LintOptions, find_repo_root
from .modeldiff import ModelDiff, diff_models
from .optimizer import optimize_model
from ..passes import OptimizeResult

if TYPE_CHECKING:
    import networkx as nx

PathLike = str | os.PathLike[str]


def infer(path: PathLike, *, dims: Mapping[str, int] | None = None, assume: Sequence[str] = (),
          limits: Limits = DEFAULT_LIMITS, config: PathLike | None = None, isolated: bool = False) -> Analysis:
    """Load ``path``, infer every tensor's shape and run the structure and axis rules, under the
    settings ``shapeflow infer`` would use: the model's nearest config file, or ``config``, or
    none with ``isolated=True`` (rule selection, severities, in-model suppressions, ``assume``).
    ``assume`` states ranges of symbols as ``--assume`` does (``["seq>=3"]``).

    Raises ``ShapeflowError`` when the model cannot be read or understood (or a config is bad).
    """
    from .infer_settings import infer_with_settings

    loaded = load_model(path, limits)
    return infer_with_settings(loaded, dims=dims, limits=limits,
                               config=os.fspath(config) if config is not None else None, isolated=isolated,
                               assume=assume)


def load_graph(path: PathLike, *, dims: Mapping[str, int] | None = None,
               limits: Limits = DEFAULT_LIMITS) -> "nx.MultiDiGraph":
    """``infer(path, ...).to_networkx()``: the model as a networkx MultiDiGraph whose nodes are
    its ONNX nodes, graph inputs, initializers and outputs and whose edges are its tensors, with
    inferred shapes and findings on them (README, "The model as a networkx graph").

    Raises ``ShapeflowError`` when the model cannot be read or understood.
    """
    return infer(path, dims=dims, limits=limits).to_networkx()


def lint(paths: PathLike | Sequence[PathLike], *, select: Sequence[str] | None = None,
         ignore: Sequence[str] = (), dims: Mapping[str, int] | None = None, assume: Sequence[str] = (),
         limits: Limits = DEFAULT_LIMITS, jobs: int = 1, config: PathLike | None = None,
         isolated: bool = False, baseline: PathLike | None = None, executor: str = "local",
         ray_address: str | None = None, task_timeout: float | None = None,
         cache: bool | PathLike = False) -> list[FileResult]:
    """Lint models, as ``shapeflow lint`` does (without ``--fix``): one ``FileResult`` per model
    file, in order (directories are searched for ``*.onnx``). Settings come from each model's
    nearest config file, or from ``config``, or none with ``isolated=True``; ``select`` and
    ``ignore`` act as the command-line options do. Unreadable files are results with SF001, not
    exceptions; a bad setting raises ``ShapeflowError`` (exit code 2).

    ``executor="ray"`` runs each file as a Ray task (the ``ray`` extra) on the cluster this
    process is connected to, or at ``ray_address``, or a new local one; results are the same, in
    the same order. A path may then also be a URL fsspec opens. ``cache=True`` uses the lint cache
    where ``shapeflow lint`` would (``.shapeflow_cache``), a path names its folder; off by default."""
    from .config import split_selectors
    from .workspace import run

    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    cli = CommandLine(select=split_selectors(list(select), "select") if select else None,  # [] = every rule
                      ignore=split_selectors(list(ignore), "ignore"),
                      baseline=os.path.abspath(os.fspath(baseline)) if baseline is not None else None,
                      assume=tuple(assume))
    options = LintOptions(dims=tuple((dims or {}).items()), limits=limits, repo_root=find_repo_root())
    config_path = os.fspath(config) if config is not None else None
    store = None
    if cache is not False:
        from .cache import cache_for

        store = cache_for(None if cache is True else os.fspath(cache), config_path, isolated)
    return run([os.fspath(p) for p in items], cli, options, config=config_path, isolated=isolated, jobs=jobs,
               cache=store, executor=executor, ray_address=ray_address, task_timeout=task_timeout).results


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
         shapes: bool = True, limits: Limits = DEFAULT_LIMITS, validate: bool = True) -> ModelDiff:
    """Compare two models as ``shapeflow diff`` does: their signatures (graph inputs and outputs),
    the inferred shapes of the tensors present in both, and (``validate``) whether each passes
    onnx's checker and loads in onnxruntime. ``result.exit_code`` is 1 when they differ. Raises
    ``ShapeflowError`` when a model cannot be read or understood."""
    return diff_models(os.fspath(a), os.fspath(b), dims=dims, signature=signature, shapes=shapes, limits=limits,
                       validate=validate)
