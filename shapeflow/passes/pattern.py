"""The pattern layer: the shapes rewrites match, declared instead of written out.

Most rewrites start the same way: a root node of some op types, the producer of its input ``k``
of some op type (read by the root alone, and no graph output), a value that inference knows, an
output whose readers can be rewired. A pattern says that much, and binds the nodes it names:

    Op("Unsqueeze", Op("Gather", Op("Shape", name="shape"), name="gather"))

matches ``Unsqueeze(Gather(Shape(x)))`` at an Unsqueeze root and binds ``b["gather"]`` and
``b["shape"]``. An input given as None matches anything. ``exclusive=True`` asks that the
producer's output be read by its consumer in the pattern alone and be no graph output (so it can
go with the rewrite). Guards are conditions on a node, each with the reason it gives when it fails;
a guard is ``stable`` when it depends only on values of the node's own tensors, which rewrites
never change (a rewired input holds the same value): a root failing a stable guard is settled for
good, and the engine runs no round for it.

The engine reads from a pattern what it needs to schedule the work: ``roots`` (the op types it is
rooted at), ``after`` (what may produce the root's data input: the dispatch asks no rewrite about
a root it cannot match), ``settled`` and ``depends`` (what a later round's match depends on:
the neighbourhood of the root, or only the root's own op, inputs and attributes).

The other recurring pieces live here too: :class:`Bypass`, the replacement "the root is one of its
inputs" (its readers read that input, the root goes), and :func:`exclusive_cone`, the nodes a
rewrite leaves for the dead-node sweep. The ideas come from onnxscript's ``RewriteRule(pattern,
check, replacement)`` and tinygrad's ``PatternMatcher`` tables; the claims (writes, reads, rewires,
sweeps) are shapeflow's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable, NamedTuple, cast

from ..graph import INITIALIZER
from . import _fast
from .context import ANY_OP, RoundContext
from .match import Match, Message, NoMatch, Result, not_applicable

if TYPE_CHECKING:
    from ..dims import Dim
    from ..tensorinfo import TensorInfo
    from .edit import Editor

# What a later round's match of a pattern depends on (``Pattern.depends``).
NEIGHBOURHOOD = "neighbourhood"  # the root, its tensors' producers and readers, runs through them
SAME_KEY = "same-key"  # only the root's own op, inputs and attributes, and which nodes share them

_ABSENT = object()


class Guard:
    """A condition on a node: ``check`` returns None when it holds, else why not. ``stable`` guards
    depend only on values of the node's own tensors (no rewrite changes them; a rewired input
    holds the same value)."""

    stable = False

    def check(self, ctx: RoundContext, nid: int) -> NoMatch | None:  # pragma: no cover - abstract
        raise NotImplementedError


class Bound(dict[str, int]):
    """The nodes a pattern bound, by name, and its root (``bound(root)`` makes one)."""

    __slots__ = ("root",)
    root: int


def bound(root: int) -> Bound:
    """An empty binding at ``root`` (dict's own constructor: one is made per root a pattern matches,
    and a Python ``__init__`` would double its cost)."""
    b = Bound()
    b.root = root
    return b


class Pattern:
    """Base of the patterns: what the engine reads from one (see the module docstring)."""

    roots: tuple[str, ...] = ()
    after: frozenset[str] | None = None
    depends: str = NEIGHBOURHOOD

    def bind(self, ctx: RoundContext, nid: int) -> "Bound | NoMatch":  # pragma: no cover - abstract
        raise NotImplementedError

    def settled(self, ctx: RoundContext, nid: int) -> bool:
        """True when no later round can make the pattern match at root ``nid``."""
        return False


class Op(Pattern):
    """A node of op type ``ops`` (one, or a tuple) whose input ``k`` is produced as ``inputs[k]``
    says (None: anything); see the module docstring."""

    def __init__(self, ops: str | tuple[str, ...] | frozenset[str], *inputs: "Op | None", name: str = "",
                 exclusive: bool = False, guards: tuple[Guard, ...] = ()) -> None:
        self.ops: tuple[str, ...] = (ops,) if isinstance(ops, str) else tuple(sorted(ops))
        self.inputs = inputs
        self.name = name
        self.exclusive = exclusive
        self.guards = guards
        self.roots = self.ops
        first = inputs[0] if inputs else None
        self.after = frozenset(first.ops) if first is not None else None
        self._stable = tuple(g for g in guards if g.stable)
        # the answers for a missing producer, made once (most roots are not the end of a pattern)
        self._missing = {k: not_applicable(f"input {k} is not produced by {_ops_text(p.ops)}")
                         for k, p in enumerate(inputs) if p is not None}

    def bind(self, ctx: RoundContext, nid: int) -> "Bound | NoMatch":
        for g in self.guards:
            why = g.check(ctx, nid)
            if why is not None:
                return why
        b = Bound()
        b.root = nid
        if self.name:
            b[self.name] = nid
        if self.inputs:
            why = self._bind_inputs(ctx, nid, b)
            if why is not None:
                return why
        return b

    def _bind_inputs(self, ctx: RoundContext, nid: int, b: Bound) -> NoMatch | None:
        nodes = ctx.graph.nodes
        info = nodes[nid]
        producer = ctx.graph.scopes[info.scope].producer
        for k, sub in enumerate(self.inputs):
            if sub is None:
                continue
            names = info.inputs
            p = producer.get(names[k]) if k < len(names) and names[k] else None
            if p is None or p < 0:
                return self._missing[k]
            pinfo = nodes[p]
            if (pinfo.op_type not in sub.ops or pinfo.domain != "" or pinfo.since_version is None
                    or not pinfo.inputs or not pinfo.inputs[0]):
                return self._missing[k]  # (a producer without data input is malformed: not matched)
            if sub.exclusive and not ctx.only_reader(info.scope, pinfo.outputs[0], nid):
                return NoMatch(f"{ctx.display(p)} has other readers or is a graph output")
            for g in sub.guards:
                why = g.check(ctx, p)
                if why is not None:
                    return why
            if sub.name:
                b[sub.name] = p
            if sub.inputs:
                why = sub._bind_inputs(ctx, p, b)
                if why is not None:
                    return why
        return None

    def settled(self, ctx: RoundContext, nid: int) -> bool:
        for g in self._stable:
            if g.check(ctx, nid) is not None:
                return True
        return False


class AnyNode(Op):
    """Every standard node (duplicates): roots ``ANY_OP``."""

    def __init__(self, depends: str = NEIGHBOURHOOD) -> None:
        super().__init__(ANY_OP)
        self.depends = depends


def _article(op: str) -> str:
    return f"an {op}" if op[:1] in "AEIOU" else f"a {op}"


def _ops_text(ops: tuple[str, ...]) -> str:
    return _article(" or ".join(ops)) if len(ops) <= 3 else "an op of the pattern"


# -- guards ---------------------------------------------------------------------------------------------

_UNKNOWN_VALUE = not_applicable("value not known before run time")
_SYMBOLIC_VALUE = not_applicable("value is symbolic")
_UNKNOWN_INPUT_VALUE = not_applicable("input value not known before run time")


def tensor_of(ctx: RoundContext, sid: int, name: str) -> "TensorInfo | None":
    """``ctx.tensor`` with one lookup in the scope's own table first (where most tensors are: on
    a large model each lookup is a cache miss)."""
    found = ctx.inference.tensors[sid].get(name, _ABSENT)
    return ctx.tensor(sid, name) if found is _ABSENT else cast("TensorInfo | None", found)


_NO_DATA_INPUT = not_applicable("no data input")


class DataInput(Guard):
    """The node has a data input (input 0 named): a malformed node without one is left alone."""

    def check(self, ctx: RoundContext, nid: int) -> NoMatch | None:
        names = ctx.graph.nodes[nid].inputs
        return None if names and names[0] else _NO_DATA_INPUT


DATA_INPUT = DataInput()


class KnownValue(Guard):
    """The node's output 0 has a value inference knows on every run, every element an integer."""

    stable = True

    def check(self, ctx: RoundContext, nid: int) -> NoMatch | None:
        info = ctx.graph.nodes[nid]
        # (``tensor_of`` written out: this runs for every root of an op whose value may be known)
        found = ctx.inference.tensors[info.scope].get(info.outputs[0], _ABSENT)
        t = ctx.tensor(info.scope, info.outputs[0]) if found is _ABSENT else cast("TensorInfo | None", found)
        if t is None:
            return _UNKNOWN_VALUE
        known = t.value
        if known is None:
            return _UNKNOWN_VALUE
        for v in known:  # (a loop: the common case, a shape of batch and seq, stops at once)
            if type(v) is not int:
                return _SYMBOLIC_VALUE
        return None


