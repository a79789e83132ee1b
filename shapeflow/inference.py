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

import os
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ._onnx import onnx

from .dims import BASE, Bound, Dim, Domain, Shape, Sym, substitute
from .errors import LimitExceededError, RuleCrashWarning
from .facts import AxisNode, CallFacts
from .graph import ModelGraph, NodeInfo, Scope
from .limits import DEFAULT_LIMITS, Limits, deadline
from .ops import REGISTRY, control, fallback
from .ops.base import OpCall
from .ops.constants import tensor_info_from_proto
from .ops.evaluated import keeps_value
from .ops.numeric import canonical_value
from .signatures import DTYPES, input_type_error, signature
from .tensorinfo import TensorInfo

# A dim declared again (shared_dim_names): (graph input, dim name), or with the axis for a name an
# input repeats on several of its axes.
CopyKey = tuple[str, str] | tuple[str, str, int]

Progress = Callable[[int, int], None]
TensorProto = onnx.TensorProto

# Time and progress are checked every this many nodes: cheap, and often enough for a 120 s limit.
_CHECK_EVERY = 2048
# Function calls nested deeper than this are opaque (outputs unknown): no recursion over depth.
MAX_CALL_DEPTH = 16
# A Loop/Scan body whose carried inputs are still widened after this many rounds keeps only their
# element types (one more run).
_MAX_WIDENINGS = 2


