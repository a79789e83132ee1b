"""Reading and writing model files: the only module that touches protobuf files on disk.

Every input is treated as hostile (RELIABILITY.md section 1): a model is read once, from a
file descriptor we checked is a regular file, parsed without external data, and sanity-checked
before anything else sees it. Writes are atomic (temp file in the target folder, fsync, rename)
and never clobber the input or any data file.
"""

from __future__ import annotations

import errno
import functools
import os
import re
import stat
import tempfile
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError

from ._onnx import onnx

from shapeflow.errors import LimitExceeded, ModelUnreadable, UsageError, WriteError
from shapeflow.limits import DEFAULT_LIMITS, Limits

# Protobuf cannot hold a message of 2 GiB or more; this is also the default --max-bytes.
PROTOBUF_MAX_BYTES = 2**31 - 1
# save_model switches to external data above this serialized size. A module constant rather
# than a literal so tests can exercise the mechanism without writing 2 GiB.
MAX_INLINE_MODEL_BYTES = PROTOBUF_MAX_BYTES
# Initializers whose raw_data is larger than this move to the data file (onnx's own default).
EXTERNAL_MIN_TENSOR_BYTES = 1024
# Tensor offsets in a data file we write are page-aligned so runtimes can mmap them.
EXTERNAL_DATA_ALIGNMENT = 4096

# upb's default decode depth. Each level of If/Loop/Scan nesting costs three messages
# (Graph -> Node -> Attribute), which is where "about 31 levels" comes from.
_PROTOBUF_MAX_DEPTH = 100
# The wire scan that explains a parse failure is diagnostic only; cap its work.
_MAX_DIAGNOSE_FIELDS = 5_000_000
# Opset versions outside this range are corrupt or hostile, not merely new.
_MAX_OPSET_VERSION = 1000
_DEFAULT_DOMAINS = ("", "ai.onnx")

_LFS_PREFIX = b"version https://git-lfs"
_ORT_MEM_MARKER = "_ORT_MEM_ADDR_"
_EXTERNAL_KEYS = ("location", "offset", "length", "checksum")


# --------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------


@dataclass
class LoadedModel:
    """A parsed model plus what is needed to write it back or to locate its data files."""

    path: str  # the path as the user gave it (used in messages)
    # repr=False: a debug print of a LoadedModel must not dump up to 2 GiB of bytes.
    proto: onnx.ModelProto = field(repr=False)  # parsed with external data NOT loaded
    raw: bytes = field(repr=False)  # exact bytes read: an unchanged model is written back as-is
    # Real directory holding the path as given (symlinks in the directory resolved, not the
    # file itself): external data is resolved here (Hugging Face cache rule). "" when the model
    # did not come from a file.
    directory: str
    # False when the load-time scan found no tensor with external data (nor stray external_data
    # entries): external_data_problems then has nothing to check and skips its own scan of every
    # node. True (scan) when unknown; nothing may add external data to the proto after loading.
    external: bool = field(default=True, repr=False)


@dataclass(frozen=True)
class ExternalDataProblem:
    tensor: str
    location: str
    severity: str  # "error" | "warning"
    message: str


@dataclass(frozen=True)
class _TensorRef:
    """One TensorProto somewhere in a model; the message label is built only when needed."""

    tensor: onnx.TensorProto
    name: str
    what: str  # "initializer", "sparse initializer", or "" for a node attribute
    part: str  # "values" / "indices" of a sparse tensor, "[k]" of a tensors list, or ""
    node: onnx.NodeProto | None
    node_id: str
    attr: str
    where: str  # "main", "main/If_3.then_branch", "function local::F", ...

    @property
    def is_initializer(self) -> bool:
        """A dense graph initializer (the kind save_model may move to external data)."""
        return self.what == "initializer"

    @property
    def label(self) -> str:
        """e.g. "initializer 'w'" or "Constant node 'c' attribute 'value' in main/If.then"."""
        if self.node is not None:
            head = f"{self.node.op_type or '?'} node {_q(self.node_id)} attribute {_q(self.attr)}"
        else:
            head = f"{self.what} {_q(self.name)}"
        if self.part:
            head += self.part if self.part.startswith("[") else f" {self.part}"
        return head if self.where == "main" else f"{head} in {self.where}"


# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------


def _q(text: str, limit: int = 120) -> str:
    """Quote a name from the model for a one-line message.

    Names come from untrusted files: a newline or terminal escape in a tensor name must not
    break the one-line-per-problem contract, and a 1 MB name must not flood the terminal.
    """
    if isinstance(text, (bytes, bytearray)):  # protobuf's form of a string that is not UTF-8
        text = bytes(text).decode("utf-8", "backslashreplace")
    if len(text) > limit:
        text = text[:limit] + "..."
    cleaned = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return "'" + cleaned.replace("'", "\\'") + "'"