class KnownInput(Guard):
    """Input ``k`` of the node has a value inference knows, every element (an int or a symbol)."""

    stable = True

    def __init__(self, k: int) -> None:
        self.k = k

    def check(self, ctx: RoundContext, nid: int) -> NoMatch | None:
        info = ctx.graph.nodes[nid]
        names = info.inputs
        if len(names) <= self.k or not names[self.k]:
            return _UNKNOWN_INPUT_VALUE
        t = ctx.tensor(info.scope, names[self.k])
        if t is None or t.value is None:
            return _UNKNOWN_INPUT_VALUE
        for v in t.value:
            if v is None:
                return _UNKNOWN_INPUT_VALUE
        return None


class NoFunctionAttributes(Guard):
    """The node's attributes are its own, not references to the enclosing function's (``@a``)."""

    def check(self, ctx: RoundContext, nid: int) -> NoMatch | None:
        if ctx.refers_to_function_attributes(nid):
            return NoMatch(f"{ctx.display(nid)}: attributes refer to the function's attributes")
        return None


class ReadBy(Guard):
    """The node's output 0 is read by at least ``minimum`` nodes, every one a standard node of
    ``ops`` (counted as the index lists them: checked first, and cheaply)."""

    def __init__(self, ops: tuple[str, ...], minimum: int = 2) -> None:
        self.ops = frozenset(ops)
        self.minimum = minimum
        self._few = not_applicable(f"output not read by {minimum} or more nodes")
        self._other = not_applicable(f"a reader of the output is not {_ops_text(tuple(sorted(ops)))}")

    def check(self, ctx: RoundContext, nid: int) -> NoMatch | None:
        nodes = ctx.graph.nodes
        info = nodes[nid]
        readers = ctx.graph.scopes[info.scope].consumers.get(info.outputs[0])
        if readers is None or len(readers) < self.minimum:
            return self._few
        ops = self.ops
        for r in readers:
            rinfo = nodes[r]
            if rinfo.op_type not in ops or rinfo.domain != "" or rinfo.since_version is None:
                return self._other
        if len(set(readers)) < self.minimum:
            return self._few
        return None