def _runtime_input(owner: str, k: int, vi: onnx.ValueInfoProto, declared: TensorInfo) -> TensorInfo:
    """Input ``k`` of a body of an ``owner`` node as the runtime feeds it, not as declared: the
    runtime provides it, and onnxruntime does not hold it to its declaration (issue 21).

    A Loop's iteration number is an int64 of shape [] when the body declares it as a scalar and
    [1] when it declares any other rank (that is what onnxruntime feeds, whatever the declared
    dims); its condition is the Loop's own condition input in the first iteration and the body's
    condition output in the others. Carried values may change shape from one iteration to the
    next, and so may a Scan's state; a Scan's slices are whatever the scanned inputs hold. For
    all of these only the element type is known, and no value."""
    if owner == "Loop" and k == 0:
        tt = vi.type.tensor_type
        shape = None if not tt.HasField("shape") else () if not tt.shape.dim else (1,)
        return TensorInfo(TensorProto.INT64, shape)
    return TensorInfo(declared.dtype, None)


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
    # node id -> its key in inference's memo of answers (``_node_key``: its op, version, scope,
    # input types, shapes and values, and the bytes of each of its attributes), for the nodes of
    # _MEMO_OPS whose attributes take at most MEMO_KEY_BYTES_MAX bytes in all. Nodes answered
    # from one entry share its key object: the lint rules judge one of them for all (SF011's
    # attributes, SF013's input types). Kept alive here, so their ids are not reused.
    memo_keys: dict[int, tuple[Any, ...]] = field(default_factory=dict, repr=False)
    # owner node id -> {attribute: [output infos of that body]}
    subgraph_out: dict[int, dict[str, list[TensorInfo | None]]] = field(default_factory=dict)
    # decoded constant tensors (axes) by (scope id, name), so shared initializers are read once
    constant_cache: dict[tuple[int, str], tuple[int, ...] | None] = field(default_factory=dict, repr=False)
    # Shape rules' memo tables for one run (axes facts per axes tensor, Squeeze/Unsqueeze results
    # per input shape and axes), keyed by the rule's own tuples.
    memo: dict[tuple[Any, ...], object] = field(default_factory=dict, repr=False)
    # The domain its results hold in: what the user stated (--assume), and the facts inference
    # proved on the way (a symbol >= 1 where the model fails otherwise). During the run, the domain
    # so far: a rule that proves a fact replaces it (``OpCall.learn``); the value itself never changes.
    domain: Domain = BASE
    # node id -> why onnx's shape inference of the node fails, as onnxruntime runs it when it
    # loads the model (asked only of nodes whose inputs a shape rule doubted: ``doubt``)
    load_errors: dict[int, str] = field(default_factory=dict)
    # function body node id -> (the input type error a call's run meets there, that call's node
    # id): onnxruntime checks a function's nodes with each call's types (SF013)
    call_type_errors: dict[int, tuple[str, int]] = field(default_factory=dict)
    # Tensors computed by a node that fails (a Squeeze of a dim known != 1, a node onnxruntime
    # refuses) or from one: their shapes are what the node meant, which no runtime computes, so a
    # doubt about a node that reads them is not asked (it would blame the reader).
    tainted: set[str] = field(default_factory=set, repr=False)
    # Graph inputs that share a dim name were given symbols of their own (``independent``, what
    # the rewrites rely on): (input, dim name[, axis]) -> the symbol's name (shared_dim_names).
    independent: bool = False
    copies: Mapping[CopyKey, str] = field(default_factory=dict)
    # (independent) the broadcasts of two dims inference cannot tell apart, by name (broadcast_join)
    joins: dict[frozenset[Dim], Sym] = field(default_factory=dict, repr=False)
    join_names: dict[str, frozenset[Dim]] = field(default_factory=dict, repr=False)
    # (main graph) tensor -> {axis: dim}: dims inference left unknown that a node's kernel fixes
    # (onnxruntime refuses the node unless they hold: ``equate``); the run after the one that
    # found them states them where the tensor is computed.
    refined: dict[str, dict[int, Dim]] = field(default_factory=dict, repr=False)
    # (main graph) node id -> whether onnxruntime may remove it (``_removable``)
    removable: dict[int, bool] = field(default_factory=dict, repr=False)

    # (the domain's parts, by the names the drivers read)
    @property
    def assumptions(self) -> Mapping[str, Bound]:
        """The ranges the user stated (``--assume``)."""
        return self.domain.stated

    @property
    def ranges(self) -> Mapping[str, Bound]:
        """Every range in force: the user's and those inference proved."""
        return self.domain.ranges

    @property
    def aliases(self) -> Mapping[str, str]:
        """Symbols the user stated to be one dim (``--assume a==b``): ``b`` is read as ``a``."""
        return self.domain.aliases

    @property
    def premises(self) -> tuple[str, ...]:
        """The statements in force, as reported (``*>=1``, ``seq>=3``, ``a==b``)."""
        return self.domain.assumed()

    def proven(self) -> dict[str, Bound]:
        """The ranges inference proved beyond what the user stated."""
        return self.domain.proven()

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

    def broadcast_join(self, a: Dim, b: Dim) -> Dim:
        """The broadcast of dims ``a`` and ``b`` when broadcast_dim cannot say which it is, as a
        symbol of its own, ``bcast(batch, batch@mask)``: wherever the model runs the two are equal
        or one of them is 1, so the result is a function of the two, the same at every node that
        broadcasts them, and any dim (a symbol's domain). With independent graph inputs
        (``infer``'s ``independent``) a mask's ``batch@mask`` against a ``batch`` stays one dim that
        a Shape reads back and a Reshape target compares with, as it was under the shared name."""
        key = frozenset((a, b))
        found = self.joins.get(key)
        if found is None:
            x, y = sorted((str(a), str(b)))
            name = f"bcast({x}, {y})"
            taken = self.join_names
            if not taken:
                taken.update((n, frozenset()) for n in declared_symbols(self.graph))
            while name in taken:  # (a declared name, or another pair with the same text)
                name += "'"
            taken[name] = key
            found = self.joins[key] = Sym.symbol(name)
        return found

    # -- used by rules -----------------------------------------------------------------------------
    def record(self, call: OpCall, fact: object) -> None:
        if isinstance(fact, AxisNode):
            self.axis_nodes.append(fact)

    def subgraph_outputs(self, nid: int, attr: str) -> list[TensorInfo | None] | None:
        return self.subgraph_out.get(nid, {}).get(attr)

    def doubt(self, call: OpCall) -> None:
        """Ask onnx's inference of ``call``'s node whether onnxruntime refuses it (once per node)."""
        tainted = self.tainted
        if tainted and any(name in tainted for name in call.input_names):
            return  # downstream of a failure: the inputs are not what onnxruntime would see
        if call.nid not in self.load_errors:
            why = fallback.load_time_error(call)
            if why is not None:
                self.load_errors[call.nid] = why
        if call.nid in self.load_errors:
            self.taint(call)

    def equate(self, call: OpCall, i: int, axis: int, dim: Dim) -> None:
        """Input ``i`` of ``call`` has ``dim`` at ``axis`` wherever the model runs: the node's kernel
        refuses any other (BatchNormalization's scale against the channels, MatMul's inner dims).
        Kept when the node is of the main graph and onnxruntime cannot remove it (``_removable``:
        its value reaches a graph output), the tensor is computed there by a node, and inference
        left that dim unknown: the next run states it where the tensor is computed (``refined``)."""
        if call.scope != 0 or dim is None:
            return
        names = call.input_names
        name = names[i] if i < len(names) else ""
        if not name or name in self.tainted or self.graph.scopes[0].producer.get(name, -1) < 0:
            return
        t = self.tensors[0].get(name)
        if t is None or t.shape is None or not 0 <= axis < len(t.shape) or t.shape[axis] is not None:
            return
        if type(dim) is Sym and self.join_names and any(n in self.join_names for n in dim.symbols()):
            return  # a broadcast join is named per run: not a dim the next run can read
        if self._removable(call.nid):
            return
        self.refined.setdefault(name, {}).setdefault(axis, dim)

    def _removable(self, nid: int) -> bool:
        """Node ``nid`` of the main graph may never run. onnxruntime (ORT_ENABLE_BASIC and up, the
        default) folds a Shape of static dims (its own inference's, or a declared value_info's) to a
        constant, drops readers it sees as no-ops (an Identity, Dropout or Cast nothing reads), and
        then removes the nodes left unread, back along the chain. So a node is kept only when an
        output of it reaches a graph output through inputs that read values: not a Shape's or
        Size's, not a subgraph's (not looked into). A node nothing reads is left out too (onnxruntime
        1.32 runs it, but that rests on which readers it counts as no-ops)."""
        memo = self.removable
        found = memo.get(nid)
        if found is not None:
            return found
        scope = self.graph.scopes[0]
        outputs = set(scope.outputs)
        consumers = scope.consumers
        nodes = self.graph.nodes
        stack, path = [nid], {nid}  # the path from nid down (one reader at a time)
        while stack:  # an explicit walk down the readers: chains may be long
            n = stack[-1]
            verdict: bool | None = None
            down: int | None = None
            for name in nodes[n].outputs:
                if not name:
                    continue
                if name in outputs:
                    verdict = False
                    break
                for m in consumers.get(name, ()):
                    mi = nodes[m]
                    if (mi.op_type in ("Shape", "Size") and mi.domain == "") or name not in mi.inputs:
                        continue  # folded away, or read inside a subgraph
                    mv = memo.get(m)
                    if mv is False:
                        verdict = False
                        break
                    if mv is None and m not in path:  # (on the path: a cycle, which onnxruntime refuses)
                        down = m
                        break
                if verdict is not None or down is not None:
                    break
            if verdict is None and down is not None:
                stack.append(down)
                path.add(down)
                continue
            memo[n] = True if verdict is None else verdict
            path.discard(stack.pop())
        return memo[nid]

    def taint(self, call: OpCall) -> None:
        """``call``'s node fails: its outputs (and what is computed from them) are tainted."""
        self.tainted.update(name for name in call.output_names if name)


