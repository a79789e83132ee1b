"""The edit API: the only code that changes the ModelProto during ``optimize``.

Rewrites edit the parsed model in place (RELIABILITY.md section 2: rebuilding a model from the graph
is how peers lose fields). The graph index of the round stays as it was built; the editor keeps the
bookkeeping that the index no longer tells:

* how many nodes read each tensor *directly* (its input list), so that a tensor whose last reader
  went away is known at once, and the nodes and initializers it leaves dead can be removed
  (``sweep.sweep``), including through subgraphs that read a tensor by name;
* which nodes are deleted and which were created, and where the created ones go;
* which tensors vanished, so that their value_info entries go too.

Deletions and insertions are applied once per round (``finish``): each repeated field that changed
is reordered with one sort, which moves pointers without copying messages, and its tail of deleted
entries is cut in one slice. That keeps a round O(N) however many nodes it removes.

New names are unique in the whole model and deterministic: the replaced node's name (or its output
tensor's) plus ``/suffix``, with ``_1``, ``_2``, ... on collision.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .._onnx import onnx
from ..graph import ModelGraph
from .context import AXES_INPUT_SINCE, RoundContext

# Suffixes of the names the editor creates. Only existing names that end like these can collide
# with a new one, so only those are collected when the registry is built.
_SUFFIXES = frozenset({"axes", "starts", "ends", "identity", "shape", "slice", "folded", "const",
                       "squeeze", "unsqueeze", "unreshaped"})
# Small int64 vectors (axes, slice bounds) are reused when an identical initializer exists.
_REUSE_MAX_ELEMS = 64

TensorProto = onnx.TensorProto


def int64_tensor(values: tuple[int, ...], name: str) -> TensorProto:
    """An int64 vector as numpy writes it (raw data). numpy is imported here, on the first rewrite:
    lint imports this module and needs neither numpy nor onnx's helpers."""
    import numpy as np

    return onnx.numpy_helper.from_array(np.asarray(values, dtype=np.int64), name)


def _generated_like(name: str) -> bool:
    i = name.rfind("/")
    if i < 0:
        return False
    word, _, k = name[i + 1:].partition("_")
    return word in _SUFFIXES and (not k or k.isdigit())


class NameRegistry:
    """Names that a generated name could collide with; built on first use, kept across rounds
    (a name once taken stays taken, which is conservative and keeps names deterministic)."""

    def __init__(self) -> None:
        self._taken: set[str] | None = None

    def _scan(self, graph: ModelGraph) -> set[str]:
        taken: set[str] = set()
        raw = graph.loaded.raw
        if raw and not any(f"/{word}".encode() in raw for word in _SUFFIXES):
            # No name in the file can look like a generated one: nothing to collect.
            return taken
        for info in graph.nodes:
            name = info.peek().name
            if _generated_like(name):
                taken.add(name)
            for o in info.outputs:
                if _generated_like(o):
                    taken.add(o)
        for scope in graph.scopes:
            for name in scope.producer:
                if _generated_like(name):
                    taken.add(name)
            for name in scope.outputs:
                if _generated_like(name):
                    taken.add(name)
            body = scope.proto
            if isinstance(body, onnx.GraphProto):
                for vi in body.value_info:
                    if _generated_like(vi.name):
                        taken.add(vi.name)
        return taken

    def fresh(self, graph: ModelGraph, base: str, suffix: str) -> str:
        if self._taken is None:
            self._taken = self._scan(graph)
        candidate = f"{base}/{suffix}"
        k = 0
        while candidate in self._taken:
            k += 1
            candidate = f"{base}/{suffix}_{k}"
        self._taken.add(candidate)
        return candidate


@dataclass
class _NewNode:
    sid: int
    proto: onnx.NodeProto  # the entry inside the body's node list
    anchor: int  # the original node it is placed right before
    seq: int  # creation order, to keep several nodes before one anchor in order
    index: int  # its position in the body's node list until the round's compaction


