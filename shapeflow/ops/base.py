"""What a shape rule sees of one node, and the registry that maps ops to rules.

A rule is a function ``rule(call: OpCall) -> list[TensorInfo | None]``: one entry per node output
(None = nothing known). Rules compute and stay quiet: they never raise on a bad model, they return
unknown. Facts that lint rules judge (the axes of a Squeeze, say) are recorded with ``call.record``;
inputs a rule finds inconsistent are handed to onnx's verdict with ``call.doubt``. Dims are decided
in ``call.domain`` (the run's symbolic domain, passed to the dims algebra); a rule that proves a fact
about a symbol keeps the narrower domain with ``call.learn``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable, Sequence

from .._onnx import onnx
from ..dims import Dim, Domain, Shape
from ..tensorinfo import MAX_VALUE_ELEMS, TensorInfo

if TYPE_CHECKING:
    from ..graph import NodeInfo
    from ..inference import Inference

TensorProto = onnx.TensorProto

Rule = Callable[["OpCall"], Sequence["TensorInfo | None"]]

INT_TYPES = frozenset(
    {
        TensorProto.INT64, TensorProto.INT32, TensorProto.INT16, TensorProto.INT8,
        TensorProto.UINT64, TensorProto.UINT32, TensorProto.UINT16, TensorProto.UINT8,
        TensorProto.BOOL,
    }
)


class OpCall:
    """One node being inferred: its proto, resolved version, input infos and attribute access.

    Built once per node of the model, so it is kept cheap: the NodeProto is only fetched when a
    rule asks for it (``node``, ``attrs``), and not at all for a node the index saw without
    attributes; names and the op type come from the graph index (``info``).

    ``effects`` says whether the rule did more than compute its outputs from the node's inputs,
    attributes and the domain: recorded a fact, doubted, learned or equated dims (what those
    depend on, the node itself, is not in inference's memo of answers per node: see
    ``inference._Runner.run_scope``)."""

    __slots__ = ("_node", "since", "inputs", "nid", "scope", "engine", "_attrs", "info", "effects")

    def __init__(self, node: onnx.NodeProto | None, since: int, inputs: list[TensorInfo | None],
                 nid: int, scope: int, engine: "Inference", info: "NodeInfo | None" = None,
                 attrs: dict[str, onnx.AttributeProto] | None = None) -> None:
        self._node = node
        self.since = since
        self.inputs = inputs
        self.nid = nid
        self.scope = scope
        self.engine = engine
        self._attrs = attrs  # (the node's attributes by name, when the caller has read them already)
        self.info = info if info is not None else engine.graph.nodes[nid]
        self.effects = False

    @property
    def node(self) -> onnx.NodeProto:
        n = self._node
        if n is None:
            n = self._node = self.info.peek()
        return n

    @property
    def op_type(self) -> str:
        return self.info.op_type

    # -- inputs ------------------------------------------------------------------------------------
    def input(self, i: int) -> TensorInfo | None:
        """Input ``i``, or None when it is absent (optional input omitted or beyond the list)."""
        return self.inputs[i] if i < len(self.inputs) else None

    def has_input(self, i: int) -> bool:
        names = self.info.inputs
        return i < len(names) and bool(names[i])

    def shape(self, i: int) -> Shape:
        t = self.input(i)
        return None if t is None else t.shape

    def dtype(self, i: int) -> int:
        t = self.input(i)
        return 0 if t is None else t.dtype

    def value(self, i: int) -> tuple[Dim, ...] | None:
        t = self.input(i)
        return None if t is None else t.value

    def int_values(self, i: int) -> list[int] | None:
        """Input ``i``'s values when every element is a known integer."""
        v = self.value(i)
        if v is None or not all(type(x) is int for x in v):
            return None
        return list(v)  # type: ignore[arg-type]

    # -- attributes --------------------------------------------------------------------------------
    @property
    def input_names(self) -> tuple[str, ...]:
        return self.info.inputs

    @property
    def output_names(self) -> tuple[str, ...]:
        return self.info.outputs

    @property
    def attrs(self) -> dict[str, onnx.AttributeProto]:
        a = self._attrs
        if a is None:
            if self.info.has_attrs:
                attrs = self.node.attribute[:]  # (a slice: one call, cheaper than iterating the field)
                a = {x.name: x for x in attrs} if attrs else {}
            else:
                a = {}
            self._attrs = a
        return a

    def has_attr(self, name: str) -> bool:
        return name in self.attrs

    def attr_int(self, name: str, default: int | None = None) -> int | None:
        a = self.attrs.get(name)
        return int(a.i) if a is not None and a.type == onnx.AttributeProto.INT else default

    def attr_float(self, name: str, default: float | None = None) -> float | None:
        a = self.attrs.get(name)
        return float(a.f) if a is not None and a.type == onnx.AttributeProto.FLOAT else default

    def attr_ints(self, name: str) -> list[int] | None:
        a = self.attrs.get(name)
        if a is None or a.type != onnx.AttributeProto.INTS:
            return None
        return [int(x) for x in a.ints]

    def attr_tensor(self, name: str) -> onnx.TensorProto | None:
        a = self.attrs.get(name)
        return a.t if a is not None and a.type == onnx.AttributeProto.TENSOR else None

    # -- the domain ------------------------------------------------------------------------------------
    @property
    def domain(self) -> Domain:
        """The domain the run decides dims in so far (the user's statements and the facts proved
        before this node): the value a rule passes to the dims algebra."""
        return self.engine.domain

    def learn(self, domain: Domain) -> None:
        """Keep ``domain``: this node proved facts (``domain`` is the run's, narrowed by
        ``Domain.at_least``, ``require_at_least``, ``prove_broadcast``)."""
        self.effects = True
        self.engine.domain = domain

    # -- results -----------------------------------------------------------------------------------
    def record(self, fact: object) -> None:
        """Keep a fact for the lint rules (see infer.AxisNode)."""
        self.effects = True
        self.engine.record(self, fact)

    def subgraph_outputs(self, attr: str) -> list[TensorInfo | None] | None:
        self.effects = True  # (the node's own bodies)
        return self.engine.subgraph_outputs(self.nid, attr)

    def same_dims(self, *positions: tuple[int, int]) -> None:
        """The node's kernel refuses to run unless the dims at ``positions`` ((input, axis); a
        negative axis counts from the end) are all equal: in the main graph, where a node always
        runs, an unknown one among them is the known one (``Inference.equate``)."""
        self.effects = True
        if self.scope != 0:
            return
        known: Dim = None
        blank: list[tuple[int, int]] = []
        for i, axis in positions:
            t = self.input(i)
            s = None if t is None else t.shape
            if s is None or not -len(s) <= axis < len(s):
                continue
            d = s[axis]
            if d is None:
                blank.append((i, axis % len(s)))
            elif known is None:
                known = d
        if known is not None:
            for i, axis in blank:
                self.engine.equate(self, i, axis, known)

    def doubt(self) -> None:
        """The rule met inputs it finds inconsistent (an axis out of range, two static dims that
        cannot meet): let onnx's shape inference of the node, which onnxruntime runs when it loads
        the model, say whether the model is refused (``Inference.load_errors``, SF015)."""
        self.effects = True
        self.engine.doubt(self)


