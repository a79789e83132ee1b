from __future__ import annotations

from ..diagnostics import Diagnostic, Location
from ..errors import ShapeflowError
from .base import Finding, LintContext, Rule


class GraphInvalid(Rule):
    """Flags a model whose graph is not a valid dataflow graph.

    ## What it does
    Reports the first structural problem found while indexing the model: a cycle, a tensor read but
    never produced (in its graph or any enclosing one), a tensor produced twice (two nodes, a node
    and an initializer, or a subgraph redefining an outer name), a graph output that nothing
    produces, or model-local functions that call each other in a cycle. The file is rejected: no
    other rule runs on it and ``lint`` exits with code 2.

    ## Why is this bad?
    No runtime can execute such a graph, and tools disagree on what it means (onnxoptimizer even
    crashes on an unproduced graph output). Two models concatenated into one file show up here as
    tensors defined twice.

    ## Example
    ``y = Relu(GHOST)`` where no node, input or initializer defines ``GHOST``.

    ## Fix
    Re-export the model, or repair the graph so that every tensor has exactly one producer that
    comes before its readers. ``onnx.checker.check_model(model, full_check=True)`` names the same
    problems.
    """

    code = "SF002"

    def check(self, ctx: LintContext) -> list[Finding]:
        # Building the graph index is what detects these; a model that reached the rules has none.
        return []

    @classmethod
    def from_error(cls, exc: ShapeflowError, file: str) -> Diagnostic:
        """The diagnostic of a model that ``graph.build_graph`` rejected."""
        return cls.make(file, exc.message, hint="repair the graph (onnx.checker.check_model names the same problem)",
                        location=Location(node=exc.node, tensor=exc.tensor))
