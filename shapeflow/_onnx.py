"""``onnx``, imported only when shapeflow needs more than its protobuf messages.

``import onnx`` costs about 150 ms (numpy, ml_dtypes and onnx's C++ extension come with it): more
than loading, indexing and inferring a 10,000-node model. Reading a model needs only the message
classes of ``onnx/onnx_ml_pb2.py``, which load in a few milliseconds on their own, so this module
loads that file directly and hands its classes out under the usual names. Anything else
(``onnx.helper``, ``onnx.defs``, ``onnx.shape_inference``, ...) imports the real package on first
use. The classes are the same objects either way: protobuf keeps one class per message type, and
onnx's own import registers the same file again, which protobuf accepts.

Modules use it as ``from ._onnx import onnx`` and write ``onnx.ModelProto`` as before.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types
from typing import TYPE_CHECKING, Any


def _load_messages() -> types.ModuleType:
    """onnx's generated message module, without running ``onnx/__init__.py`` when possible."""
    if "onnx" in sys.modules:
        import onnx.onnx_ml_pb2 as pb  # already paid for

        return pb
    try:
        spec = importlib.util.find_spec("onnx")
        folder = spec.submodule_search_locations[0] if spec and spec.submodule_search_locations else None
        if folder is None:
            raise ImportError("onnx has no package folder")
        path = os.path.join(folder, "onnx_ml_pb2.py")
        file_spec = importlib.util.spec_from_file_location("shapeflow._onnx_ml_pb2", path)
        if file_spec is None or file_spec.loader is None:
            raise ImportError(path)
        pb = importlib.util.module_from_spec(file_spec)
        file_spec.loader.exec_module(pb)
        pb.ModelProto  # noqa: B018 - the layout we rely on
        return pb
    except Exception:  # another onnx layout or protobuf runtime: the ordinary import is always right
        import onnx.onnx_ml_pb2 as pb

        return pb


class _LazyOnnx(types.ModuleType):
    """Message classes and enums from the generated module; everything else from onnx itself."""

    def __init__(self, messages: types.ModuleType) -> None:
        super().__init__("onnx")
        self._messages = messages

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._messages, name, None)
        if value is None or name.startswith("_"):
            import onnx as real  # the first use of anything but the messages pays the import

            value = getattr(real, name)
        setattr(self, name, value)
        return value


if TYPE_CHECKING:
    # the checker sees the real package, so every protobuf message and helper call is typed
    import onnx
else:
    onnx = _LazyOnnx(_load_messages())


def onnx_dist_version_is(version: str) -> bool:
    """Whether the installed onnx is exactly ``version``, told without importing it: pip keeps one
    ``onnx-<version>.dist-info`` folder next to the package."""
    try:
        spec = importlib.util.find_spec("onnx")
        if spec is None or not spec.submodule_search_locations:
            return False
        site = os.path.dirname(os.path.abspath(spec.submodule_search_locations[0]))
        return os.path.isdir(os.path.join(site, f"onnx-{version}.dist-info"))
    except Exception:
        return False


__all__ = ["onnx", "onnx_dist_version_is"]