def rule_crashed(graph: ModelGraph, nid: int, info: NodeInfo, exc: BaseException) -> None:
    """A shape rule raised on node ``nid``: a bug in shapeflow, never the model's fault. A strange
    model must not become a crash, so the node's outputs are taken as unknown; but it is said
    (a ``RuleCrashWarning``: one line on stderr from the CLI), and the test suite
    raises it instead (``SHAPEFLOW_RAISE_RULE_CRASHES=1``, set by tests/conftest.py), so a crashing
    rule fails the tests instead of hiding."""
    if os.environ.get("SHAPEFLOW_RAISE_RULE_CRASHES"):
        raise exc
    first = str(exc).splitlines()[0] if str(exc) else ""
    warnings.warn(f"{graph.path}: node '{graph.display(nid)}' ({info.op_type}-{info.since_version}): its shape "
                  f"rule raised {type(exc).__name__}: {first}; its outputs are unknown (a bug, please report it)",
                  RuleCrashWarning, stacklevel=2)


def _taint_through(tainted: set[str], info: NodeInfo) -> None:
    """A node that reads a tainted tensor computes tainted ones (``Inference.tainted``)."""
    if any(name in tainted for name in info.inputs):
        tainted.update(name for name in info.outputs if name)


def _after_rule(outs: list[TensorInfo | None] | None, info: NodeInfo, tainted: set[str],
                refine: Mapping[str, Mapping[int, Dim]] | None) -> list[TensorInfo | None] | None:
    """The rare steps after a node's rule: taint (``Inference.tainted``), and the unknown dims of
    its outputs that a kernel downstream fixes (``Inference.equate``, found by an earlier run)."""
    if tainted:
        _taint_through(tainted, info)
    if refine is not None and outs:
        return _refine(outs, info.outputs, refine)
    return outs


def _refine(outs: list[TensorInfo | None], outputs: tuple[str, ...],
            refine: Mapping[str, Mapping[int, Dim]]) -> list[TensorInfo | None]:
    """``outs`` with the unknown dims a kernel downstream fixes stated (``Inference.equate``); a
    new list when one is (a rule's or a call's list may be memoised)."""
    for k, name in enumerate(outputs):
        axes = refine.get(name) if name else None
        t = outs[k] if axes and k < len(outs) else None
        if t is None or t.shape is None:
            continue
        shape = list(t.shape)
        for axis, d in axes.items():  # type: ignore[union-attr]
            if axis < len(shape) and shape[axis] is None:
                shape[axis] = d
        # new records: the rule may have handed back an input's, or a memoised list
        outs = list(outs)
        outs[k] = TensorInfo(t.dtype, tuple(shape), t.value)
    return outs


def infer(graph: ModelGraph, bindings: Mapping[str, int] | None = None,
          limits: Limits = DEFAULT_LIMITS, progress: Progress | None = None,
          assumptions: Mapping[str, Bound] | None = None,
          aliases: Mapping[str, str] | None = None, independent: bool = False,
          domain: Domain | None = None) -> Inference:
    """Infer every tensor of ``graph``. ``bindings`` substitutes symbols (``{"batch": 1}``);
    ``assumptions`` are the ranges the user stated (``{"seq": (3, None)}``, ``--assume seq>=3``);
    ``aliases`` the symbols stated to be another (``{"b": "a"}``, ``--assume a==b``).

    By default a dim name is one size on every graph input that declares it (ONNX's contract:
    what the model says about its inputs). onnxruntime does not check that: two inputs declared
    ``[batch]`` may be fed 2 and 3 elements, and a model that broadcasts them runs. With
    ``independent`` each graph input after the first that declares a name gets a symbol of its
    own for it (``batch@mask``; ``copies``), so that what inference states holds for every input
    onnxruntime accepts: the rewrites rely on that (SPEC.md section 4). Bindings and assumptions
    on a name hold for each of its symbols. An alias may name such a symbol
    (``--assume batch==batch@mask``: the user states the mask's batch is the first input's).
    ``domain`` (a driver's, :meth:`Domain.from_premises`) gives the statements instead of
    ``assumptions`` and ``aliases``, with their text as reported."""
    if domain is None:
        domain = Domain.from_premises(assumptions or {}, aliases)
    user = dict(domain.stated)
    alias = dict(domain.aliases)
    copies = shared_dim_names(graph) if independent else {}
    start = user
    if copies:
        start = dict(user)
        for key, copy in copies.items():
            rep = alias.get(key[1], key[1])  # (a range stated on an aliased name is its representative's)
            if rep in user and copy not in alias:
                lo, hi = user[rep]
                clo, chi = start.get(copy, (None, None))
                start[copy] = (lo if clo is None else clo if lo is None else max(lo, clo),
                               hi if chi is None else chi if hi is None else min(hi, chi))
        if bindings:
            bindings = {**bindings, **{copy: bindings[key[1]] for key, copy in copies.items() if key[1] in bindings}}
    result = _run(graph, bindings, limits, progress, domain.with_ranges(start), independent, copies)
    if result.ranges != start or result.refined:
        # The run proved facts (a -1 Reshape makes seq >= 1 wherever the model runs; a kernel
        # fixes a dim inference left unknown). Nodes before the one that proved them did not know
        # them: one more run starts from them.
        result = _run(graph, bindings, limits, progress, result.domain, independent, copies, result.refined)
    return result


