"""What the file declares about tensors it does not take as input: graph outputs and value_info.

Inference trusts only the graph inputs' declarations. The others are claims to check (SF112) and,
where inference cannot prove a dim, the best there is to show (``infer`` marks such a dim ``~``:
``[batch, ~4, seq]``; JSON carries the declaration as ``declared_shape``).

A declared dim is read as: its ``dim_value``; a ``dim_param`` that names an input symbol, or that
is an expression over input symbols (``-floordiv(-H, 2)``, ``2*seq + 1``: ``dimexpr``), as that
dim; any other ``dim_param`` as an opaque name (``unk__123``, ``LayerNormalization_dim_1``: a name
the exporter made up, which says nothing about the dim's value).

A declaration *contradicts* inference (``conflict``) where the ranks differ, where both give an
int and the ints differ, or where both give an expression over the same input symbols and the
two differ at *every* binding tried (each symbol from 3 to 1001, all equal or all distinct,
within ``--assume`` and what inference proved; the message names the first). Different
somewhere is not enough: a model runs only on part of its symbols' range, which the file does
not say, and two expressions that agree there are both right. The dynamo exporter declares
``seq`` where inference states ``min(256, seq)`` (a position table of 256: the model fails beyond
it), and ``height//2 - 1`` where inference states a pool's exact length, which differs only at
heights the model refuses. A name against anything, or an int against an expression, is no
contradiction either: the model may fix the name's value, or run only where the expression has
that int.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Collection, Iterator, Mapping

from ._onnx import onnx
from .dimexpr import parse_dim
from .dims import BASE, Bound, Dim, Domain, Shape, Sym, format_shape, substitute
from .graph import ModelGraph
from .inference import Inference, declared_symbols

# A dim as the file writes it: an int (dim_value), a str (dim_param), or None (neither).
Written = int | str | None

GRAPH_OUTPUT = "graph output"
VALUE_INFO = "value_info"

# Values tried when an expression is compared with another: each for every symbol at once, then
# distinct values per symbol. From 3 up: at 0, 1 and 2 models often fail or broadcast, and pooled
# lengths meet there.
_UNIFORM = (3, 4, 5, 7, 16, 100, 1001)
_DISTINCT = ((3, 5, 7, 11, 13, 17, 19, 23), (1000, 1013, 1019, 1021, 1031, 1033, 1039, 1049))


@dataclass(frozen=True, slots=True)
class Declaration:
    scope: int
    name: str
    kind: str  # GRAPH_OUTPUT or VALUE_INFO
    vi: onnx.ValueInfoProto

    @property
    def written(self) -> list[Written] | None:
        """The declared dims as written; None when the declaration has no shape (or no tensor type)."""
        return written_shape(self.vi.type)


def written_shape(tp: onnx.TypeProto) -> list[Written] | None:
    if tp.WhichOneof("value") != "tensor_type" or not tp.tensor_type.HasField("shape"):
        return None
    out: list[Written] = []
    for d in tp.tensor_type.shape.dim:
        which = d.WhichOneof("value")
        if which == "dim_value" and d.dim_value >= 0:
            out.append(int(d.dim_value))
        elif which == "dim_param" and d.dim_param:
            out.append(d.dim_param)
        else:
            out.append(None)
    return out


def declarations(graph: ModelGraph) -> Iterator[Declaration]:
    """Every graph output and value_info entry of every scope (graphs and functions), outputs
    first, each name once per scope (the first declaration of it)."""
    for scope in graph.scopes:
        body = scope.proto
        seen: set[str] = set()
        groups: list[tuple[str, object]] = []
        if isinstance(body, onnx.GraphProto):
            groups.append((GRAPH_OUTPUT, body.output))
        groups.append((VALUE_INFO, getattr(body, "value_info", ())))
        for kind, entries in groups:
            for vi in entries:  # type: ignore[attr-defined]
                if vi.name and vi.name not in seen:
                    seen.add(vi.name)
                    yield Declaration(scope.id, vi.name, kind, vi)


class DimReader:
    """Reads declared dims as dims over a model's input symbols, each distinct text once, in
    ``domain`` (where its min, max and floors are decided)."""

    def __init__(self, symbols: Collection[str], domain: Domain = BASE) -> None:
        self.symbols = frozenset(symbols)
        self.domain = domain
        self._parsed: dict[str, Dim] = {}

    @classmethod
    def of(cls, graph: ModelGraph, domain: Domain = BASE) -> "DimReader":
        return cls(declared_symbols(graph), domain)

    def dim(self, w: Written) -> Dim:
        """An int, an expression over input symbols, or None (no value, or an opaque name)."""
        if not isinstance(w, str):
            return w
        parsed = self._parsed
        if w in parsed:
            return parsed[w]
        d = parsed[w] = parse_dim(w, self.symbols, self.domain)
        return d

    def invented(self, w: Written) -> bool:
        """A name that is no input symbol and no expression over them: made up by the exporter."""
        return isinstance(w, str) and self.dim(w) is None


@dataclass(frozen=True, slots=True)
class Conflict:
    """Where a declaration contradicts inference: the rank (``position`` None), or one dim; for
    two expressions, a binding at which they differ and the two values there."""

    position: int | None
    witness: Mapping[str, int] | None = None
    declared_value: int | None = None
    inferred_value: int | None = None

    def describe(self) -> str:
        if self.witness is None:
            return ""
        at = ", ".join(f"{k}={v}" for k, v in sorted(self.witness.items()))
        return (f"at {at} the declaration gives {self.declared_value}, inference {self.inferred_value} "
                f"(dim {self.position})")


def conflict(written: list[Written] | None, inferred: Shape, reader: DimReader,
             ranges: Mapping[str, Bound] | None = None) -> Conflict | None:
    """The first place where ``written`` contradicts ``inferred`` (see the module docstring)."""
    for c in conflicts(written, inferred, reader, ranges):
        return c
    return None


def conflicts(written: list[Written] | None, inferred: Shape, reader: DimReader,
              ranges: Mapping[str, Bound] | None = None) -> Iterator[Conflict]:
    """Every place where ``written`` contradicts ``inferred``: the rank alone when the ranks
    differ, else each dim that does."""
    if written is None or inferred is None:
        return
    if len(written) != len(inferred):
        yield Conflict(None)
        return
    for k, (w, d) in enumerate(zip(written, inferred)):
        if w is None or d is None:
            continue
        if type(w) is int:
            if type(d) is int and d != w:
                yield Conflict(k)
            continue
        e = reader.dim(w)
        if e is None:
            continue  # an opaque name
        if type(e) is int:  # an expression of ints only ("16"): compared as an int
            if type(d) is int and d != e:
                yield Conflict(k)
            continue
        if type(d) is not Sym or e == d or not e.symbols() <= d.symbols():  # type: ignore[union-attr]
            continue
        found = _witness(e, d, ranges or {})  # type: ignore[arg-type]
        if found is not None:
            env, a, b = found
            yield Conflict(k, env, a, b)


def _witness(e: Sym, d: Sym, ranges: Mapping[str, Bound]) -> tuple[dict[str, int], int, int] | None:
    """The first binding tried, when ``e`` and ``d`` differ at every binding tried; else None."""
    names = sorted(d.symbols())
    envs: list[dict[str, int]] = [{n: v for n in names} for v in _UNIFORM]
    envs += [{n: vals[i % len(vals)] + 2 * (i // len(vals)) for i, n in enumerate(names)} for vals in _DISTINCT]
    first: tuple[dict[str, int], int, int] | None = None
    for env in envs:
        if any(not _within(v, ranges.get(n)) for n, v in env.items()):
            continue
        a, b = substitute(e, env, BASE), substitute(d, env, BASE)  # (every symbol bound: ints)
        if type(a) is not int or type(b) is not int or a == b:
            return None  # they agree somewhere the model may run: no contradiction
        if first is None:
            first = (env, a, b)
    return first


def _within(v: int, bound: Bound | None) -> bool:
    if bound is None:
        return True
    lo, hi = bound
    return (lo is None or v >= lo) and (hi is None or v <= hi)


def unproven(written: list[Written] | None, inferred: Shape) -> bool:
    """Whether the declaration states a dim (an int or a name) that inference leaves unknown: at
    a position whose inferred dim is unknown, or anywhere when the inferred rank is unknown (a
    rank alone, ``[?, ?]``, is not shown). A declaration of another rank contradicts instead
    (``conflict``)."""
    if written is None:
        return False
    if inferred is None:
        return any(w is not None for w in written)
    if len(written) != len(inferred):
        return False
    return any(d is None and w is not None for w, d in zip(written, inferred))


def declared_unproven(graph: ModelGraph, inference: Inference) -> dict[tuple[int, str], list[Written]]:
    """(scope id, tensor) -> its declared dims as written, for every declared tensor whose
    declaration states a dim that inference leaves unknown (what ``infer`` marks ``~``; the first
    such declaration of a name, graph outputs before value_info).

    Runs on every rendering of a model, and after ``infer -o`` every tensor has a declaration: the
    common case, a tensor whose every dim is known, costs a dict lookup (inference shares one tuple
    per distinct shape, so whether a shape is complete is decided once per tuple)."""
    out: dict[tuple[int, str], list[Written]] = {}
    tables = inference.tensors
    complete: dict[int, bool] = {}
    for scope in graph.scopes:
        body = scope.proto
        table = tables[scope.id] if scope.id < len(tables) else {}
        groups = (body.output, body.value_info) if isinstance(body, onnx.GraphProto) else (
            getattr(body, "value_info", ()),)
        for entries in groups:
            for vi in entries:
                name = vi.name
                t = table.get(name)
                shape = t.shape if t is not None else None
                if shape is not None:
                    full = complete.get(id(shape))
                    if full is None:
                        full = complete[id(shape)] = all(d is not None for d in shape)
                    if full:
                        continue  # the common case: inference knows every dim
                key = (scope.id, name)
                if not name or key in out:
                    continue
                written = written_shape(vi.type)
                if unproven(written, shape):
                    out[key] = written  # type: ignore[assignment]
    return out


def marked_dim(w: Written) -> str:
    """A declared-but-unproven dim as ``infer`` prints it: ``~4``, ``~heads``, ``~(2*seq + 1)``."""
    if w is None:
        return "?"
    text = str(w)
    simple = type(w) is int or text.replace("_", "a").isalnum()
    return f"~{text}" if simple else f"~({text})"


def merged_text(inferred: Shape, written: list[Written]) -> str:
    """A shape as ``infer`` prints it with the declared dims in the inferred unknowns: ``[batch,
    ~4, ?]``; an unknown rank with a declared shape prints the declaration as ``~[a, 4, ?]``."""
    if inferred is None:
        return "~[" + ", ".join("?" if w is None else str(w) for w in written) + "]"
    parts = [format_shape((d,))[1:-1] if d is not None else marked_dim(w) for d, w in zip(inferred, written)]
    return "[" + ", ".join(parts) + "]"