def _is_within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "special file"


def _iter_tensors(model: onnx.ModelProto) -> Iterator[_TensorRef]:
    """Every TensorProto in the model: initializers, sparse initializers and tensor attributes
    of the main graph, every subgraph, training graphs and functions.

    A FIFO queue instead of recursion: nesting depth comes from the (hostile) file.
    """
    # (graph or None for a function body, nodes, where-label)
    pending: deque[tuple[onnx.GraphProto | None, Sequence[onnx.NodeProto], str]] = deque()
    if model.HasField("graph"):
        pending.append((model.graph, model.graph.node, "main"))
    for i, info in enumerate(model.training_info):
        if info.HasField("initialization"):
            pending.append((info.initialization, info.initialization.node, f"training_info[{i}].initialization"))
        if info.HasField("algorithm"):
            pending.append((info.algorithm, info.algorithm.node, f"training_info[{i}].algorithm"))
    for fn in model.functions:
        pending.append((None, fn.node, f"function {fn.domain}::{fn.name}"))

    while pending:
        graph, nodes, where = pending.popleft()
        if graph is not None:
            for t in graph.initializer:
                yield _TensorRef(t, t.name, "initializer", "", None, "", "", where)
            for sp in graph.sparse_initializer:
                name = sp.values.name
                yield _TensorRef(sp.values, name, "sparse initializer", "values", None, "", "", where)
                yield _TensorRef(sp.indices, name, "sparse initializer", "indices", None, "", "", where)
        for idx, node in enumerate(nodes):
            attrs = node.attribute
            if not attrs:
                continue
            for attr in attrs:
                # Most attributes hold a number, a string or a list of them: six presence tests
                # are cheaper than building the lists below for each (every node is scanned).
                if not (attr.HasField("t") or attr.tensors or attr.HasField("sparse_tensor")
                        or attr.sparse_tensors or attr.HasField("g") or attr.graphs):
                    continue
                node_id = node.name or f"#{idx}"
                found: list[tuple[str, onnx.TensorProto]] = []
                if attr.HasField("t"):
                    found.append(("", attr.t))
                found.extend((f"[{k}]", t) for k, t in enumerate(attr.tensors))
                sparse = list(attr.sparse_tensors)
                if attr.HasField("sparse_tensor"):
                    sparse.insert(0, attr.sparse_tensor)
                for sp in sparse:
                    found.append(("values", sp.values))
                    found.append(("indices", sp.indices))
                for part, t in found:
                    yield _TensorRef(t, t.name or node_id, "", part, node, node_id, attr.name, where)
                if attr.HasField("g"):
                    pending.append((attr.g, attr.g.node, f"{where}/{node_id}.{attr.name}"))
                for k, g in enumerate(attr.graphs):
                    pending.append((g, g.node, f"{where}/{node_id}.{attr.name}[{k}]"))


def _is_external(t: onnx.TensorProto) -> bool:
    return t.data_location == onnx.TensorProto.EXTERNAL


# --------------------------------------------------------------------------------------------
# Tensor size sanity (RELIABILITY rows 31, 32)
# --------------------------------------------------------------------------------------------

_T = onnx.TensorProto


def _element_bits() -> dict[int, int]:
    """Bits per element in raw_data, by data_type.

    In bits because sub-byte types are packed (4-bit: 2 per byte, 2-bit: 4 per byte, 6-bit: a
    continuous bit stream).
    """
    bits = {
        _T.FLOAT: 32, _T.UINT8: 8, _T.INT8: 8, _T.UINT16: 16, _T.INT16: 16, _T.INT32: 32,
        _T.INT64: 64, _T.BOOL: 8, _T.FLOAT16: 16, _T.DOUBLE: 64, _T.UINT32: 32, _T.UINT64: 64,
        _T.COMPLEX64: 64, _T.COMPLEX128: 128, _T.BFLOAT16: 16,
    }  # fmt: skip
    newer = (
        ("FLOAT8E4M3FN", 8), ("FLOAT8E4M3FNUZ", 8), ("FLOAT8E5M2", 8), ("FLOAT8E5M2FNUZ", 8),
        ("FLOAT8E8M0", 8), ("UINT4", 4), ("INT4", 4), ("FLOAT4E2M1", 4), ("UINT2", 2), ("INT2", 2),
        ("FLOAT6E2M3", 6), ("FLOAT6E3M2", 6),
    )  # fmt: skip
    for name, width in newer:
        # these element types exist only in newer onnx releases; look them up by name
        if name in _T.DataType.keys():
            bits[_T.DataType.Value(name)] = width
    return bits


_BITS = _element_bits()


def _raw_nbytes(data_type: int, count: int) -> int | None:
    """Bytes of raw_data for ``count`` elements, or None for a type we cannot size."""
    bits = _BITS.get(data_type)
    if bits is None:
        return None
    return (count * bits + 7) // 8


