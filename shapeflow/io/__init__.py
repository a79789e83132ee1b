"""Reading and writing model files: the only package that touches protobuf files on disk.

Every input is treated as hostile (RELIABILITY.md section 1): a model is read once, from a file
descriptor we checked is a regular file, parsed without external data, and sanity-checked before
anything else sees it. Writes are atomic (temp file in the target folder, fsync, rename) and never
clobber the input or any data file.

- ``load``: preflight of the file, the read, the parse and the structural checks;
- ``wire``: what the protobuf wire format says when the parse fails or a string is not UTF-8;
- ``external``: checks of external data references (by name and stat, never opened);
- ``save``: atomic writes, external data for models over 2 GiB;
- ``model``: the records and the walk over every tensor that the others share.
"""

from __future__ import annotations

# Modules the tests patch through the package (``shapeflow.io.os.fsync`` and the like).
import os  # noqa: F401
import tempfile  # noqa: F401

from .external import external_data_problems, refuse_unsafe_external_data
from .load import PROTOBUF_MAX_BYTES, is_url, load_model, load_model_bytes, parse_model_file, read_model_file
from .model import STORAGE_FIELDS, ExternalDataProblem, LoadedModel
from .save import (
    EXTERNAL_DATA_ALIGNMENT,
    EXTERNAL_MIN_TENSOR_BYTES,
    MAX_INLINE_MODEL_BYTES,
    STDOUT,
    check_output_path,
    save_model,
    write_to_stdout,
)
from .wire import _explain_decode_failure  # noqa: F401  (tests name it through the package)

__all__ = [
    "EXTERNAL_DATA_ALIGNMENT", "EXTERNAL_MIN_TENSOR_BYTES", "MAX_INLINE_MODEL_BYTES", "PROTOBUF_MAX_BYTES",
    "STDOUT", "STORAGE_FIELDS", "ExternalDataProblem", "LoadedModel", "check_output_path",
    "external_data_problems", "is_url", "load_model", "load_model_bytes", "parse_model_file", "read_model_file", "refuse_unsafe_external_data", "save_model",
    "write_to_stdout",
]
