"""``optimize --verify``: run the original and the optimized model and require bit-identical outputs.

A rewrite keeps what the graph computes (RELIABILITY.md section 2.5), so outputs are compared as
bytes, with the same dtype and shape, never with a tolerance. What is compared is the graphs'
semantics, not onnxruntime's choices about how to run them: both sessions run with graph
optimizations off (``ORT_DISABLE_ALL``: no fusion rewrites either model), without pre-packing
of constant weights (``session.disable_prepacking``: a MatMul whose weight is an initializer is
packed and summed in another order than one whose weight comes through an Identity, so removing
the Identity moved an ALBERT output by 2e-7 although the graph computes the same), and on one
thread (no partition of a reduction depends on the machine).

Input sizes are ones the model accepts where that is known: a ``--dim`` binding is used as
given; otherwise each symbolic dim takes a small and a larger value (1 and ``--verify-value``),
moved into its range (``--assume`` and the ranges inference proves, such as a first Conv's
kernel: ``samples >= 400``, the larger value then a little above the smallest). A size on which
the original model fails is tried again with the free dims doubled, a few times. When graph
inputs share a dim name, two more runs give that name the small size on the first input that
declares it and the larger size on the others, and the other way round: onnxruntime accepts such
inputs (a mask of batch 1 broadcast against a batch of 3), and the rewrites must keep the outputs
there too (README, Semantics). Sizes on which
the original fails tell nothing (rewrites promise identical outputs where the original runs).

Three outcomes (``VerifyReport.status``): ``verified``; ``differs`` (an output differs, or the
optimized model fails or cannot be loaded where the original runs: optimize exits 1), with the
largest absolute difference; ``not-verified`` (the original cannot be loaded, or runs at none of
the sizes tried: optimize exits 2), with onnxruntime's reason. ``culprit`` finds the rewrite
rule responsible for a difference by bisection over the rules that fired. onnxruntime is an
optional dependency (``pip install -e ".[verify]"``), imported only here and only when asked for.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper

from ..errors import EXIT_CLEAN, EXIT_FINDINGS, EXIT_REJECTED, UsageError

# onnxruntime's error when a tensor's size contradicts the dim names its memory planner shared
SHARED_NAME_REFUSAL = "Shape mismatch attempting to re-use buffer"
MISSING_ORT = "--verify needs onnxruntime: pip install -e \".[verify]\" (or pip install onnxruntime)"
DEFAULT_VALUES = (1, 3)
VERIFIED, DIFFERS, NOT_VERIFIED = "verified", "differs", "not-verified"
EXIT_CODES = {VERIFIED: EXIT_CLEAN, DIFFERS: EXIT_FINDINGS, NOT_VERIFIED: EXIT_REJECTED}
ESCALATIONS = 6  # a size the original refuses is tried again with its free dims doubled, this often
MAX_ELEMENTS = 1 << 24  # nor beyond this many input elements in all (64 MB of float32)

Range = tuple[int | None, int | None]


@dataclass
class VerifyReport:
    """What ``--verify`` found (see the module docstring for the three statuses)."""

    status: str = VERIFIED
    runs: list[str] = field(default_factory=list)  # the sizes compared, bit-identical ("batch=1, seq=1")
    skipped: list[str] = field(default_factory=list)  # sizes the original refuses, with onnxruntime's reason
    problems: list[str] = field(default_factory=list)  # what differs, or why nothing was verified
    max_abs_diff: float | None = None  # over the outputs that differ (None: not numbers, or no difference)
    rewrite: str | None = None  # the rewrite rule responsible for a difference, when bisection found one
    failing: Mapping[str, np.ndarray] | None = field(default=None, repr=False)  # the inputs of a difference

    @property
    def ok(self) -> bool:
        return self.status == VERIFIED

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.status]

    def summary(self) -> str:
        if self.status == VERIFIED:
            text = "outputs bit-identical (" + "; ".join(self.runs) + ")"
            return text + (" (the only size the original runs at)" if len(self.runs) == 1 and self.skipped else "")
        text = "; ".join(self.problems)
        if self.status == DIFFERS:
            if self.max_abs_diff is not None:
                text += f" (max abs diff {self.max_abs_diff:.3g})"
            if self.rewrite:
                text += f"; rewrite responsible: {self.rewrite}"
        return text

    def to_json(self) -> dict[str, object]:
        return {"status": self.status, "sizes": list(self.runs), "skipped": list(self.skipped),
                "problems": list(self.problems),
                "max_abs_diff": None if self.max_abs_diff is None or math.isnan(self.max_abs_diff)
                else self.max_abs_diff,
                "rewrite": self.rewrite}


def _ort() -> Any:
    try:
        import onnxruntime
    except ImportError:
        raise UsageError(MISSING_ORT) from None
    return onnxruntime


def _session(ort: Any, model: bytes, directory: str) -> Any:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    # the graph's semantics, not the kernels' choices: no pre-packed weights, one thread
    so.add_session_config_entry("session.disable_prepacking", "1")
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    # Failures come back as exceptions and are reported in one line; onnxruntime's own log lines
    # (declared vs actual shapes, a run failing on a binding) would only be noise on stderr.
    so.log_severity_level = 4
    if directory:
        # external data is resolved next to the input model, as when the model is loaded from there
        so.add_session_config_entry("session.model_external_initializers_file_folder_path", directory)
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def _free_dims(model: onnx.ModelProto) -> list[str]:
    """The names of the graph inputs' dims that are not numbers, in order: each ``dim_param``, and
    ``?k`` for the k-th dim that has neither a value nor a name."""
    names: dict[str, None] = {}
    init = {t.name for t in model.graph.initializer}
    unnamed = 0
    for vi in model.graph.input:
        if vi.name in init or vi.type.WhichOneof("value") != "tensor_type":
            continue
        for d in vi.type.tensor_type.shape.dim:
            which = d.WhichOneof("value")
            if which == "dim_param" and d.dim_param:
                names[d.dim_param] = None
            elif which != "dim_value":
                names[f"?{unnamed}"] = None
                unnamed += 1
    return list(names)


def _shared(model: onnx.ModelProto) -> dict[str, list[str]]:
    """Dim names declared on two or more graph inputs -> those inputs, in order."""
    init = {t.name for t in model.graph.initializer}
    users: dict[str, list[str]] = {}
    for vi in model.graph.input:
        if vi.name in init or vi.type.WhichOneof("value") != "tensor_type":
            continue
        for d in vi.type.tensor_type.shape.dim:
            if d.WhichOneof("value") == "dim_param" and d.dim_param:
                names = users.setdefault(d.dim_param, [])
                if vi.name not in names:
                    names.append(vi.name)
    return {k: v for k, v in users.items() if len(v) > 1}


def within(value: int, bound: Range | None) -> int:
    """``value`` moved into a range (``--assume seq>=3`` binds seq to 3, not 1)."""
    if bound is None:
        return value
    lo, hi = bound
    if lo is not None and value < lo:
        value = lo
    if hi is not None and value > hi:
        value = hi
    return value


def random_inputs(model: onnx.ModelProto, value: int | Mapping[str, int], rng: np.random.Generator,
                  ranges: Mapping[str, Range] | None = None,
                  others: Mapping[str, int] | None = None) -> dict[str, np.ndarray]:
    """One random array per graph input (initializers with a default excluded). ``value``: the
    size of every dim that is not a number (moved into the symbol's range, if any), or a size per
    name (``_free_dims``); with ``others``, a dim name already declared by an earlier input takes
    its size from ``others`` instead. Integers are 0 or 1 (valid indices, masks and token ids for any
    vocabulary); floats are standard normal."""
    init = {t.name for t in model.graph.initializer}
    feeds: dict[str, np.ndarray] = {}
    unnamed = 0
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
                continue
            name = d.dim_param if which == "dim_param" and d.dim_param else f"?{unnamed}"
            if name.startswith("?"):
                unnamed += 1
            if others is not None and which == "dim_param" and seen.setdefault(name, vi.name) != vi.name:
                shape.append(others[name])
            elif isinstance(value, int):
                shape.append(within(value, ranges.get(name) if ranges else None))
            else:
                shape.append(value[name])
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


def _elements(model: onnx.ModelProto, sizes: Mapping[str, int]) -> int:
    """How many elements the graph inputs hold at ``sizes`` (without making them)."""
    init = {t.name for t in model.graph.initializer}
    total = 0
    unnamed = 0
    for vi in model.graph.input:
        if vi.name in init or vi.type.WhichOneof("value") != "tensor_type":
            continue
        n = 1
        for d in vi.type.tensor_type.shape.dim:
            which = d.WhichOneof("value")
            if which == "dim_value":
                n *= max(int(d.dim_value), 0)
            elif which == "dim_param" and d.dim_param:
                n *= sizes[d.dim_param]
            else:
                n *= sizes[f"?{unnamed}"]
                unnamed += 1
        total += n
    return total


def candidate_sizes(names: Sequence[str], values: Sequence[int], ranges: Mapping[str, Range],
                    fixed: Mapping[str, int]) -> list[list[dict[str, int]]]:
    """For each of ``values``, the sizes to try in turn: every free dim at that value moved into
    its range (a second value equal to the first moves up within the range), then the free dims
    doubled, ``ESCALATIONS`` times. A dim in ``fixed`` (``--dim``) keeps its value throughout."""
    out: list[list[dict[str, int]]] = []
    first: dict[str, int] = {}
    for slot, v in enumerate(values):
        base: dict[str, int] = {}
        for name in names:
            if name in fixed:
                base[name] = fixed[name]
                continue
            bound = ranges.get(name)
            size = within(v, bound)
            if slot and size == first.get(name) and v > values[0]:
                size = within(size + (v - values[0]), bound)
            base[name] = size
        if not slot:
            first = dict(base)
        ladder = [base]
        for k in range(1, ESCALATIONS + 1):
            grown = {n: s if n in fixed else within(max(s, 1) << k, ranges.get(n)) for n, s in base.items()}
            if grown != ladder[-1]:
                ladder.append(grown)
        out.append(ladder)
    return out


def _label(sizes: Mapping[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sizes.items()) or "static shapes"


def _same(a: object, b: object) -> bool:
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        if a.dtype == object:
            return bool(a.tolist() == b.tolist())
        return bool(np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes())
    return type(a) is type(b) and repr(a) == repr(b)


def _abs_diff(a: object, b: object) -> float | None:
    """The largest absolute difference of two numeric arrays of one shape (NaN where one side
    is NaN and the other is not); None when they cannot be compared element by element."""
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)) or a.shape != b.shape:
        return None
    if a.dtype.kind not in "biuf" or b.dtype.kind not in "biuf":
        return None
    if a.size == 0:
        return 0.0
    x, y = a.astype(np.float64), b.astype(np.float64)
    both_nan = np.isnan(x) & np.isnan(y)
    d = np.where(both_nan, 0.0, np.abs(x - y))
    return float(np.nan if np.isnan(d).any() else d.max())


def _quiet_run(ort: Any) -> Any:
    """Run options that keep onnxruntime's warnings (declared vs actual shapes) off stderr."""
    quiet = ort.RunOptions()
    quiet.log_severity_level = 4
    return quiet


def verify_models(original: bytes, optimized: onnx.ModelProto | bytes, *, directory: str = "",
                  values: Sequence[int] = DEFAULT_VALUES, seed: int = 0,
                  feeds: Sequence[Mapping[str, np.ndarray]] | None = None,
                  ranges: Mapping[str, Range] | None = None,
                  fixed: Mapping[str, int] | None = None,
                  aliases: Mapping[str, str] | None = None) -> VerifyReport:
    """Run both models on the same inputs and compare every output bit for bit.

    ``directory`` is where the original model lives (its external data is read from there).
    ``feeds`` replaces the made-up inputs (one mapping per run). ``ranges``: each symbol's range
    (the user's assumptions and what inference proved); a symbol is bound only within it, since
    the optimized model is only promised to match there. ``fixed``: sizes given with ``--dim``.
    ``aliases``: ``--assume a==b`` (``b`` -> ``a``); a shared dim name whose symbols of its own
    (``batch@mask``) the user stated to be the name gets no runs with sizes of their own.
    Raises ``UsageError`` (exit 2) when onnxruntime is not installed.
    """
    ort = _ort()
    opt_bytes = optimized if isinstance(optimized, bytes) else optimized.SerializeToString()
    report = VerifyReport()
    try:
        before = _session(ort, original, directory)
    except Exception as exc:  # onnxruntime cannot load the input: nothing to compare against
        report.status = NOT_VERIFIED
        report.problems.append(f"onnxruntime cannot load the original model: {_first_line(exc)}")
        return report
    try:
        after = _session(ort, opt_bytes, directory)
    except Exception as exc:
        report.status = DIFFERS
        report.problems.append(f"onnxruntime cannot load the optimized model: {_first_line(exc)}")
        return report
    proto = onnx.ModelProto.FromString(original)
    names = [o.name for o in before.get_outputs()]
    quiet = _quiet_run(ort)
    sizes_of: dict[str, dict[str, int]] = {}
    if feeds is not None:
        ladders: list[list[tuple[str, Mapping[str, np.ndarray] | None]]] = [
            [(f"given inputs #{k}", f)] for k, f in enumerate(feeds)]
    else:
        candidates = candidate_sizes(_free_dims(proto), values, ranges or {}, fixed or {})
        sizes_of = {_label(s): s for ladder in candidates for s in ladder}
        ladders = [[(_label(s), None) for s in ladder] for ladder in candidates]
    done: set[str] = set()
    for ladder in ladders:
        for label, given in ladder:
            if label in done:  # (two slots that meet at one size try it once)
                continue
            inputs = given
            if inputs is None:
                if _elements(proto, sizes_of[label]) > MAX_ELEMENTS:
                    report.skipped.append(f"{label}: more than {MAX_ELEMENTS:,} input elements, not tried")
                    break
                try:
                    inputs = random_inputs(proto, sizes_of[label], np.random.default_rng(seed))
                except ValueError as exc:
                    report.status = NOT_VERIFIED
                    report.problems.append(str(exc))
                    return report
            done.add(label)
            try:
                want = before.run(names, dict(inputs), quiet)
            except Exception as exc:
                report.skipped.append(f"{label}: {_first_line(exc)}")
                continue  # the next, larger size of this ladder
            try:
                got = after.run(names, dict(inputs), quiet)
            except Exception as exc:
                report.status = DIFFERS
                report.failing = inputs
                report.problems.append(f"{label}: the optimized model fails where the original runs: "
                                       f"{_first_line(exc)}")
                break
            if not _compared(report, label, inputs, names, want, got):
                report.runs.append(label)
            break  # this slot compared a size
    if feeds is None and report.status == VERIFIED and len(ladders) > 1:
        _shared_name_runs(report, proto, before, after, names, quiet, candidates, seed, aliases or {})
    if report.status == VERIFIED and not report.runs:
        _ran_nowhere(report)
    return report


def _compared(report: VerifyReport, label: str, inputs: Mapping[str, np.ndarray], names: Sequence[str],
              want: Sequence[Any], got: Sequence[Any]) -> bool:
    """Record in ``report`` the outputs that differ at ``label`` (with the largest absolute
    difference seen so far); whether any did."""
    bad = [(n, a, b) for n, a, b in zip(names, want, got) if not _same(a, b)]
    if not bad:
        return False
    report.status = DIFFERS
    report.failing = inputs
    report.problems.append(f"{label}: output{'s' if len(bad) > 1 else ''} "
                           f"{', '.join(repr(n) for n, _, _ in bad)} differ")
    diffs = [_abs_diff(a, b) for _, a, b in bad]
    numbers = [d for d in diffs if d is not None]
    if numbers:
        worst = max(numbers, key=lambda d: math.inf if math.isnan(d) else d)
        if report.max_abs_diff is None or not worst <= report.max_abs_diff:
            report.max_abs_diff = worst
    return True


def _ran_nowhere(report: VerifyReport) -> None:
    """The original ran at none of the sizes tried: could not verify, with the runtime's reason."""
    report.status = NOT_VERIFIED
    sizes = "; ".join(s.split(":", 1)[0] for s in report.skipped[:4]) + ("; ..." if len(report.skipped) > 4 else "")
    reason = report.skipped[0].split(": ", 1)[-1] if report.skipped else ""
    report.problems.append(f"the original model runs at none of the sizes tried ({sizes}; "
                           f"onnxruntime: {reason}): give sizes it accepts with --dim NAME=VALUE")


def _shared_name_runs(report: VerifyReport, proto: onnx.ModelProto, before: Any, after: Any,
                      names: list[str], quiet: Any, candidates: list[list[dict[str, int]]], seed: int,
                      aliases: Mapping[str, str]) -> None:
    """The runs where inputs that share a dim name get sizes of their own (the first declaring
    input the small size, the others the larger one, and the other way round). Most models refuse
    such inputs; a refusal by the original, or by onnxruntime's memory planner holding the
    optimized model to the names it shares, is no difference."""
    def root(n: str) -> str:
        return aliases.get(n, n)

    # (a name the user stated one size on every input, ``--assume batch==batch@mask``: not tried)
    shared = {k: users for k, users in _shared(proto).items()
              if not all(root(f"{k}@{u}") == root(k) for u in users[1:])}
    if not shared:
        return
    small, large = candidates[0][0], candidates[-1][0]
    later = ", ".join(sorted({n for users in shared.values() for n in users[1:]}))
    for first, rest in ((small, large), (large, small)):
        sizes = {rest[k] for k in shared}
        given = (f"{', '.join(sorted(shared))} {sizes.pop()}" if len(sizes) == 1
                 else ", ".join(f"{k} {rest[k]}" for k in sorted(shared)))
        label = f"{_label(first)} ({given} on {later})"
        try:
            inputs = random_inputs(proto, first, np.random.default_rng(seed), others=rest)
            want = before.run(names, dict(inputs), quiet)
        except Exception:
            continue  # sizes of their own for shared names: the original refuses, nothing to compare
        try:
            got = after.run(names, dict(inputs), quiet)
        except Exception as exc:
            if SHARED_NAME_REFUSAL in str(exc):
                report.skipped.append(f"{label}: onnxruntime holds the optimized model to the shared names")
                continue
            report.status = DIFFERS
            report.failing = inputs
            report.problems.append(f"{label}: the optimized model fails where the original runs: {_first_line(exc)}")
            return
        bad = [(n, a, b) for n, a, b in zip(names, want, got) if not _same(a, b)]
        if bad:
            report.status = DIFFERS
            report.failing = inputs
            report.problems.append(f"{label}: output{'s' if len(bad) > 1 else ''} "
                                   f"{', '.join(repr(n) for n, _, _ in bad)} differ")
            numbers = [d for d in (_abs_diff(a, b) for _, a, b in bad) if d is not None]
            if numbers:
                report.max_abs_diff = max(numbers, key=lambda d: math.inf if math.isnan(d) else d)
            return
        report.runs.append(label)


def culprit(original: bytes, fired: Sequence[str], rerun: Callable[[Sequence[str]], bytes | None],
            inputs: Mapping[str, np.ndarray], *, directory: str = "") -> str | None:
    """The rewrite rule responsible for a difference: with ``fired`` the rules that fired (in
    their priority order) and ``rerun(rules)`` the optimized model made with those rules only
    (None when nothing changes), the first rule whose prefix of ``fired`` makes ``inputs`` give
    other outputs (by bisection over the prefixes), named alone when it differs by itself, else
    as ``"rule (after a, b)"``. None when no prefix reproduces the difference."""
    ort = _ort()
    before = _session(ort, original, directory)
    names = [o.name for o in before.get_outputs()]
    want = before.run(names, dict(inputs))

    def differs(rules: Sequence[str]) -> bool:
        model = rerun(rules)
        if model is None:
            return False
        try:
            got = _session(ort, model, directory).run(names, dict(inputs))
        except Exception:
            return True
        return any(not _same(a, b) for a, b in zip(want, got))

    lo, hi = 0, len(fired)  # invariant: fired[:lo] gives the same outputs, fired[:hi] does not
    if not fired or not differs(fired):
        return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if differs(fired[:mid]):
            hi = mid
        else:
            lo = mid
    rule = fired[hi - 1]
    if hi == 1 or differs([rule]):
        return rule
    return f"{rule} (after {', '.join(fired[:hi - 1])})"


_ORT_PREFIX = re.compile(r"^\[ONNXRuntimeError\] : \d+ : \w+ : ")
_ORT_NODE = re.compile(r"Non-zero status code returned while running (\S+) node\. Name:'([^']*)' Status Message: ")
_ORT_SOURCE = re.compile(r"/\S+:\d+ [^(]*\([^)]*\)\s*")  # onnxruntime's source file, line and function


def _first_line(exc: BaseException) -> str:
    """onnxruntime's reason in one line: its first line, without the status prefix and the
    location in onnxruntime's sources, at most 300 characters."""
    text = str(exc).strip().splitlines()
    if not text:
        return type(exc).__name__
    line = _ORT_PREFIX.sub("", text[0])
    line = _ORT_NODE.sub(lambda m: f"{m.group(1)} node '{m.group(2)}': " if m.group(2) else f"{m.group(1)} node: ",
                         line)
    return _ORT_SOURCE.sub("", line)[:300]
