"""If, Loop and Scan: outputs come from the bodies, which the engine infers before calling these rules.

What a body is inferred with (``body_seeds``), as onnxruntime runs it (each fact checked against
onnxruntime 1.32 with graph optimisations off):

- A Loop's carried values and a Scan's state variables start as the node's inputs and become
  the body's outputs of the previous iteration; onnxruntime does not hold them to the body's
  declared input types, and the body may change their shape from one iteration to the next
  (onnxruntime refuses some changes of a Scan state, not all: ``[1] + [2]`` passes). The engine
  first infers the body with the initial values; where the body's output for a carried
  value is not an instance of what the body was given (``covers``), the input is widened to what
  both have in common (``widen``) and the body inferred again, until every carried input covers
  its output (then, by induction, it covers every iteration's value) or, after a few rounds, only
  the element type is left.
- A Scan's scanned inputs are fed one slice at a time: the input's shape without the scan axis.
- A Loop's iteration number and condition are left to the engine (the runtime feeds them).

Trip counts. onnxruntime runs a Loop ``while i < M and cond``: ``max(0, M)`` iterations when the
condition cannot stop it (the Loop's ``cond`` is absent or true, and the body's condition output is
the true constant or its condition input passed through Identity: the body runs only while that
is true). When it runs zero times, a scan output is ``[0]`` followed by onnxruntime's own static
inference of the body's output (0 for every dim it does not know, rank 1 when it knows no shape):
the declared input shapes of the body drive that inference, not the runtime's, so shapeflow states
a scan output only where the Loop provably runs at least once. A Scan over an empty sequence
fails in onnxruntime (an error, or a crash when the scan axis is not 0), so its sequence length is
at least 1 wherever the model runs (a fact about its symbol, for a Scan of the main graph).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._onnx import onnx
from ..dims import Dim, Domain, Shape, Sym, dim_bounds, dim_max, dims_equal, require_at_least
from ..tensorinfo import TensorInfo
from .base import OpCall, register

if TYPE_CHECKING:
    from ..graph import ModelGraph


def merge_shapes(a: Shape, b: Shape, dom: Domain) -> Shape:
    """What holds for both (in ``dom``): equal dims stay, others become unknown; different ranks are unknown."""
    if a is None or b is None or len(a) != len(b):
        return None
    out: list[Dim] = []
    for x, y in zip(a, b):
        out.append(x if dims_equal(x, y, dom) is True else None)
    return tuple(out)


def merge(a: TensorInfo | None, b: TensorInfo | None, dom: Domain) -> TensorInfo | None:
    if a is None or b is None:
        return None
    value = a.value if a.value is not None and a.value == b.value else None
    return TensorInfo(a.dtype or b.dtype, merge_shapes(a.shape, b.shape, dom), value)


# -- carried values: the fixpoint the engine runs ---------------------------------------------------

def covers(seed: TensorInfo, out: TensorInfo | None, dom: Domain) -> bool:
    """Whether every tensor ``out`` describes is one ``seed`` describes: the body, given a value
    that ``seed`` describes, hands the next iteration one that ``seed`` describes too."""
    s = seed.shape
    if s is not None:
        o = out.shape if out is not None else None
        if o is None or len(o) != len(s):
            return False
        for a, b in zip(s, o):
            if a is not None and dims_equal(a, b, dom) is not True:
                return False
    v = seed.value
    if v is not None:
        w = out.value if out is not None else None
        if w is None or len(w) != len(v):
            return False
        for a, b in zip(v, w):
            if a is not None and not _same(a, b, dom):
                return False
    return True


def _same(a: object, b: object, dom: Domain) -> bool:
    """Two value elements that are equal for every binding (ints, or expressions)."""
    if type(a) is int and type(b) is int:
        return a == b
    if (type(a) is Sym or type(a) is int) and (type(b) is Sym or type(b) is int):
        return dims_equal(a, b, dom) is True
    return False


def widen(seed: TensorInfo, out: TensorInfo | None, dom: Domain) -> TensorInfo:
    """What ``seed`` and ``out`` have in common (a dim, the rank, a value element), as a seed."""
    if out is None:
        return TensorInfo(seed.dtype, None)
    shape = merge_shapes(seed.shape, out.shape, dom)
    value = None
    if shape is not None and seed.value is not None and out.value is not None and len(seed.value) == len(out.value):
        kept = tuple(a if a is not None and _same(a, b, dom) else None for a, b in zip(seed.value, out.value))
        value = kept if any(x is not None for x in kept) else None
    return TensorInfo(seed.dtype, shape, value)


def body_seeds(op_type: str, since: int, node: onnx.NodeProto, ins: list[TensorInfo | None],
               declared: list[int | None]) -> tuple[list[TensorInfo | None], list[tuple[int, int]]]:
    """What the body of a Loop or Scan node is inferred with, one entry per body input (None: what
    the engine gives a runtime-provided input), and the (body input, body output) pairs of its
    carried values, which the engine checks with ``covers``. ``declared`` holds the body inputs'
    declared element types (used where an outer input's type is unknown; None for a sequence or
    optional input, which is left to the engine)."""
    seeds, pairs = _seeds(op_type, since, node, ins, declared)
    for k, t in enumerate(declared):
        if t is None:
            seeds[k] = None
    return seeds, [(i, o) for i, o in pairs if seeds[i] is not None]


def _seeds(op_type: str, since: int, node: onnx.NodeProto, ins: list[TensorInfo | None],
           declared: list[int | None]) -> tuple[list[TensorInfo | None], list[tuple[int, int]]]:
    seeds: list[TensorInfo | None] = [None] * len(declared)
    pairs: list[tuple[int, int]] = []

    def start(t: TensorInfo | None, k: int) -> TensorInfo:
        """A carried value's first seed: the node's input as it is."""
        dtype = (t.dtype if t is not None else 0) or declared[k] or 0
        return TensorInfo(dtype, None) if t is None else TensorInfo(dtype, t.shape, t.value)

    def part(t: TensorInfo | None, k: int, shape: Shape) -> TensorInfo:
        """A slice (or a batch entry) of input ``t``: its element type, ``shape``, no values."""
        return TensorInfo((t.dtype if t is not None else 0) or declared[k] or 0, shape)

    if op_type == "Loop":
        for k in range(2, len(declared)):
            seeds[k] = start(ins[k] if k < len(ins) else None, k)
            pairs.append((k, k - 1))
        return seeds, pairs
    # Scan
    n_scan = _int_attr(node, "num_scan_inputs")
    if n_scan is None:
        return [part(None, k, None) for k in range(len(declared))], []
    if since < 9:
        # Scan-8: input 0 is the optional sequence_lens; every other input has a batch axis 0, and
        # each scanned input its sequence axis 1; the body sees one batch entry at a time.
        outer = ins[1:]
        n_state = len(outer) - n_scan
        for k in range(len(declared)):
            t = outer[k] if k < len(outer) else None
            drop = (0,) if k < n_state else (0, 1)
            seeds[k] = part(t, k, _drop_axes(t.shape if t is not None else None, drop))
            if k < n_state:
                pairs.append((k, k))
        return seeds, pairs
    n_state = len(ins) - n_scan
    axes = _int_list_attr(node, "scan_input_axes")
    for k in range(len(declared)):
        t = ins[k] if k < len(ins) else None
        if k < n_state:
            seeds[k] = start(t, k)
            pairs.append((k, k))
        else:
            j = k - n_state
            axis = _axis(axes[j] if axes is not None and j < len(axes) else 0,
                         t.rank if t is not None else None, since)
            seeds[k] = part(t, k, _drop_axes(t.shape, (axis,)) if t is not None and axis is not None else None)
    return seeds, pairs


# -- the rules ----------------------------------------------------------------------------------------

@register("If")
def if_(call: OpCall) -> list[TensorInfo | None]:
    then = call.subgraph_outputs("then_branch")
    other = call.subgraph_outputs("else_branch")
    n = len(call.output_names)
    if then is None or other is None:
        return [None] * n
    cond = call.value(0)
    if cond is not None and len(cond) == 1 and type(cond[0]) is int:
        return list(then if cond[0] else other)  # a constant condition picks its branch
    return [merge(a, b, call.domain) for a, b in zip(then, other)]


@register("Loop")
def loop(call: OpCall) -> list[TensorInfo | None]:
    body = call.subgraph_outputs("body")
    n = len(call.output_names)
    if body is None:
        return [None] * n
    carried = call.inputs[2:]
    trip, runs = _trip_count(call, body[0] if body else None)
    outs: list[TensorInfo | None] = []
    for k in range(len(carried)):
        b = body[1 + k] if 1 + k < len(body) else None
        if runs is False:
            outs.append(carried[k])  # no iteration: the initial values, as given
        elif runs:
            outs.append(b)  # the last iteration's (the body was inferred for every iteration's input)
        else:
            outs.append(merge(carried[k], b, call.domain))
    for b in body[1 + len(carried):]:
        # scan outputs stack one value per iteration along a new leading dim; after no iteration
        # the shape is onnxruntime's static guess (module docstring), not the body's
        if b is None:
            outs.append(None)
        elif runs and b.shape is not None:
            outs.append(TensorInfo(b.dtype, (trip,) + b.shape))
        else:
            outs.append(TensorInfo(b.dtype, None))
    return outs[:n] + [None] * (n - len(outs))


def _trip_count(call: OpCall, cond_out: TensorInfo | None) -> tuple[Dim, bool | None]:
    """The number of iterations when known (else None), and whether the Loop runs at least once
    (True), never (False) or it depends (None)."""
    cond: bool | None = True  # an absent condition is true
    if call.has_input(1):
        c = call.value(1)
        cond = bool(c[0]) if c and type(c[0]) is int else None
    if cond is False:
        return 0, False
    m: Dim = None
    once = True  # an absent trip count has no limit
    if call.has_input(0):
        v = call.value(0)
        m = v[0] if v else None
        lo, hi = dim_bounds(m, call.domain)
        if hi is not None and hi <= 0:
            return 0, False
        once = lo is not None and lo >= 1
    runs = True if cond and once else None
    if m is None or not cond or not _never_stops(call, cond_out):
        return None, runs
    return dim_max(0, m, call.domain), runs


def _never_stops(call: OpCall, cond_out: TensorInfo | None) -> bool:
    """Whether the body's condition output is true whenever the body runs: a true constant, or
    the body's condition input passed through (true, or the body would not be running)."""
    if cond_out is not None and cond_out.value:
        first = cond_out.value[0]
        if type(first) is int:
            return bool(first)
    g = call.engine.graph
    sub = call.info.subscopes[0] if call.info.subscopes else None
    if sub is None:
        return False
    body = g.scopes[sub]
    if len(body.inputs) < 2 or not body.outputs:
        return False
    name = body.outputs[0]
    for _ in range(len(body.nodes) + 1):
        if name == body.inputs[1]:
            return True
        producer = body.producer.get(name)
        if producer is None or producer < 0:
            return False
        info = g.nodes[producer]
        if info.op_type != "Identity" or info.domain != "" or not info.inputs:
            return False
        name = info.inputs[0]
    return False


