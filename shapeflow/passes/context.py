"""What a rewrite sees of one round of the fixpoint: :class:`RoundContext`.

The context answers the questions every rewrite asks (who produces this tensor, who reads it, which
positions does this Squeeze remove) from the round's graph index and inference, as they were when
the round started. Names, op types and input/output lists come from the index (reading protobuf
fields is the main cost on large graphs); the engine's claims keep two rewrites of one round from
touching the same node, so what a match read is still true when it is applied.

The symbolic domain the round decides dims in (the ranges inference proved, ``--assume`` included)
is a value of the context, ``domain`` (the inference's): a rewrite passes it to the dims algebra.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from .._onnx import onnx
from ..dims import BASE, Bound, Domain, dim_is_one, format_shape
from ..facts import (
    AXES_ABSENT,
    AXES_ATTRIBUTE,
    AXES_COMPUTED,
    AXES_CONSTANT,
    AXES_INITIALIZER,
    AxisNode,
)
from ..graph import GRAPH_INPUT, INITIALIZER, ModelGraph, NodeInfo, Scope
from ..inference import Inference
from ..ops.numeric import INT_RANGES as _NUMERIC_INT_RANGES
from ..opsets import AXES_INPUT_SINCE
from ..tensorinfo import TensorInfo
from . import _fast
from .match import NoMatch

TensorProto = onnx.TensorProto

# What produces a root's data input (``Pattern.after``): the op type of an ai.onnx node of
# the root's scope, or one of these (no ai.onnx op type has a '<').
FROM_INITIALIZER = _fast.FROM_INITIALIZER
FROM_GRAPH_INPUT = _fast.FROM_GRAPH_INPUT
FROM_OUTER_SCOPE = _fast.FROM_OUTER_SCOPE  # an enclosing scope's tensor (or no tensor at all)
FROM_CUSTOM = _fast.FROM_CUSTOM  # a node of another domain or of an unknown version
FROM_NOTHING = _fast.FROM_NOTHING  # the root has no input (a Constant)
# ``Pattern.roots`` entry of a rewrite asked about every standard node (duplicates)
ANY_OP = "*"
# The op types whose nodes carry axis facts (``RoundContext.facts``); a pass whose rules are all
# rooted at them visits only those nodes.
AXIS_OPS = frozenset({"Squeeze", "Unsqueeze"})


# Element types whose values value inference tracks exactly, and their ranges (bool is 0/1).
INT_RANGES: dict[int, tuple[int, int]] = {**_NUMERIC_INT_RANGES, TensorProto.BOOL: (0, 1)}

_STATIC_SOURCES = (AXES_ATTRIBUTE, AXES_INITIALIZER, AXES_CONSTANT, AXES_COMPUTED)


@dataclass
class RoundContext:
    """Read-only view of one round: the graph index, the inference, and per-round caches."""

    graph: ModelGraph
    inference: Inference
    strict: bool = False
    facts: dict[int, AxisNode] = field(default_factory=dict)
    # (scope id, name) of initializers that are also graph inputs: a caller may override them,
    # so their values are not constants.
    overridable: set[tuple[int, str]] = field(default_factory=set)
    cache: dict[object, object] = field(default_factory=dict)  # rules' memo tables, for one round
    # False when the matches are only listed (lint's candidates), never applied: the nodes a
    # rewrite would claim beyond its own (``exclusive_cone``) need not be worked out.
    claims: bool = True
    # Node ids the caller said not to touch (the engine skips them as roots; a rule that writes
    # nodes other than its root, such as the readers of a fan-out, checks them here).
    blocked: frozenset[int] | set[int] = frozenset()
    # The symbolic domain dims are decided in: the inference's (each symbol's range, --assume included).
    domain: Domain = BASE
    _outputs: dict[int, frozenset[str]] = field(default_factory=dict)
    _input_sets: dict[int, frozenset[str]] = field(default_factory=dict)  # (_reads; the index is one round's)

    @classmethod
    def build(cls, graph: ModelGraph, inference: Inference, strict: bool = False) -> "RoundContext":
        ctx = cls(graph, inference, strict)
        ctx.domain = inference.domain
        ctx.facts = {a.nid: a for a in inference.axis_nodes}
        for scope in graph.scopes:
            if scope.kind == "graph" and scope.initializers:
                for name in scope.inputs:
                    if name in scope.initializers:
                        ctx.overridable.add((scope.id, name))
        return ctx

    @property
    def ranges(self) -> Mapping[str, Bound]:
        """Each symbol's range in the round's domain."""
        return self.domain.ranges

    def release(self) -> None:
        """Drop the memo tables when the round is over. Their entries (matches whose lazy messages
        close over this context) refer back to it: the cycle would keep the round's index and
        inference alive until a full collection, which takes a second on a 500k-node model."""
        self.cache.clear()

    # -- structure -------------------------------------------------------------------------------
    @property
    def model(self) -> onnx.ModelProto:
        return self.graph.model

    def info(self, nid: int) -> NodeInfo:
        return self.graph.nodes[nid]

    def proto(self, nid: int) -> onnx.NodeProto:
        """The node's proto, for its attributes; names are cheaper from ``inputs``/``outputs``."""
        return self.graph.nodes[nid].proto

    def peek(self, nid: int) -> onnx.NodeProto:
        """The node's proto for a passing look at its attributes (not kept by the index)."""
        return self.graph.nodes[nid].peek()

    def inputs(self, nid: int) -> tuple[str, ...]:
        return self.graph.nodes[nid].inputs

    def output(self, nid: int) -> str:
        return self.graph.nodes[nid].outputs[0]

    def sid(self, nid: int) -> int:
        return self.graph.nodes[nid].scope

    def scope(self, sid: int) -> Scope:
        return self.graph.scopes[sid]

    def opset(self, sid: int) -> int:
        return self.graph.scopes[sid].opsets.get("", 0)

    def outputs(self, sid: int) -> frozenset[str]:
        """Names of ``sid`` that must keep existing under their name: its outputs and, for the main
        graph, every name its training_info refers to (bindings name initializers of the main
        graph, and its training graphs read main-graph tensors by name, unseen by the index)."""
        found = self._outputs.get(sid)
        if found is None:
            names = set(self.graph.scopes[sid].outputs)
            if sid == 0:
                names |= training_names(self.graph.model)
            found = frozenset(names)
            self._outputs[sid] = found
        return found

    def is_output(self, sid: int, name: str) -> bool:
        return name in self.outputs(sid)

    def readers(self, sid: int, name: str) -> list[int]:
        """Nodes of scope ``sid`` reading ``name``, including owners of subgraphs that read it."""
        return self.graph.scopes[sid].consumers.get(name, [])

    def direct_readers_only(self, sid: int, name: str) -> bool:
        """Every reader lists ``name`` among its inputs (no subgraph reads it by name), so the
        readers can be rewired to another tensor."""
        nodes = self.graph.nodes
        readers = self.graph.scopes[sid].consumers.get(name)
        if not readers:
            return True
        if len(readers) == 1:  # the common case, asked for every rewrite that renames a tensor
            return self._reads(readers[0], nodes[readers[0]].inputs, name)
        return all(self._reads(r, nodes[r].inputs, name) for r in readers)

    def _reads(self, nid: int, inputs: Sequence[str], name: str) -> bool:
        """``name in inputs``, through a set for a node of many inputs: asked once per input of a
        Concat of 40,000 duplicates, the scan of its list made the candidate search quadratic."""
        if len(inputs) <= 16:
            return name in inputs
        found = self._input_sets.get(nid)
        if found is None:
            self._input_sets[nid] = found = frozenset(inputs)
        return name in found

    def only_reader(self, sid: int, name: str, nid: int) -> bool:
        """``nid`` is the one node reading ``name``, which is no graph output: the producer of
        ``name`` can go once ``nid`` stops reading it."""
        readers = self.graph.scopes[sid].consumers.get(name)
        if readers is None or len(readers) != 1 or readers[0] != nid:
            return False
        outputs = self._outputs.get(sid)
        return name not in (outputs if outputs is not None else self.outputs(sid))

    def producer(self, sid: int, name: str) -> int | None:
        """The node of scope ``sid`` producing ``name``, or None (graph input, initializer, outer
        scope, or not produced at all)."""
        p = self.graph.scopes[sid].producer.get(name)
        return p if p is not None and p >= 0 else None

    def definition(self, sid: int, name: str) -> tuple[int, int] | None:
        return self.graph.definition(sid, name)

    def is_standard(self, nid: int, op_type: str | None = None) -> bool:
        """An ai.onnx node of a known version (and of ``op_type`` when given)."""
        info = self.graph.nodes[nid]
        if info.domain != "" or info.since_version is None:
            return False
        return op_type is None or info.op_type == op_type

    def input_producer(self, nid: int, index: int, op_type: str) -> int | None:
        """The node of the same scope that produces input ``index`` of ``nid``, if it is a standard
        ``op_type`` node."""
        info = self.graph.nodes[nid]
        names = info.inputs
        if index >= len(names) or not names[index]:
            return None
        p = self.graph.scopes[info.scope].producer.get(names[index])
        if p is None or p < 0:
            return None
        pinfo = self.graph.nodes[p]
        if pinfo.op_type != op_type or pinfo.domain != "" or pinfo.since_version is None:
            return None
        if not pinfo.inputs or not pinfo.inputs[0]:
            return None  # a malformed node (no data input): nothing to rewrite through it
        return p

    def chain_plain(self, nid: int, op_type: str, limit: int = 16) -> list[int]:
        """The run of ``op_type`` nodes feeding ``nid`` through input 0, nearest first, each read
        only by the next (so the whole run can go once ``nid`` no longer needs it). The nearest one
        is included even when it has other readers. At most ``limit`` nodes: a longer run is
        taken over several rounds, and a match stays O(1)."""
        out: list[int] = []
        cur = nid
        while len(out) < limit:
            p = self.input_producer(cur, 0, op_type)
            if p is None or p in out:
                return out
            exclusive = self.only_reader(self.sid(cur), self.output(p), cur)
            if out and not exclusive:
                return out  # beyond the nearest, a node read elsewhere ends the run
            out.append(p)
            if not exclusive:
                return out
            cur = p
        return out

    # What the rules call: ``chain_plain`` with its lookups written out (every root asks).
    chain = _fast.chain

    def tensor(self, sid: int, name: str) -> TensorInfo | None:
        return self.inference.lookup(sid, name)

    def display(self, nid: int) -> str:
        info = self.graph.nodes[nid]
        fact = self.facts.get(nid)  # a Squeeze/Unsqueeze has its display id there: no proto to fetch
        label = f"'{fact.node if fact is not None else self.graph.display(nid)}' ({info.op_type})"
        if info.scope == 0:
            return label
        return f"{label} in {self.graph.scopes[info.scope].path}"

    def display_run(self, run: "list[int] | tuple[int, ...]") -> str:
        """``display`` of the nodes of a chain (nearest first), in data-flow order."""
        if len(run) == 1:
            return self.display(run[0])
        return " then ".join([self.display(n) for n in reversed(run)])

    # -- axes ------------------------------------------------------------------------------------
    def int_attribute(self, nid: int, name: str) -> int | None:
        """The value of attribute ``name`` of ``nid``; None when it is absent or refers to an
        attribute of the enclosing function (its value is each call's)."""
        if not self.graph.nodes[nid].has_attrs:
            return None
        for a in self.peek(nid).attribute:
            if a.name == name:
                return None if a.ref_attr_name else int(a.i)
        return None

    def refers_to_function_attributes(self, nid: int) -> bool:
        """A node of a function body whose attributes refer to the function's own (``axes = @a``):
        their values are the caller's, unknown here."""
        info = self.graph.nodes[nid]
        if not info.has_attrs or self.graph.scopes[info.scope].kind != "function":
            return False
        return any(a.ref_attr_name for a in info.peek().attribute)

    def axes_problem(self, nid: int) -> str | None:
        """Why the axes of Squeeze/Unsqueeze ``nid`` cannot be rewritten, or None."""
        fact = self.facts.get(nid)
        if fact is None:
            return "not analysed"
        info = self.graph.nodes[nid]
        if info.has_attrs and self.refers_to_function_attributes(nid):  # (asked for most roots)
            return "attributes refer to the function's attributes"
        if info.subscopes:
            return "the node carries a graph attribute"  # invalid (SF117), and a rewrite would lose it
        axes = fact.axes
        if axes.source == AXES_ABSENT:
            return None if fact.op_type == "Squeeze" else "Unsqueeze without axes"
        if axes.source not in _STATIC_SOURCES:
            return f"axes are {axes.source}, not a constant"
        if axes.values is None:
            return "axes values unknown"
        by_input = (info.since_version or 0) >= AXES_INPUT_SINCE
        if by_input != (axes.source != AXES_ATTRIBUTE):
            return "axes are not in the form of the node's opset"
        if by_input:
            if axes.rank != 1:
                return "axes tensor is not 1-D"
            if axes.dtype != TensorProto.INT64:
                return "axes tensor is not int64"
            if self.overridable:
                name = self.inputs(nid)[1]
                where = self.definition(self.sid(nid), name)
                if where is not None and where[1] == INITIALIZER and (where[0], name) in self.overridable:
                    return f"axes initializer '{name}' is also a graph input (overridable)"
        return None

    def unsqueeze_axes(self, nid: int) -> tuple[int, ...] | NoMatch:
        """Normalised positions an Unsqueeze inserts."""
        problem = self.axes_problem(nid)
        if problem is not None:
            return NoMatch(f"{self.display(nid)}: {problem}")
        fact = self.facts[nid]
        if fact.normalized is None:
            if fact.input_shape is None:
                return _unranked(self, nid, fact, unique=True)
            return NoMatch(f"{self.display(nid)}: invalid axes {list(fact.axes.values or ())}")
        return fact.normalized

    def squeeze_axes(self, nid: int) -> tuple[int, ...] | NoMatch:
        """Normalised positions a Squeeze removes, also for a Squeeze without (or with empty) axes
        when the input shape is static, so that the removed positions are the same on every run."""
        problem = self.axes_problem(nid)
        if problem is not None:
            return NoMatch(f"{self.display(nid)}: {problem}")
        fact = self.facts[nid]
        if fact.axes.values:
            if fact.normalized is None:
                if fact.input_shape is None:
                    return _unranked(self, nid, fact, unique=False)
                return NoMatch(f"{self.display(nid)}: invalid axes {list(fact.axes.values)}")
            return fact.normalized
        shape = fact.input_shape
        what = "no axes" if fact.axes.source == AXES_ABSENT else "empty axes"
        if shape is None:
            return NoMatch(f"{self.display(nid)}: {what} on an input of unknown rank")
        if any(type(d) is not int for d in shape):
            return NoMatch(f"{self.display(nid)}: {what} on {format_shape(shape)}: the removed dims "
                           "depend on run-time values")
        return tuple(i for i, d in enumerate(shape) if d == 1)

    def squeezes_all(self, nid: int) -> bool:
        """A Squeeze without axes or with an empty axes list (removes every 1-dim at run time)."""
        fact = self.facts.get(nid)
        return fact is not None and fact.op_type == "Squeeze" and (
            fact.axes.source == AXES_ABSENT or (fact.axes.values is not None and not fact.axes.values))

    def unproven_ones(self, nid: int, positions: tuple[int, ...]) -> list[str]:
        """Dims at ``positions`` of the Squeeze ``nid``'s input not statically known to be 1."""
        shape = self.facts[nid].input_shape
        out = []
        for p in positions:
            d = shape[p] if shape is not None and p < len(shape) else None
            if dim_is_one(d, self.domain) is not True:
                out.append(f"dim {p} ({'?' if d is None else d})")
        return out


