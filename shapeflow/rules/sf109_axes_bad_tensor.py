from __future__ import annotations

from typing import Iterator

from .._onnx import onnx

from ..diagnostics import Severity
from ..facts import AxisNode
from .base import Finding, LintContext, Rule, judge_axis_nodes

TensorProto = onnx.TensorProto


class AxesBadTensor(Rule):
    """Flags an axes input that is not a 1-D int64 tensor.

    ## What it does
    Checks the element type and rank of the axes input of Squeeze-13+ and Unsqueeze-13+. A type
    other than int64 is an error, and so is a rank other than 1, except a scalar on an Unsqueeze,
    which onnxruntime accepts: that is a warning.

    ## Why is this bad?
    The spec types ``axes`` as ``tensor(int64)``: an int32 or float axes tensor fails the type
    check and onnxruntime refuses to load the model. onnxruntime fails at run time on a rank-2
    axes tensor ("An axes tensor must be a vector tensor") and on a scalar one for Squeeze; a
    scalar works for its Unsqueeze, but not in every runtime or converter.

    ## Example
    ``Unsqueeze(x, axes)`` with ``axes`` an int32 initializer ``[0]``.

    ## Fix
    Store the axes as a 1-D int64 tensor (``numpy.array([0], dtype=numpy.int64)``).
    """

    code = "SF109"
    per_call = True

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        return judge_axis_nodes(ctx, lambda a: self._judge(ctx, a))

    def _judge(self, ctx: LintContext, a: AxisNode) -> Iterator[Finding]:
        if not a.axes.input_present:
            return
        dtype, rank = a.axes.dtype, a.axes.rank
        if dtype and dtype != TensorProto.INT64:
            try:
                name = TensorProto.DataType.Name(dtype).lower()
            except ValueError:  # a type number this onnx does not define (a fuzzed or future file)
                name = f"dtype {dtype}"
            yield Finding(self.at(a), f"axes must be int64 (got {name})",
                          "store the axes as an int64 tensor")
        elif rank is not None and rank != 1:
            if rank == 0 and a.op_type == "Unsqueeze":
                yield Finding(self.at(a), "axes should be 1-D (got a scalar; accepted by onnxruntime)",
                              "store the axes as a 1-D tensor", severity=Severity.WARNING)
            else:
                what = "a scalar" if rank == 0 else f"rank {rank}"
                yield Finding(self.at(a), f"axes must be 1-D (got {what}; onnxruntime fails at run time)",
                              "store the axes as a 1-D tensor")
