"""The chain pattern: a run of Squeeze/Unsqueeze nodes into a root, matched by one table row.

The cancel and merge rules share one shape: a root node, fed through its data input by a run of
nodes of one op type, each read only by the next. What differs is pure axis algebra
(``shapeflow.axes``) and which replacement is written. A row (:class:`ChainRow`) says that much:

* ``root`` / ``run``: the op types of the root and of the run feeding it (the pattern);
* ``combine``: from the root's axes and the run's (nearest first), how many run nodes take part
  and what is left (:class:`Combined`), or None when the algebra does not apply;
* ``why_not``: the "why not" reason for None, ``says``: what a match does (templates over the
  names and axes of the match, built only when shown);
* ``only_reader``: the guard "the run's nearest node is read only by the root and is no graph
  output", with the reason when it fails (an identity keeps its own guard: ``identity_match``);
* ``check`` and ``before``: the rare extra condition, and a special case tried first.

:class:`ChainRewrite` runs the shared prelude (the run, the axes readers, their first failure as the
reason), then the row, and writes one of four replacements (:class:`ChainPlan`); a run that
composes to the identity is taken out by :func:`identity_match` / :func:`apply_identity`. The
ideas come from tinygrad's PatternMatcher tables and onnxscript's RewriteRule(pattern, check,
replacement).
"""

from __future__ import annotations

from dataclasses import dataclass
from string import Formatter
from typing import Any, Callable, ClassVar, NamedTuple, Sequence

from ..axes import cancel_squeeze_unsqueeze, cancel_unsqueeze_squeeze, compose_squeeze, compose_unsqueeze
from .context import RoundContext, fmt_axes
from .edit import Editor
from .match import Match, Message, NoMatch, Result, not_applicable
from .pattern import Bound, Pattern
from .spec import Rewrite

Axes = tuple[int, ...]

# Runs longer than this are taken over several rounds (keeps a match O(1)).
MAX_RUN = 16

# The axes reader of each op: the normalised positions it inserts or removes, or why not.
READERS: dict[str, Callable[[RoundContext, int], "Axes | NoMatch"]] = {
    "Squeeze": RoundContext.squeeze_axes,
    "Unsqueeze": RoundContext.unsqueeze_axes,
}

# The fields each message template of the rows names (filled in by ChainRewrite.__init_subclass__).
_FIELDS: dict[str, frozenset[str]] = {}

IDENTITY = "identity"  # the run and the root compose to nothing: x itself
REPLACE_RUN = "replace-run"  # the root reads the run's input and gets ``rest``; the run goes
NEAREST_TAKES_OVER = "nearest-takes-over"  # the run's nearest node gets ``rest`` and the root's output
DROP_ROOT = "drop-root"  # the root does nothing: the run's nearest node takes over its output


class Combined(NamedTuple):
    """What the algebra of a row found."""

    depth: int  # run nodes that take part, nearest first
    run_axes: Axes  # their composed axes
    kind: str  # one of the replacements above
    rest: Axes = ()  # the axes the remaining node gets (not for IDENTITY)
    left: str = ""  # the op type that remains, for messages


class ChainPlan(NamedTuple):
    kind: str
    run: tuple[int, ...]  # the run nodes that take part, nearest first
    rest: Axes


class Found(NamedTuple):
    """A chain and its axes, as the prelude read them, for ``check`` and the messages."""

    root: int
    root_axes: Axes
    run: list[int]
    combined: Combined


@dataclass(frozen=True)
class ChainRow:
    root: str
    run: str
    combine: Callable[[Axes, Sequence[Axes]], "Combined | None"]
    why_not: str  # template: {first} {first_axes} {root} {root_axes}
    says: dict[str, str]  # template by Combined.kind: {names} {run_axes} {root} {root_axes} {rest} {left}
    only_reader: str | None = None  # template of the guard's reason: {names} {run_axes} {root} {root_axes}
    check: Callable[[RoundContext, Found], "NoMatch | str"] | None = None  # NoMatch, or a note ("" none)
    before: Callable[[RoundContext, int, list[int]], "Result | None"] | None = None


class Chain(Pattern):
    """A root of op ``root`` fed through its data input by a run of ``run`` nodes (``ctx.chain``:
    nearest first, each read only by the next)."""

    def __init__(self, root: str, run: str) -> None:
        self.root, self.run = root, run
        self.roots = (root,)
        self.after = frozenset({run})

    def bind(self, ctx: RoundContext, nid: int) -> "Bound | NoMatch":  # pragma: no cover - see ChainRewrite
        raise NotImplementedError("ChainRewrite.match walks the run itself")


