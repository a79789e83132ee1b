"""Rewrite rule anatomy, and what a rule sees of one round of the fixpoint.

A rule is a class with a ``name`` (kebab-case, used by ``--rules`` and in reports), a ``code`` (the
lint code that reports the same opportunity, from ``shapeflow/codes.py``), the op types it is rooted at,
a docstring whose first line states its identity, and two methods:

* ``match(ctx, nid)`` is pure: it returns a :class:`Match` saying which nodes the rewrite would
  write (modify or delete) and read, or a :class:`NoMatch` saying why it does not fire.
* ``apply(ctx, edit, match)`` performs the rewrite through the :class:`~.edit.Editor`, which is the
  only code that touches the ModelProto.

The :class:`RoundContext` answers the questions every rule asks (who produces this tensor, who
reads it, which positions does this Squeeze remove) from the round's graph index and inference,
as they were when the round started. Names, op types and input/output lists come from the index
(reading protobuf fields is the main cost on large graphs); the manager's claims keep two
rewrites of one round from touching the same node, so what a match read is still true when it
is applied.

Adding a rule: a Squeeze/Unsqueeze chain rewrite is a :class:`~.pattern.ChainRow` (see
``merge_unsqueeze.py``); anything else a small class with a typed payload (``Match[P]``, see
``shape_slice.py``). Give it a code in ``shapeflow/codes.py`` (SF2xx), a lint rule in
``shapeflow/rules/`` whose docstring documents it (a ``RewriteHint`` with that code: lint then
reports its candidates), list it in ``registry.ALL_RULES``, and test it in tests/test_passes.py.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Generic, NamedTuple, Sequence, TypeVar, Union

from .._onnx import onnx
from ..dims import dim_is_one, format_shape
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

if TYPE_CHECKING:
    from .edit import Editor

TensorProto = onnx.TensorProto



P = TypeVar("P")


class Match(Generic[P]):
    """A rewrite a rule would make at root node ``nid``, with the rule's own plan as ``payload``
    (``Match[IdentityPlan]``, ``Match[SlicePlan]``...). Immutable by convention; slotted, because
    lint builds one per finding.

    ``message`` says what it does with node names; it may be given as a function that builds the
    text, because on a large model most messages are never shown (only ``-v`` lists them).

    ``writes`` are the nodes the rewrite modifies or deletes; no other rewrite may touch them in
    the same round. ``reads`` are nodes whose content the rewrite relies on without changing them;
    others may read them too, but not write them. ``rewires`` are nodes that only get one input
    renamed (the readers of a tensor the rewrite replaces): two rewrites may rename different
    inputs of one node in the same round; nothing else may write or read a renamed node.
    """

    __slots__ = ("nid", "writes", "reads", "message", "note", "payload", "rewires")

    def __init__(self, nid: int, writes: tuple[int, ...], reads: tuple[int, ...] = (),
                 message: "str | Callable[[], str]" = "", note: str = "", payload: P = None,  # type: ignore[assignment]
                 rewires: tuple[int, ...] = ()) -> None:
        self.nid = nid
        self.writes = writes
        self.reads = reads
        self.message = message
        self.note = note  # e.g. "removes a run-time failure when dim 0 (batch) is not 1"
        self.payload = payload
        self.rewires = rewires

    @property
    def text(self) -> str:
        m = self.message
        return m if isinstance(m, str) else m()

    def at(self, nid: int) -> "Match[P]":
        """The same rewrite, rooted at ``nid`` (a member of a group that one match covers)."""
        return Match(nid, self.writes, self.reads, self.message, self.note, self.payload, self.rewires)


@dataclass(frozen=True)
class NoMatch:
    """Why a rule did not fire. ``near`` is False when the rule simply does not apply to the node
    (no producer of the right kind, value not known); only near misses are worth telling."""

    reason: str
    near: bool = True


Result = Union["Match[Any]", NoMatch]


def not_applicable(reason: str) -> NoMatch:
    """A NoMatch for a rule that does not apply at all (rules keep the common ones as module
    constants: most roots get one from most rules, and they are immutable)."""
    return NoMatch(reason, near=False)


# What produces a root's data input (``RewriteRule.after``): the op type of an ai.onnx node of
# the root's scope, or one of these (no ai.onnx op type has a '<').
FROM_INITIALIZER = _fast.FROM_INITIALIZER
FROM_GRAPH_INPUT = _fast.FROM_GRAPH_INPUT
FROM_OUTER_SCOPE = _fast.FROM_OUTER_SCOPE  # an enclosing scope's tensor (or no tensor at all)
FROM_CUSTOM = _fast.FROM_CUSTOM  # a node of another domain or of an unknown version
FROM_NOTHING = _fast.FROM_NOTHING  # the root has no input (a Constant)
# ``RewriteRule.roots`` entry for a rule asked about every standard node (common subexpressions)
ANY_OP = "*"
# The op types whose nodes carry axis facts (``RoundContext.facts``); a pass whose rules are all
# rooted at them visits only those nodes.
AXIS_OPS = frozenset({"Squeeze", "Unsqueeze"})


class RewriteRule:
    """Base class of the rewrite rules; see the module docstring for the anatomy."""

    name: ClassVar[str]
    code: ClassVar[str | None] = None
    roots: ClassVar[tuple[str, ...]] = ()
    # What produces the root's data input (an op type or a FROM_*) when the rule can fire; None: any.
    # Elsewhere its match would only say that it does not apply, so the manager does not ask
    # (most roots are not the end of any pattern).
    after: ClassVar[frozenset[str] | None] = None
    # The engine reports where the rule fired (OptimizeResult.roots): set by the repairs of
    # ``lint --fix``, whose driver then knows which findings went without judging the model again.
    record_roots: ClassVar[bool] = False
    # The rule says itself whether a next round could fire (``may_continue``) instead of the engine
    # asking whether any of its roots changed: for a rule rooted at every node (ANY_OP), nearly
    # every round changes one, and that costs a whole round more.
    judges_rounds: ClassVar[bool] = False
    # When its match is deferred, the nodes it writes besides the root (the computation only the
    # root reads, which it will sweep) are left alone for the rest of the round.
    reserves: ClassVar[bool] = False

    def match(self, ctx: "RoundContext", nid: int) -> Result:  # pragma: no cover - abstract
        raise NotImplementedError

    def apply(self, ctx: "RoundContext", edit: "Editor", m: "Match[Any]") -> None:  # pragma: no cover
        raise NotImplementedError

    def may_fire_later(self, ctx: "RoundContext", nid: int) -> bool:
        """False when no change of the graph around root ``nid`` can make the rule fire on it in a
        later round (what it needs is a value of the root's own tensors, which rewrites never
        change, and that value is unknown): the engine then does not run a round for it."""
        return True

    def may_continue(self, ctx: "RoundContext", edit: "Editor") -> bool:  # pragma: no cover
        """With ``judges_rounds``: whether a next round could find this rule something new to do,
        judged from the round's index and what ``edit`` changed (after ``Editor.finish``). May say
        True when unsure; False only when no match of the next round could fire."""
        raise NotImplementedError

    @classmethod
    def doc(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def summary(cls) -> str:
        """The first line of the docstring: the identity the rule applies."""
        for line in cls.doc().splitlines():
            if line.strip():
                return line.strip()
        return cls.name


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
    # Node ids the caller said not to touch (the manager skips them as roots; a rule that writes
    # nodes other than its root, such as the readers of a fan-out, checks them here).
    blocked: frozenset[int] | set[int] = frozenset()
    _outputs: dict[int, frozenset[str]] = field(default_factory=dict)
    _input_sets: dict[int, frozenset[str]] = field(default_factory=dict)  # (_reads; the index is one round's)

    @classmethod
    def build(cls, graph: ModelGraph, inference: Inference, strict: bool = False) -> "RoundContext":
        ctx = cls(graph, inference, strict)
        ctx.facts = {a.nid: a for a in inference.axis_nodes}
        for scope in graph.scopes:
            if scope.kind == "graph" and scope.initializers:
                for name in scope.inputs:
                    if name in scope.initializers:
                        ctx.overridable.add((scope.id, name))
        return ctx

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
            if dim_is_one(d) is not True:
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


class IdentityPlan(NamedTuple):
    """``last(...(first(x)))`` is ``x``: how to take the run out."""

    first: int  # the node reading x
    second: int  # the root, producing z
    chain: tuple[int, ...]  # nodes between (root excluded), all deleted with it when drop_chain
    x: str  # the first node's input
    z: str  # the root's output
    keep_name: bool  # z is a graph output or read by name in a subgraph: an Identity keeps it
    drop_chain: bool  # the root is the only reader of the chain: it goes too


def identity_match(ctx: RoundContext, chain: list[int], root: int, message: "str | Callable[[], str]",
                   note: str = "") -> Result:
    """The Match of a run that composes to the identity (shared by the two cancel rules).

    ``chain`` lists the nodes feeding ``root``, nearest first (``RoundContext.chain``). The root
    goes; its readers read ``x`` instead, or, when ``z`` must keep its name, an Identity produces
    it. The chain goes too when the root was its only reader; when it stays for other readers and
    an Identity would be needed, the rewrite would not shrink the graph and does not fire.
    """
    nodes = ctx.graph.nodes
    info = nodes[root]
    sid = info.scope
    consumers = ctx.graph.scopes[sid].consumers
    first = chain[-1]
    x = nodes[first].inputs[0]
    z = info.outputs[0]
    # Whether the chain's nearest node has the root as only reader (``only_reader``), and whether
    # z must keep its name: a graph output, or read by name inside a subgraph. Written out:
    # every cancelled pair asks both.
    outputs = ctx.outputs(sid)
    y = nodes[chain[0]].outputs[0]
    y_readers = consumers.get(y)
    drop = y_readers is not None and len(y_readers) == 1 and y_readers[0] == root and y not in outputs
    z_readers = consumers.get(z, ())
    keep = z in outputs
    if not keep:
        for r in z_readers:  # (loops, not generator expressions, in the code every match runs)
            if z not in nodes[r].inputs:
                keep = True  # read by name in a subgraph
                break
    if keep and not drop:
        return NoMatch(f"{ctx.display(root)}: '{z}' must keep its name (graph output or read by a "
                       f"subgraph) and {ctx.display(chain[0])} has other readers: an Identity would "
                       "not shrink the graph")
    # The run is written (deleted) or read: as long as its first node reads x, no other rewrite
    # of this round can think it is x's only reader and delete x's producer under the readers
    # rewired to x.
    run = tuple(chain)
    if drop:
        writes: tuple[int, ...] = (root, *run)
        reads: tuple[int, ...] = ()
    else:
        writes, reads = (root,), run
    rewires: tuple[int, ...] = ()
    if not keep:
        rewires = tuple([r for r in z_readers if r not in writes]) if len(z_readers) != 1 else \
            (() if z_readers[0] in writes else (z_readers[0],))
    plan = IdentityPlan(first, root, run, x, z, keep, drop)
    return Match(root, writes, reads, message, note, plan, rewires)


def apply_identity(edit: "Editor", plan: IdentityPlan) -> None:
    sid = edit.g.nodes[plan.second].scope
    if plan.keep_name:
        edit.replace_node(plan.second, "Identity", [plan.x], "identity")
    else:
        edit.replace_uses(sid, plan.z, plan.x)
        edit.delete_node(plan.second)
    if plan.drop_chain:
        for n in plan.chain:
            edit.delete_node(n)


def fmt_axes(axes: tuple[int, ...] | list[int]) -> str:
    if len(axes) == 1:  # most axes lists, in messages built once per rewrite
        return f"[{axes[0]}]"
    return "[" + ", ".join(map(str, axes)) + "]"


__all__ = [
    "AXES_INPUT_SINCE", "FROM_CUSTOM", "FROM_GRAPH_INPUT", "FROM_INITIALIZER", "FROM_OUTER_SCOPE",
    "GRAPH_INPUT", "INITIALIZER", "INT_RANGES", "IdentityPlan", "Match", "NoMatch", "Result",
    "RewriteRule", "RoundContext", "apply_identity", "fmt_axes", "identity_match", "not_applicable",
]