# onnx.helper.tensor_dtype_to_field for the common element types (a test checks them), so that
# loading a model does not import onnx.helper (and numpy)
STORAGE_FIELDS = {
    1: "float_data", 2: "int32_data", 3: "int32_data", 4: "int32_data", 5: "int32_data", 6: "int32_data",
    7: "int64_data", 9: "int32_data", 10: "int32_data", 11: "double_data", 12: "uint64_data",
    13: "uint64_data", 16: "int32_data",
}


def _typed_field(data_type: int) -> tuple[str, int, int] | None:
    """(field name, values per ``per`` elements, per) for the typed storage of ``data_type``.

    Complex numbers take two floats per element; 4-bit and 2-bit types pack 2 or 4 elements
    into one int32_data entry (see onnx.numpy_helper.to_array).
    """
    if data_type == _T.STRING:
        return ("string_data", 1, 1)
    if data_type == _T.COMPLEX64:
        return ("float_data", 2, 1)
    if data_type == _T.COMPLEX128:
        return ("double_data", 2, 1)
    bits = _BITS.get(data_type)
    if bits is None:
        return None
    name = STORAGE_FIELDS.get(data_type)
    if name is None:
        try:
            name = onnx.helper.tensor_dtype_to_field(data_type)
        except (KeyError, ValueError):
            return None
    if bits == 4:
        return (name, 1, 2)
    if bits == 2:
        return (name, 1, 4)
    return (name, 1, 1)


def _element_count(t: onnx.TensorProto) -> int | str:
    """prod(dims) as a Python int (never allocated), or a problem string."""
    count = 1
    for d in t.dims:
        if d < 0:
            return f"has negative dim {d}"
        count *= d
    return count


def _tensor_size_problem(t: onnx.TensorProto) -> str | None:
    """Why the tensor's declared dims do not match the data it holds, or None."""
    count = _element_count(t)
    if isinstance(count, str):
        return count
    if _is_external(t) or t.HasField("segment"):
        # External data is checked by external_data_problems (by stat only); segments split
        # one tensor over several protos, so a single proto cannot be judged on its own.
        return None
    if t.HasField("raw_data"):
        expected = _raw_nbytes(t.data_type, count)
        if expected is None or t.data_type == _T.STRING:
            return None
        have = len(t.raw_data)
        if have != expected:
            return f"raw_data is {have} bytes, expected {expected}"
        return None
    spec = _typed_field(t.data_type)
    if spec is None:
        return None  # unknown element type: another pass reports it, we cannot size it
    name, values, per = spec
    expected_values = (count + per - 1) // per * values
    have_values = len(getattr(t, name))
    if have_values == expected_values:
        return None
    if have_values == 0:
        return f"declares {count} elements but holds 0 bytes"
    return f"declares {count} elements but holds {have_values} values in {name} (expected {expected_values})"


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
def _utf8_checking_model() -> type | None:
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
        return message_factory.GetMessageClass(pool.FindMessageTypeByName(onnx.ModelProto.DESCRIPTOR.full_name))
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


def _non_utf8_problem(model: onnx.ModelProto) -> str | None:
    """The first string field that is not UTF-8, named for a message, or None if there is none.

    e.g. "node #3 has a name that is not valid UTF-8", "graph input 'x': type.tensor_type.
    shape.dim[1].dim_param is not valid UTF-8". An explicit stack, not recursion: nesting depth
    comes from the file.
    """
    # (message, what it is reported as, field path from there, graph path, id of the node it is in)
    stack: list[tuple[Any, str, str, str, str]] = [(model, "the model", "", "main", "")]
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
# Loading
# --------------------------------------------------------------------------------------------


def _size_limit_message(size: int, limits: Limits) -> str:
    # Raising --max-bytes cannot help a file protobuf cannot hold, unless the user already
    # raised it past the protobuf limit (then their own limit is what stopped us).
    if size > PROTOBUF_MAX_BYTES and limits.max_bytes <= PROTOBUF_MAX_BYTES:
        return f"{size} bytes > protobuf 2 GiB limit; such models must use external data"
    return LimitExceeded("max-bytes", size, Limits.FLAGS["max_bytes"]).message


def _check_opsets(imports: Iterable[onnx.OperatorSetIdProto], shown: str, where: str) -> None:
    for op in imports:
        if not 1 <= op.version <= _MAX_OPSET_VERSION:
            raise ModelUnreadable(
                f"invalid opset version {op.version} for domain {_q(op.domain)}{where}", file=shown
            )


