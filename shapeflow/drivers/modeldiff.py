"""``shapeflow diff A B``: did a re-export or an optimization keep the interface and the shapes?

Two comparisons, each optional:

* the **signature**: the graph inputs and outputs of the main graph, by name: added, removed,
  moved (positional callers feed inputs in order), element type changed, declared shape changed
  (dims as written: ints, ``dim_param`` names, unknown);
* the inferred **shapes** of the tensors present in both models (same graph path, same name):
  *changed* when both models know a dim (or the rank, or the element type) and they differ;
  *known on one side only* when one model knows what the other leaves unknown, which is
  reported but is not a change (an optimization that folds a constant often lets inference see
  more).

And whether each model is still a model: it passes onnx's checker (``full_check``: types and
shapes included) and, with onnxruntime installed, onnxruntime creates a session for it (graph
optimizations off). A model that fails a check the other passes is a difference: a re-export or
an edit that no longer loads is the change a diff must not call "the same". A check both fail
(onnx's checker does not know every runtime's operators) is reported, not counted.

The exit code of the command is 1 when a compared part differs (a signature difference, a
changed shape, or a check one model no longer passes), 0 otherwise.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from .._onnx import onnx
from .analysis import Analysis, analyze, dtype_name
from ..assume import parse_assumptions
from ..dims import shape_to_json
from ..errors import EXIT_CLEAN, EXIT_FINDINGS, UsageError, display_path
from ..io import LoadedModel, load_model
from ..limits import DEFAULT_LIMITS, Limits

JsonShape = list[int | str | None] | None

SAME, CHANGED, REFINED = "same", "changed", "refined"


@dataclass(frozen=True)
class Port:
    """One graph input or output as declared: name, element type and dims as written."""

    name: str
    dtype: str | None
    shape: JsonShape

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "dtype": self.dtype, "shape": self.shape}


@dataclass(frozen=True)
class PortChange:
    kind: str  # "input" | "output"
    name: str
    change: str  # "added" | "removed" | "moved" | "dtype" | "shape"
    a: object = None  # what A declares (dtype, shape, or position), None when absent
    b: object = None

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "name": self.name, "change": self.change, "a": self.a, "b": self.b}


@dataclass(frozen=True)
class TensorChange:
    graph: str
    tensor: str
    a_dtype: str | None
    a_shape: JsonShape
    b_dtype: str | None
    b_shape: JsonShape

    def to_json(self) -> dict[str, object]:
        return {"graph": self.graph, "tensor": self.tensor, "a": {"dtype": self.a_dtype, "shape": self.a_shape},
                "b": {"dtype": self.b_dtype, "shape": self.b_shape}}


NOT_RUN = "not run"  # a check that did not run (onnxruntime not installed, or --no-validate)


@dataclass(frozen=True)
class Validity:
    """Whether a model passes onnx's checker and loads in onnxruntime: None when it does, else the
    reason (one line), or ``NOT_RUN``."""

    checker: str | None
    onnxruntime: str | None

    def to_json(self) -> dict[str, object]:
        return {"checker": self.checker, "onnxruntime": self.onnxruntime}


def validity(loaded: LoadedModel, *, runtime: bool = True) -> Validity:
    """Run onnx's checker (full check) on the model and, when ``runtime`` and onnxruntime is
    installed, create an onnxruntime session for it (its external data read from its folder)."""
    from ..errors import display_path as shown

    try:
        if loaded.external and loaded.directory and os.path.isfile(loaded.path):
            # external data is checked where it lies (load_model has kept it inside the folder)
            onnx.checker.check_model(loaded.path, full_check=True)
        else:
            onnx.checker.check_model(loaded.proto, full_check=True)
        checker: str | None = None
    except Exception as exc:  # onnx raises ValidationError, InferenceError and ValueError
        checker = shown(_first_line(exc))
    ort_reason: str | None = NOT_RUN
    if runtime:
        try:
            import onnxruntime as ort
        except ImportError:
            ort = None
        if ort is not None:
            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            so.log_severity_level = 4
            if loaded.directory:
                so.add_session_config_entry("session.model_external_initializers_file_folder_path",
                                            loaded.directory)
            try:
                ort.InferenceSession(loaded.raw, so, providers=["CPUExecutionProvider"])
                ort_reason = None
            except Exception as exc:
                ort_reason = shown(_first_line(exc))
    return Validity(checker, ort_reason)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


# (key, how a model passes it, how B no longer does, how A fails where B passes)
CHECKS = (("checker", "pass onnx's checker", "no longer passes onnx's checker", "fails onnx's checker"),
          ("onnxruntime", "load in onnxruntime", "no longer loads in onnxruntime", "does not load in onnxruntime"))


def validity_changes(a: Validity, b: Validity) -> list[str]:
    """The checks one model passes and the other fails, one line each."""
    out = []
    for key, _, b_fails, a_fails in CHECKS:
        ra, rb = getattr(a, key), getattr(b, key)
        if NOT_RUN in (ra, rb) or (ra is None) == (rb is None):
            continue
        out.append(f"B {b_fails}: {rb}" if ra is None else f"A {a_fails} (B does not): {ra}")
    return out


@dataclass
class ModelDiff:
    a: str
    b: str
    check_signature: bool = True
    check_shapes: bool = True
    inputs: tuple[list[Port], list[Port]] = field(default_factory=lambda: ([], []))
    outputs: tuple[list[Port], list[Port]] = field(default_factory=lambda: ([], []))
    signature: list[PortChange] = field(default_factory=list)
    shared: int = 0  # tensors present in both models
    only_a: int = 0
    only_b: int = 0
    changed: list[TensorChange] = field(default_factory=list)
    refined: list[TensorChange] = field(default_factory=list)  # known on one side only
    assumptions: list[str] = field(default_factory=list)  # --assume statements in force (either model)
    validity: tuple[Validity, Validity] | None = None  # None: not checked (--no-validate)

    @property
    def same_signature(self) -> bool:
        return not self.signature

    @property
    def validity_changes(self) -> list[str]:
        return validity_changes(*self.validity) if self.validity is not None else []

    @property
    def exit_code(self) -> int:
        differs = ((self.check_signature and bool(self.signature)) or (self.check_shapes and bool(self.changed))
                   or bool(self.validity_changes))
        return EXIT_FINDINGS if differs else EXIT_CLEAN

    def to_json(self) -> dict[str, object]:
        doc: dict[str, object] = {"a": self.a, "b": self.b}
        if self.check_signature:
            doc["signature"] = {
                "same": self.same_signature,
                "inputs": {"a": [p.to_json() for p in self.inputs[0]], "b": [p.to_json() for p in self.inputs[1]]},
                "outputs": {"a": [p.to_json() for p in self.outputs[0]],
                            "b": [p.to_json() for p in self.outputs[1]]},
                "differences": [c.to_json() for c in self.signature],
            }
        if self.check_shapes:
            doc["shapes"] = {
                "shared": self.shared, "only_a": self.only_a, "only_b": self.only_b,
                "changed": [c.to_json() for c in self.changed],
                "known_on_one_side": [c.to_json() for c in self.refined],
            }
        if self.assumptions:  # only an output that used assumptions carries them (SPEC.md section 6)
            doc["assumptions"] = list(self.assumptions)
        if self.validity is not None:
            doc["validity"] = {"a": self.validity[0].to_json(), "b": self.validity[1].to_json(),
                               "differences": self.validity_changes}
        doc["exit_code"] = self.exit_code
        return doc


# -- comparing --------------------------------------------------------------------------------------


def _declared(vi: onnx.ValueInfoProto) -> Port:
    tp = vi.type
    which = tp.WhichOneof("value")
    if which != "tensor_type":
        return Port(vi.name, which, None)  # a sequence, a map, an optional: compared by kind only
    tt = tp.tensor_type
    if not tt.HasField("shape"):
        return Port(vi.name, dtype_name(tt.elem_type), None)
    dims: list[int | str | None] = []
    for d in tt.shape.dim:
        kind = d.WhichOneof("value")
        dims.append(int(d.dim_value) if kind == "dim_value" else d.dim_param if kind == "dim_param" and d.dim_param
                    else None)
    return Port(vi.name, dtype_name(tt.elem_type), dims)


def compare_ports(kind: str, a: list[Port], b: list[Port]) -> list[PortChange]:
    out: list[PortChange] = []
    in_a = {p.name: (k, p) for k, p in enumerate(a)}
    in_b = {p.name: (k, p) for k, p in enumerate(b)}
    for p in a:
        if p.name not in in_b:
            out.append(PortChange(kind, p.name, "removed", a=p.to_json()))
    for p in b:
        if p.name not in in_a:
            out.append(PortChange(kind, p.name, "added", b=p.to_json()))
    common_a = [p.name for p in a if p.name in in_b]
    common_b = [p.name for p in b if p.name in in_a]
    for name in common_a:
        ka, pa = in_a[name]
        kb, pb = in_b[name]
        if common_a.index(name) != common_b.index(name):
            out.append(PortChange(kind, name, "moved", a=ka, b=kb))
        if pa.dtype != pb.dtype:
            out.append(PortChange(kind, name, "dtype", a=pa.dtype, b=pb.dtype))
        if pa.shape != pb.shape:
            out.append(PortChange(kind, name, "shape", a=pa.shape, b=pb.shape))
    return out


def compare_shape(a: JsonShape, b: JsonShape) -> str:
    """SAME, CHANGED (both know a dim or the rank and they differ) or REFINED (one side knows what
    the other does not, and nothing known differs)."""
    if a == b:
        return SAME
    if a is None or b is None:
        return REFINED
    if len(a) != len(b):
        return CHANGED
    result = SAME
    for da, db in zip(a, b):
        if da == db:
            continue
        if da is None or db is None:
            result = REFINED
        else:
            return CHANGED
    return result


def _tensor_table(analysis: Analysis) -> dict[tuple[str, str], tuple[str | None, JsonShape]]:
    out: dict[tuple[str, str], tuple[str | None, JsonShape]] = {}
    shapes: dict[int, JsonShape] = {}
    for scope, table in zip(analysis.graph.scopes, analysis.inference.tensors):
        for name, t in table.items():
            if t is None:
                out[scope.path, name] = (None, None)
                continue
            js = shapes.get(id(t.shape))
            if js is None and t.shape is not None:
                js = shapes[id(t.shape)] = shape_to_json(t.shape)
            out[scope.path, name] = (dtype_name(t.dtype), js)
    return out


def diff_analyses(a: Analysis, b: Analysis, *, signature: bool = True, shapes: bool = True) -> ModelDiff:
    """Compare two analysed models (see the module docstring)."""
    result = ModelDiff(a.path, b.path, check_signature=signature, check_shapes=shapes)
    ga, gb = a.loaded.proto.graph, b.loaded.proto.graph
    result.inputs = ([_declared(v) for v in ga.input], [_declared(v) for v in gb.input])
    result.outputs = ([_declared(v) for v in ga.output], [_declared(v) for v in gb.output])
    if signature:
        result.signature = (compare_ports("input", *result.inputs) + compare_ports("output", *result.outputs))
    if shapes:
        ta, tb = _tensor_table(a), _tensor_table(b)
        for key, (dtype_a, shape_a) in ta.items():
            other = tb.get(key)
            if other is None:
                result.only_a += 1
                continue
            result.shared += 1
            dtype_b, shape_b = other
            verdict = compare_shape(shape_a, shape_b)
            if dtype_a != dtype_b:
                if dtype_a is not None and dtype_b is not None:
                    verdict = CHANGED
                elif verdict == SAME:
                    verdict = REFINED
            if verdict != SAME:
                change = TensorChange(key[0], key[1], dtype_a, shape_a, dtype_b, shape_b)
                (result.changed if verdict == CHANGED else result.refined).append(change)
        result.only_b = len(tb) - result.shared
    return result


def diff_models(a: str, b: str, *, dims: Mapping[str, int] | None = None, signature: bool = True,
                shapes: bool = True, limits: Limits = DEFAULT_LIMITS, assume: Sequence[str] = (),
                validate: bool = True) -> ModelDiff:
    """Load, infer and compare two model files (no lint rules run); with ``validate``, check that
    each still passes onnx's checker and loads in onnxruntime (``validity``). Raises
    ``ShapeflowError`` for a model that cannot be read or understood. ``assume`` (``--assume``)
    applies to each model that has the symbols it names; one naming a symbol of neither is a usage
    error."""
    premises = parse_assumptions(assume)
    loaded = [load_model(path, limits) for path in (a, b)]
    analyses = [analyze(m, dims=dims, limits=limits, rules=[], assumptions=premises, only_known_symbols=True)
                for m in loaded]
    used = {n for x in analyses for n in parse_assumptions(x.inference.premises).names()}
    for name in sorted(premises.names() - used):
        raise UsageError(f"--assume names '{name}', which is a symbol of neither model")
    result = diff_analyses(analyses[0], analyses[1], signature=signature, shapes=shapes)
    result.assumptions = sorted({p for x in analyses for p in x.inference.premises})
    if validate:
        result.validity = (validity(loaded[0]), validity(loaded[1]))
    return result


# -- text -------------------------------------------------------------------------------------------

# Shapes known on one side only are listed up to this many in text (JSON lists them all).
MAX_REFINED_LINES = 20


def _shape_text(shape: object) -> str:
    if not isinstance(shape, list):
        return "?"
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _port_text(c: PortChange) -> str:
    where = f"{c.kind} '{c.name}'"
    if c.change == "added":
        return f"{where}: only in B"
    if c.change == "removed":
        return f"{where}: only in A"
    if c.change == "moved":
        return f"{where}: position {c.a} -> {c.b}"
    if c.change == "dtype":
        return f"{where}: dtype {c.a} -> {c.b}"
    return f"{where}: shape {_shape_text(c.a)} -> {_shape_text(c.b)}"


def _tensor_text(c: TensorChange) -> str:
    def side(dtype: str | None, shape: JsonShape) -> str:
        return f"{dtype or '?'} {_shape_text(shape)}"

    graph = "" if c.graph == "main" else f"{c.graph}: "
    return f"{graph}'{c.tensor}': {side(c.a_dtype, c.a_shape)} -> {side(c.b_dtype, c.b_shape)}"


def _validity_text(d: ModelDiff) -> list[str]:
    if d.validity is None:
        return []
    a, b = d.validity
    changes = d.validity_changes
    if changes:
        return [f"validity: {len(changes)} difference{'s' * (len(changes) != 1)}", *(f"  {c}" for c in changes)]
    passed = [verb for key, verb, _, _ in CHECKS if getattr(a, key) is None]
    failed = [f"  both fail to {verb} (not a difference): A: {getattr(a, key)}; B: {getattr(b, key)}"
              for key, verb, _, _ in CHECKS if getattr(a, key) not in (None, NOT_RUN)]
    skipped = [key for key, *_ in CHECKS if getattr(a, key) == NOT_RUN or getattr(b, key) == NOT_RUN]
    head = "validity: " + ("both " + " and ".join(passed) if passed else "no check passed by either")
    if skipped:
        head += " (onnxruntime not installed: not loaded)"
    return [head, *failed]


def diff_text(d: ModelDiff) -> str:
    lines: list[str] = [f"A: {d.a}", f"B: {d.b}"]
    lines.extend(_validity_text(d))
    if d.check_signature:
        ins, outs = len(d.inputs[0]), len(d.outputs[0])
        if d.same_signature:
            lines.append(f"signature: same ({ins} input{'s' * (ins != 1)}, {outs} output{'s' * (outs != 1)})")
        else:
            lines.append(f"signature: {len(d.signature)} difference{'s' * (len(d.signature) != 1)}")
            lines.extend(f"  {_port_text(c)}" for c in d.signature)
    if d.assumptions:
        lines.append(f"assuming {', '.join(d.assumptions)}")
    if d.check_shapes:
        lines.append(f"shapes: {d.shared:,} shared tensors, {len(d.changed):,} changed, {len(d.refined):,} known "
                     f"on one side only ({d.only_a:,} tensors only in A, {d.only_b:,} only in B)")
        lines.extend(f"  changed: {_tensor_text(c)}" for c in d.changed)
        for c in d.refined[:MAX_REFINED_LINES]:
            lines.append(f"  known on one side: {_tensor_text(c)}")
        if len(d.refined) > MAX_REFINED_LINES:
            lines.append(f"  ... {len(d.refined) - MAX_REFINED_LINES:,} more known on one side (--format json lists all)")
    # names come from the models: no newline or terminal escape gets through
    return "\n".join(line if line.isprintable() else display_path(line) for line in lines)