def data_readers(ctx: RoundContext, nid: int) -> list[int] | NoMatch:
    """The distinct readers of ``nid``'s output 0, when each reads it as its data input only (not
    as another input, not by name in a subgraph), has an output, and may be touched; the output is
    no graph output. Every reader gets rewritten."""
    nodes = ctx.graph.nodes
    info = nodes[nid]
    sid, y = info.scope, info.outputs[0]
    readers = list(dict.fromkeys(ctx.readers(sid, y)))
    me = ctx.display(nid)
    if ctx.is_output(sid, y):
        return NoMatch(f"{me}: its output is a graph output (read by {len(readers)} nodes)")
    blocked = ctx.blocked
    for r in readers:
        if r in blocked:
            return NoMatch(f"{me}: {ctx.display(r)} is not to be touched (a suppressed finding)")
        ins = nodes[r].inputs
        if ins[0] != y or y in ins[1:]:
            return NoMatch(f"{me}: {ctx.display(r)} reads its output as axes or by name in a subgraph")
        if not nodes[r].outputs or not nodes[r].outputs[0]:
            return NoMatch(f"{me}: {ctx.display(r)} has no output")
    return readers


# -- Reshape and Expand targets -------------------------------------------------------------------------

# Reshape takes its target as an input from opset 5 (before, an attribute: already constant).
RESHAPE_INPUT_SINCE = 5
# allowzero exists from opset 14 (before, a 0 always copies the input's dim).
ALLOWZERO_SINCE = 14

