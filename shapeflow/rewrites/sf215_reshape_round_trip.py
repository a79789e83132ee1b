"""SF215 reshape-round-trip: a Reshape round trip around an elementwise region is the region alone."""

from __future__ import annotations

from typing import Any, NamedTuple

from ..codes import INFO, Code
from ..dims import Dim, Domain, dim_is_one, dim_mod, dim_mul
from ..passes.context import RoundContext
from ..passes.edit import Editor
from ..passes.match import Match, NoMatch, Result, not_applicable
from ..passes.pattern import (
    Bound, Guard, Op, Region, exclusive_cone, must_keep_name, one_element_constant, overridable_problem, region,
    rename_region,
)
from ..passes.spec import Rewrite

# Ops that compute each output element from the elements at the same position of their inputs
# (after broadcasting). Attributes do not matter: none of these moves elements.
ELEMENTWISE: frozenset[str] = frozenset({
    "Abs", "Neg", "Exp", "Log", "Sqrt", "Reciprocal", "Tanh", "Sigmoid", "Relu", "Erf", "Sin",
    "Cos", "Floor", "Ceil", "Round", "Sign", "Not", "Softplus", "LeakyRelu", "Elu", "HardSigmoid",
    "Gelu", "Cast", "Clip",
    "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "And", "Or", "Xor", "Equal",
    "Less", "Greater", "LessOrEqual", "GreaterOrEqual",
})
# Ops whose results onnxruntime computes by another path, bit-different, when the other operand is a
# one-element constant and the tensor's last dim is 1 (brute force, onnxruntime 1.32): Pow(x, 3) is
# x*x*x on one path and powf on the other; Max(0, x) and Min(0, x) treat -0.0 and NaN apart. Moving
# them across a Reshape is exact only where that dim is not 1 on either side.
_PATH_DEPENDENT = frozenset({"Pow", "Max", "Min"})
# Nodes in the region at most: a longer region is left alone (keeps a match cheap).
MAX_REGION = 32

_NO_DATA = not_applicable("no data input")
_IN_FUNCTION = not_applicable("in a function body")


class _ReshapeInGraph(Guard):
    """A Reshape with its data and target inputs and an output, in a graph (not a function body)."""

    def check(self, ctx: RoundContext, nid: int) -> NoMatch | None:
        info = ctx.graph.nodes[nid]
        if len(info.inputs) < 2 or not info.inputs[0] or not info.outputs or not info.outputs[0]:
            return _NO_DATA
        return None if ctx.graph.scopes[info.scope].kind == "graph" else _IN_FUNCTION


def _count(shape: "tuple[Dim, ...]") -> Dim:
    n: Dim = 1
    for d in shape:
        n = dim_mul(n, d)
    return n


def _same_shape(x: "tuple[Dim, ...]", r1: "tuple[Dim, ...]", r2: "tuple[Dim, ...]") -> bool:
    """R2's output shape ``r2`` is x's shape ``x`` for every binding where R1 (x to ``r1``) runs.
    Dim by dim; or, where one dim of x is unknown or not the same expression as r2's (the
    broadcast ``bcast(b, kb)`` of the rewrites' inference) and the others are positive integers
    equal to r2's, through the element count: R1 runs only when x holds as many elements as
    ``r1``, so that dim is count(r1) / (the others' product), which is r2's dim there when
    count(r2) = count(r1)."""
    if len(r2) != len(x) or any(d is None for d in r2):
        return False
    unknown = [i for i, (a, b) in enumerate(zip(x, r2)) if a is None or a != b]
    if not unknown:
        return True
    if len(unknown) > 1 or any(type(d) is not int or d < 1 for i, d in enumerate(x) if i not in unknown):
        return False
    c1, c2 = _count(r1), _count(r2)
    return c1 is not None and c1 == c2


