"""A Reshape round trip around an elementwise region is the region alone (issue 16).

Termination: each firing deletes both Reshapes and adds nothing, so the node count falls.
"""

from __future__ import annotations

from typing import NamedTuple

from .. import codes
from ..dims import Dim, dim_is_one, dim_mod, dim_mul
from ..graph import INITIALIZER
from .base import Match, NoMatch, Result, RewriteRule, RoundContext, not_applicable
from .edit import Editor
from .fold_known_value import exclusive_cone

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
_NO_ROUND_TRIP = not_applicable("no Reshape before an elementwise region")


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


def _never_one(d: Dim) -> bool:
    """Whether dim ``d`` is 1 for no binding: by its bounds (``seq + 2``), or as a multiple of
    some k >= 2 plus a remainder other than 1 (``12*b``, flattened from ``[b, 3, 4]``)."""
    if d is None:
        return False
    if dim_is_one(d) is False:
        return True
    if type(d) is int:
        return False
    for k in range(2, 65):
        r = dim_mod(d, k)
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


class ReshapeRoundTrip(RewriteRule):
    """Reshape(f(Reshape(x, a)), b) is f(x) when the result has x's shape and f is elementwise.

    dynamo exports a GELU between two Linear layers as ``view -> elementwise ops -> view``: the
    first Reshape splits ``[b*s, n]`` into ``[b, s, n]``, the second merges it back. Walking back
    from the second Reshape (R2) through a region of elementwise nodes whose every input is a
    region tensor or a constant (initializer or Constant node) with one element and rank at most
    1, up to one Reshape R1 of x: where inference states R2's output shape equal to x's, dim by
    dim for every binding (an unknown dim of x, beside positive integers, is what R1's element
    count makes it), the region reads x instead of R1's output and its last node produces R2's
    output. The region's other tensors take new names: their shapes change, and a name keeps its
    value from round to round. The region computes the same elements in the same row-major order
    (every region tensor has the shape of its region input, of rank >= 1, so broadcasting a
    one-element constant changes no shape): bit-exact. R1 and R2 go, with their targets'
    computations when nothing else reads them.

    Does not fire when a tensor of the region (or R1's output) is read outside it, is a graph
    output or is read by a subgraph; when there is no region and R2's output is a graph output
    (R2's readers would read x); when the model has initializers that are also graph inputs; in
    function bodies; or when a shape is not known.
    """

    name = "reshape-round-trip"
    code = codes.RESHAPE_ROUND_TRIP.code
    roots = ("Reshape",)
    after = ELEMENTWISE | {"Reshape"}

    def match(self, ctx: RoundContext, nid: int) -> Result:
        info = ctx.graph.nodes[nid]
        if len(info.inputs) < 2 or not info.inputs[0] or not info.outputs or not info.outputs[0]:
            return _NO_DATA
        sid = info.scope
        scope = ctx.graph.scopes[sid]
        if scope.kind != "graph":
            return not_applicable("in a function body")
        producer, nodes = scope.producer, ctx.graph.nodes
        z = info.inputs[0]
        first = producer.get(z)
        if first is None or first < 0:
            return _NO_ROUND_TRIP
        finfo = nodes[first]
        if finfo.domain != "" or (finfo.op_type not in ELEMENTWISE and finfo.op_type != "Reshape"):
            return _NO_ROUND_TRIP
        region: list[int] = []
        seen: set[str] = set()
        r1 = -1
        stack = [z]
        while stack:
            name = stack.pop()
            if name in seen:
                continue
            seen.add(name)
            p = producer.get(name)
            if p is not None and p >= 0 and nodes[p].op_type != "Constant":
                pinfo = nodes[p]
                if pinfo.domain != "" or pinfo.since_version is None or pinfo.subscopes:
                    return NoMatch(f"{ctx.display(nid)}: {ctx.display(p)} is not an elementwise op")
                if pinfo.op_type == "Reshape":
                    if r1 >= 0 and r1 != p:
                        return NoMatch(f"{ctx.display(nid)}: the region has two Reshapes")
                    if len(pinfo.inputs) < 2 or not pinfo.inputs[0] or pinfo.outputs[0] != name:
                        return NoMatch(f"{ctx.display(nid)}: {ctx.display(p)} has no data input")
                    r1 = p
                    continue
                if pinfo.op_type not in ELEMENTWISE or len(pinfo.outputs) != 1:
                    return NoMatch(f"{ctx.display(nid)}: {ctx.display(p)} is not an elementwise op")
                if len(region) >= MAX_REGION:
                    return NoMatch(f"{ctx.display(nid)}: the region has more than {MAX_REGION} nodes")
                region.append(p)
                stack.extend(n for n in pinfo.inputs if n)
                continue
            if not self._one_element_constant(ctx, sid, name, p):
                return NoMatch(f"{ctx.display(nid)}: the region reads '{name}', neither a region "
                               "tensor nor a one-element constant")
        if r1 < 0:
            return _NO_ROUND_TRIP
        r1_out = nodes[r1].outputs[0]
        constants = {n for n in seen if producer.get(n) is None or producer[n] < 0 or
                     nodes[producer[n]].op_type == "Constant"}
        inside = set(region)
        for p in region:
            if not any(n and n not in constants for n in nodes[p].inputs):
                return NoMatch(f"{ctx.display(nid)}: {ctx.display(p)} reads only constants")
        # every region tensor (and R1's output) is read only inside the region, z only by R2
        for name in seen - constants:
            if ctx.is_output(sid, name):
                return NoMatch(f"{ctx.display(nid)}: '{name}' is a graph output")
            for r in ctx.readers(sid, name):
                if r in inside or (r == nid and name == z and info.inputs[1] != z):
                    continue
                return NoMatch(f"{ctx.display(nid)}: '{name}' is read outside the region "
                               f"(by {ctx.display(r)})")
        if info.inputs[1] in seen:
            return NoMatch(f"{ctx.display(nid)}: the target is computed from the region")
        x = nodes[r1].inputs[0]
        tx, t1, t2 = ctx.tensor(sid, x), ctx.tensor(sid, r1_out), ctx.tensor(sid, info.outputs[0])
        if tx is None or t1 is None or t2 is None or tx.shape is None or t1.shape is None or t2.shape is None:
            return NoMatch(f"{ctx.display(nid)}: a shape is not known")
        if not tx.shape or not t1.shape:
            return NoMatch(f"{ctx.display(nid)}: a rank-0 tensor (a one-element constant would grow it)")
        if not _same_shape(tx.shape, t1.shape, t2.shape):
            return NoMatch(f"{ctx.display(nid)}: the output's shape is not known to be that of the input '{x}'")
        if any(nodes[p].op_type in _PATH_DEPENDENT for p in region) and \
                not all(_never_one(s[-1]) for s in (tx.shape, t1.shape)):
            return NoMatch(f"{ctx.display(nid)}: onnxruntime computes Pow, Max and Min beside a one-element "
                           "constant another way when the last dim is 1 (not bit-exact)")
        if ctx.overridable:
            return NoMatch(f"{ctx.display(nid)}: the model has initializers that are also graph inputs, "
                           "so a constant may change at run time")
        out = info.outputs[0]
        readers: tuple[int, ...] = ()
        if not region:
            # R2's readers read x: its output name goes
            if ctx.is_output(sid, out) or not ctx.direct_readers_only(sid, out):
                return NoMatch(f"{ctx.display(nid)}: '{out}' must keep its name (graph output or read "
                               "by a subgraph)")
            readers = tuple(r for r in ctx.readers(sid, out) if r != nid)
        cones = (*exclusive_cone(ctx, nid, (info.inputs[1],)), *exclusive_cone(ctx, r1, nodes[r1].inputs[1:]))

        def message() -> str:
            return (f"{ctx.display(r1)} and {ctx.display(nid)} undo each other around "
                    f"{len(region)} elementwise node(s)")

        writes = tuple(dict.fromkeys((nid, r1, *region, *cones)))
        return Match(nid, writes, (), message, "", _Plan(x, r1_out, z, out, r1, tuple(region)), readers)

    @staticmethod
    def _one_element_constant(ctx: RoundContext, sid: int, name: str, p: int | None) -> bool:
        if p is None:
            return False
        if p >= 0:
            pinfo = ctx.graph.nodes[p]
            if pinfo.op_type != "Constant" or pinfo.domain != "":
                return False
        elif p != INITIALIZER:
            return False
        t = ctx.tensor(sid, name)
        if t is None or t.shape is None or len(t.shape) > 1:
            return False
        return all(type(d) is int and d == 1 for d in t.shape)

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[_Plan]) -> None:
        sid, plan = ctx.sid(m.nid), m.payload
        edit.delete_node(m.nid)
        if not plan.region:
            edit.replace_uses(sid, plan.r2_out, plan.x)
            edit.delete_node(plan.r1)
            return
        edit.replace_uses(sid, plan.r1_out, plan.x)
        edit.delete_node(plan.r1)
        # A tensor keeps its name only with its value (what inference carries over to the next
        # round relies on it): the region's tensors now have x's shape, so they take new names,
        # and its output takes R2's, whose value it now is.
        for p in plan.region:
            old = ctx.output(p)
            if old == plan.z:
                edit.set_output(p, 0, plan.r2_out)
            else:
                new = edit.names.fresh(ctx.graph, old, "unreshaped")
                edit.set_output(p, 0, new)
                edit.replace_uses(sid, old, new)
            edit.forget_value_info(sid, old)

__all__ = ["ReshapeRoundTrip"]
