"""``optimize --verify``: run the original and the optimized model and require bit-identical outputs.

Squeeze and Unsqueeze move no data, so a correct rewrite changes no output bit (RELIABILITY.md
section 2.5): outputs are compared as bytes, with the same dtype and shape, never with a tolerance.
Both models run in onnxruntime with graph optimizations off (``ORT_DISABLE_ALL``, so that the
runtime does not rewrite either model on its own) on the same random inputs, once with every
symbolic dim bound to 1 and once bound to a larger value; 1 is where squeezes of symbolic dims
matter, the larger value is where a wrong rewrite shows. When graph inputs share a dim name,
two more runs give that name 1 on the first input that declares it and the larger value on the
others, and the other way round: onnxruntime accepts such inputs (a mask of batch 1 broadcast
against a batch of 3), and the rewrites must keep the outputs there too.

A binding on which the original model fails tells nothing (the rewrites only promise identical
outputs where the original runs); if the original fails on every binding, nothing was verified
and the check fails. onnxruntime is an optional dependency (``pip install 'shapeflow[verify]'``),
imported only here and only when asked for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper

from .errors import UsageError

# onnxruntime's error when a tensor's size contradicts the dim names its memory planner shared
SHARED_NAME_REFUSAL = "Shape mismatch attempting to re-use buffer"
MISSING_ORT = "--verify needs onnxruntime: pip install 'shapeflow[verify]'"
DEFAULT_VALUES = (1, 3)


@dataclass
class VerifyReport:
    """``ok`` when every output matched bit for bit on every binding the original runs on."""

    ok: bool
    runs: list[str] = field(default_factory=list)  # one line per binding: what was run, the outcome
    problems: list[str] = field(default_factory=list)

    def summary(self) -> str:
        if self.ok:
            return "outputs bit-identical (" + "; ".join(self.runs) + ")"
        return "; ".join(self.problems)


def _ort():
    try:
        import onnxruntime
    except ImportError:
        raise UsageError(MISSING_ORT) from None
    return onnxruntime


def _session(ort, model: bytes, directory: str):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    # Failures come back as exceptions and are reported in one line; onnxruntime's own log lines
    # (declared vs actual shapes, a run failing on a binding) would only be noise on stderr.
    so.log_severity_level = 4
    if directory:
        # external data is resolved next to the input model, as when the model is loaded from there
        so.add_session_config_entry("session.model_external_initializers_file_folder_path", directory)
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def _symbols(model: onnx.ModelProto) -> list[str]:
    names: dict[str, None] = {}
    init = {t.name for t in model.graph.initializer}
    for vi in model.graph.input:
        if vi.name in init:
            continue
        tt = vi.type.tensor_type
        for d in tt.shape.dim:
            if d.WhichOneof("value") == "dim_param" and d.dim_param:
                names[d.dim_param] = None
    return list(names)


def _shared(model: onnx.ModelProto) -> dict[str, list[str]]:
    """Dim names declared on two or more graph inputs -> those inputs, in order."""
    init = {t.name for t in model.graph.initializer}
    users: dict[str, list[str]] = {}
    for vi in model.graph.input:
        if vi.name in init or not vi.type.tensor_type.HasField("shape"):
            continue
        for d in vi.type.tensor_type.shape.dim:
            if d.WhichOneof("value") == "dim_param" and d.dim_param:
                names = users.setdefault(d.dim_param, [])
                if vi.name not in names:
                    names.append(vi.name)
    return {k: v for k, v in users.items() if len(v) > 1}


def within(value: int, bound: tuple[int | None, int | None] | None) -> int:
    """``value`` moved into an assumed range (``--assume seq>=3`` binds seq to 3, not 1)."""
    if bound is None:
        return value
    lo, hi = bound
    if lo is not None and value < lo:
        value = lo
    if hi is not None and value > hi:
        value = hi
    return value


def random_inputs(model: onnx.ModelProto, value: int, rng: np.random.Generator,
                  ranges: Mapping[str, tuple[int | None, int | None]] | None = None,
                  others: int | None = None) -> dict[str, np.ndarray]:
    """One random array per graph input (initializers with a default excluded), every symbolic or
    unknown dim set to ``value`` (moved into the symbol's assumed range, if any); with ``others``,
    a dim name already declared by an earlier input is set to ``others`` instead. Integers are 0 or
    1 (valid indices, masks and token ids for any vocabulary); floats are standard normal."""
    init = {t.name for t in model.graph.initializer}
    feeds: dict[str, np.ndarray] = {}
    seen: dict[str, str] = {}  # dim name -> the first input declaring it
    for vi in model.graph.input:
        if vi.name in init:
            continue
        if vi.type.WhichOneof("value") != "tensor_type":
            raise ValueError(f"input '{vi.name}' is not a tensor; --verify cannot make one up")
        tt = vi.type.tensor_type
        if not tt.HasField("shape"):
            raise ValueError(f"input '{vi.name}' has no declared shape; --verify cannot make one up")
        shape = []
        for d in tt.shape.dim:
            which = d.WhichOneof("value")
            if which == "dim_value":
                shape.append(int(d.dim_value))
            else:
                v = value
                if which == "dim_param" and d.dim_param:
                    if others is not None and seen.setdefault(d.dim_param, vi.name) != vi.name:
                        v = others
                shape.append(within(v, ranges.get(d.dim_param) if ranges and which == "dim_param" else None))
        dtype = helper.tensor_dtype_to_np_dtype(tt.elem_type)
        if tt.elem_type == TensorProto.STRING:
            feeds[vi.name] = np.full(shape, "a", dtype=object)
        elif tt.elem_type == TensorProto.BOOL:
            feeds[vi.name] = rng.integers(0, 2, size=shape).astype(bool)
        elif np.issubdtype(dtype, np.integer):
            feeds[vi.name] = rng.integers(0, 2, size=shape).astype(dtype)
        else:
            feeds[vi.name] = rng.standard_normal(shape).astype(dtype)
    return feeds


def _same(a: object, b: object) -> bool:
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        if a.dtype == object:
            return a.tolist() == b.tolist()
        return np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()
    return type(a) is type(b) and repr(a) == repr(b)


def verify_models(original: bytes, optimized: onnx.ModelProto | bytes, *, directory: str = "",
                  values: Sequence[int] = DEFAULT_VALUES, seed: int = 0,
                  feeds: Sequence[Mapping[str, np.ndarray]] | None = None,
                  ranges: Mapping[str, tuple[int | None, int | None]] | None = None) -> VerifyReport:
    """Run both models on the same inputs and compare every output bit for bit.

    ``directory`` is where the original model lives (its external data is read from there).
    ``feeds`` replaces the random inputs (one mapping per run). ``ranges`` are the user's
    assumptions: a symbol is bound only within its range, since the optimized model is only
    promised to match there. Raises ``UsageError`` (exit 2) when onnxruntime is not installed.
    """
    ort = _ort()
    opt_bytes = optimized if isinstance(optimized, bytes) else optimized.SerializeToString()
    report = VerifyReport(ok=True)
    try:
        before = _session(ort, original, directory)
    except Exception as exc:  # onnxruntime cannot load the input: nothing to compare against
        report.ok = False
        report.problems.append(f"onnxruntime cannot load the original model: {_first_line(exc)}")
        return report
    try:
        after = _session(ort, opt_bytes, directory)
    except Exception as exc:
        report.ok = False
        report.problems.append(f"onnxruntime cannot load the optimized model: {_first_line(exc)}")
        return report
    proto = onnx.ModelProto.FromString(original)
    symbols = _symbols(proto)
    runs: list[tuple[str, Mapping[str, np.ndarray], bool]] = []  # (label, inputs, independent)
    if feeds is not None:
        runs = [(f"given inputs #{k}", f, False) for k, f in enumerate(feeds)]
    else:
        plans: list[tuple[int, int | None]] = [(v, None) for v in values]
        shared = _shared(proto)
        if shared and len(values) > 1:
            # each input its own sizes where they share a name (SPEC.md section 4: every input
            # the original runs on); the original fails on most mixes, broadcasting of 1 passes
            plans += [(values[0], values[-1]), (values[-1], values[0])]
        for v, other in plans:
            label = ", ".join(f"{s}={within(v, (ranges or {}).get(s))}" for s in symbols) or f"dims={v}"
            if other is not None:
                label += f" ({', '.join(sorted(shared))} {other} on " + \
                    ", ".join(sorted({n for users in shared.values() for n in users[1:]})) + ")"
            try:
                runs.append((label, random_inputs(proto, v, np.random.default_rng(seed), ranges, other),
                             other is not None))
            except ValueError as exc:
                report.ok = False
                report.problems.append(str(exc))
                return report
    names = [o.name for o in before.get_outputs()]
    quiet = ort.RunOptions()
    quiet.log_severity_level = 4
    ran = 0
    for label, inputs, own in runs:
        try:
            want = before.run(names, dict(inputs), quiet)
        except Exception as exc:
            if own:
                # sizes of their own for shared names: most models refuse them, nothing to report
                report.runs.append(f"{label}: skipped, the original refuses it")
            else:
                report.runs.append(f"{label}: original fails ({_first_line(exc)}), skipped")
            continue
        ran += 1
        try:
            got = after.run(names, dict(inputs), quiet)
        except Exception as exc:
            if own and SHARED_NAME_REFUSAL in str(exc):
                # onnxruntime's memory planner holds the optimized model to the names it shares
                # (a Reshape to its own shape, gone, hid the relation): refused, not a changed value
                report.runs.append(f"{label}: skipped, onnxruntime holds the optimized model to the shared names")
                continue
            report.ok = False
            report.problems.append(f"{label}: the optimized model fails where the original runs: "
                                   f"{_first_line(exc)}")
            continue
        bad = [n for n, a, b in zip(names, want, got) if not _same(a, b)]
        if bad:
            report.ok = False
            report.problems.append(f"{label}: output{'s' if len(bad) > 1 else ''} "
                                   f"{', '.join(repr(n) for n in bad)} differ")
        else:
            report.runs.append(label)
    if ran == 0 and report.ok:
        report.ok = False
        report.problems.append("the original model fails on every binding tried; nothing was verified")
    return report


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__