def unknown(n: int) -> list[TensorInfo | None]:
    return [None] * n


def same_as_input(call: OpCall) -> list[TensorInfo | None]:
    """Elementwise unary ops: output has the input's type and shape (values are not tracked)."""
    t = call.input(0)
    out = None if t is None else TensorInfo(t.dtype, t.shape)
    return [out]


def numel(shape: Shape) -> int | None:
    if shape is None:
        return None
    n = 1
    for d in shape:
        if type(d) is not int:
            return None
        n *= d
    return n


def make_value(dtype: int, shape: tuple[Dim, ...], values: Iterable[Dim]) -> TensorInfo:
    vals = tuple(values)
    return TensorInfo(dtype, shape, vals if len(vals) <= MAX_VALUE_ELEMS else None)


class Registry:
    """Shape rules keyed by (domain, op_type). Rules branch on ``call.since`` themselves, which
    keeps every version of one op in one place."""

    def __init__(self) -> None:
        self._rules: dict[tuple[str, str], Rule] = {}

    def register(self, *op_types: str, domain: str = "") -> Callable[[Rule], Rule]:
        def deco(fn: Rule) -> Rule:
            for op in op_types:
                self._rules[(domain, op)] = fn
            return fn

        return deco

    def get(self, domain: str, op_type: str) -> Rule | None:
        return self._rules.get((domain, op_type))

    def __contains__(self, key: tuple[str, str]) -> bool:
        return key in self._rules


REGISTRY = Registry()
register = REGISTRY.register