def shared_dim_names(graph: ModelGraph) -> dict[CopyKey, str]:
    """(graph input, dim name) -> a symbol name of its own, for each graph input after the first
    that declares a name: ``batch`` on ``input_ids`` and ``attention_mask`` is ``batch`` and
    ``batch@attention_mask``; and (graph input, dim name, axis) -> one for each axis of an input
    after the first that repeats a name (``[n, n]``: ``n`` and ``n@x:1``; onnxruntime feeds
    ``[2, 3]`` there too). Empty when no name is declared twice (the common case)."""
    body = graph.model.graph
    first: dict[str, str] = {}
    later: list[CopyKey] = []
    declared = declared_symbols(graph)
    for vi in body.input:
        if vi.type.WhichOneof("value") != "tensor_type" or not vi.type.tensor_type.HasField("shape"):
            continue
        seen: set[str] = set()  # the names this input declared on an earlier axis
        for axis, d in enumerate(vi.type.tensor_type.shape.dim):
            if d.WhichOneof("value") != "dim_param" or not d.dim_param:
                continue
            name = d.dim_param
            owner = first.setdefault(name, vi.name)
            if name in seen:
                later.append((vi.name, name, axis))
            elif owner != vi.name:
                later.append((vi.name, name))
            seen.add(name)
    copies: dict[CopyKey, str] = {}
    for key in later:
        copy = f"{key[1]}@{key[0]}" + (f":{key[2]}" if len(key) == 3 else "")
        while copy in declared:  # (a model that declares such a name itself)
            copy += "'"
        declared.add(copy)
        copies[key] = copy
    return copies


def _run(graph: ModelGraph, bindings: Mapping[str, int] | None, limits: Limits, progress: Progress | None,
         start: Domain, independent: bool = False, copies: Mapping[CopyKey, str] | None = None,
         refined: Mapping[str, Mapping[int, Dim]] | None = None) -> Inference:
    result = Inference(graph, dict(bindings or {}), limits, domain=start)
    if refined:
        result.refined = {name: dict(axes) for name, axes in refined.items()}
    result.independent = independent
    result.copies = dict(copies) if copies else {}
    result.tensors = [dict() for _ in graph.scopes]
    runner = _Runner(result, progress, refined)
    runner.run_scope(graph.scopes[0])  # (the rules replace result.domain as they prove facts)
    for sid in graph.functions.values():
        runner.run_scope(graph.scopes[sid])
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



# Whether run_scope answers a node from an earlier node's answer (``_node_key``); the tests compare
# it with inference that asks every rule (tests/test_fast_paths.py).
NODE_MEMO = True
# The standard ops whose rules compute their outputs from nothing but the node's version, its
# attributes, its input infos (and which of its inputs are given), its scope and the run's domain,
# and whose other effects (a doubt, a proof, an equated dim) go through ``OpCall`` methods that
# flag them (``OpCall.effects``): the answer of one such node is the answer of every node with
# the same key. Models repeat the same few questions (a transformer's layers, an exporter's shape
# chains) thousands of times. Squeeze and Unsqueeze record facts about the node itself (and memo
# their own answers); Constant's key is its attributes' bytes (ref_attr_name included).
# Inference.memo_keys keeps the keys of nodes whose attributes take at most this many bytes in all,
# and at most this many distinct keys (a few hundred bytes each; the rules read the others again).
MEMO_KEY_BYTES_MAX = 256
MEMO_KEYS_KEPT = 65536
_MEMO_OPS = frozenset({
    "Shape", "Gather", "Slice", "Concat", "Reshape", "Transpose", "Expand", "Cast", "CastLike", "Where",
    "Add", "Sub", "Mul", "Div", "Mod", "Pow", "Max", "Min", "Equal", "Less", "Greater", "LessOrEqual",
    "GreaterOrEqual", "And", "Or", "Xor",
    "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
    "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare",
    "Constant",
})
# At most this many answers are kept (a few hundred bytes each: some MB): a transformer layer asks
# a few hundred questions, repeated by the next layer.
_NODE_MEMO_SIZE = 16384


