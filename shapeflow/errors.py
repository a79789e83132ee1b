"""Errors that stop the processing of one input file.

Everything a user can cause (an unreadable file, a malformed graph, a limit hit, a refused write)
is a ``ShapeflowError``: the CLI prints its one-line ``str()`` and exits with ``exit_code``.
Any other exception escaping the package is a bug (exit 3).
"""

from __future__ import annotations

# Exit codes of every command (SPEC.md section 2).
EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_REJECTED = 2
EXIT_INTERNAL = 3


_CODE_NAMES = {"SF001": "model-unreadable", "SF002": "graph-invalid", "SF006": "limit-exceeded"}


def _quote(name: object, limit: int = 120) -> str:
    """A name from the (untrusted) model, quoted for a one-line message: no newline or terminal
    escape gets through, and a huge name is cut (the same form as the messages of io).

    protobuf hands a name that is not valid UTF-8 over as ``bytes``: shown with escapes."""
    if isinstance(name, (bytes, bytearray)):
        name = bytes(name).decode("utf-8", "backslashreplace")
    name = str(name)
    if len(name) > limit:
        name = name[:limit] + "..."
    cleaned = "".join(c if c.isprintable() else repr(c)[1:-1] for c in name)
    return "'" + cleaned.replace("'", "\\'") + "'"


def display_path(path: str) -> str:
    """A file name as given, safe to print on one line: a newline or terminal escape in a name
    (file names in an unvetted repository are input too) is shown escaped."""
    if path.isprintable():
        return path
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in path)


class ShapeflowError(Exception):
    """A problem with the input or the request, reported in one line.

    ``code`` is the diagnostic code that classifies it (``SF001`` unreadable model, ``SF002``
    invalid graph) or ``None`` for usage and write errors.
    """

    exit_code = EXIT_REJECTED

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        code: str | None = None,
        node: str | None = None,
        tensor: str | None = None,
    ) -> None:
        # One line, whatever the model's names hold: a newline or an escape in a name that a
        # message quotes raw must not split the line or reach the terminal.
        if not message.isprintable():
            message = "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
        super().__init__(message)
        self.message = message
        self.file = file
        self.code = code
        self.node = node
        self.tensor = tensor

    def __str__(self) -> str:
        """``model.onnx: error SF001 model-unreadable: empty file (0 bytes); not an ONNX model``

        The node or tensor the error is about is named as a diagnostic names it
        (``model.onnx: node 'n0': error SF006 ...``) unless the message already names it."""
        prefix = f"{display_path(self.file)}: " if self.file else ""
        if self.node and _quote(self.node) not in self.message:
            prefix += f"node {_quote(self.node)}: "
        elif self.tensor and _quote(self.tensor) not in self.message:
            prefix += f"tensor {_quote(self.tensor)}: "
        if self.code:
            name = _CODE_NAMES.get(self.code, "")
            return f"{prefix}error {self.code} {name}: {self.message}" if name else f"{prefix}error {self.code}: {self.message}"
        return f"{prefix}error: {self.message}"


class ModelUnreadableError(ShapeflowError):
    """SF001: the file is not a model we can read (or is unsafe to read)."""

    def __init__(self, message: str, **kw: object) -> None:
        kw.setdefault("code", "SF001")
        super().__init__(message, **kw)  # type: ignore[arg-type]


class GraphInvalidError(ShapeflowError):
    """SF002: the model parses but its graph is not a valid dataflow graph."""

    def __init__(self, message: str, **kw: object) -> None:
        kw.setdefault("code", "SF002")
        super().__init__(message, **kw)  # type: ignore[arg-type]


class LimitExceededError(ShapeflowError):
    """A resource limit was hit; the message names the flag that raises it."""

    def __init__(self, limit: str, value: object, flag: str, **kw: object) -> None:
        kw.setdefault("code", "SF006")
        super().__init__(
            f"limit {limit} exceeded (value {value}); raise with {flag}", **kw  # type: ignore[arg-type]
        )
        self.limit = limit
        self.value = value
        self.flag = flag


def timeout_as_configured(exc: LimitExceededError, timeout: float) -> LimitExceededError:
    """``exc`` saying the time limit the user set, when it is a timeout that a later phase raised
    with the part of the budget that was left to it (an optimize round, a fix)."""
    if exc.limit != "timeout":
        return exc
    return LimitExceededError("timeout", f"{timeout:g} s", exc.flag, file=exc.file, node=exc.node, tensor=exc.tensor)


class UsageError(ShapeflowError):
    """Bad flags or a refused output path (exit 2)."""


class WriteError(ShapeflowError):
    """Writing the output failed; nothing was left behind (exit 2)."""


class ShapeflowWarning(UserWarning):
    """Something the user should know that stops nothing: the CLI prints it as one line on stderr
    (``shapeflow: warning: ...``), once per message."""


class DeprecatedNameWarning(ShapeflowWarning):
    """A former rule name was used (in ``--select``, ``--ignore``, ``--rules`` or the settings): it
    still works, and says what to write instead."""


class RuleCrashWarning(ShapeflowWarning):
    """An operator's shape rule raised: a bug in shapeflow. The node's outputs are taken as unknown
    so the file is still processed; the test suite turns this warning into an error."""