def _check_structure(proto: onnx.ModelProto, shown: str) -> None:
    if not proto.HasField("graph"):
        raise ModelUnreadable("model has no graph", file=shown)
    if not proto.HasField("ir_version"):
        raise ModelUnreadable("model has no ir_version", file=shown)
    if proto.ir_version <= 0:
        raise ModelUnreadable(f"invalid ir_version {proto.ir_version}", file=shown)
    default = [op.version for op in proto.opset_import if op.domain in _DEFAULT_DOMAINS]
    if not default:
        raise ModelUnreadable("no opset_import for ai.onnx", file=shown)
    _check_opsets(proto.opset_import, shown, "")
    # "" and "ai.onnx" name the same domain; two different versions leave the op semantics
    # (and so every axis check) ambiguous.
    if len(set(default)) > 1:
        versions = ", ".join(str(v) for v in sorted(set(default)))
        raise ModelUnreadable(f"conflicting opset_import versions for ai.onnx ({versions})", file=shown)
    for fn in proto.functions:
        _check_opsets(fn.opset_import, shown, f" in function {_q(fn.domain + '::' + fn.name)}")


def _check_tensors(proto: onnx.ModelProto, shown: str) -> bool:
    """Raise for a tensor whose data does not match its dims; whether any tensor is external."""
    external = False
    for ref in _iter_tensors(proto):
        problem = _tensor_size_problem(ref.tensor)
        if problem is not None:
            raise ModelUnreadable(f"{ref.label} {problem}", file=shown, tensor=ref.name)
        external = external or _is_external(ref.tensor) or len(ref.tensor.external_data) > 0
    return external


def _parse_checked(data: bytes, shown: str, limits: Limits) -> tuple[onnx.ModelProto, bool]:
    """The parsed and checked model, and whether it has external data (see LoadedModel.external)."""
    size = len(data)
    if size == 0:
        raise ModelUnreadable("empty file (0 bytes); not an ONNX model", file=shown)
    if size > limits.max_bytes:
        raise ModelUnreadable(_size_limit_message(size, limits), file=shown)
    if data.startswith(_LFS_PREFIX):
        raise ModelUnreadable("git-lfs pointer, run `git lfs pull`", file=shown)
    # Every string of an ASCII file is UTF-8; otherwise the checking parse tells (see above).
    not_utf8 = not data.isascii()
    checking = _utf8_checking_model() if not_utf8 else None
    if checking is not None:
        try:
            checking.FromString(data)
            not_utf8 = False
        except Exception:  # a bad string, or a file the real parse below rejects anyway
            pass
    try:
        proto = onnx.ModelProto.FromString(data)
    except (DecodeError, ValueError, RuntimeError) as exc:
        if size > PROTOBUF_MAX_BYTES:
            msg = f"{size} bytes > protobuf 2 GiB limit; such models must use external data"
        else:
            msg = _explain_decode_failure(data, str(exc))
        raise ModelUnreadable(msg, file=shown) from None
    if not_utf8:
        problem = _non_utf8_problem(proto)
        if problem is not None:
            raise ModelUnreadable(problem, file=shown)
    _check_structure(proto, shown)
    return proto, _check_tensors(proto, shown)


def _open_error(exc: OSError, path: str) -> str:
    if exc.errno == errno.ENOENT:
        return "no such file"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if exc.errno == errno.ENXIO:
        # open() on a Unix socket fails with ENXIO; say what it is
        try:
            return f"not a regular file ({_file_kind(os.stat(path).st_mode)})"
        except OSError:
            pass
    if exc.errno == errno.ELOOP:
        return "too many levels of symbolic links"
    return f"cannot open: {exc.strerror or exc}"