def _node_key(info: NodeInfo, ins: list[TensorInfo | None], since: int,
              sid: int) -> tuple[tuple[Any, ...], dict[str, onnx.AttributeProto] | None, int] | None:
    """The key of a node of ``_MEMO_OPS`` in the run's memo of answers, its attributes by name
    (read for the key, handed to the rule) and their number (the key ends with each one's bytes),
    or None when the node is not one to memoise.

    An input is its element type, its shape by identity (run_scope interns shapes: equal shapes
    are one object; the memo keeps them alive) and its value; an absent input is ""; an
    attribute is its serialized bytes. Values are compared by equality,
    which is exact for the ints and symbols values hold (canonical_value: never a bool or float,
    whose True == 1 and 1.0 == 1 could share an entry): a value with anything else is not keyed."""
    key: list[Any] = [info.op_type, since, sid]
    names = info.inputs
    for k, t in enumerate(ins):
        if t is None:
            key.append(None if names[k] else "")
        else:
            value = t.value
            if value is not None:
                for v in value:
                    if type(v) is not int and type(v) is not Sym and v is not None:
                        return None
            key.append((t.dtype, id(t.shape), value))
    attrs: dict[str, onnx.AttributeProto] | None = None
    count = 0
    if info.has_attrs:
        attrs = {}
        # Each attribute by its bytes, which say all of it (its name, type and value): the lint
        # rules judge a node by them again (``Inference.memo_keys``).
        found = info.peek().attribute[:]
        count = len(found)
        for a in found:
            attrs[a.name] = a
            key.append(a.SerializeToString())
    return tuple(key), attrs, count
# Shape rules that read an unresolved ``@attr`` reference as unknown (ops/axes_input.py,
# ops/constants.py); every other rule would take its empty field for a value.
_READS_REFERENCES = frozenset({"Squeeze", "Unsqueeze", "Constant"})


class _OpRules(dict[str, object]):
    """One domain's shape rules by op type, each resolved when first asked for (None: outputs
    unknown)."""

    def __init__(self, domain: str) -> None:
        super().__init__()
        self.domain = domain

    def __missing__(self, op_type: str) -> object:
        rule: object = REGISTRY.get(self.domain, op_type)
        if rule is None and self.domain == "" and op_type not in fallback.UNTRUSTED:
            rule = fallback.infer_with_onnx
        self[op_type] = rule
        return rule


class _Rules(dict[str, _OpRules]):
    """domain -> op_type -> shape rule: ``rules[domain][op_type]``, two lookups for a node."""

    def __missing__(self, domain: str) -> _OpRules:
        found = self[domain] = _OpRules(domain)
        return found


