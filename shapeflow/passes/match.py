"""What a rewrite says about one root node: a :class:`Match` (what it would do, and the nodes it
claims) or a :class:`NoMatch` (why not)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, TypeVar, Union

P = TypeVar("P")

Message = Union[str, Callable[[], str]]


class Match(Generic[P]):
    """A rewrite a rule would make at root node ``nid``, with the rule's own plan as ``payload``
    (``Match[BypassPlan]``, ``Match[SlicePlan]``...). Immutable by convention; slotted, because
    lint builds one per finding. Everything but the root is given by keyword.

    ``message`` says what it does with node names; it may be given as a function that builds the
    text, because on a large model most messages are never shown (only ``-v`` lists them).

    The claims keep two rewrites of one round from stepping on each other:

    * ``writes``: the nodes the rewrite modifies or deletes (default: the root alone); no other
      rewrite may touch them in the same round.
    * ``reads``: nodes whose content it relies on without changing them; others may read them too,
      but not write them.
    * ``rewires``: nodes that only get one input renamed (the readers of a tensor the rewrite
      replaces with one of the same value, through ``Editor.replace_uses``): two rewrites may
      rename different inputs of one node in the same round; nothing else may write or read a
      renamed node. A reader that an earlier rewrite of the round deleted is no obstacle:
      ``replace_uses`` renames the readers that rewrite gave the tensor in its place.
    * ``sweeps``: the nodes that only fed what the rewrite removes, which the dead-node sweep
      deletes after it (claimed like ``writes``). When the rewrite has to wait for the next round,
      the engine keeps the round's other rewrites off them: they would only be work for the sweep.
    """

    __slots__ = ("nid", "writes", "reads", "rewires", "sweeps", "message", "note", "payload")

    def __init__(self, nid: int, *, writes: tuple[int, ...] | None = None, reads: tuple[int, ...] = (),
                 rewires: tuple[int, ...] = (), sweeps: tuple[int, ...] = (), message: Message = "",
                 note: str = "", payload: P = None) -> None:  # type: ignore[assignment]
        self.nid = nid
        self.writes = (nid,) if writes is None else writes
        self.reads = reads
        self.rewires = rewires
        self.sweeps = sweeps
        self.message = message
        self.note = note  # e.g. "removes a run-time failure when dim 0 (batch) is not 1"
        self.payload = payload

    @property
    def text(self) -> str:
        m = self.message
        return m if isinstance(m, str) else m()

    def at(self, nid: int) -> "Match[P]":
        """The same rewrite, rooted at ``nid`` (a member of a group that one match covers)."""
        return Match(nid, writes=self.writes, reads=self.reads, rewires=self.rewires, sweeps=self.sweeps,
                     message=self.message, note=self.note, payload=self.payload)


@dataclass(frozen=True)
class NoMatch:
    """Why a rule did not fire. ``near`` is False when the rule simply does not apply to the node
    (no producer of the right kind, value not known); only near misses are worth telling."""

    reason: str
    near: bool = True


Result = Union["Match[Any]", NoMatch]


def not_applicable(reason: str) -> NoMatch:
    """A NoMatch for a rule that does not apply at all (rules keep the common ones as module
    constants: most roots get one from most rules, and they are immutable)."""
    return NoMatch(reason, near=False)


__all__ = ["Match", "Message", "NoMatch", "Result", "not_applicable"]