_NO_TARGET = not_applicable("no target input")
_UNKNOWN_TARGET = not_applicable("target value not known before run time")
_UNKNOWN_RANK = not_applicable("input rank unknown")


def target_value(ctx: RoundContext, nid: int) -> "tuple[tuple[Dim, ...], tuple[Dim, ...]] | NoMatch":
    """The target's value (every element known: an int or a symbol) and the data input's shape, of
    Reshape/Expand ``nid``."""
    info = ctx.graph.nodes[nid]
    names = info.inputs
    if len(names) < 2 or not names[0] or not names[1]:
        return _NO_TARGET
    if info.op_type == "Reshape" and (info.since_version or 0) < RESHAPE_INPUT_SINCE:
        return _NO_TARGET
    sid = info.scope
    t = tensor_of(ctx, sid, names[1])
    if t is None or t.value is None or t.shape is None or len(t.shape) != 1:
        return _UNKNOWN_TARGET
    for v in t.value:
        if v is None:
            return _UNKNOWN_TARGET
    x = tensor_of(ctx, sid, names[0])
    if x is None or x.shape is None:
        return _UNKNOWN_RANK
    return t.value, x.shape


def allowzero(ctx: RoundContext, nid: int) -> int:
    """The ``allowzero`` of Reshape ``nid`` (0 before opset 14). A reference to a function's
    attribute reads as 1: either value at a call, and the stricter reading (a 0 in the target is
    a 0, never a copy) is the one every call agrees with."""
    info = ctx.graph.nodes[nid]
    if (info.since_version or 0) < ALLOWZERO_SINCE or not info.has_attrs:
        return 0
    for a in ctx.peek(nid).attribute:
        if a.name == "allowzero":
            return 1 if a.ref_attr_name else int(a.i)
    return 0


def overridable_problem(ctx: RoundContext, nid: int, what: str = "computed values") -> NoMatch | None:
    """Why a rewrite relying on a value computed from constants does not fire: the model has
    initializers that are also graph inputs, which a caller may override."""
    if ctx.overridable:
        return NoMatch(f"{ctx.display(nid)}: the model has initializers that are also graph inputs, "
                       f"so {what} may change at run time")
    return None


def one_element_constant(ctx: RoundContext, sid: int, name: str) -> bool:
    """``name`` is an initializer or a Constant node's output with one element and rank <= 1."""
    p = ctx.graph.scopes[sid].producer.get(name)
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


def must_keep_name(ctx: RoundContext, sid: int, z: str) -> bool:
    """``z`` is a graph output or is read by name inside a subgraph: its readers cannot be rewired
    to another tensor, so whatever produces it must keep producing it."""
    return z in ctx.outputs(sid) or not ctx.direct_readers_only(sid, z)


# -- replacements ---------------------------------------------------------------------------------------


class BypassPlan(NamedTuple):
    x: str  # the input the readers read instead
    z: str  # the root's output


