"""Rewrite anatomy: a rewrite is one spec, in one file of ``shapeflow/rewrites/``.

A spec is a subclass of :class:`Rewrite` that says, in this order:

* its identity, ``code``: a :class:`~shapeflow.codes.Code` (``SF2xx``, its one name, ``info``,
  fixable). The same code and name serve lint (the SF2xx rule that reports the rewrite's
  candidates is generated from the spec), ``optimize --rules``, ``lint --select``/``--ignore``, the
  JSON reports and ``-v``. ``aliases`` are former names, still accepted (deprecated).
* its documentation, the class docstring: a first line stating the identity it applies, then the
  sections of a lint rule (``## What it does``, ``## Why is this bad?``, ``## Example``, ``## Fix``)
  and ``## When it does not fire``; ``shapeflow rules``, docs/rules.md and SARIF come from it.
* ``order``: its priority among the rewrites tried on one root (lower first; see
  ``shapeflow/rewrites/__init__.py`` for the bands).
* ``pattern``: what it matches (:mod:`.pattern`): its root op types, the producers it needs, its
  guards. ``check(ctx, b)`` takes the pattern's bindings and returns a :class:`~.match.Match`
  (with its claims and a plan as payload) or a :class:`~.match.NoMatch` saying why not.
* ``apply(ctx, edit, m)``: the replacement, written through the :class:`~.edit.Editor`, the only
  code that touches the ModelProto.
* its effects, for the engine's scheduling: ``creates``, the op types of the nodes it makes on
  which a rewrite may still fire (an Identity that only keeps a graph output's name is final, and
  not listed); the nodes it leaves to the dead-node sweep are its matches' ``sweeps``;
  ``reveals``: its replacement gives a tensor a value inference did not know (a fold of an op
  inference does not evaluate), so the round after one where it fired infers the whole model
  again instead of carrying inference over (``reinfer``), and what reads that value may fold.

``repair = True`` marks the repair of an error-level finding (``lint --fix`` runs it before the
rewrites, ``optimize`` never): it takes the code of the lint rule whose finding it repairs.

``match`` (pattern, then check) is pure; only ``apply`` changes the model. The engine
(:mod:`.fixpoint`) does the rest: which roots to visit, claims, rounds, the sweep.
"""

from __future__ import annotations

import inspect
import re
from typing import TYPE_CHECKING, Any, ClassVar

from ..codes import Code
from .context import RoundContext
from .match import Match, NoMatch, Result
from .pattern import Bound, Pattern

if TYPE_CHECKING:
    from .edit import Editor


class Documented:
    """A step of the engine with a code and its documentation (a rewrite, or the dead-node sweep):
    what the registry turns into a lint rule, ``shapeflow rules`` and docs/rules.md."""

    code: ClassVar[Code | None] = None
    name: ClassVar[str] = ""
    aliases: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        code = cls.__dict__.get("code")
        if isinstance(code, Code) and "name" not in cls.__dict__:
            cls.name = code.name

    @classmethod
    def doc(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def summary(cls) -> str:
        """The first line of the docstring (a rewrite's: the identity it applies)."""
        for line in cls.doc().splitlines():
            if line.strip():
                return line.strip()
        return cls.name

    @classmethod
    def sections(cls) -> dict[str, str]:
        """The docstring's parts: ``summary`` (its first paragraph) and one per ``## Heading``."""
        return doc_sections(cls.doc())


class Rewrite(Documented):
    """Base class of the rewrite specs; see the module docstring for the anatomy."""

    order: ClassVar[int] = 1000
    pattern: ClassVar[Pattern]
    creates: ClassVar[frozenset[str]] = frozenset()
    reveals: ClassVar[bool] = False
    repair: ClassVar[bool] = False
    # read from the pattern (``__init_subclass__``): what the engine's dispatch looks at
    roots: ClassVar[tuple[str, ...]] = ()
    after: ClassVar[frozenset[str] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "pattern" in cls.__dict__:
            cls.roots = cls.pattern.roots
            cls.after = cls.pattern.after

    # -- what the engine calls -----------------------------------------------------------------------
    def match(self, ctx: RoundContext, nid: int) -> Result:
        """The pattern's bindings at root ``nid``, judged by ``check``."""
        b = self.pattern.bind(ctx, nid)
        if type(b) is NoMatch:
            return b
        return self.check(ctx, b)  # type: ignore[arg-type]

    def check(self, ctx: RoundContext, b: Bound) -> Result:  # pragma: no cover - abstract
        raise NotImplementedError

    def apply(self, ctx: RoundContext, edit: "Editor", m: Match[Any]) -> None:  # pragma: no cover
        raise NotImplementedError

    def settled(self, ctx: RoundContext, nid: int) -> bool:
        """True when no later round can make this rewrite fire at root ``nid`` (a stable guard of
        its pattern fails there): the engine runs no round for it."""
        return self.pattern.settled(ctx, nid)


def doc_sections(text: str) -> dict[str, str]:
    """A docstring's parts: ``summary`` (what comes before the first heading) and one entry per
    ``## Heading``, in order."""
    out: dict[str, str] = {}
    current = "summary"
    lines: list[str] = []
    for line in text.splitlines():
        m = re.match(r"^##\s+(.*?)\s*$", line)
        if m:
            out[current] = "\n".join(lines).strip()
            current, lines = m.group(1), []
        else:
            lines.append(line)
    out[current] = "\n".join(lines).strip()
    return out


__all__ = ["Documented", "Rewrite", "doc_sections"]
