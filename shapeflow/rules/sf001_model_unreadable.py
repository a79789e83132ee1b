from __future__ import annotations

from typing import Iterator

from ..diagnostics import Diagnostic, Location, Severity
from ..errors import ShapeflowError
from .base import Finding, LintContext, Rule


class ModelUnreadable(Rule):
    """Flags a file that is not a readable ONNX model, or whose external data is missing or unsafe.

    ## What it does
    Reports a file that cannot be loaded: empty, not a regular file, not an ONNX protobuf, truncated,
    a git-lfs pointer, over the size limit, or missing its graph, IR version or ai.onnx opset import.
    The file is rejected: no other rule runs on it and ``lint`` exits with code 2.

    For a model that loads, it also checks every external-data reference *without opening the data
    files*: a location that is empty, absolute, has a drive letter or ``..`` escaping the model's
    folder, resolves outside it through a symlink, names a missing file, or has an offset and length
    past the end of the file. Those are findings on the model (exit 1), and unknown keys or hard
    links are warnings.

    ## Why is this bad?
    A model that does not load fails every consumer, usually far from the commit that broke it (a
    git-lfs pointer committed instead of the weights is the classic). An external-data location that
    escapes the model's folder makes whoever loads the model read an arbitrary file of their
    machine: ``../../home/user/.ssh/id_rsa`` as the bytes of a weight.

    ## Example
    A ``model.onnx`` of 132 bytes starting with ``version https://git-lfs``; or an initializer whose
    ``external_data`` has ``location = "../secrets.bin"``.

    ## Fix
    Commit the real model (``git lfs pull``, re-export it), and keep external data files next to the
    model with plain relative names (``onnx.save_model(..., save_as_external_data=True,
    location="model.onnx.data")``).
    """

    code = "SF001"

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        # io owns the filesystem; it only stats data files, never opens them.
        from ..io import external_data_problems

        for p in external_data_problems(ctx.graph.loaded):
            severity = Severity.WARNING if p.severity == "warning" else Severity.ERROR
            yield Finding(Location(tensor=p.tensor or None), p.message,
                          "keep external data next to the model, under a plain relative name",
                          severity=severity)

    @classmethod
    def from_error(cls, exc: ShapeflowError, file: str) -> Diagnostic:
        """The diagnostic of a file that ``io.load_model`` rejected."""
        return cls.make(file, exc.message, hint="the file is not a loadable ONNX model; nothing else was checked",
                        location=Location(node=exc.node, tensor=exc.tensor))
