"""What a node must look like for onnxruntime to load it: the signature of every operator version
onnx defines (how many inputs and outputs, which attributes of which type, which element types
each input takes), and the newest opset of every domain.

onnxruntime checks every node against onnx's schema when it creates a session (the node checks of
``onnx.checker``, then the type constraints), so these are the facts behind the load-time rules
(SF011-SF013). They come from the table shapeflow ships (``_schema_sigs.py``, made by
``python -m shapeflow.schema_table``) when the installed onnx is the release it was made from, and
from onnx's registry otherwise; reading the table imports neither onnx nor numpy.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping, Sequence

from ._onnx import onnx, onnx_dist_version_is

SINGLE, OPTIONAL, VARIADIC, VARIADIC_MIXED = 0, 1, 2, 3

# Every element type number a TensorProto may carry (0, UNDEFINED, is not a type).
DTYPES: frozenset[int] = frozenset(v for v in onnx.TensorProto.DataType.values() if v)


def type_name(dtype: int) -> str:
    """``tensor(float)``, as onnx and onnxruntime write types in their messages."""
    try:
        return f"tensor({onnx.TensorProto.DataType.Name(dtype).lower()})"
    except ValueError:
        return f"tensor(type {dtype})"


@dataclass(frozen=True)
class Formal:
    """A formal input or output: its type (a constraint's name, or a type) and how many it takes."""

    type_str: str
    option: int  # SINGLE, OPTIONAL, VARIADIC (one type for all), VARIADIC_MIXED


@dataclass(frozen=True)
class Signature:
    domain: str
    op_type: str
    since: int
    min_inputs: int
    max_inputs: int
    min_outputs: int
    max_outputs: int
    deprecated: bool
    unchecked_attributes: bool  # onnx lets the op carry attributes it does not list
    inputs: tuple[Formal, ...]
    outputs: tuple[Formal, ...]
    attributes: Mapping[str, tuple[int, bool]]  # name -> (AttributeProto type, required)
    constraints: Mapping[str, tuple[int, bool]]  # name -> (mask of tensor element types, other types too)
    required: tuple[tuple[str, int], ...] = ()  # (name, type) of the required attributes
    # The formal inputs whose types can be refused: those of a type parameter that does not take
    # every tensor type or that binds other inputs too (empty: Shape, Identity, Squeeze's data)
    typed: frozenset[int] = frozenset()

    def typed_positions(self, n: int) -> tuple[int, ...]:
        """Which of a node's ``n`` inputs ``input_type_error`` can refuse."""
        last = len(self.inputs) - 1
        return tuple(k for k in range(n) if min(k, last) in self.typed)

    @property
    def label(self) -> str:
        return f"{self.op_type}-{self.since}"

    def formal_input(self, k: int) -> Formal | None:
        """The formal parameter input ``k`` binds to: its own, or the variadic last one."""
        if k < len(self.inputs):
            return self.inputs[k]
        if self.inputs and self.inputs[-1].option >= VARIADIC:
            return self.inputs[-1]
        return None

    def allowed(self, type_str: str) -> tuple[int, bool]:
        """(mask of the tensor element types, whether other types are allowed) of a formal type."""
        found = self.constraints.get(type_str)
        if found is not None:
            return found
        if type_str.startswith("tensor(") and type_str.endswith(")"):
            name = type_str[len("tensor("):-1].upper()
            try:
                return 1 << onnx.TensorProto.DataType.Value(name), False
            except ValueError:
                pass
        return 0, True

    def allowed_names(self, type_str: str) -> list[str]:
        mask, other = self.allowed(type_str)
        names = [type_name(t) for t in sorted(DTYPES) if (mask >> t) & 1]
        return names + (["non-tensor types"] if other else [])


_ALL_TYPES = sum(1 << t for t in DTYPES)


def _typed(ins: Sequence[Sequence[Any]], constraints: Mapping[str, tuple[int, bool]]) -> frozenset[int]:
    params = [t for t, _ in ins]
    return frozenset(k for k, (t, option) in enumerate(ins)
                     if params.count(t) > 1 or option == VARIADIC
                     or constraints.get(t, (0, True))[0] & _ALL_TYPES != _ALL_TYPES)


def _decode(key: tuple[str, str, int], row: tuple[Any, ...]) -> Signature:
    min_in, max_in, min_out, max_out, flags, ins, outs, attrs, constraints = row
    allowed = {name: (mask, other) for name, mask, other in constraints}
    return Signature(
        key[0], key[1], key[2], min_in, max_in, min_out, max_out, bool(flags & 1), bool(flags & 2),
        tuple(Formal(t, o) for t, o in ins), tuple(Formal(t, o) for t, o in outs),
        {name: (kind, required) for name, kind, required in attrs}, allowed,
        tuple((name, kind) for name, kind, required in attrs if required), _typed(ins, allowed),
    )


@lru_cache(maxsize=1)
def _table() -> tuple[dict[tuple[str, str, int], tuple[Any, ...]], dict[str, int]] | None:
    import json

    from . import _schema_sigs

    if not onnx_dist_version_is(_schema_sigs.ONNX_VERSION):
        return None
    rows = {}
    for key, row in json.loads(_schema_sigs.SIGS).items():
        domain, op, since = key.split("|")
        rows[(domain, op, int(since))] = row
    return rows, _schema_sigs.DOMAIN_MAX


@lru_cache(maxsize=4096)
def signature(domain: str, op_type: str, since: int) -> Signature | None:
    """The signature of ``op_type`` version ``since`` (a since_version, as ``opsets.since_version``
    resolves it) of ``domain`` ("" for ai.onnx), or None when onnx does not define it."""
    key = (domain, op_type, since)
    table = _table()
    if table is not None:
        row = table[0].get(key)
        return None if row is None else _decode(key, row)
    from .schema_table import signature_row  # another onnx release: ask its registry

    try:
        schema = onnx.defs.get_schema(op_type, since, domain)
    except Exception:
        return None
    if int(schema.since_version) != since:
        return None
    return _decode(key, signature_row(schema))


@lru_cache(maxsize=1)
def deprecated() -> frozenset[tuple[str, str, int]]:
    """(domain, op_type, since_version) of every operator version onnx marks deprecated."""
    table = _table()
    if table is not None:
        return frozenset(key for key, row in table[0].items() if row[4] & 1)
    return frozenset((s.domain, s.name, int(s.since_version)) for s in onnx.defs.get_all_schemas_with_history()
                     if s.deprecated)


@lru_cache(maxsize=1)
def domain_max() -> dict[str, int]:
    """The newest opset of every domain onnx defines ("" for ai.onnx)."""
    table = _table()
    if table is not None:
        return dict(table[1])
    return {d: int(hi) for d, (_, hi) in onnx.defs.C.schema_version_map().items()}


def input_type_error(sig: Signature, dtypes: Sequence[int]) -> tuple[int, str] | None:
    """(input index, why) for the first input whose element type ``sig`` refuses, the way
    onnxruntime checks them when it loads a model: each type must be one its formal parameter
    allows, and the inputs of one type parameter must all have the same type (except in a
    variadic list of mixed types, such as a Loop's carried values). ``dtypes`` holds 0 where the
    type is not known (or the input absent): such inputs are not judged."""
    bound: dict[str, tuple[int, int]] = {}
    for k, dtype in enumerate(dtypes):
        if not dtype:
            continue
        formal = sig.formal_input(k)
        if formal is None:
            return None  # more inputs than the op has: an arity problem (SF012), not a type one
        mask, _ = sig.allowed(formal.type_str)
        if not (mask >> dtype) & 1:
            allowed = ", ".join(sig.allowed_names(formal.type_str)) or "no tensor type"
            return k, (f"input {k} is {type_name(dtype)}, which {sig.label} does not take there "
                       f"({formal.type_str}: {allowed})")
        if formal.option == VARIADIC_MIXED:
            continue
        first = bound.get(formal.type_str)
        if first is None:
            bound[formal.type_str] = (k, dtype)
        elif first[1] != dtype:
            return k, (f"input {k} is {type_name(dtype)} but input {first[0]} is {type_name(first[1])}: "
                       f"{sig.label} binds both to one type {formal.type_str}")
    return None
