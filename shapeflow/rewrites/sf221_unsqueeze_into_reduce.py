"""SF221 unsqueeze-into-reduce: an Unsqueeze that puts back the axes a Reduce dropped is keepdims=1."""

from __future__ import annotations

from typing import Any, NamedTuple

from ..codes import INFO, Code
from ..passes.context import RoundContext, fmt_axes
from ..passes.edit import Editor
from ..passes.match import Match, NoMatch, Result, not_applicable
from ..passes.pattern import (
    DATA_INPUT, Bound, NoFunctionAttributes, Op, exclusive_cone, overridable_problem, tensor_of,
)
from ..passes.spec import Rewrite

# The opset from which a Reduce's axes are input 1 (before: the ``axes`` attribute), and with it
# ``noop_with_empty_axes``. ArgMax/ArgMin take one ``axis`` attribute (default 0) at every opset.
AXES_INPUT_SINCE = {
    "ReduceSum": 13, "ReduceMean": 18, "ReduceProd": 18, "ReduceMin": 18, "ReduceMax": 18,
    "ReduceL1": 18, "ReduceL2": 18, "ReduceLogSum": 18, "ReduceLogSumExp": 18, "ReduceSumSquare": 18,
}
ARG_OPS = ("ArgMax", "ArgMin")
REDUCE_OPS = (*AXES_INPUT_SINCE, *ARG_OPS)

_KEEPS = not_applicable("the reduction keeps its axes (keepdims is not 0)")


class KeepDims(NamedTuple):
    red: int  # the Reduce, which takes keepdims=1 and the Unsqueeze's output


def reduced_axes(ctx: RoundContext, red: int, rank: int) -> tuple[int, ...] | NoMatch:
    """The sorted, normalised axes that Reduce (ArgMax, ArgMin) ``red`` removes with keepdims=0,
    or why they are not known."""
    info = ctx.info(red)
    op = info.op_type
    if op in ARG_OPS:
        axis = ctx.int_attribute(red, "axis")
        raw: tuple[int, ...] = (0 if axis is None else axis,)
    elif (info.since_version or 0) >= AXES_INPUT_SINCE[op]:
        names = info.inputs
        if len(names) < 2 or not names[1]:
            raw = ()
        else:
            problem = overridable_problem(ctx, red, "the axes")
            if problem is not None:
                return problem
            t = tensor_of(ctx, info.scope, names[1])
            if t is None or t.value is None or any(type(v) is not int for v in t.value):
                return NoMatch(f"{ctx.display(red)}: axes not known before run time")
            raw = tuple(t.value)  # type: ignore[arg-type]  # ints: checked above
        if not raw and ctx.int_attribute(red, "noop_with_empty_axes"):
            return NoMatch(f"{ctx.display(red)}: empty axes with noop_with_empty_axes=1 reduce nothing")
    else:
        found: tuple[int, ...] | None = None
        if info.has_attrs:
            for a in ctx.peek(red).attribute:
                if a.name == "axes":
                    found = tuple(int(v) for v in a.ints)
        if found is not None and not found:
            return NoMatch(f"{ctx.display(red)}: an empty axes attribute")
        raw = found or ()
    if not raw:  # every axis
        return tuple(range(rank))
    axes = tuple(a + rank if a < 0 else a for a in raw)
    if any(not 0 <= a < rank for a in axes) or len(set(axes)) != len(axes):
        return NoMatch(f"{ctx.display(red)}: axes {fmt_axes(list(raw))} out of range or repeated")
    return tuple(sorted(axes))