@register("Scan")
def scan(call: OpCall) -> list[TensorInfo | None]:
    body = call.subgraph_outputs("body")
    n = len(call.output_names)
    n_scan = call.attr_int("num_scan_inputs")
    if body is None or n_scan is None:
        return [None] * n
    if call.since < 9:
        return _scan8(call, body, n_scan)
    n_state = len(call.inputs) - n_scan
    length = _sequence_length(call, n_state, call.attr_ints("scan_input_axes"))
    if call.scope == 0:
        call.learn(require_at_least(length, 1, call.domain))  # a main-graph node always runs, and an empty sequence fails
    outs: list[TensorInfo | None] = []
    for k in range(min(n_state, len(body))):
        outs.append(body[k])  # the last iteration's (an empty sequence fails in onnxruntime)
    axes = call.attr_ints("scan_output_axes")
    for j, b in enumerate(body[n_state:]):
        if b is None or b.shape is None:
            outs.append(None if b is None else TensorInfo(b.dtype, None))
            continue
        axis = _axis(axes[j] if axes is not None and j < len(axes) else 0, len(b.shape) + 1, call.since)
        if axis is None:
            outs.append(TensorInfo(b.dtype, None))
        else:
            outs.append(TensorInfo(b.dtype, b.shape[:axis] + (length,) + b.shape[axis:]))
    return outs[:n] + [None] * (n - len(outs))


