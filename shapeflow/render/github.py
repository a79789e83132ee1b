"""``lint --format github``: GitHub Actions workflow commands, one annotation per finding::

    ::error file=models/m.onnx,title=SF104 squeeze-non-unit-dim::node 'sq' (Squeeze-13): axis 3 ...

Levels: error -> ``::error``, warning -> ``::warning``, info -> ``::notice``. A binary model has no
lines, so annotations are on the file. Escaping follows the runner: in the message ``%``, CR and LF;
in property values also ``:`` and ``,`` (which delimit the properties). What is still not printable
after that (an escape sequence in a file or node name) is shown escaped, as in the text format: the
runner has no escape for it, and it must not reach a terminal or the log raw.
"""

from __future__ import annotations

from typing import Iterable

from ..diagnostics import Diagnostic, Severity
from ..errors import display_path
from .sarif import relative_path

COMMANDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def safe(command: str) -> str:
    """A workflow command, escaped for the runner, with anything still not printable escaped."""
    return display_path(command)


def annotation(d: Diagnostic, root: str | None = None) -> str:
    loc = d.location
    where = ""
    if loc.graph and loc.graph != "main":
        where += f"{loc.graph}: "
    if loc.node is not None:
        label = f" ({loc.op_label})" if loc.op_label else ""
        where += f"node '{loc.node}'{label}: "
    elif loc.tensor is not None:
        where += f"tensor '{loc.tensor}': "
    message = where + d.message + (f"\nhint: {d.hint}" if d.hint else "")
    # the path as the repository names it (relative to ``root``, the repository's top level): the
    # runner resolves it against the workspace
    path = relative_path(d.file, root)
    props = f"file={escape_property(path)},title={escape_property(f'{d.code} {d.name}')}"
    return safe(f"::{COMMANDS[d.severity]} {props}::{escape_data(message)}")


def annotations(diags: Iterable[Diagnostic]) -> str:  # type: ignore[no-redef]  # rebinds the __future__ name
    return "\n".join(annotation(d) for d in diags)