class ChainRewrite(Rewrite):
    """A rewrite made of a :class:`ChainRow` (subclasses set ``row``, ``code`` and ``order``)."""

    row: ClassVar[ChainRow]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        if "row" in cls.__dict__:
            for template in (*cls.row.says.values(), cls.row.only_reader or ""):
                _FIELDS[template] = frozenset(f for _, f, _, _ in Formatter().parse(template) if f)
            cls.pattern = Chain(cls.row.root, cls.row.run)
            cls._not_after = not_applicable(f"input is not produced by {_article(cls.row.run)}")
        super().__init_subclass__(**kwargs)

    _not_after: ClassVar[NoMatch]

    def match(self, ctx: RoundContext, nid: int) -> Result:
        row = self.row
        chain = ctx.chain(nid, row.run, MAX_RUN)
        if not chain:
            return self._not_after
        if row.before is not None:
            early = row.before(ctx, nid, chain)
            if early is not None:
                return early
        root_axes = READERS[row.root](ctx, nid)
        if isinstance(root_axes, NoMatch):
            return root_axes
        read = READERS[row.run]
        run_axes: list[Axes] = []
        for n in chain:
            x = read(ctx, n)
            if isinstance(x, NoMatch):
                if not run_axes:
                    return x
                break
            run_axes.append(x)
        c = row.combine(root_axes, run_axes)
        if c is None:
            return NoMatch(row.why_not.format(first=ctx.display(chain[0]), first_axes=fmt_axes(run_axes[0]),
                                              root=ctx.display(nid), root_axes=fmt_axes(root_axes)))
        run = chain[:c.depth]

        def say(template: str) -> Callable[[], str]:
            def text() -> str:  # (built when shown; only the fields the template names)
                fields = _FIELDS[template]
                return template.format(
                    names=ctx.display_run(run) if "names" in fields else "",
                    run_axes=fmt_axes(c.run_axes) if "run_axes" in fields else "",
                    root=ctx.display(nid), root_axes=fmt_axes(root_axes) if "root_axes" in fields else "",
                    rest=fmt_axes(c.rest) if c.rest and "rest" in fields else "", left=c.left)
            return text

        note = ""
        if row.check is not None:
            verdict = row.check(ctx, Found(nid, root_axes, run, c))
            if isinstance(verdict, NoMatch):
                return verdict
            note = verdict
        if c.kind == IDENTITY:
            return identity_match(ctx, run, nid, say(row.says[IDENTITY]), note)
        if row.only_reader is not None and not ctx.only_reader(ctx.sid(nid), ctx.output(run[0]), nid):
            return NoMatch(say(row.only_reader)())
        return Match(nid, writes=(nid, *run), message=say(row.says[c.kind]), note=note,
                     payload=ChainPlan(c.kind, tuple(run), c.rest))

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[Any]) -> None:
        plan = m.payload
        if isinstance(plan, IdentityPlan):
            apply_identity(edit, plan)
        else:
            apply_chain(ctx, edit, m.nid, plan)


class IdentityPlan(NamedTuple):
    """``last(...(first(x)))`` is ``x``: how to take the run out."""

    first: int  # the node reading x
    second: int  # the root, producing z
    chain: tuple[int, ...]  # nodes between (root excluded), all deleted with it when drop_chain
    x: str  # the first node's input
    z: str  # the root's output
    keep_name: bool  # z is a graph output or read by name in a subgraph: an Identity keeps it
    drop_chain: bool  # the root is the only reader of the chain: it goes too


def identity_match(ctx: RoundContext, chain: list[int], root: int, message: Message, note: str = "") -> Result:
    """The Match of a run that composes to the identity (shared by the two cancel rules).

    ``chain`` lists the nodes feeding ``root``, nearest first (``RoundContext.chain``). The root
    goes; its readers read ``x`` instead, or, when ``z`` must keep its name, an Identity produces
    it. The chain goes too when the root was its only reader; when it stays for other readers and
    an Identity would be needed, the rewrite would not shrink the graph and does not fire.
    """
    nodes = ctx.graph.nodes
    info = nodes[root]
    sid = info.scope
    consumers = ctx.graph.scopes[sid].consumers
    first = chain[-1]
    x = nodes[first].inputs[0]
    z = info.outputs[0]
    # Whether the chain's nearest node has the root as only reader (``only_reader``), and whether
    # z must keep its name: a graph output, or read by name inside a subgraph. Written out:
    # every cancelled pair asks both.
    outputs = ctx.outputs(sid)
    y = nodes[chain[0]].outputs[0]
    y_readers = consumers.get(y)
    drop = y_readers is not None and len(y_readers) == 1 and y_readers[0] == root and y not in outputs
    z_readers = consumers.get(z, ())
    keep = z in outputs
    if not keep:
        for r in z_readers:  # (loops, not generator expressions, in the code every match runs)
            if z not in nodes[r].inputs:
                keep = True  # read by name in a subgraph
                break
    if keep and not drop:
        return NoMatch(f"{ctx.display(root)}: '{z}' must keep its name (graph output or read by a "
                       f"subgraph) and {ctx.display(chain[0])} has other readers: an Identity would "
                       "not shrink the graph")
    # The run is written (deleted) or read: as long as its first node reads x, no other rewrite
    # of this round can think it is x's only reader and delete x's producer under the readers
    # rewired to x.
    run = tuple(chain)
    if drop:
        writes: tuple[int, ...] = (root, *run)
        reads: tuple[int, ...] = ()
    else:
        writes, reads = (root,), run
    rewires: tuple[int, ...] = ()
    if not keep:
        rewires = tuple([r for r in z_readers if r not in writes]) if len(z_readers) != 1 else \
            (() if z_readers[0] in writes else (z_readers[0],))
    plan = IdentityPlan(first, root, run, x, z, keep, drop)
    return Match(root, writes=writes, reads=reads, rewires=rewires, message=message, note=note, payload=plan)