class UnsqueezeIntoReduce(Rewrite):
    """Unsqueeze(Reduce(x, keepdims=0), a) is Reduce(x, keepdims=1) when a are the axes it reduced.

    ## What it does
    Reports an ``Unsqueeze`` whose input is the output of a ``Reduce*`` (``ReduceSum``,
    ``ReduceMean``, ``ReduceMax``, ``ReduceMin``, ``ReduceProd``, ``ReduceL1``, ``ReduceL2``,
    ``ReduceLogSum``, ``ReduceLogSumExp``, ``ReduceSumSquare``), ``ArgMax`` or ``ArgMin`` with
    ``keepdims=0``, read by nothing else, when the positions the Unsqueeze inserts are exactly the
    axes the reduction removed: ``shapeflow optimize`` gives the reduction ``keepdims=1`` (the
    default) and the Unsqueeze's output, and removes the Unsqueeze. The axes are compared
    normalised against the input's rank: the reduction's from its ``axes`` attribute (before opset
    13 for ``ReduceSum``, 18 for the others) or its constant ``axes`` input, none meaning every
    axis (unless ``noop_with_empty_axes`` says to reduce nothing); an ``ArgMax``'s ``axis``
    (default 0); the Unsqueeze's against its output's rank, which is the input's.

    ## Why is this bad?
    It is not wrong, but the Unsqueeze is a node that puts back the 1-dims the reduction was told
    to drop. tf2onnx writes ``tf.reduce_prod(shape)`` then ``tf.stack`` as ``ReduceProd
    (keepdims=0) -> Unsqueeze [0]`` in its Tensordot and layer-norm lowerings.

    ## Example
    ``n = ReduceProd(s, axes=[0], keepdims=0); u = Unsqueeze(n, [0])`` is
    ``u = ReduceProd(s, axes=[0], keepdims=1)``.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` rewrites it: one node
    fewer. The outputs are bit-identical: ``keepdims`` only changes the shape onnxruntime gives
    the result, its kernels compute the same values in the same order either way (brute-forced in
    onnxruntime 1.32 for every op above at opsets 13 and 18, float and integer types, empty
    inputs included), and the elements of a tensor and of it with 1-dims inserted are in the same
    row-major order. That is with onnxruntime's graph optimisations disabled, as every rewrite is
    compared: with its defaults, the keepdims=1 form is what some of its fusions match (a
    ``ReduceMean -> Sub -> Pow -> ReduceMean -> Add -> Sqrt -> Div`` layer norm becomes one
    ``LayerNormalization``, which the Unsqueezes blocked), and those round differently.

    ## When it does not fire
    When the reduction's output has another reader or is a graph output; when the Unsqueeze
    inserts other positions than the reduced axes; when an axes input is not known before run
    time (or the model has initializers that are also graph inputs); when the input's rank is
    unknown; when the nodes' attributes refer to a function's attributes.
    """

    code = Code("SF221", "unsqueeze-into-reduce", INFO, fixable=True)
    order = 270
    pattern = Op("Unsqueeze", Op(REDUCE_OPS, name="red", exclusive=True, guards=(NoFunctionAttributes(),)),
                 guards=(DATA_INPUT,))

    def check(self, ctx: RoundContext, b: Bound) -> Result:
        nid, red = b.root, b["red"]
        if ctx.int_attribute(red, "keepdims") != 0:
            return _KEEPS
        rinfo = ctx.info(red)
        if len(rinfo.outputs) != 1:
            return NoMatch(f"{ctx.display(red)}: several outputs")
        x = tensor_of(ctx, rinfo.scope, rinfo.inputs[0])
        if x is None or x.shape is None:
            return NoMatch(f"{ctx.display(red)}: input rank unknown")
        reduced = reduced_axes(ctx, red, len(x.shape))
        if isinstance(reduced, NoMatch):
            return reduced
        inserted = ctx.unsqueeze_axes(nid)
        if isinstance(inserted, NoMatch):
            return inserted
        if tuple(sorted(inserted)) != reduced:
            return NoMatch(f"{ctx.display(nid)} inserts {fmt_axes(inserted)}, {ctx.display(red)} "
                           f"reduced {fmt_axes(reduced)}")
        info = ctx.info(nid)
        sweeps = exclusive_cone(ctx, nid, tuple(n for n in info.inputs[1:] if n))

        def message() -> str:
            return f"{ctx.display(nid)} puts back the axes {fmt_axes(reduced)} {ctx.display(red)} reduced"

        return Match(nid, writes=(nid, red), sweeps=sweeps, message=message, payload=KeepDims(red))

    def apply(self, ctx: RoundContext, edit: Editor, m: Match[Any]) -> None:
        # The reduction, edited in place (no new node), drops keepdims=0 (1 is the default) and
        # writes the Unsqueeze's output, under its name; its own output was read only there.
        red = m.payload.red
        z = ctx.output(m.nid)
        edit.delete_node(m.nid)
        edit.drop_attribute(red, "keepdims")
        edit.set_output(red, 0, z)


__all__ = ["UnsqueezeIntoReduce", "reduced_axes"]
