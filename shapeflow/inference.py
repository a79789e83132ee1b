"""Symbolic shape inference over the whole model.

Walks every scope in topological order, feeding each node's input infos to its shape rule
(``shapeflow.ops``) and falling back to onnx's per-node inference for standard ops without one.
Subgraph bodies are inferred when their owner node is reached (their outer-scope reads are known by
then); model-local function bodies are inferred once, with unknown inputs.

Inference is sound: a shape it reports holds for every runtime value of its symbols, or the model
fails at run time anyway. Whatever it cannot prove is unknown (None).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Mapping

import onnx

from .dims import Dim, Shape, Sym, substitute
from .errors import LimitExceeded
from .facts import AxisNode
from .graph import ModelGraph, Scope
from .limits import DEFAULT_LIMITS, Limits
from .ops import REGISTRY, fallback
from .ops.base import OpCall
from .ops.constants import tensor_info_from_proto
from .tensorinfo import TensorInfo

Progress = Callable[[int, int], None]

# Time and progress are checked every this many nodes: cheap, and often enough for a 120 s limit.
_CHECK_EVERY = 2048


@dataclass
class Inference:
    """The result: what is known about every tensor of every scope, and the Squeeze/Unsqueeze facts."""

    graph: ModelGraph
    bindings: Mapping[str, int] = field(default_factory=dict)
    limits: Limits = DEFAULT_LIMITS
    tensors: list[dict[str, TensorInfo | None]] = field(default_factory=list)
    axis_nodes: list[AxisNode] = field(default_factory=list)
    # owner node id -> {attribute: [output infos of that body]}
    subgraph_out: dict[int, dict[str, list[TensorInfo | None]]] = field(default_factory=dict)
    # decoded constant tensors (axes) by (scope id, name), so shared initializers are read once
    constant_cache: dict[tuple[int, str], tuple[int, ...] | None] = field(default_factory=dict, repr=False)
    # Shape rules' memo tables for one run (axes facts per axes tensor, Squeeze/Unsqueeze results
    # per input shape and axes), keyed by the rule's own tuples.
    memo: dict[tuple, object] = field(default_factory=dict, repr=False)

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
          limits: Limits = DEFAULT_LIMITS, progress: Progress | None = None) -> Inference:
    """Infer every tensor of ``graph``. ``bindings`` substitutes symbols (``{"batch": 1}``)."""
    result = Inference(graph, dict(bindings or {}), limits)
    result.tensors = [dict() for _ in graph.scopes]
    runner = _Runner(result, progress)
    runner.run_scope(graph.scopes[0])
    for sid in graph.functions.values():
        runner.run_scope(graph.scopes[sid])
    return result


_MISSING = object()


class _Runner:
    def __init__(self, result: Inference, progress: Progress | None) -> None:
        self.r = result
        self.g = result.graph
        self.progress = progress
        self.done = 0
        self.total = len(self.g.nodes)
        self.deadline = time.monotonic() + result.limits.timeout
        self.max_rank = result.limits.max_rank
        self.max_expr = result.limits.max_expr_size
        # domain -> op_type -> shape rule (None: outputs unknown), resolved once per op type
        self.rules: dict[str, dict[str, object]] = {}
        # Every output shape, interned: one tuple per distinct shape, checked against the limits
        # once. Equal shapes become the same object, which also lets rules memoise by identity.
        self.shapes: dict[tuple, tuple] = {}

    def _rule_for(self, domain: str, op_type: str) -> object:
        by_op = self.rules.setdefault(domain, {})
        rule = by_op.get(op_type, _MISSING)
        if rule is _MISSING:
            rule = REGISTRY.get(domain, op_type)
            if rule is None and domain == "":
                rule = fallback.infer_with_onnx
            by_op[op_type] = rule
        return rule

    def run_scope(self, scope: Scope) -> None:
        # The loop body runs once per node of the model: the common case (one output, a rule that
        # answers) is kept free of calls that are not the rule itself.
        r, g = self.r, self.g
        table = r.tensors[scope.id]
        self._seed(scope, table)
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
            if since is not None:  # else a custom domain, an unknown op, or a function call: opaque
                by_op = rules.get(info.domain)
                rule = by_op.get(info.op_type, _MISSING) if by_op is not None else _MISSING
                if rule is _MISSING:
                    rule = rule_for(info.domain, info.op_type)
                if rule is not None:
                    try:
                        outs = rule(OpCall(None, since, ins, nid, sid, r, info))  # type: ignore[operator]
                        if type(outs) is not list:
                            outs = list(outs)  # type: ignore[arg-type]
                    except LimitExceeded:
                        raise
                    except Exception:  # a rule must never turn a strange model into a crash: unknown
                        outs = None
                    if outs:
                        # _check_value, inline: values are short and mostly plain ints
                        for t in outs:
                            if t is not None:
                                value = t.value
                                if value is not None:
                                    for v in value:
                                        if type(v) is Sym and v.size() > max_expr:
                                            self._check_value(value, nid)
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

    def _seed(self, scope: Scope, table: dict[str, TensorInfo | None]) -> None:
        """Graph inputs from their declared types (the one declaration we trust), initializers
        from their dims and, when small, their values."""
        body = scope.proto
        bindings = self.r.bindings
        if isinstance(body, onnx.GraphProto):
            for vi in body.input:
                table[vi.name] = self._from_type(vi.type, bindings, vi.name)
            for name, t in scope.initializers.items():
                if len(t.dims) > self.max_rank:
                    raise LimitExceeded("max-rank", len(t.dims), "--max-rank", file=self.g.path, tensor=name)
                table[name] = tensor_info_from_proto(t)
            for st in body.sparse_initializer:
                table[st.values.name] = TensorInfo(st.values.data_type, tuple(int(d) for d in st.dims))
        else:
            for name in scope.inputs:
                table[name] = None

    def _from_type(self, tp: onnx.TypeProto, bindings: Mapping[str, int], name: str) -> TensorInfo | None:
        if tp.WhichOneof("value") != "tensor_type":
            return None
        tt = tp.tensor_type
        if not tt.HasField("shape"):
            return TensorInfo(tt.elem_type, None)
        dims = tt.shape.dim
        if len(dims) > self.max_rank:
            raise LimitExceeded("max-rank", len(dims), "--max-rank", file=self.g.path, tensor=name)
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
                raise LimitExceeded("max-rank", len(shape), "--max-rank", file=self.g.path, node=where)
            for d in shape:
                if type(d) is Sym and d.size() > self.max_expr:
                    raise LimitExceeded("max-expr-size", d.size(), "--max-expr-size", file=self.g.path,
                                        node=where)

    def _check_value(self, value: tuple, nid: int) -> None:
        """Symbolic *values* of shape tensors count against --max-expr-size too: they are where
        expressions grow (``Mul(e, e)`` squares one), before any of them becomes a dim."""
        max_expr = self.max_expr
        for v in value:
            if type(v) is Sym and v.size() > max_expr:
                info = self.g.nodes[nid]
                raise LimitExceeded("max-expr-size", v.size(), "--max-expr-size", file=self.g.path,
                                    node=info.peek().name or info.op_type)

    def _tick(self) -> None:
        if time.monotonic() > self.deadline:
            raise LimitExceeded("timeout", f"{self.r.limits.timeout:g} s", "--timeout", file=self.g.path)
        if self.progress is not None:
            self.progress(self.done, self.total)
