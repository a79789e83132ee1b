from __future__ import annotations

from typing import Any, Iterator

from .._onnx import onnx
from ..graph import GRAPH_INPUT, INITIALIZER
from ..signatures import DTYPES, input_type_error, type_name
from .base import Finding, LintContext, Rule
from .loadtime import AXIS_OPS, live_scopes, node_signatures


# Whether SF013 judges the nodes of one memo key once (tests/test_fast_paths.py compares the
# findings with and without it).
MEMO = True
_UNSEEN: Any = object()


class TypeMismatch(Rule):
    """Flags element types onnxruntime refuses, at a node's inputs or in a declared type.

    ## What it does
    For every node of a standard domain, takes the element types of its inputs (declared graph
    inputs, initializers, and what inference derived for the others) and checks them against the
    type constraints of the operator version, as onnxruntime does when it loads the model: each
    input must have a type its formal parameter allows, and inputs that share a type parameter
    (``A`` and ``B`` of Add, both ``T``) must have the same type. It also compares each declared
    graph output and ``value_info`` type with the type of the node that produces the tensor. An
    input whose type is not known is not judged.

    ## Why is this bad?
    onnxruntime refuses to create a session ("Type parameter (T) of Optype (Add) bound to
    different types", "Type 'tensor(string)' of input parameter ... is invalid", "Type
    (tensor(int64)) of output arg (y) ... does not match expected type (tensor(float))"). Such a
    model usually comes from an edit that changed one tensor's type and not its neighbours'.

    ## Example
    ``y = Add(a: int64, b: float)``; ``y = Relu(x: string)``; a Loop whose trip count is a float;
    ``y = Relu(x: float)`` declared as an int64 graph output.

    ## Fix
    Insert a ``Cast`` where types meet, or correct the declared type of the graph input, output or
    ``value_info`` entry.
    """

    code = "SF013"

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        g = ctx.graph
        inference = ctx.inference
        live = live_scopes(ctx)
        sigs = node_signatures(ctx)
        tables = inference.tensors
        lookup = inference.lookup
        refused: set[int] = set()
        # Verdicts per (signature, input types): a model has few distinct ones.
        verdicts: dict[tuple[int, tuple[int, ...]], tuple[int, str] | None] = {}
        # ... and per (signature, key object of inference's memo): nodes answered from one memo
        # entry have the same input types (``Inference.memo_keys``), which need no reading again.
        keys = inference.memo_keys if MEMO else {}
        by_key: dict[tuple[int, int], tuple[int, str] | None] = {}
        # Which signatures to check at all, decided once each: a Squeeze's or Unsqueeze's data takes
        # any type (its axes are SF109's), and so do the inputs of Shape, Identity...
        wanted: dict[int, bool] = {}
        nodes = g.nodes
        for nid, sig in enumerate(sigs):
            if sig is None:
                continue
            check = wanted.get(id(sig))
            if check is None:
                check = wanted[id(sig)] = (bool(sig.typed) and not sig.deprecated
                                           and not (sig.domain == "" and sig.op_type in AXIS_OPS))
            if not check:
                continue
            info = nodes[nid]
            scope = info.scope
            if not live[scope]:
                continue
            key_object = keys.get(nid)
            node_key = (id(sig), id(key_object))
            if key_object is None or (problem := by_key.get(node_key, _UNSEEN)) is _UNSEEN:
                table = tables[scope]
                dtypes = []
                for name in info.inputs:
                    t = table.get(name) if name in table else (lookup(scope, name) if name else None)
                    dtypes.append(t.dtype if t is not None else 0)
                key = (id(sig), tuple(dtypes))
                try:
                    problem = verdicts[key]
                except KeyError:
                    known = [d if d in DTYPES else 0 for d in dtypes]
                    problem = verdicts[key] = input_type_error(sig, known) if any(known) else None
                if key_object is not None:
                    by_key[node_key] = problem
            if problem is not None:
                refused.add(nid)
                yield Finding(ctx.location_of(nid), problem[1],
                              "Cast the input to a type the operator takes, or correct its declared type")
        for nid, (why, caller) in sorted(inference.call_type_errors.items()):
            if nid not in refused and live[g.nodes[nid].scope]:
                call = g.nodes[caller]
                path = g.scopes[call.scope].path
                site = f"node '{g.display(caller)}' ({call.op_type})" + ("" if path == "main" else f" in {path}")
                yield Finding(ctx.location_of(nid), f"{why} (at the call from {site})",
                              "Cast the call's input to a type the function's operators take")
        yield from self._declared(ctx, live, refused)

    def _declared(self, ctx: LintContext, live: list[bool], refused: set[int]) -> Iterator[Finding]:
        """Declared types (graph outputs, value_info) against the producing node's."""
        g = ctx.graph
        for scope in g.scopes:
            body = scope.proto
            if not live[scope.id] or not isinstance(body, onnx.GraphProto):
                continue
            table = ctx.inference.tensors[scope.id]
            for what, infos in (("graph output", body.output), ("value_info", body.value_info)):
                for vi in infos:
                    if vi.type.WhichOneof("value") != "tensor_type":
                        continue
                    declared = vi.type.tensor_type.elem_type
                    t = table.get(vi.name)
                    producer = scope.producer.get(vi.name)
                    if (t is None or t.dtype not in DTYPES or declared not in DTYPES or declared == t.dtype
                            or producer is None or producer in (GRAPH_INPUT, INITIALIZER) or producer in refused):
                        continue
                    info = g.nodes[producer]
                    op = info.op_type if info.since_version is None else f"{info.op_type}-{info.since_version}"
                    yield Finding(ctx.location_of(producer),
                                  f"{what} '{vi.name}' is declared {type_name(declared)}, but "
                                  f"{op} makes it {type_name(t.dtype)}",
                                  f"declare '{vi.name}' as {type_name(t.dtype)}, or Cast it")