def apply_identity(edit: Editor, plan: IdentityPlan) -> None:
    sid = edit.g.nodes[plan.second].scope
    if plan.keep_name:
        edit.replace_node(plan.second, "Identity", [plan.x], "identity")
    else:
        edit.replace_uses(sid, plan.z, plan.x)
        edit.delete_node(plan.second)
    if plan.drop_chain:
        for n in plan.chain:
            edit.delete_node(n)


def apply_chain(ctx: RoundContext, edit: Editor, root: int, plan: ChainPlan) -> None:
    """Write a non-identity replacement of a chain match."""
    if plan.kind == DROP_ROOT:
        # The root does nothing: the run's nearest node takes over its output name.
        z = ctx.output(root)
        edit.delete_node(root)
        edit.set_output(plan.run[0], 0, z)
        return
    nearest, top = plan.run[0], plan.run[-1]
    x = ctx.inputs(top)[0]
    if plan.kind == NEAREST_TAKES_OVER:
        # The nearest run node reads x, keeps what is left, and takes over the root's output name.
        z = ctx.output(root)
        edit.delete_node(root)
        edit.set_input(nearest, 0, x)
        edit.set_axes(nearest, plan.rest)
        edit.set_output(nearest, 0, z)
        for n in plan.run[1:]:
            edit.delete_node(n)
        return
    # REPLACE_RUN: the root reads x and does the whole chain's work alone.
    edit.set_input(root, 0, x)
    edit.set_axes(root, plan.rest)
    for n in plan.run:
        edit.delete_node(n)


# -- the algebra of the four rows, over shapeflow.axes ----------------------------------------------


def _composed(compose: Callable[[Sequence[int], Sequence[int]], Axes], run_axes: Sequence[Axes],
              depth: int) -> Axes:
    """The run's first ``depth`` nodes (nearest first) as one node of the same op."""
    acc = run_axes[depth - 1]
    for j in range(depth - 2, -1, -1):
        acc = compose(acc, run_axes[j])
    return acc


def squeezes_then_unsqueeze(a: Axes, run_axes: Sequence[Axes]) -> Combined | None:
    """U(a) after a run of Squeezes: the longest run whose positions are a cancels."""
    for depth in range(len(run_axes), 0, -1):
        b = _composed(compose_squeeze, run_axes, depth)
        if cancel_squeeze_unsqueeze(b, a):
            return Combined(depth, b, IDENTITY)
    return None


def unsqueezes_then_squeeze(b: Axes, run_axes: Sequence[Axes]) -> Combined | None:
    """S(b) after a run of Unsqueezes: the longest run that cancels with b (it removes the most)."""
    for depth in range(len(run_axes), 0, -1):
        a = _composed(compose_unsqueeze, run_axes, depth)
        result = cancel_unsqueeze_squeeze(a, b)
        if result is not None:
            kind, rest = result
            if kind == "identity":
                return Combined(depth, a, IDENTITY)
            if kind == "unsqueeze":
                return Combined(depth, a, NEAREST_TAKES_OVER, tuple(rest), "Unsqueeze")
            return Combined(depth, a, REPLACE_RUN, tuple(rest), "Squeeze")
    return None


def unsqueezes_merged(a: Axes, run_axes: Sequence[Axes]) -> Combined | None:
    """U(a) after a run of Unsqueezes is one Unsqueeze."""
    merged = a
    for a1 in run_axes:
        merged = compose_unsqueeze(a1, merged)
    return Combined(len(run_axes), run_axes[0], REPLACE_RUN, merged)


def squeezes_merged(b: Axes, run_axes: Sequence[Axes]) -> Combined | None:
    """S(b) after a run of Squeezes is one Squeeze."""
    merged = b
    for b1 in run_axes:
        merged = compose_squeeze(b1, merged)
    return Combined(len(run_axes), run_axes[0], REPLACE_RUN, merged)


def _article(op: str) -> str:
    return f"an {op}" if op[0] in "AEIOU" else f"a {op}"


__all__ = [
    "Chain", "ChainPlan", "ChainRewrite", "ChainRow", "Combined", "IdentityPlan", "apply_identity", "identity_match", "DROP_ROOT", "IDENTITY", "MAX_RUN", "NEAREST_TAKES_OVER",
    "READERS", "REPLACE_RUN", "apply_chain", "squeezes_merged", "squeezes_then_unsqueeze",
    "unsqueezes_merged", "unsqueezes_then_squeeze",
]
