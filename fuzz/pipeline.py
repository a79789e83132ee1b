"""What ``infer``, ``lint`` and ``optimize`` do to one model, in memory (no files), for the fuzzers.

``run(data)`` loads the bytes, analyses them (inference and every lint rule), renders every
output format, annotates a copy with the inferred shapes (``infer -o``), and optimizes a fresh
copy to its fixpoint, then checks that the optimized model loads again and that optimizing it
once more changes nothing. The contract: the only exception that may escape is
``ShapeflowError`` (a one-line rejection, exit 2, or a refusal, exit 1). Anything else, or a
broken invariant (``InvariantError``), is a crash the fuzzer reports.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from shapeflow.drivers.analysis import analyze
from shapeflow.drivers.annotate import annotate
from shapeflow.errors import ShapeflowError
from shapeflow.io import load_model_bytes
from shapeflow.limits import Limits
from shapeflow.drivers.optimizer import optimize_model
from shapeflow.render import format_diagnostic, infer_text
from shapeflow.render.sarif import sarif_log

# Smaller than the defaults so that one input cannot stall the fuzzer: a limit hit is a
# ShapeflowError (fine), a hang is what libFuzzer's -timeout catches.
LIMITS = Limits(max_nodes=20_000, max_rank=256, max_axes_elems=1024, max_expr_size=128, timeout=10.0)


class InvariantError(AssertionError):
    """The pipeline ran but broke one of its promises (a crash for the fuzzer)."""


@dataclass(frozen=True)
class KnownBug:
    """A crash already found, reported, and pinned by a strict-xfail regression test.

    The fuzzers step over it so that they keep finding new ones; when the bug is fixed, its
    regression test XPASSes (a failure under strict xfail): then delete the entry here and the
    xfail mark there."""

    name: str
    exception: type[BaseException] | tuple[type[BaseException], ...]
    message: str  # a substring of str(exception)
    where: str  # a file (path suffix) on the traceback: the shapeflow code at fault
    test: str  # the regression test in tests/test_fuzz_regressions.py

    def matches(self, exc: BaseException) -> bool:
        if not isinstance(exc, self.exception) or self.message not in str(exc):
            return False
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename.endswith(self.where):
                return True
            tb = tb.tb_next
        return False


# Empty: every crash found so far is fixed (the last, "non-utf8-name", by io rejecting strings
# that are not UTF-8 at load).
KNOWN_BUGS: list[KnownBug] = []


@dataclass
class Outcome:
    stage: str  # how far it got: "load", "analyze", "optimize", "done"
    rejected: str | None = None  # the ShapeflowError message, if any
    known_bug: str | None = None  # a KnownBug it ran into
    errors: int = 0  # error-level findings
    changed: bool = False
    optimized: bytes | None = None


def run(data: bytes, name: str = "fuzz.onnx", limits: Limits = LIMITS) -> Outcome:
    out = Outcome("load")
    try:
        loaded = load_model_bytes(data, name, limits)
        out.stage = "analyze"
        analysis = analyze(loaded, limits=limits)
        out.errors = sum(1 for d in analysis.diagnostics if d.severity.value == "error")
        # every renderer, as the CLI would call it
        infer_text(analysis, all_tensors=True)
        for d in analysis.diagnostics:
            format_diagnostic(d)
        json.dumps(analysis.to_json())
        json.dumps(sarif_log(analysis.diagnostics, version="fuzz"))
        # infer -o: annotate a copy
        annotated = load_model_bytes(data, name, limits)
        copy = analyze(annotated, limits=limits, rules=[])
        annotate(copy.graph, copy.inference)
        annotated.proto.SerializeToString()

        out.stage = "optimize"
        fresh = load_model_bytes(data, name, limits)
        result = optimize_model(fresh, limits=limits, explain=False)
        out.changed = result.changed
        optimized = result.model.SerializeToString() if result.changed else fresh.raw
        out.optimized = optimized
        if result.changed:
            again_loaded = load_model_bytes(optimized, name, limits)
            again = optimize_model(again_loaded, limits=limits, explain=False)
            if again.changed:
                raise InvariantError(f"optimize is not idempotent: {again.rewrites}")
        out.stage = "done"
    except ShapeflowError as exc:
        out.rejected = str(exc)
        if "\n" in out.rejected:
            raise InvariantError(f"a rejection message spans lines: {out.rejected!r}") from None
    except Exception as exc:
        bug = next((b for b in KNOWN_BUGS if b.matches(exc)), None)
        if bug is None:
            raise
        out.known_bug = bug.name
    return out