def _scan8(call: OpCall, body: list[TensorInfo | None], n_scan: int) -> list[TensorInfo | None]:
    outer = call.inputs[1:]
    n_state = len(outer) - n_scan
    batch: Dim = None
    length: Dim = None
    for k, t in enumerate(outer):
        if t is not None and t.shape:
            batch = batch if batch is not None else t.shape[0]
            if k >= n_state and len(t.shape) > 1 and length is None:
                length = t.shape[1]
    outs: list[TensorInfo | None] = []
    for k, b in enumerate(body):
        if k < n_state:
            # a batch entry whose sequence_lens is 0 keeps its initial state
            t = outer[k]
            first = TensorInfo(t.dtype, _drop_axes(t.shape, (0,))) if t is not None else None
            b = merge(first, b, call.domain)
        if b is None or b.shape is None:
            outs.append(None if b is None else TensorInfo(b.dtype, None))
        elif k < n_state:
            outs.append(TensorInfo(b.dtype, (batch,) + b.shape))
        else:
            outs.append(TensorInfo(b.dtype, (batch, length) + b.shape))
    n = len(call.output_names)
    return outs[:n] + [None] * (n - len(outs))


def _sequence_length(call: OpCall, n_state: int, axes: list[int] | None) -> Dim:
    """The scanned inputs' common length along their scan axes (onnxruntime refuses different
    lengths), from the first that knows it."""
    for j, t in enumerate(call.inputs[n_state:]):
        if t is None or t.shape is None:
            continue
        axis = _axis(axes[j] if axes is not None and j < len(axes) else 0, len(t.shape), call.since)
        if axis is not None and t.shape[axis] is not None:
            return t.shape[axis]
    return None


