"""What the engine hands back: the result of a fixpoint, the candidates it lists, node counts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping, NamedTuple

from .._onnx import onnx
from .._version import __version__
from ..dims import Bound
from ..facts import AxisNode
from ..graph import ModelGraph
from ..results import SCHEMA, OptimizeJSON

if TYPE_CHECKING:
    from .edit import Editor

COUNTED_OPS = ("Squeeze", "Unsqueeze")


class Candidate(NamedTuple):
    """A rewrite a rule would make (what the SF2xx rules report). A named tuple: lint builds one per
    finding, and it is several times cheaper to build than a frozen dataclass."""

    rule: str
    code: str | None
    nid: int  # root node id in the graph index
    message: str
    fact: AxisNode | None = None  # the root's axis facts (its name and location, for reports)


@dataclass
class OptimizeResult:
    model: onnx.ModelProto  # the loaded proto, edited in place
    changed: bool
    rewrites: dict[str, int]  # rule name -> times it fired (and dead-nodes -> nodes swept)
    log: list[str]  # one line per rewrite, with node names
    skipped: list[str]  # why rules did not fire on near misses, as of the final round
    before: dict[str, int]  # {"nodes", "Squeeze", "Unsqueeze"}
    after: dict[str, int]
    rounds: int = 0
    notes: list[str] = field(default_factory=list)  # rewrites that remove a run-time failure
    # (code, graph path, node) of every Squeeze/Unsqueeze a rewrite fired at (the repairs of
    # ``lint --fix``: the driver learns which findings went without judging the model again)
    roots: list[tuple[str, str, str]] = field(default_factory=list)
    assumptions: Mapping[str, Bound] = field(default_factory=dict)  # --assume, in force throughout
    aliases: Mapping[str, str] = field(default_factory=dict)  # --assume a==b: b read as a
    premises: tuple[str, ...] = ()  # the --assume statements, as reported

    def to_json(self) -> OptimizeJSON:
        b, a = self.before, self.after
        return {"shapeflow_version": __version__, "schema": SCHEMA, "changed": self.changed,
                "before": {"nodes": b.get("nodes", 0), "Squeeze": b.get("Squeeze", 0), "Unsqueeze": b.get("Unsqueeze", 0)},
                "after": {"nodes": a.get("nodes", 0), "Squeeze": a.get("Squeeze", 0), "Unsqueeze": a.get("Unsqueeze", 0)},
                "rewrites": dict(self.rewrites), "rounds": self.rounds}


def count_ops(graph: ModelGraph) -> dict[str, int]:
    """Node count (every scope) and ai.onnx Squeeze/Unsqueeze counts."""
    counts = {"nodes": len(graph.nodes), "Squeeze": 0, "Unsqueeze": 0}
    for info in graph.nodes:
        op = info.op_type  # from the index: fetching every NodeProto would cost memory
        if op in COUNTED_OPS and info.domain == "":
            counts[op] += 1
    return counts


def counts_after(graph: ModelGraph, edit: "Editor") -> dict[str, int]:
    """count_ops of the model a round wrote, from the round's index and the editor."""
    counts = {"nodes": len(graph.nodes) - len(edit.deleted) + edit.created, "Squeeze": 0, "Unsqueeze": 0}
    deleted = edit.deleted
    for nid, info in enumerate(graph.nodes):
        op = info.op_type
        if op in COUNTED_OPS and info.domain == "" and nid not in deleted:
            counts[op] += 1
    for domain, op in edit.created_ops():
        if op in COUNTED_OPS and domain == "":
            counts[op] += 1
    return counts


__all__ = ["COUNTED_OPS", "Candidate", "OptimizeResult", "count_ops", "counts_after"]
