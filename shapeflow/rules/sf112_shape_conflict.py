from __future__ import annotations

from typing import Iterator, Sequence

from .._onnx import onnx

from ..declared import DimReader, conflict, written_shape
from ..diagnostics import Location
from ..dims import Dim, Shape, format_shape
from . import base
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


FIX_VALUE_INFO = "`shapeflow infer MODEL -o OUT --fix-declarations` rewrites the declaration with the inferred shape"
FIX_OUTPUT = ("`shapeflow infer MODEL -o OUT --fix-declarations --refine-outputs` rewrites the output's "
              "declaration with the inferred shape")
FIX_BY_HAND = "correct or delete the declared shape (shapeflow writes no declaration inside a function)"
FIX_INPUT = "correct the input's declaration or its initializer (shapeflow never edits graph inputs)"


class ShapeConflict(Rule):
    """Flags a declared shape (graph input or output, value_info) that contradicts the inferred one.

    ## What it does
    Compares every declared tensor shape, in the main graph, every subgraph and every model-local
    function, with the shape inference computed: a graph output or a ``value_info`` entry against
    the inferred shape of its tensor, a graph input against the dims of the initializer that gives
    its default. Only provable contradictions count: different ranks; a position where both
    shapes have a known integer and the integers differ; or a declared expression over the
    model's input symbols (jax2onnx writes ``-floordiv(-H, 2)``) against an inferred expression
    over the same symbols, where the two differ at every binding tried (each symbol from 3 to
    1001; the message names one). Expressions that agree somewhere are not a contradiction: the
    model may run only there (dynamo declares ``seq`` where inference states ``min(256, seq)``: the
    model fails past 256). A declared name that is no such expression (``batch`` against ``seq``,
    or the ``Reshapelast_hidden_state_dim_2`` names exporters invent) is not a contradiction, and
    neither is an expression against an integer. Tensors computed from a Squeeze that cannot run
    (SF104) are skipped.

    ## Why is this bad?
    Runtimes and converters trust declared shapes: onnxruntime warns or fails when an output's shape
    differs from its declaration, TensorRT plans memory from them, and other tools propagate a wrong
    shape further. A stale ``value_info`` usually means the graph was edited without re-running
    shape inference.

    ## Example
    ``value_info`` says ``U: float[7, 7, 7, 7]`` where ``U = Unsqueeze(x: [1, 2], axes=[0])`` is
    ``[1, 1, 2]``.

    ## Fix
    ``shapeflow infer MODEL -o OUT --fix-declarations`` rewrites each contradicted ``value_info``
    with the inferred shape (add ``--refine-outputs`` for a graph output's declaration); graph
    inputs are the user's to correct.
    """

    code = "SF112"

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        g = ctx.graph
        inf = ctx.inference
        failing = self._failing_nodes(ctx)
        reader: DimReader | None = None
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
                                      f"its initializer has dims {format_shape(dims)}", FIX_INPUT)
            declared: list[tuple[str, Sequence[onnx.ValueInfoProto]]] = []
            if is_graph:
                declared.append(("graph output", body.output))
            declared.append(("value_info", getattr(body, "value_info", ())))
            for kind, entries in declared:
                for vi in entries:
                    name = vi.name
                    written = written_shape(vi.type)
                    if written is None or not name:
                        continue
                    where = g.definition(scope.id, name)
                    if where is None:
                        continue
                    producer = where[1]
                    if producer in failing:
                        continue
                    info = inf.lookup(scope.id, name)
                    if info is None or info.shape is None:
                        continue
                    if reader is None:
                        reader = DimReader.of(g, inf.domain)
                    found = conflict(written, info.shape, reader, inf.ranges)
                    if found is None:
                        continue
                    loc = ctx.location_of(producer) if producer >= 0 else Location(scope.path)
                    loc = Location(loc.graph, loc.node, loc.op_type, loc.since_version, tensor=name)
                    what = f"graph output '{name}'" if kind == "graph output" else f"value_info for '{name}'"
                    detail = found.describe()
                    hint = FIX_BY_HAND if not is_graph else FIX_OUTPUT if kind == "graph output" else FIX_VALUE_INFO
                    yield Finding(loc, f"{what} is declared {_shape_text(vi.type)}, inferred {format_shape(info.shape)}"
                                  + (f": {detail}" if detail else ""), hint)

    @staticmethod
    def _failing_nodes(ctx: LintContext) -> set[int]:
        """Nodes downstream of a Squeeze that fails at run time (SF104): inference keeps the shape the
        author meant there, which is no evidence against a declaration. Conservative: everything
        reachable, bodies of reached nodes, and owners of bodies that contain a reached node."""
        dom = ctx.inference.domain
        if base.GROUPED:  # (non_unit_axes reads the facts alone: asked once per group of nodes)
            nodes, groups, firsts = ctx.axis_groups()
            failing = [a.op_type == "Squeeze" and bool(non_unit_axes(a, dom)) for a in firsts]
            start = [a.nid for a, gid in zip(nodes, groups) if failing[gid]] if any(failing) else []
        else:
            start = [a.nid for a in ctx.axis_nodes("Squeeze") if non_unit_axes(a, dom)]
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
