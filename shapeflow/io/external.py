"""External data validation: strings and os.stat only; data files are never opened."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass

from ..errors import ModelUnreadableError
from .model import (
    ExternalDataProblem,
    LoadedModel,
    _element_count,
    _file_kind,
    _is_external,
    _is_within,
    _iter_tensors,
    _q,
    _raw_nbytes,
    _TensorRef,
)

_ORT_MEM_MARKER = "_ORT_MEM_ADDR_"
_EXTERNAL_KEYS = ("location", "offset", "length", "checksum")


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
        extent = _check_tensor(ref, _ProblemSink(problems, ref), base, roots)
        if extent is not None:
            extents.append(extent)
    _check_overlaps(extents, problems)
    return problems


def _check_tensor(ref: "_TensorRef", add: "_ProblemSink", base: str | None,
                  roots: list[str]) -> tuple[str, int, int, str] | None:
    """The problems of one tensor's external-data reference; its extent in its data file when
    the reference is sound enough to have one."""
    t = ref.tensor
    if not _is_external(t):
        if len(t.external_data):
            add("warning", "has external_data entries but data_location is not EXTERNAL (ignored)")
        return None
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
        return None
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
        return None
    real = os.path.realpath(os.path.join(base, loc))
    size = _data_file_size(add, loc, real, roots)
    if size is None or bad_numbers:
        return None
    start = offset or 0
    # without a length, readers take the rest of the file; the tensor needs `expected`
    span = length if length is not None else expected
    end = start + span if span is not None else size
    if start > size or end > size:
        shown_len = "to end" if span is None else str(span)
        add("error", f"offset+length beyond data file size ({size} B): offset {start}, length {shown_len}", loc)
        return None
    return real, start, end, ref.name


def _data_file_size(add: "_ProblemSink", loc: str, real: str, roots: list[str]) -> int | None:
    """The size of the data file at ``real`` (``loc`` resolved), or None after saying why it
    cannot be used: outside the model's folder, missing, not a regular file."""
    if not any(_is_within(real, r) for r in roots):
        add("error", f"external data location {_q(loc)} resolves outside the model folder via a symlink "
                     f"(to {_q(real)})", loc)
        return None
    try:
        st = os.stat(real)
    except FileNotFoundError:
        add("error", f"external data file {_q(loc)} not found", loc)
        return None
    except OSError as exc:
        add("error", f"external data file {_q(loc)} cannot be inspected: {exc.strerror or exc}", loc)
        return None
    if not stat.S_ISREG(st.st_mode):
        add("error", f"external data file {_q(loc)} is not a regular file ({_file_kind(st.st_mode)})", loc)
        return None
    if st.st_nlink > 1:
        add("warning", f"external data file {_q(loc)} is a hard link ({st.st_nlink} links)", loc)
    return st.st_size


def _check_overlaps(extents: list[tuple[str, int, int, str]], problems: list[ExternalDataProblem]) -> None:
    """Two tensors sharing bytes is legal to read but a sign of a crafted or broken file. Sorted by
    (file, offset), each extent is compared with the furthest-reaching one before it in the same
    file, so an extent nested inside a long one is still found."""
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


def refuse_unsafe_external_data(loaded: LoadedModel) -> None:
    """Raise ModelUnreadableError (SF001, exit 2) for the first error-level external data problem.

    What a command that writes a model (``optimize``, ``infer -o``) refuses: the output would
    carry the reference (an escaping location, a missing file) on to whoever loads it. ``lint``
    and ``infer`` without an output report the same problems as findings instead (exit 1).
    """
    for p in external_data_problems(loaded):
        if p.severity == "error":
            raise ModelUnreadableError(f"tensor {_q(p.tensor)}: {p.message}", file=loaded.path, tensor=p.tensor)


@dataclass
class _ProblemSink:
    """Appends problems about one tensor, prefixed with its label."""

    problems: list[ExternalDataProblem]
    ref: _TensorRef

    def __call__(self, severity: str, message: str, loc: str = "") -> None:
        self.problems.append(ExternalDataProblem(self.ref.name, loc, severity, f"{self.ref.label}: {message}"))
