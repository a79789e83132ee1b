"""Symbolic shape inference over the whole model.

Walks every scope in topological order, feeding each node's input infos to its shape rule
(``shapeflow.ops``) and falling back to onnx's per-node inference for standard ops without one.
Subgraph bodies are inferred when their owner node is reached (their outer-scope reads are known by
then). A call of a model-local function is inferred at its call site: the body runs again with the
call's input infos and attribute values (once per distinct call signature); those runs give the
call's outputs and their own Squeeze/Unsqueeze facts (``call_facts``), which hold for that call
only. The tables and the facts the lint rules read first come from one more run of each body with
unknown inputs, which is true of every call; ``rules/calls.py`` adds the errors that show only at
a call.

Inference is sound: a shape it reports holds for every runtime value of its symbols, or the model
fails at run time anyway. Whatever it cannot prove is unknown (None).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, ContextManager, Mapping

from ._onnx import onnx

from .dims import Bound, Dim, Shape, Sym, assuming, current_assumptions, substitute
from .errors import LimitExceededError
from .facts import AxisNode, CallFacts
from .graph import ModelGraph, NodeInfo, Scope
from .limits import DEFAULT_LIMITS, Limits, deadline
from .ops import REGISTRY, fallback
from .ops.base import OpCall
from .ops.constants import tensor_info_from_proto
from .ops.numeric import canonical_value
from .tensorinfo import TensorInfo

Progress = Callable[[int, int], None]

# Time and progress are checked every this many nodes: cheap, and often enough for a 120 s limit.
_CHECK_EVERY = 2048
# Function calls nested deeper than this are opaque (outputs unknown): no recursion over depth.
MAX_CALL_DEPTH = 16


@dataclass
class Inference:
    """The result: what is known about every tensor of every scope, and the Squeeze/Unsqueeze facts."""

    graph: ModelGraph
    bindings: Mapping[str, int] = field(default_factory=dict)
    limits: Limits = DEFAULT_LIMITS
    tensors: list[dict[str, TensorInfo | None]] = field(default_factory=list)
    axis_nodes: list[AxisNode] = field(default_factory=list)
    # The facts of function bodies re-run at their call sites, one entry per distinct call
    # signature that recorded any (the lint rules that judge facts alone also judge these).
    call_facts: list[CallFacts] = field(default_factory=list)
    # owner node id -> {attribute: [output infos of that body]}
    subgraph_out: dict[int, dict[str, list[TensorInfo | None]]] = field(default_factory=dict)
    # decoded constant tensors (axes) by (scope id, name), so shared initializers are read once
    constant_cache: dict[tuple[int, str], tuple[int, ...] | None] = field(default_factory=dict, repr=False)
    # Shape rules' memo tables for one run (axes facts per axes tensor, Squeeze/Unsqueeze results
    # per input shape and axes), keyed by the rule's own tuples.
    memo: dict[tuple, object] = field(default_factory=dict, repr=False)
    # The ranges the user stated (--assume), and those plus the facts inference proved on the way
    # (a symbol >= 1 where the model fails otherwise): the domain its results hold in.
    assumptions: Mapping[str, Bound] = field(default_factory=dict)
    ranges: Mapping[str, Bound] = field(default_factory=dict)

    def domain(self) -> ContextManager[None]:
        """The block in which dims are judged as inference judged them (its ranges in force):
        lint rules and rewrites decide ``seq != 1`` under ``--assume seq>=2`` too."""
        return assuming(self.ranges)

    def proven(self) -> dict[str, Bound]:
        """The ranges inference proved beyond what the user stated."""
        return {k: v for k, v in self.ranges.items() if self.assumptions.get(k) != v}

    # -- queries ---------------------------------------------------------------------------------
    def lookup(self, scope_id: int, name: str) -> TensorInfo | None:
        """A tensor's info as seen from ``scope_id`` (enclosing scopes included)."""
        scopes = self.graph.scopes
        sid: int | None = scope_id
        while sid is not None:
            table = self.tensors[sid]
            if name in table:
                return table[name]
            sid = scopes[sid].parent
        return None

    def shape_of(self, name: str, scope_id: int = 0) -> Shape:
        t = self.lookup(scope_id, name)
        return None if t is None else t.shape

    # -- used by rules -----------------------------------------------------------------------------
    def record(self, call: OpCall, fact: object) -> None:
        if isinstance(fact, AxisNode):
            self.axis_nodes.append(fact)

    def subgraph_outputs(self, nid: int, attr: str) -> list[TensorInfo | None] | None:
        return self.subgraph_out.get(nid, {}).get(attr)