@dataclass
class Editor:
    """Edits one round's worth of rewrites into ``ctx.graph.model``."""

    ctx: RoundContext
    names: NameRegistry
    explain: bool = True  # keep a display string per node the sweep removes (for the log)
    changed: bool = False
    dead_count: int = 0
    deleted: set[int] = field(default_factory=set)
    dead: list[str] = field(default_factory=list)  # nodes removed by the sweep, as displayed
    removed_initializers: list[tuple[int, str]] = field(default_factory=list)
    released: list[tuple[int, str]] = field(default_factory=list)  # tensors whose last direct reader left
    _counts: dict[tuple[int, str], int] = field(default_factory=dict)
    _new: list[_NewNode] = field(default_factory=list)
    _made: set[tuple[int, str]] = field(default_factory=set)  # tensors (re)produced by this round's edits
    _gone: dict[int, set[str]] = field(default_factory=dict)  # tensors that no longer exist, per scope
    _dropped_inits: dict[int, set[str]] = field(default_factory=dict)
    _stale_info: dict[int, set[str]] = field(default_factory=dict)  # value_info to drop, per scope
    _int_index: dict[int, dict[tuple[int, ...], str]] = field(default_factory=dict)
    _modified: set[int] = field(default_factory=set)  # nodes whose proto an edit changed
    _added_inits: set[tuple[int, str]] = field(default_factory=set)  # initializers this round added
    # Readers an edit gave a tensor this round, which the index does not list: original nodes by
    # id, created nodes by entry (``replace_uses`` forwards a later rewrite's rewiring to them).
    _late: dict[tuple[int, str], list["int | _NewNode"]] = field(default_factory=dict)

    g: ModelGraph = field(init=False, repr=False)
    _bodies: bool = field(init=False, repr=False, default=False)

    def __post_init__(self) -> None:
        self.g = self.ctx.graph
        # whether any node owns a subgraph (else nothing reads a tensor by name: ``needed``)
        self._bodies = any(scope.owner is not None for scope in self.g.scopes)

    # -- reader bookkeeping ----------------------------------------------------------------------
    def _initial_count(self, sid: int, name: str) -> int:
        # Index-time inputs are still right for ``name``: any edit that changes a reader's use of
        # ``name`` initialises the count first.
        nodes = self.g.nodes
        c = 0
        for r in self.g.scopes[sid].consumers.get(name, ()):
            if name in nodes[r].inputs:
                c += 1
        return c

    def count(self, sid: int, name: str) -> int:
        """Direct readers of ``name`` in scope ``sid`` now. Initialised from the index on first use,
        which every edit does before it changes a reader, so the index is still true then."""
        key = (sid, name)
        c = self._counts.get(key)
        if c is None:
            c = self._counts[key] = self._initial_count(sid, name)
        return c

    def _add_read(self, sid: int, name: str) -> None:
        key = (sid, name)
        c = self._counts.get(key)
        if c is None:
            c = self._initial_count(sid, name)
        self._counts[key] = c + 1

    def _drop_read(self, sid: int, name: str) -> None:
        key = (sid, name)
        c = self._counts.get(key)
        if c is None:
            c = self._initial_count(sid, name)
        c -= 1
        self._counts[key] = c
        if c == 0:
            self.released.append(key)

    def needed(self, sid: int, name: str) -> bool:
        """Whether anything still reads ``name`` in scope ``sid``: a node, the scope's outputs, or a
        subgraph of a live node that reads it by name."""
        c = self._counts.get((sid, name))
        if c is None:
            c = self.count(sid, name)
        if c > 0 or name in self.ctx.outputs(sid):
            return True
        if not self._bodies:  # (the loop below looks for subgraphs of its readers: there are none)
            return False
        g = self.g
        for r in g.scopes[sid].consumers.get(name, ()):
            if r in self.deleted:
                continue
            for sub in g.nodes[r].subscopes:
                if name not in g.scopes[sub].producer and self.needed(sub, name):
                    return True
        return False

    @property
    def modified(self) -> set[int]:
        """Original nodes whose proto an edit changed."""
        return self._modified

    def new_nodes(self) -> list[tuple[int, onnx.NodeProto]]:
        """(scope id, proto) of the nodes this round created."""
        return [(n.sid, n.proto) for n in self._new]

    @property
    def created(self) -> int:
        """How many nodes the round created."""
        return len(self._new)

    def created_ops(self) -> list[tuple[str, str]]:
        """(domain, op type) of each node the round created (a fan-out merge may create a
        Squeeze/Unsqueeze in place of another)."""
        return [(n.proto.domain, n.proto.op_type) for n in self._new]

    def revalued_any(self) -> bool:
        """Whether this round gave a tensor a new value (``forget_value_info``: a region renamed by
        a rewrite, a repair): what inference knew of it no longer holds."""
        return any(self._stale_info.values())

    def touched(self, sid: int, name: str) -> bool:
        """Whether this round changed the readers or producer of tensor ``name`` of ``sid`` (or
        looked at it while sweeping): the tensors whose readers' next-round matches could differ."""
        key = (sid, name)
        if key in self._counts or key in self._made:
            return True
        gone = self._gone.get(sid)
        return gone is not None and name in gone

    @property
    def made(self) -> set[tuple[int, str]]:
        """(scope id, name) of the tensors this round's edits produce in a new way."""
        return self._made

    def is_gone(self, sid: int, name: str) -> bool:
        return name in self._gone.get(sid, ()) and (sid, name) not in self._made

    # -- nodes -----------------------------------------------------------------------------------
    def _edit(self, nid: int) -> onnx.NodeProto:
        """The proto of ``nid``, to be changed: from now on its index entry is out of date."""
        self._modified.add(nid)
        return self.g.nodes[nid].proto

    def current_inputs(self, nid: int) -> "tuple[str, ...] | object":
        info = self.g.nodes[nid]
        return info.proto.input if nid in self._modified else info.inputs

    def current_outputs(self, nid: int) -> "tuple[str, ...] | object":
        info = self.g.nodes[nid]
        return info.proto.output if nid in self._modified else info.outputs

    def set_input(self, nid: int, index: int, name: str) -> None:
        self._set_input_of(self.g.nodes[nid].scope, self._edit(nid), index, name, nid)

    def _set_input_of(self, sid: int, node: onnx.NodeProto, index: int, name: str,
                      reader: "int | _NewNode") -> None:
        """Input ``index`` of ``node`` (original node ``reader`` or created one) reads ``name``;
        the reader counts follow."""
        old = node.input[index]
        if old == name:
            return
        had_new = name in node.input
        if old:
            self.count(sid, old)
        if name:
            self.count(sid, name)
        node.input[index] = name
        if old and old not in node.input:
            self._drop_read(sid, old)
        if name and not had_new:
            self._add_read(sid, name)
            self._late_reader(sid, name, reader)
        self.changed = True

    def append_input(self, nid: int, name: str) -> None:
        node = self._edit(nid)
        sid = self.g.nodes[nid].scope
        had = name in node.input
        self.count(sid, name)
        node.input.append(name)
        if not had:
            self._add_read(sid, name)
            self._late_reader(sid, name, nid)
        self.changed = True

    def set_inputs(self, nid: int, names: "tuple[str, ...] | list[str]") -> None:
        """Give node ``nid`` the inputs ``names`` (at least as many as it has: a list that grows)."""
        node = self._edit(nid)
        if len(names) < len(node.input):
            raise AssertionError("set_inputs only grows an input list")
        for i, name in enumerate(names):
            if i < len(node.input):
                self.set_input(nid, i, name)
            else:
                self.append_input(nid, name)

    def drop_attribute(self, nid: int, name: str) -> None:
        """Remove attribute ``name`` of node ``nid`` (its default applies), if it has one."""
        node = self._edit(nid)
        for k, a in enumerate(node.attribute):
            if a.name == name:
                del node.attribute[k]
                self.changed = True
                return

    def make_identity(self, nid: int) -> None:
        """Turn node ``nid`` into an Identity of its first input, keeping its name and outputs
        (the inputs after the first, such as an axes tensor, are no longer read)."""
        node = self._edit(nid)
        sid = self.g.nodes[nid].scope
        rest = [n for n in node.input[1:] if n and n != node.input[0]]
        node.op_type = "Identity"
        node.domain = ""
        del node.input[1:]
        del node.attribute[:]
        for n in dict.fromkeys(rest):
            self.count(sid, n)
            self._drop_read(sid, n)
        self.changed = True

    def set_output(self, nid: int, index: int, name: str) -> None:
        """Make node ``nid`` produce ``name`` (a tensor whose previous producer this round deletes)."""
        node = self._edit(nid)
        sid = self.g.nodes[nid].scope
        old = node.output[index]
        node.output[index] = name
        self._gone.setdefault(sid, set()).add(old)
        self._made.add((sid, name))
        self.changed = True

    def _late_reader(self, sid: int, name: str, reader: "int | _NewNode") -> None:
        late = self._late.get((sid, name))
        if late is None:
            self._late[sid, name] = [reader]
        else:
            late.append(reader)

    def replace_uses(self, sid: int, old: str, new: str, *, forward: bool = True) -> list[int]:
        """Rewire every direct reader of ``old`` in ``sid`` to ``new``: the index's readers and,
        with ``forward``, those an earlier edit of the round gave it (``rounds.Claims``: a rewrite
        may rewire the reader of a tensor that an earlier rewrite deleted and replaced; both
        renames keep the value, so the two compose). Returns the rewired original nodes."""
        done: list[int] = []
        for r in list(self.g.scopes[sid].consumers.get(old, ())):
            self._rename_input(r, old, new, done)
        late = self._late.get((sid, old)) if forward else None
        if late:
            for reader in list(late):
                if isinstance(reader, int):
                    self._rename_input(reader, old, new, done)
                elif old in reader.proto.input:
                    self._rename_new_input(reader, old, new)
        return done

    def _rename_input(self, nid: int, old: str, new: str, done: list[int]) -> None:
        """Read ``new`` where original node ``nid`` (unless deleted) reads ``old``."""
        if nid in self.deleted or old not in self.current_inputs(nid):  # type: ignore[operator]
            return
        for i, n in enumerate(list(self.current_inputs(nid))):  # type: ignore[call-overload]
            if n == old:
                self.set_input(nid, i, new)
        done.append(nid)

    def _rename_new_input(self, entry: "_NewNode", old: str, new: str) -> None:
        """Read ``new`` where created node ``entry`` reads ``old``."""
        node = entry.proto
        for i, n in enumerate(list(node.input)):
            if n == old:
                self._set_input_of(entry.sid, node, i, new, entry)

    def delete_node(self, nid: int, *, dead: bool = False) -> None:
        if nid in self.deleted:
            return
        info = self.g.nodes[nid]
        if info.subscopes:  # never: rules and the sweep only delete nodes without bodies
            raise AssertionError(f"refusing to delete {self.ctx.display(nid)}: it owns subgraphs")
        sid = info.scope
        # (``current_inputs`` and ``current_outputs`` written out: the sweep deletes most nodes)
        edited = nid in self._modified
        proto = info.proto if edited else None
        ins = proto.input if proto is not None else info.inputs
        if dead:
            self.dead_count += 1
            if self.explain:
                self.dead.append(self.ctx.display(nid))  # now: after the compaction names move
        self.deleted.add(nid)
        # in input order (not a set): the sweep then visits and logs in the same order every run
        if len(ins) == 1:
            if ins[0]:
                self._drop_read(sid, ins[0])
        else:
            for n in dict.fromkeys(ins):
                if n:
                    self._drop_read(sid, n)
        gone = self._gone.get(sid)
        if gone is None:
            gone = self._gone[sid] = set()
        for o in (proto.output if proto is not None else info.outputs):
            if o:
                gone.add(o)
        self.changed = True

    def new_node(self, sid: int, anchor: int, op_type: str, inputs: list[str], outputs: list[str],
                 name: str = "", **attrs: Any) -> onnx.NodeProto:
        """Create a node placed right before original node ``anchor`` of scope ``sid``."""
        body = self.g.scopes[sid].proto
        node = onnx.helper.make_node(op_type, inputs, outputs, name=name or None, **attrs)
        body.node.append(node)  # a copy; the entry in the list is the one to keep
        index = len(body.node) - 1
        entry: onnx.NodeProto = body.node[index]
        made = _NewNode(sid, entry, anchor, len(self._new), index)
        self._new.append(made)
        for n in dict.fromkeys(inputs):
            if n:
                self._add_read(sid, n)
                self._late_reader(sid, n, made)
        for o in outputs:
            if o:
                self._made.add((sid, o))
        self.changed = True
        return entry

    def replace_node(self, nid: int, op_type: str, inputs: list[str], suffix: str,
                     **attrs: object) -> onnx.NodeProto:
        """Put a new ``op_type`` node with the same outputs in place of ``nid``; the new node's name
        is derived from the old one (an unnamed node stays unnamed)."""
        info = self.g.nodes[nid]
        old_name = info.peek().name
        name = self.names.fresh(self.g, old_name, suffix) if old_name else ""
        entry = self.new_node(info.scope, nid, op_type, inputs, list(self.current_outputs(nid)), name,  # type: ignore[call-overload]
                              **attrs)
        self.delete_node(nid)
        return entry

    def set_axes(self, nid: int, axes: tuple[int, ...] | list[int]) -> None:
        """Write normalised ``axes`` in the form of the node's opset: the ``axes`` attribute below
        13, input 2 from 13 on (an int64 initializer, reused when an identical one exists)."""
        axes = [int(a) for a in axes]
        if not axes:
            raise AssertionError("empty axes would mean 'every 1-dim' on a Squeeze")
        info = self.g.nodes[nid]
        node = self._edit(nid)
        if info.since_version is not None and info.since_version >= AXES_INPUT_SINCE:
            base = node.name or node.output[0]
            name = self.int64_const(info.scope, axes, base, "axes", nid)
            if len(node.input) >= 2:
                self.set_input(nid, 1, name)
            else:
                self.append_input(nid, name)
            return
        for a in node.attribute:
            if a.name == "axes":
                del a.ints[:]
                a.ints.extend(axes)
                a.type = onnx.AttributeProto.INTS
                break
        else:
            node.attribute.append(onnx.helper.make_attribute("axes", axes))
        self.changed = True

    # -- tensors ---------------------------------------------------------------------------------
    def forget_value_info(self, sid: int, name: str) -> None:
        """Drop the value_info of ``name``, a tensor whose value a repair changes (``lint --fix``):
        it described the shape of the broken node's output (inference works out the new one)."""
        self._stale_info.setdefault(sid, set()).add(name)
        self.changed = True

    def can_add_initializers(self, sid: int) -> bool:
        """Graph bodies take initializers; functions do not, and below IR 4 every initializer
        would also have to be a graph input."""
        return self.g.scopes[sid].kind == "graph" and self.ctx.model.ir_version >= 4

    def add_initializer(self, sid: int, tensor: TensorProto) -> TensorProto:
        body = self.g.scopes[sid].proto
        body.initializer.append(tensor)  # graph scopes only
        entry: TensorProto = body.initializer[len(body.initializer) - 1]
        self._made.add((sid, tensor.name))
        self._added_inits.add((sid, tensor.name))
        self.changed = True
        return entry

    def retarget_initializer(self, sid: int, tensor: TensorProto, name: str, dims: list[int]) -> None:
        """Rename an initializer of ``sid`` and give it new dims, keeping its bytes (or its external
        data reference) as they are. Its readers must already be rewired or deleted."""
        old = tensor.name
        tensor.name = name
        del tensor.dims[:]
        tensor.dims.extend(dims)
        self._gone.setdefault(sid, set()).add(old)
        self._made.add((sid, name))
        index = self._int_index.get(sid)
        if index is not None:
            for k, v in list(index.items()):
                if v == old:
                    del index[k]
        self.changed = True

    def added_initializer(self, sid: int, name: str) -> bool:
        """Whether a rewrite of this round made ``name`` an initializer of ``sid`` (in place of the
        node that produced it, which the round's index still names as its producer)."""
        return (sid, name) in self._added_inits

    def remove_initializer(self, sid: int, name: str) -> None:
        self._dropped_inits.setdefault(sid, set()).add(name)
        self._gone.setdefault(sid, set()).add(name)
        self.removed_initializers.append((sid, name))
        index = self._int_index.get(sid)
        if index is not None:
            for k, v in list(index.items()):
                if v == name:
                    del index[k]
        self.changed = True

    def materialize(self, sid: int, tensor: TensorProto, anchor: int, base: str) -> None:
        """Make ``tensor`` (named) available in ``sid``: an initializer where the scope takes them,
        else a Constant node right before ``anchor``."""
        if self.can_add_initializers(sid):
            self.add_initializer(sid, tensor)
        else:
            self.new_node(sid, anchor, "Constant", [], [tensor.name], self.names.fresh(self.g, base, "const"),
                          value=tensor)

    def int64_const(self, sid: int, values: list[int], base: str, suffix: str, anchor: int) -> str:
        """The name of a 1-D int64 constant holding ``values`` in scope ``sid``: an identical
        initializer of the scope when there is one, else a new one (or a Constant node in a
        function body)."""
        vals = tuple(int(v) for v in values)
        if self.can_add_initializers(sid):
            index = self._ints(sid)
            name = index.get(vals)
            if name is None:
                name = self.names.fresh(self.g, base, suffix)
                self.add_initializer(sid, int64_tensor(vals, name))
                index[vals] = name
            return name
        name = self.names.fresh(self.g, base, suffix)
        tensor = int64_tensor(vals, name)
        self.new_node(sid, anchor, "Constant", [], [name], self.names.fresh(self.g, name, "const"), value=tensor)
        return name

    def _ints(self, sid: int) -> dict[tuple[int, ...], str]:
        index = self._int_index.get(sid)
        if index is None:
            index = {}
            overridable = self.ctx.overridable
            for name, t in self.g.scopes[sid].initializers.items():
                if (t.data_type != TensorProto.INT64 or len(t.dims) != 1 or t.dims[0] > _REUSE_MAX_ELEMS
                        or t.data_location == TensorProto.EXTERNAL or (sid, name) in overridable
                        or t.name != name or self.is_gone(sid, name)):
                    continue
                try:
                    vals = tuple(int(v) for v in onnx.numpy_helper.to_array(t).reshape(-1).tolist())
                except Exception:  # a malformed tensor is simply not reused
                    continue
                index.setdefault(vals, name)
            self._int_index[sid] = index
        return index

    # -- end of round ----------------------------------------------------------------------------
    def finish(self) -> None:
        """Check that nothing read is left without a producer, and write the node, initializer and
        value_info lists back (after the round's rewrites and its sweep)."""
        self._check_producers()
        self._compact()

    def _check_producers(self) -> None:
        """A deleted node's outputs must be unread or produced by something else now: the one
        mistake that would make the output model invalid, caught before it is written."""
        nodes, scopes = self.g.nodes, self.g.scopes
        counts, made = self._counts, self._made
        for nid in self.deleted:
            info = nodes[nid]
            sid = info.scope
            for o in self.current_outputs(nid):  # type: ignore[attr-defined]
                if not o or (sid, o) in made:
                    continue
                c = counts.get((sid, o))
                # No count: no edit touched a read of it, so the index's readers still read it.
                read = (bool(scopes[sid].consumers.get(o)) or o in self.ctx.outputs(sid)) if c is None \
                    else (c > 0 or self.needed(sid, o))
                if read:
                    raise AssertionError(f"rewrite left '{o}' without a producer in {scopes[sid].path}")

    def _compact(self) -> None:
        g = self.g
        new_by_scope: dict[int, list[_NewNode]] = {}
        for n in self._new:
            new_by_scope.setdefault(n.sid, []).append(n)
        if len(g.scopes) == 1:
            deleted_in = {0} if self.deleted else set()
        else:
            nodes = g.nodes
            deleted_in = {nodes[nid].scope for nid in self.deleted}
        for scope in g.scopes:
            sid = scope.id
            reorder = not scope.sorted_in_file and self.changed  # RELIABILITY row 19: emit sorted
            if sid in new_by_scope or sid in deleted_in or reorder:
                self._compact_nodes(sid, new_by_scope.get(sid, []))
            body = scope.proto
            dropped = self._dropped_inits.get(sid)
            if dropped and isinstance(body, onnx.GraphProto):
                _drop_entries(body.initializer, dropped)
            if not getattr(body, "value_info", None):
                continue  # (no value_info to drop: most large exports have none)
            gone = {n for n in self._gone.get(sid, ()) if (sid, n) not in self._made}
            gone |= self._stale_info.get(sid, set())
            if gone:
                _drop_entries(body.value_info, gone)

    def _compact_nodes(self, sid: int, new: list[_NewNode]) -> None:
        """Reorder the scope's node list once: kept nodes in (topological) order, new nodes right
        before their anchors, deleted nodes at the end, then cut that tail.

        The sort key is computed per *position* (original nodes sit at their index, new ones
        after them), because most entries have no Python wrapper yet and creating one per node
        just to look it up would cost memory. Sorting calls the key on the entries in list order;
        the entries whose wrapper we hold (every edited or created node) check that it does."""
        scope = self.g.scopes[sid]
        nodes = self.g.nodes
        order = scope.order if not scope.sorted_in_file else scope.nodes
        deleted = self.deleted
        base = scope.nodes[0] if scope.nodes else 0
        n_orig = len(scope.nodes)
        keys: list[tuple[int, int, int]] = [(0, 0, 0)] * (n_orig + len(new))
        end = len(order) + 1
        n_deleted = 0
        position: dict[int, int] = {}
        for k, nid in enumerate(order):
            position[nid] = k
            if nid in deleted:
                keys[nid - base] = (end, 0, 0)
                n_deleted += 1
            else:
                keys[nid - base] = (k, 0, 0)
        held: dict[int, onnx.NodeProto] = {}
        for nid in self._modified:
            if nodes[nid].scope == sid:
                held[nid - base] = nodes[nid].proto
        for n in new:
            keys[n.index] = (position[n.anchor], -1, n.seq)
            held[n.index] = n.proto
        field_ = scope.proto.node
        if len(field_) != len(keys):
            raise AssertionError(f"node list of {scope.path} changed behind the editor's back")
        counter = iter(range(len(keys)))

        def key(entry: onnx.NodeProto) -> tuple[int, int, int]:
            i = next(counter)
            w = held.get(i)
            if w is not None and w is not entry:
                raise AssertionError("protobuf sorted the node list in an unexpected order")
            return keys[i]

        field_.sort(key=key)
        del field_[len(field_) - n_deleted:]


def _drop_entries(entries: Any, names: set[str]) -> None:
    """Remove the entries of a repeated field of named messages whose name is in ``names``.

    ``entries`` is a protobuf repeated message field (protobuf ships no type stubs here)."""
    n_drop = sum(1 for e in entries if e.name in names)
    if not n_drop:
        return
    entries.sort(key=lambda e: e.name in names)  # stable
    del entries[len(entries) - n_drop:]
