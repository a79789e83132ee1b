"""Lint rule anatomy: a code, a kebab-case name, a default severity, and a docstring in four parts
(What it does / Why is this bad / Example / Fix) from which ``shapeflow rules``, docs/rules.md and
the SARIF rule descriptions are generated.

A rule judges facts that inference recorded; it never re-infers. Each condition belongs to one rule.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, ClassVar, Iterable, Iterator

from .. import codes
from ..diagnostics import Diagnostic, Location, Severity
from ..facts import AxisNode, axes_rank

__all__ = [
    "Finding", "LintContext", "Rule", "axes_rank", "describe_repeat", "in_range", "judge_axis_nodes", "repeated_axes",
]

if TYPE_CHECKING:
    from ..graph import ModelGraph
    from ..inference import Inference


@dataclass
class LintContext:
    """What rules see of one model."""

    file: str
    graph: "ModelGraph"
    inference: "Inference"
    options: dict[str, object] = field(default_factory=dict)
    # Work shared by several rules of one run (e.g. the SF2xx rewrite candidates all read),
    # computed by the first rule that needs it. Per context, so nothing outlives one model.
    cache: dict[str, object] = field(default_factory=dict)
    # axis nodes by op type, filtered once: a dozen rules each walk every Squeeze or Unsqueeze
    _by_op: dict[str, list[AxisNode]] = field(default_factory=dict, repr=False)
    _groups: tuple[list[AxisNode], list[int], list[AxisNode]] | None = field(default=None, repr=False)

    def axis_nodes(self, op_type: str | None = None) -> Iterator[AxisNode]:
        if op_type is None:
            return iter(self.inference.axis_nodes)
        found = self._by_op.get(op_type)
        if found is None:
            found = self._by_op[op_type] = [a for a in self.inference.axis_nodes if a.op_type == op_type]
        return iter(found)

    def axis_groups(self) -> tuple[list[AxisNode], list[int], list[AxisNode]]:
        """The axis nodes, the group of each, and the first node of each group: nodes whose facts
        are the same objects, all but their names and place, are one group (a chain of thousands
        of Squeezes makes a few: inference interns shapes and shares the axes of one tensor)."""
        found = self._groups
        if found is None:
            nodes = list(self.inference.axis_nodes)
            index: dict[tuple[object, ...], int] = {}
            groups: list[int] = []
            firsts: list[AxisNode] = []
            for a in nodes:
                ax = a.axes
                # tuples by identity (the nodes keep them alive, so one id is one object), the
                # rest by value; built field by field (cheaper than attrgetter and map(id, ...))
                key = (a.op_type, a.since_version, id(a.input_shape), id(a.output_shape), id(a.normalized),
                       ax.source, id(ax.values), ax.attr_present, ax.input_present, ax.dtype, ax.rank, ax.count)
                gid = index.get(key)
                if gid is None:
                    gid = index[key] = len(firsts)
                    firsts.append(a)
                groups.append(gid)
            found = self._groups = (nodes, groups, firsts)
        return found

    def location_of(self, nid: int) -> Location:
        info = self.graph.nodes[nid]
        # op_type from the index: ``info.proto`` would keep a proto per finding (SF2xx: thousands)
        return Location(self.graph.scopes[info.scope].path, self.graph.display(nid), info.op_type,
                        info.since_version)


# Whether judge_axis_nodes asks once per group (tests/test_fast_paths.py compares with node by node)
GROUPED = True


@dataclass(frozen=True)
class Finding:
    """A rule's verdict on one place; the rule's metadata turns it into a Diagnostic."""

    location: Location
    message: str
    hint: str = ""
    severity: Severity | None = None  # overrides the rule's default (e.g. SF109 on a scalar)


class Rule:
    """A lint rule. A subclass sets ``code``; its name, default severity and fixable flag come from
    the code table, ``shapeflow/codes.py`` (or, for a rule generated from a rewrite spec, from the
    spec's :class:`~shapeflow.codes.Code`, given as ``entry``)."""

    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[Severity]
    fixable: ClassVar[bool] = False
    refusal: ClassVar[bool] = False  # codes.Code.refusal: onnxruntime refuses a model with this finding
    # The rule judges the Squeeze/Unsqueeze facts alone (``ctx.axis_nodes()``), so it can also
    # judge the facts of a function body run at one call site (``rules/calls.py``).
    per_call: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "code" in cls.__dict__:  # (abstract bases such as RewriteHint set none)
            entry = cls.__dict__.get("entry") or codes.lookup(cls.code)
            cls.name, cls.severity, cls.fixable = entry.name, entry.severity, entry.fixable
            cls.refusal = entry.refusal

    def check(self, ctx: LintContext) -> Iterable[Finding]:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- helpers for rules --------------------------------------------------------------------------
    @staticmethod
    def at(a: AxisNode) -> Location:
        return Location(a.graph, a.node, a.op_type, a.since_version)

    @classmethod
    def doc(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def summary(cls) -> str:
        """First sentence of "What it does"."""
        for line in cls.doc().splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                return line
        return cls.name

    @classmethod
    def make(cls, file: str, message: str, *, hint: str = "", location: Location | None = None,
             severity: Severity | None = None) -> Diagnostic:
        """A Diagnostic of this rule built outside ``check`` (from an exception, say)."""
        return Diagnostic(code=cls.code, name=cls.name, severity=severity or cls.severity, file=file,
                          message=message, hint=hint, fixable=cls.fixable, location=location or Location())

    def diagnostics(self, ctx: LintContext) -> Iterator[Diagnostic]:
        for f in self.check(ctx):
            yield Diagnostic(
                code=self.code, name=self.name, severity=f.severity or self.severity, file=ctx.file,
                message=f.message, hint=f.hint, fixable=self.fixable, location=f.location,
            )


def in_range(axes: Iterable[int], rank: int) -> list[int]:
    return [ax for ax in axes if -rank <= ax < rank]


def repeated_axes(axes: tuple[int, ...], rank: int) -> list[tuple[int, list[int]]]:
    """[(position, [raw axes naming it])] for positions named more than once (in-range axes only)."""
    if len(axes) < 2:  # the common case: nothing can repeat
        return []
    seen: dict[int, list[int]] = {}
    for ax in in_range(axes, rank):
        seen.setdefault(ax % rank, []).append(ax)
    return [(p, raws) for p, raws in sorted(seen.items()) if len(raws) > 1]


def describe_repeat(position: int, raws: list[int]) -> str:
    if len(set(raws)) == 1:
        return f"axis {position} repeated"
    names = " and ".join(str(r) for r in dict.fromkeys(raws))
    return f"axis {position} repeated ({names} both map to {position})"


def judge_axis_nodes(ctx: LintContext, judge: Callable[[AxisNode], Iterable[Finding]],
                     op_type: str | None = None) -> Iterator[Finding]:
    """What ``judge`` finds on each axis node of ``op_type`` (all when None), in node order:
    ``for a in ctx.axis_nodes(op_type): yield from judge(a)``. Whether ``judge`` finds anything must
    depend on nothing of a node but its facts (``LintContext.axis_groups``): it is asked once per
    group, then node by node in the groups where it finds something (a chain of clean nodes costs
    a few questions, not a walk per rule)."""
    if not GROUPED:  # (the plain twin)
        for a in ctx.axis_nodes(op_type):
            yield from judge(a)
        return
    nodes, groups, firsts = ctx.axis_groups()
    dirty = [(op_type is None or a.op_type == op_type) and next(iter(judge(a)), None) is not None for a in firsts]
    if not any(dirty):
        return
    for a, gid in zip(nodes, groups):
        if dirty[gid]:
            yield from judge(a)
