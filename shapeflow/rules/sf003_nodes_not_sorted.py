from __future__ import annotations

from typing import Iterator

from .base import Finding, LintContext, Rule


class NodesNotSorted(Rule):
    """Flags a graph whose nodes are not in topological order (but have no cycle).

    ## What it does
    Reports each graph, subgraph or function body in which some node reads a tensor that a later
    node produces, naming the first such node. Reads by a subgraph of an outer tensor count as reads
    by the node that owns the subgraph.

    ## Why is this bad?
    The ONNX spec requires nodes to be sorted, and ``onnx.checker`` rejects the model. onnxruntime
    sorts the graph itself and runs it, so the model works in one tool and fails in the next;
    simple tools that execute nodes in file order compute garbage or crash.

    ## Example
    ``b = Relu(a)`` listed before ``a = Neg(x)``.

    ## Fix
    Write the nodes in dependency order. ``shapeflow optimize`` writes the graph sorted, keeping the
    file order wherever it already is one.
    """

    code = "SF003"

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        g = ctx.graph
        for scope in g.scopes:
            if scope.sorted_in_file:
                continue
            position = {nid: k for k, nid in enumerate(scope.nodes)}
            late: dict[int, tuple[str, int]] = {}  # reader -> (tensor, producer) for its first late read
            for name, readers in scope.consumers.items():
                p = scope.producer.get(name)
                if p is None or p < 0:
                    continue
                for r in readers:
                    if position[r] <= position[p] and r not in late:
                        late[r] = (name, p)
            if not late:
                continue
            first = min(late, key=lambda n: position[n])
            tensor, producer = late[first]
            more = f" ({len(late)} nodes read tensors produced later)" if len(late) > 1 else ""
            yield Finding(ctx.location_of(first),
                          f"reads '{tensor}', which node '{g.display(producer)}' produces later in the file{more}",
                          "list the nodes in dependency order; `shapeflow optimize` writes them sorted")
