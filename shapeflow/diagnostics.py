"""The diagnostic record shared by inference, lint rules and the renderers (SPEC.md section 2)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum


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

    def to_json(self) -> dict[str, object]:
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
        return (self.file, self.location.graph, self.code, self.location.node or "", self.message)

    def with_severity(self, severity: Severity) -> "Diagnostic":
        d = asdict(self)
        d["severity"] = severity
        d["location"] = self.location
        return Diagnostic(**d)
