"""SF239 merge-transpose: two Transposes in a row are one (or none); an identity Transpose goes."""

from __future__ import annotations

from typing import Any, NamedTuple

from ..codes import INFO, Code
from ..passes.context import RoundContext, fmt_axes
from ..passes.edit import Editor
from ..passes.match import Match, NoMatch, Result, not_applicable
from ..passes.pattern import DATA_INPUT, Bound, Bypass, NoFunctionAttributes, Op, must_keep_name, tensor_of
from ..passes.spec import Rewrite

_NOTHING = not_applicable("neither an identity permutation nor the reader of a Transpose")
_UNKNOWN_RANK = not_applicable("no perm attribute and the input rank is unknown")


class _Plan(NamedTuple):
    x: str  # the tensor the merged node reads
    perm: tuple[int, ...] | None  # the composed permutation; None: the identity
    inner: int | None  # the inner Transpose, deleted with the root's rewrite (it has no other reader)
    keep: bool  # the root's output keeps its name: the root becomes an Identity of x


def perm_of(ctx: RoundContext, nid: int) -> tuple[int, ...] | NoMatch:
    """The permutation of Transpose ``nid``: its ``perm`` attribute, or the reversed axes of its
    input (the default) when the rank is known. A perm that is no permutation of 0..r-1 is a
    malformed node that onnxruntime refuses: it is left alone."""
    if ctx.info(nid).has_attrs:
        for a in ctx.peek(nid).attribute:
            if a.name == "perm":
                perm = tuple(a.ints)  # (int64 elements: Python ints already)
                if sorted(perm) != list(range(len(perm))):
                    return NoMatch(f"{ctx.display(nid)}: perm {fmt_axes(list(perm))} is not a permutation")
                return perm
    t = tensor_of(ctx, ctx.sid(nid), ctx.inputs(nid)[0])
    rank = t.rank if t is not None else None
    if rank is None:
        return _UNKNOWN_RANK
    return tuple(range(rank - 1, -1, -1))


def _identity(perm: tuple[int, ...]) -> bool:
    return all(p == k for k, p in enumerate(perm))


class MergeTranspose(Rewrite):
    """Transpose(Transpose(x, p), q) is Transpose(x, [p[q[0]], p[q[1]], ...]); Transpose(x, identity) is x.

    ## What it does
    Reports a ``Transpose`` whose permutation is the identity, and a ``Transpose`` whose input is
    produced by another ``Transpose``. Output axis ``i`` of the pair is axis ``p[q[i]]`` of ``x``,
    so ``shapeflow optimize`` writes one Transpose with that permutation and the inner one goes;
    when the composed permutation is the identity, the readers read ``x`` and both go. A
    Transpose only moves elements, so the result is the same tensor bit for bit, for every element
    type and every size (empty tensors included). A missing ``perm`` means the reversed axes,
    which needs the input's rank.

    ## Why is this bad?
    It is not wrong, but each Transpose copies the whole tensor: two in a row copy it twice for one
    move, and an identity Transpose copies it for nothing. Exporters leave them where layouts meet
    (paddle2onnx's multi-head attention, tf2onnx's NHWC/NCHW boundaries).

    ## Example
    ``t = Transpose(x, perm=[0, 2, 1, 3]); y = Transpose(t, perm=[0, 2, 3, 1])`` is
    ``y = Transpose(x, perm=[0, 1, 3, 2])``; ``Transpose(Transpose(x, [1, 0]), [1, 0])`` is ``x``.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` merges them. Where the
    outer Transpose's output is a graph output (or read by name in a subgraph) and the pair is the
    identity, it becomes an ``Identity`` of ``x`` that keeps the name.

    ## When it does not fire
    When the inner Transpose has other readers (or is a graph output) and the pair is not the
    identity (merging would remove nothing), when an identity Transpose's output must keep its name
    and no inner Transpose goes with it, when a ``perm`` is missing and the rank is unknown, or
    when a ``perm`` refers to a function's attribute.
    """

    code = Code("SF239", "merge-transpose", INFO, fixable=True)
    order = 340
    pattern = Op("Transpose", guards=(DATA_INPUT, NoFunctionAttributes()))
    creates = frozenset({"Transpose"})
    replacement = Bypass("{root} is the identity on '{x}'")

    def check(self, ctx: RoundContext, b: Bound) -> Result:
        nid = b.root
        q = perm_of(ctx, nid)
        inner = ctx.input_producer(nid, 0, "Transpose")
        if inner is not None and ctx.refers_to_function_attributes(inner):
            inner = None
        if inner is None:
            if isinstance(q, NoMatch):
                return q
            if not _identity(q):
                return _NOTHING
            return self.replacement.plan(ctx, nid, ctx.inputs(nid)[0])
        p = perm_of(ctx, inner)
        if isinstance(p, NoMatch):
            return p
        if isinstance(q, NoMatch):  # (the root's rank is the inner's output rank: len(p))
            if q is not _UNKNOWN_RANK:
                return q
            q = tuple(range(len(p) - 1, -1, -1))
        if len(p) != len(q):
            return NoMatch(f"{ctx.display(nid)}: perms of two ranks ({len(p)} and {len(q)})")
        composed = tuple(p[k] for k in q)
        sid = ctx.sid(nid)
        x = ctx.inputs(inner)[0]
        exclusive = ctx.only_reader(sid, ctx.output(inner), nid)

        def pair() -> str:  # (only when the message is shown: most runs log nothing)
            return f"{ctx.display(inner)} then {ctx.display(nid)}"

        if _identity(composed):
            if not must_keep_name(ctx, sid, ctx.output(nid)):
                # (the inner stays for its other readers: read, so that no later rewrite of the
                # round deletes it on the index's word that the root was its only reader)
                return self.replacement.plan(ctx, nid, x, sweeps=(inner,) if exclusive else (),
                                             reads=() if exclusive else (inner,),
                                             message=lambda: f"{pair()} is the identity on '{x}'")
            if not exclusive:
                return NoMatch(f"{ctx.display(nid)}: the pair is the identity, but the output must keep "
                               f"its name and {ctx.display(inner)} has other readers")
            return Match(nid, writes=(nid, inner), message=lambda: f"{pair()} is the identity on '{x}'",
                         payload=_Plan(x, None, inner, True))
        if not exclusive:
            return NoMatch(f"{ctx.display(inner)} has other readers or is a graph output")
        return Match(nid, writes=(nid, inner),
                     message=lambda: f"{pair()} is one Transpose with perm {fmt_axes(list(composed))}",
                     payload=_Plan(x, composed, inner, False))

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[Any]) -> None:
        plan = m.payload
        if not isinstance(plan, _Plan):
            self.replacement.apply(ctx, edit, m)
            return
        nid = m.nid
        if plan.perm is None:  # the identity, under the root's name
            edit.make_identity(nid)
            edit.set_input(nid, 0, plan.x)
        else:
            edit.replace_node(nid, "Transpose", [plan.x], "transpose", perm=list(plan.perm))
        if plan.inner is not None:
            edit.delete_node(plan.inner)


__all__ = ["MergeTranspose"]