class Bypass:
    """The replacement "the root is its input ``x``": the root's readers read ``x`` and the root
    goes. It cannot be made when the root's output must keep its name (a graph output, or read by
    name in a subgraph): keeping it would need an Identity, which removes nothing."""

    def __init__(self, says: str) -> None:
        self.says = says  # template over {root} (the root as displayed) and {x}

    def plan(self, ctx: RoundContext, nid: int, x: str, *, reads: tuple[int, ...] = (),
             sweeps: tuple[int, ...] = (), writes: tuple[int, ...] = (), note: str = "",
             message: Message | None = None) -> Result:
        info = ctx.graph.nodes[nid]
        sid, z = info.scope, info.outputs[0]
        if must_keep_name(ctx, sid, z):
            return NoMatch(f"{ctx.display(nid)}: '{z}' must keep its name (graph output or read by a "
                           "subgraph)")
        says = self.says
        if message is None:
            def message() -> str:
                return says.format(root=ctx.display(nid), x=x)
        readers = tuple([r for r in ctx.readers(sid, z) if r != nid])
        return Match(nid, writes=(nid, *writes), reads=reads, rewires=readers, sweeps=sweeps, message=message,
                     note=note, payload=BypassPlan(x, z))

    @staticmethod
    def apply(ctx: RoundContext, edit: "Editor", m: Match[BypassPlan]) -> None:
        edit.replace_uses(ctx.sid(m.nid), m.payload.z, m.payload.x)
        edit.delete_node(m.nid)


# -- what a rewrite leaves to the sweep -----------------------------------------------------------------

# A rewrite claims at most this many of the nodes feeding it (the sweep removes the rest anyway).
MAX_CONE = 256


def exclusive_cone(ctx: RoundContext, nid: int, names: "tuple[str, ...] | None" = None) -> tuple[int, ...]:
    """The standard nodes of ``nid``'s scope that only ``nid`` needs through its inputs ``names``
    (default all), directly or through each other: every output read only by nodes of the set,
    none a graph output. What the sweep deletes once ``nid`` stops reading ``names``: a rewrite's
    ``sweeps``. Empty when the matches are only listed, never applied (``ctx.claims``).

    ``exclusive_cone_plain`` with its helpers written out (``_fast.exclusive_cone``): a no-op
    Reshape's target computation is a dozen nodes, walked once per Reshape of a model."""
    return _fast.exclusive_cone(ctx, nid, names, MAX_CONE)


def exclusive_cone_plain(ctx: RoundContext, nid: int, names: "tuple[str, ...] | None" = None) -> tuple[int, ...]:
    """What ``exclusive_cone`` returns, computed step by step."""
    if not ctx.claims:
        return ()
    info = ctx.graph.nodes[nid]
    sid = info.scope
    scope = ctx.graph.scopes[sid]
    producer, consumers, nodes = scope.producer, scope.consumers, ctx.graph.nodes
    outputs = ctx.outputs(sid)
    inside = {nid}
    # what ``nid`` goes on reading: a producer it reads through them is no member
    kept = frozenset() if names is None else frozenset(info.inputs).difference(names)
    out: list[int] = []
    stack = [n for n in (info.inputs if names is None else names) if n]
    while stack and len(out) < MAX_CONE:
        name = stack.pop()
        p = producer.get(name)
        if p is None or p < 0 or p in inside:
            continue
        pinfo = nodes[p]
        if pinfo.domain != "" or pinfo.since_version is None or pinfo.subscopes:
            continue
        if _only_inside(pinfo.outputs, outputs, kept, consumers, inside):
            inside.add(p)
            out.append(p)
            stack.extend(n for n in pinfo.inputs if n)
        # (else it may qualify later, when its other readers join: it is pushed again)
    return tuple(out)


def _only_inside(names: tuple[str, ...], outputs: frozenset[str], kept: frozenset[str],
                 consumers: dict[str, list[int]], inside: set[int]) -> bool:
    for o in names:
        if not o:
            continue
        if o in outputs or o in kept:
            return False
        for r in consumers.get(o, ()):
            if r not in inside:
                return False
    return True


# -- regions --------------------------------------------------------------------------------------------

class Region(NamedTuple):
    """What :func:`region` found walking back from a tensor."""

    nodes: tuple[int, ...]  # the region's nodes, nearest first
    start: int  # the one node of the start op where the walk stops
    tensors: frozenset[str]  # every tensor the walk reached (region tensors and leaves)
    leaves: frozenset[str]  # the tensors among them that are leaves (constants)