def infer(graph: ModelGraph, bindings: Mapping[str, int] | None = None,
          limits: Limits = DEFAULT_LIMITS, progress: Progress | None = None,
          assumptions: Mapping[str, Bound] | None = None) -> Inference:
    """Infer every tensor of ``graph``. ``bindings`` substitutes symbols (``{"batch": 1}``);
    ``assumptions`` are the ranges the user stated (``{"seq": (3, None)}``, ``--assume seq>=3``)."""
    user = dict(assumptions or {})
    result = _run(graph, bindings, limits, progress, user, user)
    if result.ranges != user:
        # The run proved facts (a -1 Reshape makes seq >= 1 wherever the model runs). Nodes
        # before the one that proved them did not know them: one more run starts from them.
        result = _run(graph, bindings, limits, progress, user, result.ranges)
    return result


def _run(graph: ModelGraph, bindings: Mapping[str, int] | None, limits: Limits, progress: Progress | None,
         user: dict[str, Bound], start: Mapping[str, Bound]) -> Inference:
    result = Inference(graph, dict(bindings or {}), limits)
    result.assumptions = user
    result.tensors = [dict() for _ in graph.scopes]
    runner = _Runner(result, progress)
    with assuming(start):
        runner.run_scope(graph.scopes[0])
        for sid in graph.functions.values():
            runner.run_scope(graph.scopes[sid])
        result.ranges = dict(current_assumptions())
    return result


def declared_symbols(graph: ModelGraph) -> set[str]:
    """The names of the symbolic dims the model declares on its graph inputs (and subgraph
    inputs): the symbols inference starts from, the ones ``--assume`` may name."""
    names: set[str] = set()
    for scope in graph.scopes:
        body = scope.proto
        if isinstance(body, onnx.GraphProto):
            for vi in body.input:
                if vi.type.WhichOneof("value") == "tensor_type" and vi.type.tensor_type.HasField("shape"):
                    for d in vi.type.tensor_type.shape.dim:
                        if d.WhichOneof("value") == "dim_param" and d.dim_param:
                            names.add(d.dim_param)
    return names


_MISSING = object()
# Shape rules that read an unresolved ``@attr`` reference as unknown (ops/axes_input.py,
# ops/constants.py); every other rule would take its empty field for a value.
_READS_REFERENCES = frozenset({"Squeeze", "Unsqueeze", "Constant"})


