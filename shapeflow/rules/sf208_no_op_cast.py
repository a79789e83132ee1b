from __future__ import annotations

from .rewrites import RewriteHint


class NoOpCast(RewriteHint):
    """Reports a Cast that changes no value: to its input's own type, or a double cast (info).

    ## What it does
    Reports ``Cast(x, to=T)`` where ``x`` already has element type ``T``, and
    ``Cast(Cast(x, T1), T2)`` where ``T1`` holds every value of ``x``'s integer or bool type
    exactly (int32 -> int64, uint8 -> int16, bool -> any int...), which is ``Cast(x, T2)`` (and
    ``x`` itself when ``T2`` is ``x``'s type). ``shapeflow optimize`` removes the Casts that do
    nothing. Element types come from inference.

    ## Why is this bad?
    It is not wrong, but each Cast copies the tensor for nothing, and the round trip hides that
    the value is the original one.

    ## Example
    ``Cast(Cast(i: int32, to=INT64), to=INT32)`` is ``i``.

    ## Fix
    ``shapeflow optimize MODEL -o OUT`` or ``shapeflow lint --fix MODEL`` removes them.
    """

    code = "SF208"
