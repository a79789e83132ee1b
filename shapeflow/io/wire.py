"""Reading the protobuf wire format ourselves: why a parse failed, and which string is not UTF-8.

Diagnostic only: these run after (or instead of) upb's parse, to turn its one error message into a
line that tells a foreign file from a truncated, too-deep or mis-encoded one.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from .._onnx import onnx
from .model import _q

# upb's default decode depth. Each level of If/Loop/Scan nesting costs three messages
# (Graph -> Node -> Attribute), which is where "about 31 levels" comes from.
_PROTOBUF_MAX_DEPTH = 100
# The wire scan that explains a parse failure is diagnostic only; cap its work.
_MAX_DIAGNOSE_FIELDS = 5_000_000


# --------------------------------------------------------------------------------------------
# Explaining a parse failure
# --------------------------------------------------------------------------------------------

_WIRE_OF_TYPE = {
    FieldDescriptor.TYPE_DOUBLE: 1, FieldDescriptor.TYPE_FLOAT: 5, FieldDescriptor.TYPE_INT64: 0,
    FieldDescriptor.TYPE_UINT64: 0, FieldDescriptor.TYPE_INT32: 0, FieldDescriptor.TYPE_FIXED64: 1,
    FieldDescriptor.TYPE_FIXED32: 5, FieldDescriptor.TYPE_BOOL: 0, FieldDescriptor.TYPE_STRING: 2,
    FieldDescriptor.TYPE_GROUP: 3, FieldDescriptor.TYPE_MESSAGE: 2, FieldDescriptor.TYPE_BYTES: 2,
    FieldDescriptor.TYPE_UINT32: 0, FieldDescriptor.TYPE_ENUM: 0, FieldDescriptor.TYPE_SFIXED32: 5,
    FieldDescriptor.TYPE_SFIXED64: 1, FieldDescriptor.TYPE_SINT32: 0, FieldDescriptor.TYPE_SINT64: 0,
}  # fmt: skip


class _Overrun(Exception):
    """The wire data ends (or its enclosing message ends) in the middle of a field."""


class _Malformed(Exception):
    """The wire data is not protobuf at all here (bad tag, bad wire type, bad varint)."""


def _read_varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise _Overrun
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise _Malformed("varint longer than 10 bytes")


def _skip_value(buf: bytes, pos: int, end: int, wire: int) -> tuple[int, int]:
    """Skip one field value; returns (value start, next position)."""
    if wire == 0:
        _, nxt = _read_varint(buf, pos, end)
        return pos, nxt
    if wire == 1:
        nxt = pos + 8
    elif wire == 5:
        nxt = pos + 4
    elif wire == 2:
        length, pos = _read_varint(buf, pos, end)
        nxt = pos + length
    else:
        raise _Malformed(f"wire type {wire}")
    if nxt > end:
        raise _Overrun
    return pos, nxt


def _wire_ok(fd: FieldDescriptor, wire: int) -> bool:
    expected = _WIRE_OF_TYPE.get(fd.type)
    if wire == expected:
        return True
    # repeated scalars may be packed into one length-delimited field
    return wire == 2 and fd.is_repeated and expected in (0, 1, 5)


def _explain_decode_failure(data: bytes, upb_message: str) -> str:
    """Turn a DecodeError into one useful line.

    upb only says "Wire format was corrupt", so we walk the wire format ourselves (iteratively,
    guided by the onnx descriptors) to tell a foreign file from a truncated or too-deep one.
    """
    if "MaxDepth" in upb_message:
        return "nesting too deep for protobuf (max ≈ 31 levels)"
    n = len(data)
    # top-level fields of ModelProto first: a truncation shows up there as a field that runs
    # past the end of the file
    model_desc = onnx.ModelProto.DESCRIPTOR
    pos = start = 0
    known_seen = 0
    field_name = ""
    children: list[tuple[int, int, Descriptor, int, str]] = []
    try:
        while pos < n:
            start = pos
            tag, pos = _read_varint(data, pos, n)
            number, wire = tag >> 3, tag & 7
            fd = model_desc.fields_by_number.get(number)
            if number == 0 or fd is None or not _wire_ok(fd, wire):
                where = f"at byte {start}: unexpected field {number} with wire type {wire}"
                if known_seen == 0:
                    return f"not an ONNX protobuf (parse failed {where})"
                return f"truncated or corrupt protobuf (parse failed {where})"
            # counted before its value is skipped: a file cut inside its first field still
            # starts like a model
            known_seen += 1
            field_name = fd.name
            vstart, pos = _skip_value(data, pos, n, wire)
            if fd.message_type is not None and wire == 2:
                children.append((vstart, pos, fd.message_type, 2, fd.name))
    except _Overrun:
        if known_seen == 0:
            return "not an ONNX protobuf (parse failed at byte 0)"
        return f"truncated or corrupt protobuf (file ends inside field '{field_name}' starting at byte {start})"
    except _Malformed as exc:
        if known_seen == 0:
            return f"not an ONNX protobuf (parse failed at byte {start}: {exc})"
        return f"truncated or corrupt protobuf (parse failed at byte {start}: {exc})"

    # every top-level field is complete: the damage (or the depth) is inside a sub-message
    stack = children[::-1]
    budget = _MAX_DIAGNOSE_FIELDS
    while stack:
        pos, end, desc, depth, path = stack.pop()
        if depth > _PROTOBUF_MAX_DEPTH:
            return "nesting too deep for protobuf (max ≈ 31 levels)"
        try:
            while pos < end:
                budget -= 1
                if budget < 0:
                    return "truncated or corrupt protobuf"
                start = pos
                tag, pos = _read_varint(data, pos, end)
                number, wire = tag >> 3, tag & 7
                if number == 0:
                    raise _Malformed("field number 0")
                vstart, pos = _skip_value(data, pos, end, wire)
                fd = desc.fields_by_number.get(number)
                if fd is not None and fd.message_type is not None and wire == 2:
                    stack.append((vstart, pos, fd.message_type, depth + 1, f"{path}.{fd.name}"))
        except _Overrun:
            return f"truncated or corrupt protobuf (a field inside {path} runs past its end)"
        except _Malformed as exc:
            return f"truncated or corrupt protobuf (bad data inside {path} at byte {start}: {exc})"
    return "truncated or corrupt protobuf"


# --------------------------------------------------------------------------------------------
# Strings that are not UTF-8
# --------------------------------------------------------------------------------------------

# onnx.proto is proto2, whose parser does not check string fields: upb hands one that is not
# UTF-8 over as bytes, and bytes break JSON output, the text tables and every comparison with a
# str further on. Such a model is rejected at load. The same schema as edition 2023 (which
# verifies UTF-8) makes the C parser check every string field: one more parse of the file, with
# no Python work per field. It runs before the real parse and its result is dropped at once, so
# peak memory stays one parsed copy. Only when it fails are the fields walked in Python, to name
# the one at fault.


@functools.cache
def _utf8_checking_model() -> type[Message] | None:
    """onnx.ModelProto as a message class whose parser rejects a string that is not UTF-8, or
    None when this protobuf cannot build it (then every non-ASCII file is walked in Python)."""
    try:
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

        file = descriptor_pb2.FileDescriptorProto()
        onnx.ModelProto.DESCRIPTOR.file.CopyToProto(file)
        file.syntax = "editions"
        file.edition = descriptor_pb2.EDITION_2023
        features = descriptor_pb2.FeatureSet
        file.options.features.utf8_validation = features.VERIFY
        # proto2's behaviour for the rest (it changes what is stored, never what parses)
        file.options.features.enum_type = features.CLOSED
        file.options.features.repeated_field_encoding = features.EXPANDED
        pending = list(file.message_type)
        while pending:
            msg = pending.pop()
            pending.extend(msg.nested_type)
            for f in msg.field:
                if f.label == f.LABEL_REQUIRED or f.type == f.TYPE_GROUP:
                    return None  # not in onnx.proto; would need more translation
                if f.options.HasField("packed"):  # proto2's option is a feature in editions
                    if f.options.packed:
                        f.options.features.repeated_field_encoding = features.PACKED
                    f.options.ClearField("packed")
        pool = descriptor_pool.DescriptorPool()
        pool.Add(file)
        found: type[Any] = message_factory.GetMessageClass(pool.FindMessageTypeByName(onnx.ModelProto.DESCRIPTOR.full_name))
        return found
    except Exception:  # an older protobuf without editions: fall back to the walk
        return None


_GRAPH_PARTS = {"input": "graph input", "output": "graph output", "value_info": "value_info",
                "initializer": "initializer", "sparse_initializer": "sparse initializer"}
_FIELDS_BY_TYPE: dict[Descriptor, list[tuple[str, bool, bool]]] = {}


def _string_and_message_fields(desc: Descriptor) -> list[tuple[str, bool, bool]]:
    """(name, is a string, is repeated) of the string and message fields of ``desc``."""
    fields = _FIELDS_BY_TYPE.get(desc)
    if fields is None:
        fields = _FIELDS_BY_TYPE[desc] = [
            (fd.name, fd.type == FieldDescriptor.TYPE_STRING, fd.is_repeated)
            for fd in desc.fields
            if fd.type == FieldDescriptor.TYPE_STRING or fd.message_type is not None
        ]
    return fields


def _non_utf8_problem(model: onnx.ModelProto, check: Any = None) -> str | None:
    """The first string field that is not UTF-8, named for a message, or None if there is none.

    e.g. "node #3 has a name that is not valid UTF-8", "graph input 'x': type.tensor_type.
    shape.dim[1].dim_param is not valid UTF-8". An explicit stack, not recursion: nesting depth
    comes from the file. ``check()`` is called every 4,096 messages (the time limit: a million
    nodes take half a minute to walk).
    """
    # (message, what it is reported as, field path from there, graph path, id of the node it is in)
    stack: list[tuple[Any, str, str, str, str]] = [(model, "the model", "", "main", "")]
    walked = 0
    while stack:
        msg, owner, path, where, node_id = stack.pop()
        children = []
        for name, is_string, repeated in _string_and_message_fields(msg.DESCRIPTOR):
            if repeated:
                values = getattr(msg, name)
            elif msg.HasField(name):
                values = (getattr(msg, name),)
            else:
                continue
            for i, value in enumerate(values):
                walked += 1
                if check is not None and not walked & 0xFFF:
                    check()
                sub = f"{path}{name}[{i}]" if repeated else f"{path}{name}"
                if is_string:
                    if not isinstance(value, str):
                        if sub == name:
                            return f"{owner} has {'an' if name[0] in 'aeiou' else 'a'} {name} that is not valid UTF-8"
                        return f"{owner}: {sub} is not valid UTF-8"
                    continue
                child: tuple[Any, str, str, str, str] = (value, owner, sub + ".", where, node_id)
                suffix = "" if where == "main" else f" in {where}"
                if isinstance(value, onnx.GraphProto):
                    if isinstance(msg, onnx.ModelProto):
                        child = (value, "the main graph", "", "main", "")
                    elif isinstance(msg, onnx.AttributeProto):
                        sub_where = f"{where}[{i}]" if repeated else where
                        child = (value, f"graph {sub_where}", "", sub_where, "")
                    else:
                        child = (value, f"graph {sub}", "", sub, "")
                elif isinstance(value, onnx.FunctionProto):
                    label = f"#{i}"
                    if isinstance(value.domain, str) and isinstance(value.name, str):
                        label = _q(f"{value.domain}::{value.name}")
                    child = (value, f"function {label}", "", f"function {label}", "")
                elif isinstance(value, onnx.NodeProto):
                    own_id = value.name if isinstance(value.name, str) and value.name else f"#{i}"
                    label = _q(own_id) if value.name == own_id else own_id
                    child = (value, f"node {label}{suffix}", "", where, own_id)
                elif isinstance(value, onnx.AttributeProto):
                    attr = value.name if isinstance(value.name, str) else f"attribute[{i}]"
                    # an attribute's "where" is the path its subgraphs get
                    child = (value, owner, sub + ".", f"{where}/{node_id}.{attr}", node_id)
                elif name in _GRAPH_PARTS and isinstance(msg, onnx.GraphProto):
                    tensor_name = value.values.name if isinstance(value, onnx.SparseTensorProto) else value.name
                    label = _q(tensor_name) if isinstance(tensor_name, str) and tensor_name else f"#{i}"
                    child = (value, f"{_GRAPH_PARTS[name]} {label}{suffix}", "", where, node_id)
                children.append(child)
        stack.extend(reversed(children))
    return None


# --------------------------------------------------------------------------------------------
# Streaming preflight: reject what cannot parse without reading it whole
# --------------------------------------------------------------------------------------------

# Files from this size on also get their top-level messages (the graph, the functions) walked
# field by field before the read: a valid header in front of a large block of garbage must not
# cost the garbage's size in memory either. Below it the read is cheap and the parse decides.
PREFLIGHT_DEEP_BYTES = 64 << 20
# Fields the preflight walks at most; past that it has seen enough structure to let the parse decide.
_PREFLIGHT_MAX_FIELDS = 2_000_000
_BLOCK = 1 << 20


class _FileView:
    """Bytes of a file descriptor by position, through one cached block (``os.pread``)."""

    def __init__(self, fd: int, size: int) -> None:
        self.fd = fd
        self.size = size
        self.start = 0
        self.block = b""

    def byte(self, pos: int) -> int:
        off = pos - self.start
        if not 0 <= off < len(self.block):
            self.start = pos
            self.block = os.pread(self.fd, _BLOCK, pos)
            if not self.block:
                raise _Overrun
            off = 0
        return self.block[off]

    def varint(self, pos: int, end: int) -> tuple[int, int]:
        result = 0
        shift = 0
        while True:
            if pos >= end:
                raise _Overrun
            b = self.byte(pos)
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result, pos
            shift += 7
            if shift >= 70:
                raise _Malformed("varint longer than 10 bytes")


class _Undecided(Exception):
    """The preflight cannot tell (groups, or its field budget spent): the parse decides."""


def preflight(fd: int, size: int) -> str | None:
    """Why the file open on ``fd`` cannot be an ONNX model, found by walking its wire format from
    disk in 1 MiB blocks, or None when it may be one (the parse decides).

    It rejects only what protobuf's parser rejects too (field number 0, wire types 6 and 7, a
    varint over 10 bytes, a field running past its end), in the words ``_explain_decode_failure``
    would use, so a file of zeros or a truncated download is refused without being read into
    memory. Large files get their top-level messages walked as well (``PREFLIGHT_DEEP_BYTES``).
    """
    view = _FileView(fd, size)
    budget = [_PREFLIGHT_MAX_FIELDS]
    model_desc = onnx.ModelProto.DESCRIPTOR
    children: list[tuple[int, int, Descriptor, str]] = []
    pos = start = 0
    known_seen = 0
    field_name = ""
    first_odd: str | None = None  # what the explanation would say first: an unknown top-level field
    try:
        while pos < size:
            budget[0] -= 1
            if budget[0] < 0:
                return None
            start = pos
            tag, pos = view.varint(pos, size)
            number, wire = tag >> 3, tag & 7
            if number == 0 or wire in (6, 7):
                where = f"at byte {start}: unexpected field {number} with wire type {wire}"
                if first_odd is not None:
                    return first_odd
                if known_seen == 0:
                    return f"not an ONNX protobuf (parse failed {where})"
                return f"truncated or corrupt protobuf (parse failed {where})"
            if wire in (3, 4):
                return None
            fd_ = model_desc.fields_by_number.get(number)
            if fd_ is None or not _wire_ok(fd_, wire):
                if first_odd is None:
                    where = f"at byte {start}: unexpected field {number} with wire type {wire}"
                    first_odd = (f"not an ONNX protobuf (parse failed {where})" if known_seen == 0
                                 else f"truncated or corrupt protobuf (parse failed {where})")
            else:
                known_seen += 1
                field_name = fd_.name
            vstart, pos = _skip_in_file(view, pos, size, wire)
            if fd_ is not None and fd_.message_type is not None and wire == 2 and first_odd is None:
                children.append((vstart, pos, fd_.message_type, fd_.name))
    except _Overrun:
        if first_odd is not None:
            return first_odd
        if known_seen == 0:
            return "not an ONNX protobuf (parse failed at byte 0)"
        return f"truncated or corrupt protobuf (file ends inside field '{field_name}' starting at byte {start})"
    except _Malformed as exc:
        if first_odd is not None:
            return first_odd
        if known_seen == 0:
            return f"not an ONNX protobuf (parse failed at byte {start}: {exc})"
        return f"truncated or corrupt protobuf (parse failed at byte {start}: {exc})"
    if size < PREFLIGHT_DEEP_BYTES or first_odd is not None:
        return None
    try:
        for vstart, end, _desc, name in children:
            problem = _preflight_message(view, vstart, end, name, budget)
            if problem is not None:
                return problem
    except _Undecided:
        return None
    return None


def _skip_in_file(view: _FileView, pos: int, end: int, wire: int) -> tuple[int, int]:
    if wire == 0:
        _, nxt = view.varint(pos, end)
        return pos, nxt
    if wire == 1:
        nxt = pos + 8
    elif wire == 5:
        nxt = pos + 4
    else:  # 2; groups and bad wire types are handled by the callers
        length, pos = view.varint(pos, end)
        nxt = pos + length
    if nxt > end:
        raise _Overrun
    return pos, nxt


def _preflight_message(view: _FileView, pos: int, end: int, path: str, budget: list[int]) -> str | None:
    """The first structural problem among the fields of one top-level message (one level deep,
    as the explanation's walk words it), or None."""
    start = pos
    try:
        while pos < end:
            budget[0] -= 1
            if budget[0] < 0:
                raise _Undecided
            start = pos
            tag, pos = view.varint(pos, end)
            number, wire = tag >> 3, tag & 7
            if number == 0:
                raise _Malformed("field number 0")
            if wire in (3, 4):
                raise _Undecided
            if wire in (6, 7):
                raise _Malformed(f"wire type {wire}")
            _, pos = _skip_in_file(view, pos, end, wire)
    except _Overrun:
        return f"truncated or corrupt protobuf (a field inside {path} runs past its end)"
    except _Malformed as exc:
        return f"truncated or corrupt protobuf (bad data inside {path} at byte {start}: {exc})"
    return None


def top_level_unknown_fields(data: bytes) -> list[int] | None:
    """The numbers of the unknown fields at the top level of a serialized ModelProto, found by
    skipping over the field values (no copy of them, unlike ``UnknownFieldSet``, which copies every
    unknown field's bytes: a 1 GiB one would cost 1 GiB more). None when the bytes do not walk."""
    known = onnx.ModelProto.DESCRIPTOR.fields_by_number
    found: set[int] = set()
    n = len(data)
    pos = 0
    try:
        while pos < n:
            tag, pos = _read_varint(data, pos, n)
            number, wire = tag >> 3, tag & 7
            if number == 0 or wire in (3, 4, 6, 7):
                return None
            fd = known.get(number)
            if fd is None or not _wire_ok(fd, wire):
                found.add(number)  # (a known number with another wire type is kept as unknown too)
            _, pos = _skip_value(data, pos, n, wire)
    except (_Overrun, _Malformed):
        return None
    return sorted(found)


# --------------------------------------------------------------------------------------------
# What the parse will cost: counted on the wire, before the parse
# --------------------------------------------------------------------------------------------

# Bytes upb allocates per message of each type once parsed (its struct, its slot in the parent's
# array, the array's growth), measured with ``FromString`` on files of a million empty messages
# of each type (docs/threat-model.md, "Memory"); other types cost ``_MESSAGE_BASE`` plus
# ``_PER_FIELD`` per field. Repeated strings cost a view each. A repeated scalar costs its 8 bytes
# (int64) and the array's growth, up to 2.7 times that at the peak of a realloc: 21.4 bytes per
# element measured, whatever its size on the wire (1 byte for a packed varint, 2 unpacked); a
# packed float or double costs what it is on the wire (1.0 per byte, 2.7 when it comes in pieces).
MESSAGE_COST = {
    "onnx.AttributeProto": 200, "onnx.NodeProto": 153, "onnx.TensorProto": 169, "onnx.FunctionProto": 161,
    "onnx.GraphProto": 127, "onnx.ValueInfoProto": 80, "onnx.TensorShapeProto.Dimension": 64,
    "onnx.StringStringEntryProto": 64, "onnx.TrainingInfoProto": 61, "onnx.OperatorSetIdProto": 54,
    "onnx.SparseTensorProto": 54, "onnx.TensorAnnotation": 54, "onnx.TypeProto": 54,
}
_MESSAGE_BASE, _PER_FIELD = 48, 8
STRING_COST = 32
SCALAR_COST = 24  # per element of a repeated scalar, unpacked or packed (a packed varint: one a byte at most)
FIXED_PACKED_COST = 3  # per byte of a packed float, double, fixed32/64
# The most any byte of a file can cost to parse: an empty AttributeProto is 2 bytes on the wire.
PARSE_WORST_PER_BYTE = 101
# What shapeflow builds per node once the model is parsed (its graph index, the shapes inferred,
# the rules' tables), measured on chains of 100,000-500,000 nodes: about 1.3 KiB, with room.
NODE_COST = 1600
# ... and per body of a subgraph or function (a scope: its tables, its inference, the rules' walk
# of it), measured on 200,000 empty ones: about 2.1 KiB for a subgraph, 2.5 KiB for a function. An
# empty body is 2 bytes on the wire: a 2 MB file of them peaked at 2 GB before they were counted.
SCOPE_COST = 3072
# The most an indexed unit (a node, or a subgraph or function body) costs: ``--max-nodes`` counts both.
UNIT_COST = max(NODE_COST, SCOPE_COST)
# Nesting deeper than upb's limit (100 messages and groups together) is refused by the parse.
_MAX_DEPTH = 128
# Fields of the model whose message is a body build_graph indexes as a scope of its own: the
# main graph is one too, but it is always there (one scope, whatever the file).
_SCOPE_FIELDS = {("onnx.AttributeProto", "g"), ("onnx.AttributeProto", "graphs"), ("onnx.ModelProto", "functions")}

# tag (number << 3 | wire type) -> (kind, table of the sub-message, its cost, cost per indexed
# unit); kind 0 a message, 1 a repeated string or bytes, 2 a packed repeated scalar, 3 an
# unpacked one; the unit cost is NODE_COST for a node, SCOPE_COST for a body, else 0
_Table = dict[int, tuple[int, Any, int, int]]


@functools.cache
def _cost_table(full_name: str = "onnx.ModelProto") -> _Table:
    tables: dict[str, _Table] = {}

    def build(desc: Descriptor) -> _Table:
        found = tables.get(desc.full_name)
        if found is not None:
            return found
        table: _Table = {}
        tables[desc.full_name] = table
        for fd in desc.fields:
            if fd.message_type is not None:
                sub = fd.message_type
                cost = MESSAGE_COST.get(sub.full_name, _MESSAGE_BASE + _PER_FIELD * len(sub.fields))
                unit = (NODE_COST if sub.full_name == "onnx.NodeProto"
                        else SCOPE_COST if (desc.full_name, fd.name) in _SCOPE_FIELDS else 0)
                table[(fd.number << 3) | 2] = (0, build(sub), cost, unit)
            elif fd.is_repeated and fd.type in (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES):
                table[(fd.number << 3) | 2] = (1, None, STRING_COST, 0)
            elif fd.is_repeated:
                fixed = _WIRE_OF_TYPE[fd.type] in (1, 5)
                table[(fd.number << 3) | 2] = (2, None, FIXED_PACKED_COST if fixed else SCALAR_COST, 0)
                table[(fd.number << 3) | _WIRE_OF_TYPE[fd.type]] = (3, None, SCALAR_COST, 0)
        return table

    desc = onnx.ModelProto.DESCRIPTOR
    assert desc.full_name == full_name
    return build(desc)


class CostExceeded(Exception):
    """The estimate went past the budget (``parse_cost``'s ``budget``) before the walk ended."""

    def __init__(self, estimate: int) -> None:
        super().__init__(estimate)
        self.estimate = estimate


def _skip_group(data: bytes, pos: int, end: int, number: int, depth: int, steps: int,
                check: Any) -> tuple[int, int]:
    """The position after the group of field ``number`` whose start tag ends at ``pos``, and the
    step count. A group is an unknown field to onnx (proto3-style schema, no groups): upb keeps
    its bytes as they are, so nothing in it costs more than its size. Raises ``_Malformed`` or
    ``_Overrun`` where upb refuses the file (an unclosed group, a mismatched end, too deep)."""
    open_groups = [number]
    while open_groups:
        steps += 1
        if not steps & 0xFFFF and check is not None:
            check()
        tag, pos = _read_varint(data, pos, end)
        wire, num = tag & 7, tag >> 3
        if num == 0:
            raise _Malformed("field number 0")
        if wire == 0:
            _, pos = _read_varint(data, pos, end)
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        elif wire == 2:
            length, pos = _read_varint(data, pos, end)
            pos += length
        elif wire == 3:
            open_groups.append(num)
            if depth + len(open_groups) > _MAX_DEPTH:
                raise _Malformed("nesting too deep")
        elif wire == 4:
            if open_groups.pop() != num:
                raise _Malformed("mismatched end of group")
        else:
            raise _Malformed(f"wire type {wire}")
        if pos > end:
            raise _Overrun
    return pos, steps


def parse_cost(data: bytes, max_nodes: int, budget: int, check: Any = None) -> int:
    """The memory parsing ``data`` as a ModelProto and indexing it will take, in bytes: the parsed
    copy of its bytes, each message (``MESSAGE_COST``), repeated string and scalar
    (``STRING_COST``, ``SCALAR_COST``), and per indexed unit up to ``max_nodes`` (past it the graph
    is refused before it is indexed) ``NODE_COST`` for a node, ``SCOPE_COST`` for the body of a
    subgraph or function. One pass over the wire format, depth first, holding one frame per level
    of nesting (never one per message: a file of ten million siblings must not cost ten million
    frames to count); raises ``CostExceeded`` as soon as the estimate passes ``budget`` (a file of
    tiny messages is refused without being walked to its end). ``check()`` is called every 65,536
    fields (the time limit). The walk stops early only where upb refuses the file too (a field
    running past its end, a bad wire type, an unclosed group, nesting past upb's depth); a group,
    which upb keeps as unknown bytes, is stepped over, not a reason to stop."""
    total = _walk_cost(data, max_nodes, budget, check)
    if total > budget:
        raise CostExceeded(total)
    return total


def _walk_cost(data: bytes, max_nodes: int, budget: int, check: Any) -> int:
    """``parse_cost``'s walk: the estimate so far where it stops (the end, or where upb refuses
    the file); raises ``CostExceeded`` once it passes ``budget``."""
    total = len(data)
    units = 0
    frames: list[tuple[int, int, Any]] = []  # the enclosing messages: (where to go on, end, table.get)
    pos, end = 0, len(data)
    get = _cost_table().get
    steps = 0
    try:
        while True:
            while pos < end:
                steps += 1
                if not steps & 0xFFFF:
                    if total > budget:
                        raise CostExceeded(total)
                    if check is not None:
                        check()
                b = data[pos]
                pos += 1
                if b < 0x80:
                    tag = b
                else:
                    tag, pos = _read_varint(data, pos - 1, end)
                wire = tag & 7
                if wire == 2:
                    b = data[pos]
                    if b < 0x80:
                        length = b
                        pos += 1
                    else:
                        length, pos = _read_varint(data, pos, end)
                    entry = get(tag)
                    if entry is not None:
                        kind, sub, cost, unit = entry
                        if kind == 0:
                            total += cost
                            if unit:
                                units += 1
                                if units <= max_nodes:
                                    total += unit
                            if length:
                                if len(frames) >= _MAX_DEPTH:
                                    raise _Malformed("nesting too deep")
                                frames.append((pos + length, end, get))
                                end = pos + length
                                get = sub.get
                                continue
                        elif kind == 1:
                            total += cost
                        else:  # packed scalars: per byte (a varint is one byte at least)
                            total += cost * length
                    pos += length
                elif wire == 0:
                    while data[pos] >= 0x80:
                        pos += 1
                    pos += 1
                    entry = get(tag)
                    if entry is not None:
                        total += entry[2]
                elif wire == 1 or wire == 5:
                    pos += 8 if wire == 1 else 4
                    entry = get(tag)
                    if entry is not None:
                        total += entry[2]
                elif wire == 3:
                    pos, steps = _skip_group(data, pos, end, tag >> 3, len(frames), steps, check)
                else:
                    raise _Malformed(f"wire type {wire}")  # an end of group outside one: upb refuses
            if not frames:
                break
            pos, end, get = frames.pop()
    except (IndexError, _Overrun, _Malformed):
        pass  # a truncated or corrupt file: the parse rejects it
    return total
