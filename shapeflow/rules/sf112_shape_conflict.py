from __future__ import annotations

from typing import Iterator, Sequence

from .._onnx import onnx

from ..diagnostics import Location
from ..dims import Dim, Shape, format_shape
from .base import Finding, LintContext, Rule
from .sf104_squeeze_non_unit_dim import non_unit_axes


def declared_shape(tp: onnx.TypeProto) -> Shape:
    """A declared tensor shape with only what can contradict anything: known ints (>= 0). Symbols
    and negative or missing dims are None, a missing shape is None."""
    if tp.WhichOneof("value") != "tensor_type" or not tp.tensor_type.HasField("shape"):
        return None
    out: list[Dim] = []
    for d in tp.tensor_type.shape.dim:
        out.append(int(d.dim_value) if d.WhichOneof("value") == "dim_value" and d.dim_value >= 0 else None)
    return tuple(out)


def contradiction(declared: Shape, inferred: Shape) -> bool:
    """Provably different: both ranks known and different, or a position where both are known ints
    that differ. A declared symbol never contradicts anything (exporters invent names)."""
    if declared is None or inferred is None:
        return False
    if len(declared) != len(inferred):
        return True
    return any(type(a) is int and type(b) is int and a != b for a, b in zip(declared, inferred))


def _shape_text(tp: onnx.TypeProto) -> str:
    """The declared shape as written, symbols included, for messages."""
    dims = []
    for d in tp.tensor_type.shape.dim:
        which = d.WhichOneof("value")
        dims.append(str(d.dim_value) if which == "dim_value" else d.dim_param if which == "dim_param" else "?")
    return "[" + ", ".join(dims) + "]"


class ShapeConflict(Rule):
    """Flags a declared shape (graph input or output, value_info) that contradicts the inferred one.

    ## What it does
    Compares every declared tensor shape, in the main graph, every subgraph and every model-local
    function, with the shape inference computed: a graph output or a ``value_info`` entry against
    the inferred shape of its tensor, a graph input against the dims of the initializer that gives
    its default. Only provable contradictions count: different ranks, or a position where both
    shapes have a known integer and the integers differ. A declared symbol (``batch``, or the
    ``Reshapelast_hidden_state_dim_2`` names exporters invent) against an integer or another symbol
    is not a contradiction. Tensors computed from a Squeeze that cannot run (SF104) are skipped.

    ## Why is this bad?
    Runtimes and converters trust declared shapes: onnxruntime warns or fails when an output's shape
    differs from its declaration, TensorRT plans memory from them, and other tools propagate a wrong
    shape further. A stale ``value_info`` usually means the graph was edited without re-running
    shape inference.

    ## Example
    ``value_info`` says ``U: float[7, 7, 7, 7]`` where ``U = Unsqueeze(x: [1, 2], axes=[0])`` is
    ``[1, 1, 2]``.

    ## Fix
    Correct or delete the declaration. ``shapeflow infer MODEL -o OUT`` writes the inferred shapes
    as value_info.
    """

    code = "SF112"

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        g = ctx.graph
        inf = ctx.inference
        failing = self._failing_nodes(ctx)
        hint = "correct or delete the declared shape; `shapeflow infer MODEL -o OUT` writes inferred shapes"
        for scope in g.scopes:
            body = scope.proto
            is_graph = isinstance(body, onnx.GraphProto)
            if is_graph:
                for vi in body.input:
                    t = scope.initializers.get(vi.name)
                    if t is None:
                        continue
                    dims = tuple(int(d) for d in t.dims)
                    if contradiction(declared_shape(vi.type), dims):
                        yield Finding(Location(scope.path, tensor=vi.name),
                                      f"graph input '{vi.name}' is declared {_shape_text(vi.type)}, "
                                      f"its initializer has dims {format_shape(dims)}", hint)
            declared: list[tuple[str, Sequence[onnx.ValueInfoProto]]] = []
            if is_graph:
                declared.append(("graph output", body.output))
            declared.append(("value_info", getattr(body, "value_info", ())))
            for kind, entries in declared:
                for vi in entries:
                    name = vi.name
                    shape = declared_shape(vi.type)
                    if shape is None or not name:
                        continue
                    where = g.definition(scope.id, name)
                    if where is None:
                        continue
                    producer = where[1]
                    if producer in failing:
                        continue
                    info = inf.lookup(scope.id, name)
                    if info is None or not contradiction(shape, info.shape):
                        continue
                    loc = ctx.location_of(producer) if producer >= 0 else Location(scope.path)
                    loc = Location(loc.graph, loc.node, loc.op_type, loc.since_version, tensor=name)
                    what = f"graph output '{name}'" if kind == "graph output" else f"value_info for '{name}'"
                    yield Finding(loc, f"{what} is declared {_shape_text(vi.type)}, inferred {format_shape(info.shape)}",
                                  hint)

    @staticmethod
    def _failing_nodes(ctx: LintContext) -> set[int]:
        """Nodes downstream of a Squeeze that fails at run time (SF104): inference keeps the shape the
        author meant there, which is no evidence against a declaration. Conservative: everything
        reachable, bodies of reached nodes, and owners of bodies that contain a reached node."""
        start = [a.nid for a in ctx.axis_nodes("Squeeze") if non_unit_axes(a)]
        if not start:
            return set()
        g = ctx.graph
        seen: set[int] = set(start)
        stack = list(start)
        while stack:
            n = stack.pop()
            info = g.nodes[n]
            nxt = list(g.dag.successors(n))
            for sid in info.subscopes:
                nxt.extend(g.scopes[sid].nodes)
            owner = g.scopes[info.scope].owner
            if owner is not None:
                nxt.append(owner)
            for m in nxt:
                if m not in seen:
                    seen.add(m)
                    stack.append(m)
        return seen
