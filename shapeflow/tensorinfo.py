"""What inference knows about one tensor: element type, shape, and (for small integer tensors such
as shapes and axes) its values."""

from __future__ import annotations

from dataclasses import dataclass

from .dims import Dim, Shape

# Values are tracked only for tensors this small: shape vectors, axes, indices, scalars.
MAX_VALUE_ELEMS = 1024


@dataclass(slots=True)
class TensorInfo:
    dtype: int = 0  # onnx.TensorProto.DataType, 0 = unknown
    shape: Shape = None  # None = unknown rank
    # Flat row-major element values when known (each an int, a Sym, or None); len == prod(shape).
    value: tuple[Dim, ...] | None = None

    @property
    def rank(self) -> int | None:
        return None if self.shape is None else len(self.shape)


UNKNOWN = TensorInfo()