def _read_exact(fd: int, size: int) -> bytes | None:
    """Read exactly ``size`` bytes from ``fd``; None if the file changed size meanwhile."""
    chunks: list[bytes] = []
    remaining = size
    while remaining:
        chunk = os.read(fd, min(remaining, 1 << 26))
        if not chunk:
            return None
        chunks.append(chunk)
        remaining -= len(chunk)
    if os.read(fd, 1):
        return None
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def load_model(
    path: str | os.PathLike[str],
    limits: Limits = DEFAULT_LIMITS,
    *,
    repo_root: str | None = None,
) -> LoadedModel:
    """Read and parse one model file, without external data.

    Raises ModelUnreadable (SF001, exit 2) with a one-line reason for anything that is not a
    readable ONNX model.
    """
    shown = os.fsdecode(os.fspath(path))
    if repo_root is not None:
        # checked before opening: a pre-commit hook must not read what a link in the repo
        # points at
        root = os.path.realpath(repo_root)
        if not _is_within(os.path.realpath(shown), root):
            if _is_within(os.path.realpath(os.path.dirname(os.path.abspath(shown))), root):
                raise ModelUnreadable("symlink points outside the repository", file=shown)
            raise ModelUnreadable(f"path is outside the repository {_q(root)}", file=shown)

    try:
        # Refuse special files before opening them: opening some devices acts (a tape
        # rewinds, a watchdog arms). The fstat below still decides, in case of a swap.
        pre = os.stat(shown)
    except OSError as exc:
        raise ModelUnreadable(_open_error(exc, shown), file=shown) from None
    if not stat.S_ISREG(pre.st_mode):
        raise ModelUnreadable(f"not a regular file ({_file_kind(pre.st_mode)})", file=shown)
    try:
        # O_NONBLOCK: opening a FIFO for reading would otherwise block until a writer appears;
        # O_NOCTTY: a terminal must never become our controlling terminal
        fd = os.open(shown, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as exc:
        raise ModelUnreadable(_open_error(exc, shown), file=shown) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ModelUnreadable(f"not a regular file ({_file_kind(st.st_mode)})", file=shown)
        if st.st_size == 0:
            raise ModelUnreadable("empty file (0 bytes); not an ONNX model", file=shown)
        if st.st_size > limits.max_bytes:
            raise ModelUnreadable(_size_limit_message(st.st_size, limits), file=shown)
        try:
            data = _read_exact(fd, st.st_size)
        except OSError as exc:
            raise ModelUnreadable(f"read failed: {exc.strerror or exc}", file=shown) from None
        if data is None:
            raise ModelUnreadable("file changed size while being read", file=shown)
    finally:
        os.close(fd)

    proto, external = _parse_checked(data, shown, limits)
    # The directory of the path *as given* (not of the symlink target): external data is
    # resolved next to the name the user sees (Hugging Face cache layout, RELIABILITY row 50).
    directory = os.path.realpath(os.path.dirname(os.path.abspath(shown)))
    return LoadedModel(path=shown, proto=proto, raw=data, directory=directory, external=external)


def load_model_bytes(data: bytes, name: str = "<bytes>", limits: Limits = DEFAULT_LIMITS) -> LoadedModel:
    """Parse a model held in memory with the same checks as load_model.

    ``directory`` is "" because there is no folder to resolve external data against.
    """
    data = bytes(data)
    proto, external = _parse_checked(data, name, limits)
    return LoadedModel(path=name, proto=proto, raw=data, directory="", external=external)


# --------------------------------------------------------------------------------------------
# External data validation (strings and os.stat only; data files are never opened)
# --------------------------------------------------------------------------------------------

_INT_RE = re.compile(r"-?[0-9]+", re.ASCII)
_DRIVE_RE = re.compile(r"^[A-Za-z]:")


def _location_string_problem(loc: str) -> tuple[str, str] | None:
    """(severity, message) for a location string that is unsafe whatever the filesystem holds."""
    if loc == "":
        return ("error", "external data location is empty")
    if "\x00" in loc:
        return ("error", f"external data location {_q(loc)} contains a NUL byte")
    if _ORT_MEM_MARKER in loc:
        return ("error", f"reserved ORT marker in model file (location {_q(loc)})")
    if _DRIVE_RE.match(loc):
        return ("error", f"external data location {_q(loc)} has a drive letter")
    if loc.startswith(("/", "\\")) or os.path.isabs(loc):
        return ("error", f"external data location {_q(loc)} is an absolute path")
    # Both separators: a model written on Windows uses backslashes, and a runtime there would
    # follow them, so "..\\x" escapes even though it is one odd file name on POSIX.
    depth = 0
    for part in re.split(r"[\\/]", loc):
        if part == "..":
            depth -= 1
            if depth < 0:
                return ("error", f"external data location {_q(loc)} escapes the model folder")
        elif part not in ("", "."):
            depth += 1
    return None


def _parse_int(text: str, key: str) -> tuple[int | None, str | None]:
    if not _INT_RE.fullmatch(text):
        return None, f"external data {key} {_q(text)} is not an integer"
    value = int(text)
    if value < 0:
        return None, f"external data {key} {value} is negative"
    return value, None


def external_data_problems(loaded: LoadedModel) -> list[ExternalDataProblem]:
    """Check every external-data reference of the model, without opening any data file."""
    problems: list[ExternalDataProblem] = []
    if not loaded.external:
        return problems
    base = loaded.directory
    roots: list[str] = []
    if base:
        roots.append(os.path.realpath(base))
        # The model may itself be a symlink (Hugging Face snapshots/ -> blobs/): data next to
        # the model's real file is its physical sibling and as trusted as the model.
        model_real = os.path.realpath(os.path.join(base, os.path.basename(loaded.path)))
        roots.append(os.path.dirname(model_real))
    # (real data path, offset, end, tensor) for the overlap check
    extents: list[tuple[str, int, int, str]] = []

    for ref in _iter_tensors(loaded.proto):
        t = ref.tensor
        name = ref.name
        add = _ProblemSink(problems, ref)
        if not _is_external(t):
            if len(t.external_data):
                add("warning", "has external_data entries but data_location is not EXTERNAL (ignored)")
            continue

        values: dict[str, list[str]] = {}
        for entry in t.external_data:
            values.setdefault(entry.key, []).append(entry.value)
        loc = values.get("location", [""])[-1]
        for key, vals in values.items():
            if key not in _EXTERNAL_KEYS:
                add("warning", f"unknown external data key {_q(key)}", loc)
            elif len(vals) > 1:
                # readers disagree on which copy wins (first or last): ambiguous, so unsafe
                add("error", f"external data key {_q(key)} given {len(vals)} times", loc)

        string_problem = _location_string_problem(loc)
        if string_problem is not None:
            add(string_problem[0], string_problem[1], loc)
            continue

        offset = length = None
        bad_numbers = False
        for key in ("offset", "length"):
            if key in values:
                value, why = _parse_int(values[key][-1], key)
                if why is not None:
                    add("error", why, loc)
                    bad_numbers = True
                elif key == "offset":
                    offset = value
                else:
                    length = value
        count = _element_count(t)
        expected = _raw_nbytes(t.data_type, count) if isinstance(count, int) else None
        if length is not None and expected is not None and length != expected:
            add("error", f"external data length {length} but the tensor declares {expected} bytes", loc)

        if not base:
            add("warning", "data file not checked: the model was not loaded from a file", loc)
            continue
        full = os.path.join(base, loc)
        real = os.path.realpath(full)
        if not any(_is_within(real, r) for r in roots):
            add(
                "error",
                f"external data location {_q(loc)} resolves outside the model folder via a symlink (to {_q(real)})",
                loc,
            )
            continue
        try:
            st = os.stat(real)
        except FileNotFoundError:
            add("error", f"external data file {_q(loc)} not found", loc)
            continue
        except OSError as exc:
            add("error", f"external data file {_q(loc)} cannot be inspected: {exc.strerror or exc}", loc)
            continue
        if not stat.S_ISREG(st.st_mode):
            add("error", f"external data file {_q(loc)} is not a regular file ({_file_kind(st.st_mode)})", loc)
            continue
        if st.st_nlink > 1:
            add("warning", f"external data file {_q(loc)} is a hard link ({st.st_nlink} links)", loc)
        if bad_numbers:
            continue
        start = offset or 0
        # without a length, readers take the rest of the file; the tensor needs `expected`
        span = length if length is not None else expected
        end = start + span if span is not None else st.st_size
        if start > st.st_size or end > st.st_size:
            shown_len = "to end" if span is None else str(span)
            add(
                "error",
                f"offset+length beyond data file size ({st.st_size} B): offset {start}, length {shown_len}",
                loc,
            )
            continue
        extents.append((real, start, end, name))

    # Two tensors sharing bytes is legal to read but a sign of a crafted or broken file.
    # Sorted by (file, offset), each extent is compared with the furthest-reaching one before
    # it in the same file, so an extent nested inside a long one is still found.
    extents.sort()
    reach: tuple[str, int, str] | None = None  # (file, end, tensor)
    for real, start, end, name in extents:
        if reach is not None and reach[0] == real and start < reach[1]:
            problems.append(
                ExternalDataProblem(
                    name, os.path.basename(real), "warning",
                    f"external data of {_q(name)} overlaps {_q(reach[2])} in the same file",
                )
            )  # fmt: skip
        if reach is None or reach[0] != real or end > reach[1]:
            reach = (real, end, name)
    return problems


def refuse_unsafe_external_data(loaded: LoadedModel) -> None:
    """Raise ModelUnreadable (SF001, exit 2) for the first error-level external data problem.

    What a command that writes a model (``optimize``, ``infer -o``) refuses: the output would
    carry the reference (an escaping location, a missing file) on to whoever loads it. ``lint``
    and ``infer`` without an output report the same problems as findings instead (exit 1).
    """
    for p in external_data_problems(loaded):
        if p.severity == "error":
            raise ModelUnreadable(f"tensor {_q(p.tensor)}: {p.message}", file=loaded.path, tensor=p.tensor)


@dataclass
class _ProblemSink:
    """Appends problems about one tensor, prefixed with its label."""

    problems: list[ExternalDataProblem]
    ref: _TensorRef

    def __call__(self, severity: str, message: str, loc: str = "") -> None:
        self.problems.append(ExternalDataProblem(self.ref.name, loc, severity, f"{self.ref.label}: {message}"))


# --------------------------------------------------------------------------------------------
# Saving
# --------------------------------------------------------------------------------------------


def _current_umask() -> int:
    # /proc avoids os.umask's set-and-restore, which briefly changes process-wide state.
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def _same_file(a: str, b: str) -> bool:
    if os.path.abspath(a) == os.path.abspath(b):
        return True
    try:
        sa, sb = os.stat(a), os.stat(b)
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def _write_error(exc: OSError, directory: str, shown: str) -> WriteError:
    code = exc.errno
    if code in (errno.EACCES, errno.EPERM):
        msg = f"cannot write to {directory}: permission denied"
    elif code == errno.EROFS:
        msg = f"cannot write to {directory}: read-only file system"
    elif code in (errno.ENOENT, errno.ENOTDIR):
        msg = f"cannot write to {directory}: no such directory"
    elif code == errno.ENOSPC:
        msg = "write failed: no space left on device"
    elif code == errno.EDQUOT:
        msg = "write failed: disk quota exceeded"
    else:
        reason = (os.strerror(code) if code else str(exc)).lower()
        msg = f"write failed: {reason}"
    return WriteError(msg, file=shown)


def _external_locations(model: onnx.ModelProto) -> list[str]:
    locations = []
    for ref in _iter_tensors(model):
        if _is_external(ref.tensor):
            loc = ""
            for entry in ref.tensor.external_data:
                if entry.key == "location":
                    loc = entry.value
            locations.append(loc)
    return locations


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        # Best effort: the file is complete and fsynced and the rename is done; some
        # filesystems cannot fsync a directory, and the output must not vanish over it.
        pass
    finally:
        os.close(fd)


def _write_temp(directory: str, base: str, mode: int, chunks: list[bytes] | bytes) -> str:
    """Write a complete, fsynced temp file in ``directory``; returns its path."""
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{base}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            # mkstemp creates 0o600; give the output a normal file's permissions
            os.fchmod(fh.fileno(), mode)
            for chunk in [chunks] if isinstance(chunks, bytes) else chunks:
                fh.write(chunk)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        _remove_quietly(tmp)
        raise
    return tmp


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _install(tmp: str, dest: str, overwrite: bool, exists_message: str, shown: str) -> None:
    """Move a finished temp file to ``dest`` atomically.

    Without ``overwrite``, link() instead of rename(): it fails if ``dest`` appeared since we
    checked, so a concurrent file is never clobbered (the O_EXCL of RELIABILITY row 47).
    """
    if overwrite:
        os.replace(tmp, dest)
        return
    try:
        os.link(tmp, dest)
    except FileExistsError:
        raise UsageError(exists_message, file=shown) from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
            raise
        # filesystem without hard links: fall back to a checked rename
        if os.path.lexists(dest):
            raise UsageError(exists_message, file=shown) from None
        os.replace(tmp, dest)
        return
    os.unlink(tmp)


def save_model(
    model: onnx.ModelProto | bytes,
    out_path: str | os.PathLike[str],
    *,
    input_path: str | os.PathLike[str] | None = None,
    in_place: bool = False,
    force: bool = False,
) -> None:
    """Write ``model`` to ``out_path`` atomically, or raise UsageError / WriteError (exit 2)
    having written nothing.

    Bytes are written as given (a no-op run stays byte-identical). A ModelProto over
    MAX_INLINE_MODEL_BYTES is written with its initializers above 1 KiB in a new
    ``<out>.data``; in that case the proto is left pointing at that file (as onnx.save_model
    does), because restoring 2 GiB of tensors would double peak memory.
    """
    out = os.fsdecode(os.fspath(out_path))
    inp = os.fsdecode(os.fspath(input_path)) if input_path is not None else None
    shown = inp if inp is not None else out
    out_abs = os.path.abspath(out)
    out_dir = os.path.dirname(out_abs)

    if inp is not None and _same_file(inp, out) and not in_place:
        raise UsageError(f"refusing to overwrite input {_q(inp)}; use --in-place", file=shown)
    overwrite = False
    if os.path.lexists(out):
        if os.path.isdir(out):
            raise UsageError(f"output {_q(out)} is a directory", file=shown)
        if not (force or in_place):
            raise UsageError(f"output {_q(out)} exists; use --force", file=shown)
        overwrite = True

    proto: onnx.ModelProto | None
    if isinstance(model, onnx.ModelProto):
        proto = model
    else:
        proto = None
        # Bytes are written unchanged, but their data references must stay valid too; only
        # parse them when a check below needs it.
        need_refs = overwrite or inp is None or not _same_dir(inp, out_dir)
        if need_refs:
            try:
                proto = onnx.ModelProto.FromString(bytes(model))
            except (DecodeError, ValueError, RuntimeError):
                proto = None  # not a model we can inspect: written as given
    locations = _external_locations(proto) if proto is not None else []

    if locations:
        if inp is None:
            raise UsageError(
                "model has external data; save_model needs the input path to keep its data references valid",
                file=shown,
            )
        if not _same_dir(inp, out_dir):
            raise UsageError(
                "model has external data; write the output next to the input (same folder) "
                "so its data references stay valid",
                file=shown,
            )
        if overwrite:
            for loc in locations:
                data_file = os.path.join(os.path.dirname(os.path.abspath(inp)), loc)
                if loc and _same_file(data_file, out):
                    raise UsageError(f"refusing to overwrite external data file {_q(loc)} of the input", file=shown)

    mode = _new_file_mode()
    if overwrite:
        try:
            existing = os.stat(out)
            if stat.S_ISREG(existing.st_mode):
                # keep a private model private when replacing it
                mode = stat.S_IMODE(existing.st_mode) & 0o777
        except OSError:
            pass

    if isinstance(model, onnx.ModelProto) and model.ByteSize() > MAX_INLINE_MODEL_BYTES:
        _save_with_external_data(model, out_abs, out, overwrite, mode, shown)
        return

    payload = bytes(model) if not isinstance(model, onnx.ModelProto) else model.SerializeToString()
    tmp = None
    try:
        tmp = _write_temp(out_dir, os.path.basename(out_abs), mode, payload)
        _install(tmp, out_abs, overwrite, f"output {_q(out)} exists; use --force", shown)
        tmp = None
        _fsync_dir(out_dir)
    except OSError as exc:
        raise _write_error(exc, out_dir, shown) from None
    finally:
        if tmp is not None:
            _remove_quietly(tmp)


def _same_dir(inp: str, out_dir: str) -> bool:
    in_dir = os.path.realpath(os.path.dirname(os.path.abspath(inp)))
    return in_dir == os.path.realpath(out_dir)


def _new_file_mode() -> int:
    return 0o644 & ~_current_umask()


def _save_with_external_data(
    model: onnx.ModelProto, out_abs: str, out: str, overwrite: bool, mode: int, shown: str
) -> None:
    out_dir = os.path.dirname(out_abs)
    data_name = os.path.basename(out_abs) + ".data"
    data_path = os.path.join(out_dir, data_name)
    if os.path.lexists(data_path):
        # never append to, or replace, a data file: it may belong to another model
        raise UsageError(f"output data file {_q(data_path)} exists; remove it first", file=shown)

    moved: list[tuple[onnx.TensorProto, int, int, bool]] = []  # tensor, offset, length, had location
    data_tmp = model_tmp = None
    data_created = False
    try:
        fd, data_tmp = tempfile.mkstemp(dir=out_dir, prefix=f".{data_name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), mode)
            offset = 0
            for ref in _iter_tensors(model):
                t = ref.tensor
                if not ref.is_initializer or _is_external(t) or not t.HasField("raw_data"):
                    continue
                raw = t.raw_data
                if len(raw) <= EXTERNAL_MIN_TENSOR_BYTES:
                    continue
                pad = -offset % EXTERNAL_DATA_ALIGNMENT
                if pad:
                    fh.write(b"\0" * pad)
                    offset += pad
                fh.write(raw)
                moved.append((t, offset, len(raw), t.HasField("data_location")))
                offset += len(raw)
            fh.flush()
            os.fsync(fh.fileno())

        for t, off, length, _ in moved:
            t.ClearField("raw_data")
            t.data_location = onnx.TensorProto.EXTERNAL
            del t.external_data[:]
            for key, value in (("location", data_name), ("offset", str(off)), ("length", str(length))):
                entry = t.external_data.add()
                entry.key, entry.value = key, value
        size = model.ByteSize()
        if size > MAX_INLINE_MODEL_BYTES:
            raise WriteError(
                f"model is still {size} bytes with its large initializers in external data; "
                "protobuf cannot hold it",
                file=shown,
            )
        model_tmp = _write_temp(out_dir, os.path.basename(out_abs), mode, model.SerializeToString())
        # data first: a model file must never point at a data file that is not there yet
        _install(data_tmp, data_path, False, f"output data file {_q(data_path)} exists; remove it first", shown)
        data_tmp = None
        data_created = True
        _install(model_tmp, out_abs, overwrite, f"output {_q(out)} exists; use --force", shown)
        model_tmp = None
        _fsync_dir(out_dir)
    except BaseException as exc:
        try:
            # the bytes are read back from the data file we wrote in this run, whichever
            # name it has by now
            _restore_tensors(moved, data_path if data_created else data_tmp)
        except OSError:
            pass  # keep the original error; the proto may stay pointing at the lost data file
        if data_created:
            _remove_quietly(data_path)
        for path in (model_tmp, data_tmp):
            if path is not None:
                _remove_quietly(path)
        if isinstance(exc, OSError):
            raise _write_error(exc, out_dir, shown) from None
        raise


def _restore_tensors(moved: list[tuple[onnx.TensorProto, int, int, bool]], data_file: str | None) -> None:
    """Undo the move to external data after a failed save."""
    if not moved or data_file is None:
        return
    with open(data_file, "rb") as fh:
        for t, off, length, had_location in moved:
            if not _is_external(t):
                continue  # failed before this tensor was rewritten
            fh.seek(off)
            t.raw_data = fh.read(length)
            del t.external_data[:]
            if had_location:
                t.data_location = onnx.TensorProto.DEFAULT
            else:
                t.ClearField("data_location")