class _Runner:
    def __init__(self, result: Inference, progress: Progress | None) -> None:
        self.r = result
        self.g = result.graph
        self.progress = progress
        self.done = 0
        self.total = len(self.g.nodes)
        self.bodies = 0  # scopes run: a model of many empty bodies has few nodes to count time by
        self.deadline = deadline(result.limits)
        self.max_rank = result.limits.max_rank
        self.max_expr = result.limits.max_expr_size
        # domain -> op_type -> shape rule (None: outputs unknown), resolved once per op type
        self.rules: dict[str, dict[str, object]] = {}
        # Every output shape, interned: one tuple per distinct shape, checked against the limits
        # once. Equal shapes become the same object, which also lets rules memoise by identity.
        self.shapes: dict[tuple, tuple] = {}
        # Function calls: the attribute values of the call being re-run (None: the generic run,
        # where ``@attr`` references are unknown), its nesting depth, the outputs per call
        # signature, and a budget of body nodes re-run after which calls
        # are opaque rather than an error: a few times the model's own size (exporters' calls of
        # one function mostly share a signature), so nested calls cannot multiply the work.
        self.env: dict[str, onnx.AttributeProto] | None = None
        self.depth = 0
        self.calls: dict[tuple, list[TensorInfo | None] | None] = {}
        self.call_budget = min(result.limits.max_nodes, max(4 * len(self.g.nodes), 100_000))
        self.in_function = [self.g.in_function(sc.id) for sc in self.g.scopes]
        self.descendants: dict[int, list[int]] = {}

    def _rule_for(self, domain: str, op_type: str) -> object:
        by_op = self.rules.setdefault(domain, {})
        rule = by_op.get(op_type, _MISSING)
        if rule is _MISSING:
            rule = REGISTRY.get(domain, op_type)
            if rule is None and domain == "" and op_type not in fallback.UNTRUSTED:
                rule = fallback.infer_with_onnx
            by_op[op_type] = rule
        return rule

    def run_scope(self, scope: Scope, args: list[TensorInfo | None] | None = None) -> None:
        # The loop body runs once per node of the model: the common case (one output, a rule that
        # answers) is kept free of calls that are not the rule itself.
        r, g = self.r, self.g
        self.bodies += 1
        if not self.bodies & 0xFF:
            self._tick()
        table = r.tensors[scope.id]
        self._seed(scope, table, args)
        in_function = self.in_function[scope.id]
        functions = g.functions
        nodes = g.nodes
        lookup = r.lookup
        sid = scope.id
        rules = self.rules
        rule_for = self._rule_for
        shapes = self.shapes
        max_expr = self.max_expr
        for nid in scope.order:
            info = nodes[nid]
            if info.subscopes:
                for sub in info.subscopes:
                    self.run_scope(g.scopes[sub])
                    body = g.scopes[sub]
                    r.subgraph_out.setdefault(nid, {})[body.attr or ""] = [
                        r.tensors[sub].get(o) if o in r.tensors[sub] else lookup(sub, o) for o in body.outputs
                    ]
            ins: list[TensorInfo | None] = []
            for name in info.inputs:
                if not name:
                    ins.append(None)
                elif name in table:
                    ins.append(table[name])
                else:
                    ins.append(lookup(sid, name))
            outs: list[TensorInfo | None] | None = None
            since = info.since_version
            if since is not None:  # else a custom domain, an unknown op, or a function call
                by_op = rules.get(info.domain)
                rule = by_op.get(info.op_type, _MISSING) if by_op is not None else _MISSING
                if rule is _MISSING:
                    rule = rule_for(info.domain, info.op_type)
                proto = None
                if in_function and info.has_attrs:
                    proto = self._bind_attributes(info.peek())
                    if proto is None:  # an ``@attr`` reference whose value is not known here
                        if info.op_type in _READS_REFERENCES and info.domain == "":
                            proto = info.peek()
                        else:
                            rule = None
                if rule is not None:
                    try:
                        outs = rule(OpCall(proto, since, ins, nid, sid, r, info))  # type: ignore[operator]
                        if type(outs) is not list:
                            outs = list(outs)  # type: ignore[arg-type, unused-ignore]  # a rule that returned a tuple
                    except LimitExceededError:
                        raise
                    except Exception:  # a rule must never turn a strange model into a crash: unknown
                        outs = None
                    if outs:
                        for t in outs:
                            if t is not None:
                                value = t.value
                                if value is not None:
                                    # _check_value, inline: values are short, mostly ints
                                    for v in value:
                                        if type(v) is Sym and v.size() > max_expr:
                                            self._check_value(value, nid)
                                    # what the element type holds: int64 wraps, int32 of a
                                    # symbol only where it provably fits (ops/numeric.py)
                                    t.value = canonical_value(t.dtype, value)
            elif functions:
                fsid = functions.get((info.peek().domain, info.op_type))
                if fsid is not None:
                    outs = self._call(fsid, nid, info, ins)
            outputs = info.outputs
            if len(outputs) == 1:
                t = outs[0] if outs else None
                name = outputs[0]
                if name:
                    if t is not None:
                        shape = t.shape
                        if shape is not None:
                            seen = shapes.get(shape)
                            if seen is None:
                                self._check_limits(shape, nid)
                                shapes[shape] = shape
                            elif seen is not shape:
                                t.shape = seen
                    table[name] = t
            else:
                for k, name in enumerate(outputs):
                    t = outs[k] if outs is not None and k < len(outs) else None
                    if name:
                        if t is not None and t.shape is not None:
                            seen = shapes.get(t.shape)
                            if seen is None:
                                self._check_limits(t.shape, nid)
                                shapes[t.shape] = t.shape
                            elif seen is not t.shape:
                                t.shape = seen
                        table[name] = t
            self.done += 1
            if self.done % _CHECK_EVERY == 0:
                self._tick()

    # -- model-local functions ---------------------------------------------------------------------
    def _call(self, fsid: int, caller: int, info: "NodeInfo",
              ins: list[TensorInfo | None]) -> list[TensorInfo | None] | None:
        """The outputs of call ``caller`` (a node id) of function scope ``fsid``: its body re-run on the call's
        inputs and attributes, in tables of its own; memoised by the call's signature. The
        run's facts are kept apart (``Inference.call_facts``), with the call they hold for."""
        node = info.peek()
        key = (fsid, tuple(None if t is None else (t.dtype, t.shape, t.value) for t in ins),
               tuple(a.SerializeToString() for a in node.attribute) if info.has_attrs else ())
        if key in self.calls:
            return self.calls[key]
        body = self.g.scopes[fsid]
        if self.depth >= MAX_CALL_DEPTH or len(body.order) > self.call_budget:
            return None
        self.call_budget -= len(body.order)
        fn = body.proto
        env = {a.name: a for a in fn.attribute_proto}  # defaults (IR 9)
        env.update((a.name, a) for a in node.attribute)
        scopes = self._descendants(fsid)
        r = self.r
        saved_tables = [r.tensors[i] for i in scopes]
        saved_out = {nid: r.subgraph_out[nid] for i in scopes for nid in self.g.scopes[i].order
                     if nid in r.subgraph_out}
        saved = (r.memo, r.axis_nodes, self.env)
        # Shape rules memoise per scope and tensor name (the axes of a tensor, say), which holds
        # within one run of a body but not across calls: each call gets a memo of its own. The
        # facts of this run hold for this call only: they are kept apart from the generic run's.
        facts: list[AxisNode] = []
        r.memo, r.axis_nodes, self.env = {}, facts, env
        for i in scopes:
            r.tensors[i] = {}
        self.depth += 1
        try:
            self.run_scope(body, list(ins[:len(body.inputs)]))
            table = r.tensors[fsid]
            outs: list[TensorInfo | None] | None = [table.get(o) for o in body.outputs]
        finally:
            self.depth -= 1
            r.memo, r.axis_nodes, self.env = saved
            for i, t in zip(scopes, saved_tables):
                r.tensors[i] = t
            for i in scopes:
                for nid in self.g.scopes[i].order:
                    r.subgraph_out.pop(nid, None)
            r.subgraph_out.update(saved_out)
        self.calls[key] = outs
        if facts:
            r.call_facts.append(CallFacts(caller, fsid, tuple(facts)))
        return outs

    def _descendants(self, fsid: int) -> list[int]:
        """Scope ``fsid`` and every body nested in it."""
        found = self.descendants.get(fsid)
        if found is None:
            found, stack = [], [fsid]
            while stack:
                sid = stack.pop()
                found.append(sid)
                for nid in self.g.scopes[sid].order:
                    stack.extend(self.g.nodes[nid].subscopes or ())
            self.descendants[fsid] = found
        return found

    def _bind_attributes(self, node: onnx.NodeProto) -> onnx.NodeProto | None:
        """``node`` with its ``@attr`` references replaced by the values of the call being re-run:
        the node itself when it has none, None when one is not known (the generic run)."""
        refs = [a for a in node.attribute if a.ref_attr_name]
        if not refs:
            return node
        env = self.env
        if env is None or any(a.ref_attr_name not in env for a in refs):
            return None
        bound = onnx.NodeProto()
        bound.CopyFrom(node)
        del bound.attribute[:]
        for a in node.attribute:
            if a.ref_attr_name:
                value = onnx.AttributeProto()
                value.CopyFrom(env[a.ref_attr_name])
                value.name = a.name
                a = value
            bound.attribute.append(a)
        return bound

    def _seed(self, scope: Scope, table: dict[str, TensorInfo | None],
              args: list[TensorInfo | None] | None = None) -> None:
        """Graph inputs from their declared types (the one declaration we trust), initializers
        from their dims and, when small, their values; a function's inputs from ``args`` (a call
        site's) or unknown."""
        body = scope.proto
        bindings = self.r.bindings
        if isinstance(body, onnx.GraphProto):
            # A Loop body's carried inputs (after the iteration number and the condition) may
            # change shape from one iteration to the next, and onnxruntime does not hold them to
            # their declaration: only their element type is known.
            carried = 2 if self._is_loop_body(scope) else len(body.input)
            for k, vi in enumerate(body.input):
                info = self._from_type(vi.type, bindings, vi.name)
                if k >= carried and info is not None:
                    info = TensorInfo(info.dtype, None)
                table[vi.name] = info
            # From IR 4 an initializer that is also a graph input is only a default: a caller may
            # feed another value (onnxruntime then checks it against the declared type alone).
            overridable = self.g.model.ir_version >= 4
            for name, t in scope.initializers.items():
                if len(t.dims) > self.max_rank:
                    raise LimitExceededError("max-rank", len(t.dims), "--max-rank", file=self.g.path, tensor=name)
                if overridable and name in table:
                    continue
                table[name] = tensor_info_from_proto(t)
            for st in body.sparse_initializer:
                table[st.values.name] = TensorInfo(st.values.data_type, tuple(int(d) for d in st.dims))
        else:
            for k, name in enumerate(scope.inputs):
                table[name] = args[k] if args is not None and k < len(args) else None

    def _is_loop_body(self, scope: Scope) -> bool:
        owner = scope.owner
        if owner is None:
            return False
        info = self.g.nodes[owner]
        return info.op_type == "Loop" and info.domain == ""

    def _from_type(self, tp: onnx.TypeProto, bindings: Mapping[str, int], name: str) -> TensorInfo | None:
        if tp.WhichOneof("value") != "tensor_type":
            return None
        tt = tp.tensor_type
        if not tt.HasField("shape"):
            return TensorInfo(tt.elem_type, None)
        dims = tt.shape.dim
        if len(dims) > self.max_rank:
            raise LimitExceededError("max-rank", len(dims), "--max-rank", file=self.g.path, tensor=name)
        shape: list[Dim] = []
        for d in dims:
            which = d.WhichOneof("value")
            if which == "dim_value":
                shape.append(int(d.dim_value) if d.dim_value >= 0 else None)
            elif which == "dim_param" and d.dim_param:
                s: Dim = Sym.symbol(d.dim_param)
                shape.append(substitute(s, bindings) if bindings else s)
            else:
                shape.append(None)
        return TensorInfo(tt.elem_type, tuple(shape))

    def _check_limits(self, shape: tuple, nid: int) -> None:
        if len(shape) > self.max_rank or any(type(d) is Sym and d.size() > self.max_expr for d in shape):
            info = self.g.nodes[nid]
            where = info.peek().name or info.op_type
            if len(shape) > self.max_rank:
                raise LimitExceededError("max-rank", len(shape), "--max-rank", file=self.g.path, node=where)
            for d in shape:
                if type(d) is Sym and d.size() > self.max_expr:
                    raise LimitExceededError("max-expr-size", d.size(), "--max-expr-size", file=self.g.path,
                                        node=where)

    def _check_value(self, value: tuple, nid: int) -> None:
        """Symbolic *values* of shape tensors count against --max-expr-size too: they are where
        expressions grow (``Mul(e, e)`` squares one), before any of them becomes a dim."""
        max_expr = self.max_expr
        for v in value:
            if type(v) is Sym and v.size() > max_expr:
                info = self.g.nodes[nid]
                raise LimitExceededError("max-expr-size", v.size(), "--max-expr-size", file=self.g.path,
                                    node=info.peek().name or info.op_type)

    def _tick(self) -> None:
        if time.monotonic() > self.deadline:
            raise LimitExceededError("timeout", f"{self.r.limits.timeout:g} s", "--timeout", file=self.g.path)
        if self.progress is not None:
            self.progress(min(self.done, self.total), self.total)