def _never_one(d: Dim, dom: Domain) -> bool:
    """Whether dim ``d`` is 1 for no binding: by its bounds (``seq + 2``), or as a multiple of
    some k >= 2 plus a remainder other than 1 (``12*b``, flattened from ``[b, 3, 4]``)."""
    if d is None:
        return False
    if dim_is_one(d, dom) is False:
        return True
    if type(d) is int:
        return False
    for k in range(2, 65):
        r = dim_mod(d, k, dom)
        if type(r) is int:
            return r != 1
    return False


class _Plan(NamedTuple):
    x: str  # R1's data input: the region reads it instead of R1's output
    r1_out: str
    z: str  # the region's output (R2's data input)
    r2_out: str
    r1: int
    region: tuple[int, ...]  # its nodes: their outputs change shape, so they change names


class ReshapeRoundTrip(Rewrite):
    """Reshape(f(Reshape(x, a)), b) is f(x) when the result has x's shape and f is elementwise.

    ## What it does
    Reports ``Reshape(f(Reshape(x, a)), b)`` where ``f`` is a region of elementwise ops (``Add``,
    ``Mul``, ``Pow``, ``Tanh``, ``Erf``, ``Cast``...) whose every input is a region tensor or a
    constant (initializer or Constant node) with one element and rank at most 1, no tensor of the
    region is read elsewhere, and inference states the result's shape equal to x's, dim by dim for
    every binding (an unknown dim of x, or one inference cannot tell equal to the result's, beside
    positive integers, is what the first Reshape's element count makes it): ``shapeflow optimize`` lets the region read x, its last node produce
    the second Reshape's output, and removes both Reshapes, with their targets' computations when
    nothing else reads them. The region's other tensors take new names: their shapes change, and a
    name keeps its value from round to round.

    ## Why is this bad?
    It is not wrong, but elementwise ops give the same elements in the same order whatever the
    shape, so the two Reshapes (and the computation of their targets) run for nothing.

    ## Example
    dynamo's GPT-2 export: ``h = Gemm(...)`` of shape ``[b*s, 1024]``, ``v = Reshape(h, [b, s,
    1024])``, a GELU of Mul/Pow/Add/Tanh with scalar constants, then ``Reshape(gelu, [-1, 1024])``:
    the GELU can read ``h`` directly.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` rewrites it. The region
    computes the same elements in the same row-major order (every region tensor has the shape of
    its region input, of rank >= 1, so broadcasting a one-element constant changes no shape):
    bit-exact. Each firing deletes both Reshapes and adds nothing.

    ## When it does not fire
    When a tensor of the region (or the first Reshape's output) is read outside it, is a graph
    output or is read by a subgraph; when there is no region and the second Reshape's output is a
    graph output (its readers would read x); when the model has initializers that are also graph
    inputs; in function bodies; when a shape is not known; or when the region holds a Pow, Max or
    Min and the last dim of x (or of the first Reshape's output) may be 1 (onnxruntime computes
    those beside a one-element constant by another, bit-different path there).
    """

    code = Code("SF215", "reshape-round-trip", INFO, fixable=True)
    order = 310
    pattern = Op("Reshape", Op(ELEMENTWISE | {"Reshape"}), guards=(_ReshapeInGraph(),))

    def check(self, ctx: RoundContext, b: Bound) -> Result:
        nid = b.root
        info = ctx.graph.nodes[nid]
        sid, z = info.scope, info.inputs[0]
        found = region(ctx, nid, z, ELEMENTWISE, "Reshape", one_element_constant, MAX_REGION)
        if isinstance(found, NoMatch):
            return found
        why = _region_problem(ctx, nid, found)
        if why is not None:
            return why
        nodes = ctx.graph.nodes
        r1, members = found.start, found.nodes
        if len(nodes[r1].inputs) < 2:  # (a Reshape of opset 1, its shape an attribute)
            return NoMatch(f"{ctx.display(nid)}: {ctx.display(r1)} has no data input")
        x, r1_out = nodes[r1].inputs[0], nodes[r1].outputs[0]
        tx, t1, t2 = ctx.tensor(sid, x), ctx.tensor(sid, r1_out), ctx.tensor(sid, info.outputs[0])
        if tx is None or t1 is None or t2 is None or tx.shape is None or t1.shape is None or t2.shape is None:
            return NoMatch(f"{ctx.display(nid)}: a shape is not known")
        if not tx.shape or not t1.shape:
            return NoMatch(f"{ctx.display(nid)}: a rank-0 tensor (a one-element constant would grow it)")
        if not _same_shape(tx.shape, t1.shape, t2.shape):
            return NoMatch(f"{ctx.display(nid)}: the output's shape is not known to be that of the input '{x}'")
        if any(nodes[p].op_type in _PATH_DEPENDENT for p in members) and \
                not all(_never_one(s[-1], ctx.domain) for s in (tx.shape, t1.shape)):
            return NoMatch(f"{ctx.display(nid)}: onnxruntime computes Pow, Max and Min beside a one-element "
                           "constant another way when the last dim is 1 (not bit-exact)")
        problem = overridable_problem(ctx, nid, "a constant")
        if problem is not None:
            return problem
        out = info.outputs[0]
        readers: tuple[int, ...] = ()
        if not members:
            # R2's readers read x: its output name goes
            if must_keep_name(ctx, sid, out):
                return NoMatch(f"{ctx.display(nid)}: '{out}' must keep its name (graph output or read "
                               "by a subgraph)")
            readers = tuple(r for r in ctx.readers(sid, out) if r != nid)
        cones = (*exclusive_cone(ctx, nid, (info.inputs[1],)), *exclusive_cone(ctx, r1, nodes[r1].inputs[1:]))

        def message() -> str:
            return (f"{ctx.display(r1)} and {ctx.display(nid)} undo each other around "
                    f"{len(members)} elementwise node(s)")

        writes = tuple(dict.fromkeys((nid, r1, *members)))
        sweeps = tuple(n for n in dict.fromkeys(cones) if n not in writes)
        return Match(nid, writes=writes, rewires=readers, sweeps=sweeps, message=message,
                     payload=_Plan(x, r1_out, z, out, r1, members))

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[Any]) -> None:
        sid, plan = ctx.sid(m.nid), m.payload
        edit.delete_node(m.nid)
        if not plan.region:
            edit.replace_uses(sid, plan.r2_out, plan.x)
            edit.delete_node(plan.r1)
            return
        # (the region's readers of r1_out read x's shape from now on: a new value, never forwarded
        # to readers another rewrite gave r1_out)
        edit.replace_uses(sid, plan.r1_out, plan.x, forward=False)
        edit.delete_node(plan.r1)
        # The region's tensors now have x's shape, so they take new names, and its output takes
        # R2's, whose value it now is.
        rename_region(ctx, edit, sid, plan.region, plan.z, plan.r2_out, "unreshaped")

__all__ = ["ReshapeRoundTrip"]


def _region_problem(ctx: RoundContext, nid: int, found: Region) -> NoMatch | None:
    """Why the region cannot be taken out: a node of it reads only constants, a region tensor (or
    R1's output) is read outside it or is a graph output (z may be read by R2 alone), or R2's
    target is computed from the region."""
    info = ctx.graph.nodes[nid]
    sid, z = info.scope, info.inputs[0]
    nodes = ctx.graph.nodes
    inside = set(found.nodes)
    for p in found.nodes:
        if not any(n and n not in found.leaves for n in nodes[p].inputs):
            return NoMatch(f"{ctx.display(nid)}: {ctx.display(p)} reads only constants")
    for name in found.tensors - found.leaves:
        if ctx.is_output(sid, name):
            return NoMatch(f"{ctx.display(nid)}: '{name}' is a graph output")
        for r in ctx.readers(sid, name):
            if r in inside or (r == nid and name == z and info.inputs[1] != z):
                continue
            return NoMatch(f"{ctx.display(nid)}: '{name}' is read outside the region "
                           f"(by {ctx.display(r)})")
    if info.inputs[1] in found.tensors:
        return NoMatch(f"{ctx.display(nid)}: the target is computed from the region")
    return None
