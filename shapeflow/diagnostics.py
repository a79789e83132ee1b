"""The diagnostic record shared by inference, lint rules and the renderers (SPEC.md section 2)."""

from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, field, fields
from enum import Enum

from .errors import display_path
from .results import DiagnosticJSON


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"info": 0, "warning": 1, "error": 2}[self.value]


@dataclass(frozen=True)
class Location:
    """Where a finding is: a graph path (``main``, ``main/If_3.then_branch``, ``function:local::F``),
    the node's display id (its name, or ``#N`` for its index) and op type with version."""

    graph: str = "main"
    node: str | None = None
    op_type: str | None = None
    since_version: int | None = None
    tensor: str | None = None

    @property
    def op_label(self) -> str | None:
        if self.op_type is None:
            return None
        return f"{self.op_type}-{self.since_version}" if self.since_version else self.op_type


@dataclass(frozen=True)
class Diagnostic:
    code: str
    name: str
    severity: Severity
    file: str
    message: str
    hint: str = ""
    fixable: bool = False
    location: Location = field(default_factory=Location)

    def __str__(self) -> str:
        """The one-line text: ``m.onnx: node 'sq' (Squeeze-13): error SF104 name: message``."""
        return self.line()

    def line(self) -> str:
        """The finding's line as the text output prints it (the hint goes on a line of its own).

        File names and model names are input: whatever they hold, the finding stays on its line
        and no terminal escape gets through (``errors.display_path`` escapes what is not
        printable)."""
        loc = self.location
        graph = f" {loc.graph}:" if loc.graph and loc.graph != "main" else ""
        if loc.node is not None:
            label = loc.op_label
            where = f" node '{loc.node}' ({label}):" if label else f" node '{loc.node}':"
        elif loc.tensor is not None:
            where = f" tensor '{loc.tensor}':"
        else:
            where = ""
        line = f"{self.file}:{graph}{where} {self.severity._value_} {self.code} {self.name}: {self.message}"
        return line if line.isprintable() else display_path(line)

    def to_json(self) -> DiagnosticJSON:
        """The JSON object of SPEC.md section 3."""
        loc = self.location
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity.value,
            "file": self.file,
            "graph": loc.graph,
            "node": loc.node,
            "op_type": loc.op_type,
            "message": self.message,
            "hint": self.hint,
            "fixable": self.fixable,
        }

    def sort_key(self) -> tuple[object, ...]:
        loc = self.location
        return (self.file, loc.graph, self.code, loc.node or "", self.message)

    def with_severity(self, severity: Severity) -> "Diagnostic":
        d = asdict(self)
        d["severity"] = severity
        d["location"] = self.location
        return Diagnostic(**d)


def _fast_dict_init(cls: type) -> None:
    """Give a frozen dataclass an ``__init__`` that fills the instance dict directly.

    The generated one calls ``object.__setattr__`` once per field; ``lint`` builds a Diagnostic and
    a Location per finding, one per three nodes of an exporter's model, where that is a tenth of
    the rules' time. Same signature and defaults, same fields; instances stay frozen
    (``__setattr__`` still raises) and compare, hash and pickle as before."""
    params, body = [], []
    env: dict[str, object] = {}
    for f in fields(cls):
        if f.default is not MISSING:
            env[f"_d_{f.name}"] = f.default
            params.append(f"{f.name}=_d_{f.name}")
            body.append(f"    d[{f.name!r}] = {f.name}")
        elif f.default_factory is not MISSING:
            env[f"_f_{f.name}"] = f.default_factory
            params.append(f"{f.name}=None")
            body.append(f"    d[{f.name!r}] = _f_{f.name}() if {f.name} is None else {f.name}")
        else:
            params.append(f.name)
            body.append(f"    d[{f.name!r}] = {f.name}")
    src = f"def __init__(self, {', '.join(params)}):\n    d = self.__dict__\n" + "\n".join(body) + "\n"
    exec(src, env)  # noqa: S102 - code built from the field names above, nothing external
    init = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"  # type: ignore[attr-defined]
    cls.__init__ = init  # type: ignore[misc]


_fast_dict_init(Location)
_fast_dict_init(Diagnostic)