def region(ctx: RoundContext, nid: int, name: str, ops: frozenset[str], start: str,
           leaf: Callable[[RoundContext, int, str], bool], limit: int) -> Region | NoMatch:
    """Walk back from tensor ``name`` (an input of ``nid``) through standard nodes of ``ops`` (one
    output each) up to exactly one node of op ``start`` (not walked through): every other tensor
    reached must be a ``leaf``; Constant nodes are leaves' producers, never region members. At most
    ``limit`` region nodes. The root ``nid`` is named in the reasons."""
    sid = ctx.sid(nid)
    producer, nodes = ctx.graph.scopes[sid].producer, ctx.graph.nodes
    members: list[int] = []
    seen: set[str] = set()
    leaves: set[str] = set()
    first = -1
    stack = [name]
    while stack:
        t = stack.pop()
        if t in seen:
            continue
        seen.add(t)
        p = producer.get(t)
        if p is None or p < 0 or nodes[p].op_type == "Constant":
            if not leaf(ctx, sid, t):
                return NoMatch(f"{ctx.display(nid)}: the region reads '{t}', neither a region "
                               "tensor nor a one-element constant")
            leaves.add(t)
            continue
        pinfo = nodes[p]
        if pinfo.domain != "" or pinfo.since_version is None or pinfo.subscopes:
            return NoMatch(f"{ctx.display(nid)}: {ctx.display(p)} is not an elementwise op")
        if pinfo.op_type == start:
            if first >= 0 and first != p:
                return NoMatch(f"{ctx.display(nid)}: the region has two {start}s")
            if not pinfo.inputs or not pinfo.inputs[0] or pinfo.outputs[0] != t:
                return NoMatch(f"{ctx.display(nid)}: {ctx.display(p)} has no data input")
            first = p
            continue
        if pinfo.op_type not in ops or len(pinfo.outputs) != 1:
            return NoMatch(f"{ctx.display(nid)}: {ctx.display(p)} is not an elementwise op")
        if len(members) >= limit:
            return NoMatch(f"{ctx.display(nid)}: the region has more than {limit} nodes")
        members.append(p)
        stack.extend(n for n in pinfo.inputs if n)
    if first < 0:
        return not_applicable(f"no {start} before the region")
    return Region(tuple(members), first, frozenset(seen), frozenset(leaves))


def outside_readers(ctx: RoundContext, sid: int, names: Iterable[str],
                    inside: set[int]) -> tuple[str, int | None] | None:
    """The first of ``names`` that is a graph output (with None) or is read by a node not in
    ``inside`` (with that node), or None when every one is read inside only."""
    for name in names:
        if ctx.is_output(sid, name):
            return name, None
        for r in ctx.readers(sid, name):
            if r not in inside:
                return name, r
    return None


def rename_region(ctx: RoundContext, edit: Editor, sid: int, members: Iterable[int], z: str,
                  z_name: str, suffix: str) -> None:
    """After a rewrite changes the value of every tensor a region computes: its last tensor ``z``
    takes ``z_name`` (the name whose value it now is), every other one a fresh name. A tensor
    keeps its name only with its value: what inference carries over to the next round relies on it."""
    for p in members:
        old = ctx.output(p)
        if old == z:
            edit.set_output(p, 0, z_name)
        else:
            new = edit.names.fresh(ctx.graph, old, suffix)
            edit.set_output(p, 0, new)
            # (a new value under a new name: not a rename that keeps the value, never forwarded)
            edit.replace_uses(sid, old, new, forward=False)
        edit.forget_value_info(sid, old)


__all__ = [
    "AnyNode", "Bound", "bound", "Bypass", "BypassPlan", "DATA_INPUT", "DataInput", "Guard", "ReadBy", "data_readers", "KnownInput", "KnownValue", "MAX_CONE", "NEIGHBOURHOOD", "exclusive_cone_plain",
    "NoFunctionAttributes", "Op", "Pattern", "Region", "SAME_KEY", "exclusive_cone", "must_keep_name",
    "one_element_constant", "outside_readers", "overridable_problem", "region", "rename_region", "tensor_of", "ALLOWZERO_SINCE",
    "RESHAPE_INPUT_SINCE", "allowzero", "target_value",
]