# -- what onnxruntime's static shapes of zero-trip Loop bodies rest on --------------------------------

def zero_trip_bodies(graph: ModelGraph) -> frozenset[int]:
    """The scopes onnxruntime's own static shape inference reads to shape a Loop's scan outputs
    after zero iterations (module docstring): the body of every Loop with scan outputs, and
    every body nested in one."""
    found: set[int] = set()
    for scope in graph.scopes:
        owner = scope.owner
        if owner is None or scope.id in found:
            continue
        info = graph.nodes[owner]
        if info.op_type == "Loop" and info.domain == "" and len(scope.outputs) > 1 + max(0, len(info.inputs) - 2):
            stack = [scope.id]
            while stack:
                sid = stack.pop()
                found.add(sid)
                for nid in graph.scopes[sid].order:
                    stack.extend(graph.nodes[nid].subscopes or ())
    return frozenset(found)


def zero_trip_nodes(graph: ModelGraph) -> frozenset[int]:
    """The nodes whose rewriting, or a shape recorded for their outputs, can change what onnxruntime
    infers statically for those bodies (``zero_trip_bodies``), and so the shape of a scan output
    after zero iterations: every node of such a body, and every node outside one that computes,
    directly or through its inputs, a tensor such a body reads (onnxruntime infers the body with
    the types it knows for those). ``optimize`` and ``infer -o`` leave them as they are."""
    bodies = zero_trip_bodies(graph)
    if not bodies:
        return frozenset()
    nodes: set[int] = set()
    stack: list[tuple[int, str]] = []
    for sid in bodies:
        scope = graph.scopes[sid]
        nodes.update(scope.order)
        if scope.parent is not None and scope.parent not in bodies:
            stack.extend((scope.parent, name) for name in scope.free)
    while stack:
        sid, name = stack.pop()
        where = graph.definition(sid, name)
        if where is None or where[1] < 0 or where[1] in nodes:
            continue
        home, producer = where
        nodes.add(producer)
        info = graph.nodes[producer]
        stack.extend((home, n) for n in info.inputs if n)
        for sub in info.subscopes or ():
            stack.extend((home, n) for n in graph.scopes[sub].free)
    return frozenset(nodes)


# -- helpers ------------------------------------------------------------------------------------------

def _axis(axis: int, rank: int | None, since: int) -> int | None:
    """``axis`` normalised for ``rank`` (negative axes from Scan-11 on), None when out of range."""
    if rank is None:
        return None
    if axis < 0 and since >= 11:
        axis += rank
    return axis if 0 <= axis < rank else None


def _drop_axes(shape: Shape, axes: tuple[int, ...]) -> Shape:
    if shape is None or any(a >= len(shape) for a in axes):
        return None
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _int_attr(node: onnx.NodeProto, name: str) -> int | None:
    for a in node.attribute:
        if a.name == name:
            return int(a.i) if a.type == onnx.AttributeProto.INT else None
    return None


def _int_list_attr(node: onnx.NodeProto, name: str) -> list[int] | None:
    for a in node.attribute:
        if a.name == name:
            return [int(x) for x in a.ints] if a.type == onnx.AttributeProto.INTS else None
    return None