def training_names(model: onnx.ModelProto) -> set[str]:
    """Every name that the model's training_info mentions: binding keys and values, and what the
    nodes of its initialization and algorithm graphs read (nested bodies included)."""
    names: set[str] = set()
    stack: list[onnx.GraphProto] = []
    for info in model.training_info:
        for entry in list(info.initialization_binding) + list(info.update_binding):
            names.add(entry.key)
            names.add(entry.value)
        if info.HasField("initialization"):
            stack.append(info.initialization)
        if info.HasField("algorithm"):
            stack.append(info.algorithm)
    while stack:
        g = stack.pop()
        for vi in g.output:
            names.add(vi.name)
        for n in g.node:
            names.update(n.input)
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    stack.append(a.g)
                stack.extend(a.graphs)
    names.discard("")
    return names


def _unranked(ctx: RoundContext, nid: int, fact: AxisNode, unique: bool) -> tuple[int, ...] | NoMatch:
    """Positions of a node whose input rank is unknown (inside a function, say). Non-negative
    axes need no rank: they are positions already, valid whenever the original model runs, and
    the algebra on them holds for every rank. A negative axis needs the rank."""
    values = fact.axes.values or ()
    if any(v < 0 for v in values):
        return NoMatch(f"{ctx.display(nid)}: input rank unknown and axes {list(values)} count from the end")
    if unique and len(set(values)) != len(values):
        return NoMatch(f"{ctx.display(nid)}: repeated axes {list(values)}")
    return tuple(sorted(set(values)))


def fmt_axes(axes: tuple[int, ...] | list[int]) -> str:
    if len(axes) == 1:  # most axes lists, in messages built once per rewrite
        return f"[{axes[0]}]"
    return "[" + ", ".join(map(str, axes)) + "]"


__all__ = [
    "ANY_OP", "AXES_INPUT_SINCE", "AXIS_OPS", "FROM_CUSTOM", "FROM_GRAPH_INPUT", "FROM_INITIALIZER",
    "FROM_NOTHING", "FROM_OUTER_SCOPE", "GRAPH_INPUT", "INITIALIZER", "INT_RANGES", "RoundContext", "fmt_axes",
    "training_names",
]