class _Runner:
    def __init__(self, result: Inference, progress: Progress | None,
                 refined: Mapping[str, Mapping[int, Dim]] | None = None) -> None:
        self.r = result
        # main-graph tensor -> {axis: dim} a kernel fixes (Inference.equate, found by an earlier run)
        self.refine = refined or None
        self.g = result.graph
        self.progress = progress
        self.done = 0
        self.total = len(self.g.nodes)
        self.bodies = 0  # scopes run: a model of many empty bodies has few nodes to count time by
        self.deadline = deadline(result.limits)
        self.max_rank = result.limits.max_rank
        self.max_expr = result.limits.max_expr_size
        # domain -> op_type -> shape rule (None: outputs unknown), resolved once per op type
        self.rules = _Rules()
        # Every output shape, interned: one tuple per distinct shape, checked against the limits
        # once. Equal shapes become the same object, which also lets rules memoise by identity.
        self.shapes: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        # the ids of the shapes in ``shapes`` (alive as long as the run: their ids are theirs)
        self.interned: set[int] = set()
        # Function calls: the attribute values of the call being re-run (None: the generic run,
        # where ``@attr`` references are unknown), its nesting depth, the outputs per call
        # signature, and a budget of body nodes re-run after which calls
        # are opaque rather than an error: a few times the model's own size (exporters' calls of
        # one function mostly share a signature), so nested calls cannot multiply the work.
        self.env: dict[str, onnx.AttributeProto] | None = None
        self.callers: list[int] = []  # the call nodes whose bodies are running, outermost first
        self.depth = 0
        self.calls: dict[tuple[Any, ...], list[TensorInfo | None] | None] = {}
        self.call_budget = min(result.limits.max_nodes, max(4 * len(self.g.nodes), 100_000))
        self.in_function = [self.g.in_function(sc.id) for sc in self.g.scopes]
        # Loop/Scan bodies inferred again after a widening: at most this many body nodes in all
        self.loop_budget = max(4 * len(self.g.nodes), 100_000)
        self.descendants: dict[int, list[int]] = {}
        # canonical_value's memo for the run (its domain only narrows: the answers kept hold on)
        self.fitting: dict[tuple[int, tuple[Dim, ...]], tuple[Dim, ...]] = {}
        # The answers of the nodes of _MEMO_OPS by _node_key, found in domain ``memo_domain``:
        # (outputs, the input shapes whose ids the key holds, the key itself when it is kept in
        # Inference.memo_keys)
        self.node_memo: dict[tuple[Any, ...], tuple[list[TensorInfo | None], list[Any], tuple[Any, ...] | None]] = {}
        self.memo_domain: Domain | None = None
        self.keys_kept = 0  # distinct keys in Inference.memo_keys

    def _count_body(self) -> None:
        """One more scope run: a model of many empty bodies has few nodes to count time by."""
        self.bodies += 1
        if not self.bodies & 0xFF:
            self._tick()

    def run_scope(self, scope: Scope, args: list[TensorInfo | None] | None = None) -> None:
        # The loop body runs once per node of the model: the common case (one output, a rule that
        # answers) is kept free of calls that are not the rule itself; the rest is in helpers.
        r, g = self.r, self.g
        self._count_body()
        table = r.tensors[scope.id]
        self._seed(scope, table, args)
        in_function = self.in_function[scope.id]
        functions = g.functions
        nodes = g.nodes
        lookup = r.lookup
        sid = scope.id
        rules = self.rules
        interned = self.interned
        at_call = in_function and bool(self.callers)  # a body run with one call's inputs
        tainted = r.tainted  # (one set for the run, filled in place)
        refine = self.refine if sid == 0 else None
        # (a function body's nodes may read the call's attributes: never memoised)
        memo_ops = _MEMO_OPS if NODE_MEMO and not in_function else None
        for nid in scope.order:
            info = nodes[nid]
            ins: list[TensorInfo | None] = []
            for name in info.inputs:
                if not name:
                    ins.append(None)
                elif name in table:
                    ins.append(table[name])
                else:
                    ins.append(lookup(sid, name))
            if info.subscopes:
                self._run_bodies(nid, info, ins)
            outs: list[TensorInfo | None] | None = None
            since = info.since_version
            if since is not None:  # else a custom domain, an unknown op, or a function call
                if at_call:
                    self._check_call_types(nid, info, ins)
                rule = rules[info.domain][info.op_type]
                proto: onnx.NodeProto | None = None
                if in_function and info.has_attrs:
                    proto, rule = self._bound_attributes(info, rule)
                keyed = None
                if memo_ops is not None and info.op_type in memo_ops and not info.domain:
                    keyed, outs = self._recall(nid, info, ins, since, sid)
                if outs is None and rule is not None:
                    call = OpCall(proto, since, ins, nid, sid, r, info, None if keyed is None else keyed[1])
                    try:
                        outs = rule(call)  # type: ignore[operator]
                        if type(outs) is not list:
                            outs = list(outs)  # type: ignore[arg-type, unused-ignore]  # a rule that returned a tuple
                    except LimitExceededError:
                        raise
                    except Exception as exc:  # a bug: said, and the outputs unknown (not a crash)
                        rule_crashed(g, nid, info, exc)
                        outs = None
                        keyed = None
                    if outs and (len(outs) > 1 or (outs[0] is not None and outs[0].value is not None)):
                        self._settle_values(outs, nid, info, ins)  # (only where a value was stated)
                    if keyed is not None and not call.effects:
                        self._remember(nid, keyed[0], outs, ins)
            elif functions:
                fsid = functions.get((info.peek().domain, info.op_type))
                if fsid is not None:
                    outs = self._call(fsid, nid, info, ins)
            outputs = info.outputs
            if tainted or refine is not None:
                outs = _after_rule(outs, info, tainted, refine)
            if len(outputs) == 1:
                t = outs[0] if outs else None
                name = outputs[0]
                if name:
                    if t is not None:
                        shape = t.shape
                        if shape is not None and id(shape) not in interned:  # (a memoised answer's is)
                            self._intern(t, shape, nid)
                    table[name] = t
            else:
                self._store_outputs(outputs, outs, table, nid)
            self.done += 1
            if self.done % _CHECK_EVERY == 0:
                self._tick()

    def _intern(self, t: TensorInfo, shape: tuple[Any, ...], nid: int) -> None:
        """``t`` with the interned copy of its ``shape`` (``shapes``), checked against the limits
        when it is a new one."""
        seen = self.shapes.get(shape)
        if seen is None:
            self._check_limits(shape, nid)
            self.shapes[shape] = shape
            self.interned.add(id(shape))
        elif seen is not shape:
            t.shape = seen

    def _recall(self, nid: int, info: NodeInfo, ins: list[TensorInfo | None], since: int, sid: int
                ) -> tuple[tuple[tuple[Any, ...], dict[str, onnx.AttributeProto] | None, int] | None,
                           list[TensorInfo | None] | None]:
        """(the key of a node of _MEMO_OPS, its attributes and their number, or None; the answer of
        an earlier node with that key, or None)."""
        if self.r.domain is not self.memo_domain:
            # answers hold in the domain they were found in: a proof starts a new memo
            self.node_memo.clear()
            self.memo_domain = self.r.domain
        keyed = _node_key(info, ins, since, sid)
        hit = None if keyed is None else self.node_memo.get(keyed[0])
        # The key kept for the rules: the memo entry's own (shared by every node it answers: no
        # copy kept), or a new one small enough; none is left from an earlier run of a body.
        kept: tuple[Any, ...] | None = None
        if hit is not None:
            kept = hit[2]
        elif keyed is not None and self.keys_kept < MEMO_KEYS_KEPT:
            count = keyed[2]
            if not count or sum(map(len, keyed[0][-count:])) <= MEMO_KEY_BYTES_MAX:
                kept = keyed[0]
                self.keys_kept += 1
        if kept is None:
            self.r.memo_keys.pop(nid, None)
        else:
            self.r.memo_keys[nid] = kept
        return keyed, None if hit is None else hit[0]

    def _remember(self, nid: int, key: tuple[Any, ...], outs: list[TensorInfo | None] | None,
                  ins: list[TensorInfo | None]) -> None:
        """Keep the answer ``outs`` of a node of _MEMO_OPS whose rule had no other effect."""
        if outs is not None and self.r.domain is self.memo_domain:
            memo = self.node_memo
            if len(memo) >= _NODE_MEMO_SIZE:
                memo.clear()  # a model that seldom repeats itself: bounded memory, answers asked anew
            # (the input shapes kept alive: their ids are in the key)
            memo[key] = (outs, [t.shape for t in ins if t is not None], self.r.memo_keys.get(nid))

    def _bound_attributes(self, info: NodeInfo, rule: object) -> tuple[onnx.NodeProto | None, object]:
        """The node of a function body with its ``@attr`` references bound to the call's values,
        and the rule to run on it (None when a reference's value is not known here)."""
        proto = self._bind_attributes(info.peek())
        if proto is None:  # an ``@attr`` reference whose value is not known here
            if info.op_type in _READS_REFERENCES and info.domain == "":
                return info.peek(), rule
            return None, None
        return proto, rule

    def _settle_values(self, outs: list[TensorInfo | None], nid: int, info: NodeInfo,
                       ins: list[TensorInfo | None]) -> None:
        """What a rule's output values may be: only those of an (op, type) the value table lists
        (ops/evaluated.py), each symbolic element within ``--max-expr-size``, and what the element
        type holds (int64 wraps; int32 of a symbol only where it provably fits: ops/numeric.py)."""
        max_expr = self.max_expr
        for k, t in enumerate(outs):
            if t is not None:
                value = t.value
                if value is not None:
                    if info.domain or not keeps_value(info.op_type, ins, t):
                        # a new record: the rule may have handed back an input's
                        outs[k] = TensorInfo(t.dtype, t.shape)
                        continue
                    # _check_value, inline: values are short, mostly ints
                    for v in value:
                        if type(v) is Sym and v.size() > max_expr:
                            self._check_value(value, nid)
                    t.value = canonical_value(t.dtype, value, self.r.domain, self.fitting)

    def _store_outputs(self, outputs: tuple[str, ...], outs: list[TensorInfo | None] | None,
                       table: dict[str, TensorInfo | None], nid: int) -> None:
        """The outputs of a node with several (or none), shapes interned as for one output."""
        for k, name in enumerate(outputs):
            t = outs[k] if outs is not None and k < len(outs) else None
            if name:
                if t is not None and t.shape is not None:
                    self._intern(t, t.shape, nid)
                table[name] = t

    # -- If/Loop/Scan bodies ------------------------------------------------------------------------
    def _run_bodies(self, nid: int, info: NodeInfo, ins: list[TensorInfo | None]) -> None:
        """Infer the bodies of node ``nid`` (its inputs ``ins`` known by now) and keep their outputs
        for the node's rule (ops/control.py)."""
        g, r = self.g, self.r
        for sub in info.subscopes:
            body = g.scopes[sub]
            if info.op_type in ("Loop", "Scan") and info.domain == "" and isinstance(body.proto, onnx.GraphProto):
                self._run_loop_body(info, body, ins)
            else:
                self.run_scope(body)
            r.subgraph_out.setdefault(nid, {})[body.attr or ""] = self._body_outputs(body)

    def _body_outputs(self, body: Scope) -> list[TensorInfo | None]:
        table = self.r.tensors[body.id]
        return [table.get(o) if o in table else self.r.lookup(body.id, o) for o in body.outputs]

    def _run_loop_body(self, info: NodeInfo, body: Scope, ins: list[TensorInfo | None]) -> None:
        """A Loop's or Scan's body, inferred with the values its carried inputs take in *every*
        iteration: first the node's initial values; where the body's output for one is not an
        instance of what it was given, that input is widened (control.widen) and the body inferred
        again; after a few rounds, or past the re-run budget, carried inputs keep only their
        element type (which covers any output). Only the last run's tables and facts are kept."""
        declared = [vi.type.tensor_type.elem_type if vi.type.WhichOneof("value") == "tensor_type" else None
                    for vi in body.proto.input]
        try:
            seeds, pairs = control.body_seeds(info.op_type, info.since_version or 0, info.peek(), ins, declared)
        except LimitExceededError:
            raise
        except Exception:  # a malformed node: its body's inputs keep their element types, no crash
            seeds = [TensorInfo(d, None) if d is not None and (k >= 2 or info.op_type != "Loop") else None
                     for k, d in enumerate(declared)]
            pairs = []
        r = self.r
        scopes = self._descendants(body.id)
        mark = (len(r.axis_nodes), len(r.call_facts), len(self.calls))
        cost = sum(len(self.g.scopes[i].order) for i in scopes)
        rounds = 0
        while True:
            self.run_scope(body, seeds)
            outs = self._body_outputs(body)
            moved: list[tuple[int, TensorInfo, TensorInfo | None]] = []
            for i, o in pairs:
                seed, out = seeds[i], outs[o] if o < len(outs) else None
                if seed is not None and not control.covers(seed, out, r.domain):
                    moved.append((i, seed, out))
            if not moved:
                return
            if rounds < _MAX_WIDENINGS and self.loop_budget >= cost:
                for i, seed, out in moved:
                    seeds[i] = control.widen(seed, out, r.domain)
            else:
                for i, _ in pairs:
                    t = seeds[i]
                    seeds[i] = None if t is None else TensorInfo(t.dtype, None)
            rounds += 1
            self.loop_budget -= cost
            self._forget(scopes, mark)

    def _forget(self, scopes: list[int], mark: tuple[int, int, int]) -> None:
        """Drop what an earlier run of the bodies ``scopes`` left: their tables, the facts they
        recorded (after ``mark``), the function calls they made and the axes their tensors were
        read as."""
        r = self.r
        for i in scopes:
            r.tensors[i] = {}
        del r.axis_nodes[mark[0]:]
        del r.call_facts[mark[1]:]
        for key in list(self.calls)[mark[2]:]:
            del self.calls[key]
        inner = set(scopes)
        for key in [k for k in r.memo if len(k) > 1 and k[0] == "axes" and k[1] in inner]:
            del r.memo[key]

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
        self.callers.append(caller)
        try:
            self.run_scope(body, list(ins[:len(body.inputs)]))
            table = r.tensors[fsid]
            outs: list[TensorInfo | None] | None = [table.get(o) for o in body.outputs]
        finally:
            self.callers.pop()
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

    def _check_call_types(self, nid: int, info: "NodeInfo", ins: list[TensorInfo | None]) -> None:
        """Record the first input type error of a function body's node at this call's types."""
        errors = self.r.call_type_errors
        if nid in errors:
            return
        sig = signature(info.domain, info.op_type, info.since_version)
        if sig is None:
            return
        dtypes = [t.dtype if t is not None and t.dtype in DTYPES else 0 for t in ins]
        problem = input_type_error(sig, dtypes) if any(dtypes) else None
        if problem is not None:
            errors[nid] = (problem[1], self.callers[0])

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
        site's) or unknown; a body input from ``args`` where it has an entry (what its Loop or
        Scan feeds it)."""
        body = scope.proto
        bindings = self.r.bindings
        if isinstance(body, onnx.GraphProto):
            owner = self._owner_op(scope)
            copies = self.r.copies if scope.id == 0 else None
            for k, vi in enumerate(body.input):
                info = self._from_type(vi.type, bindings, vi.name, copies)
                if owner is not None and info is not None:
                    info = _runtime_input(owner, k, vi, info)
                if args is not None and k < len(args) and args[k] is not None:
                    info = args[k]  # what the owner feeds (a Loop's or Scan's, ops/control.py)
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

    def _owner_op(self, scope: Scope) -> str | None:
        """The op type of the node whose body ``scope`` is (None for the main graph); a custom
        domain's op is named with its domain."""
        owner = scope.owner
        if owner is None:
            return None
        info = self.g.nodes[owner]
        return info.op_type if info.domain == "" else f"{info.domain}::{info.op_type}"

    def _from_type(self, tp: onnx.TypeProto, bindings: Mapping[str, int], name: str,
                   copies: Mapping[CopyKey, str] | None = None) -> TensorInfo | None:
        aliases = self.r.aliases
        if tp.WhichOneof("value") != "tensor_type":
            return None
        tt = tp.tensor_type
        if not tt.HasField("shape"):
            return TensorInfo(tt.elem_type, None)
        dims = tt.shape.dim
        if len(dims) > self.max_rank:
            raise LimitExceededError("max-rank", len(dims), "--max-rank", file=self.g.path, tensor=name)
        shape: list[Dim] = []
        for axis, d in enumerate(dims):
            which = d.WhichOneof("value")
            if which == "dim_value":
                shape.append(int(d.dim_value) if d.dim_value >= 0 else None)
            elif which == "dim_param" and d.dim_param:
                p = d.dim_param
                if copies:
                    p = copies.get((name, p, axis)) or copies.get((name, p), p)
                s: Dim = Sym.symbol(aliases.get(p, p) if aliases else p)
                shape.append(substitute(s, bindings, self.r.domain) if bindings else s)
            else:
                shape.append(None)
        return TensorInfo(tt.elem_type, tuple(shape))

    def _check_limits(self, shape: tuple[Any, ...], nid: int) -> None:
        if len(shape) > self.max_rank or any(type(d) is Sym and d.size() > self.max_expr for d in shape):
            info = self.g.nodes[nid]
            where = info.peek().name or info.op_type
            if len(shape) > self.max_rank:
                raise LimitExceededError("max-rank", len(shape), "--max-rank", file=self.g.path, node=where)
            for d in shape:
                if type(d) is Sym and d.size() > self.max_expr:
                    raise LimitExceededError("max-expr-size", d.size(), "--max-expr-size", file=self.g.path,
                                        node=where)

    def _check_value(self, value: tuple[Any, ...], nid: int) -> None:
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
