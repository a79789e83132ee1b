"""The records of a loaded model and the walk over every tensor in it (used by load, external-data
checks and save alike), with the size sanity of a tensor's data against its dims."""

from __future__ import annotations

import os
import stat
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from .._onnx import onnx

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
            for attr in attrs[:]:  # (a slice: one call, cheaper than iterating the field)
                # Most attributes hold a number, a string or a list of them: six presence tests
                # are cheaper than building the lists below for each (every node is scanned).
                # (``"t" in attr`` is ``attr.HasField("t")`` without a method call: half the time)
                if not ("t" in attr or "sparse_tensor" in attr or "g" in attr or attr.tensors
                        or attr.sparse_tensors or attr.graphs):
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
    bits: dict[int, int] = {
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
