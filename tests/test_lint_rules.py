"""The lint rules: one fixture per rule with the exact set of (code, place) it must report, the
rejections (SF001, SF002, SF006), the rule anatomy, and the generated docs."""

from __future__ import annotations

import os
import re

import onnx
import pytest
from onnx import helper

from lint_fixtures import FIXTURES, Fixture, external_data_model
from shapeflow.drivers import analysis
from shapeflow.diagnostics import Severity
from shapeflow.render.docs import rules_markdown, sections
from shapeflow.drivers.linter import FileResult, LintOptions, lint_file, severity_table
from shapeflow.limits import Limits
from shapeflow.rules import ALL_RULES, BY_CODE, resolve_selector, rule_by_code, select_rules

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(REPO, "examples")

# SPEC.md section 2: these codes, names and severities are a contract.
SPEC_CODES = {
    "SF001": ("model-unreadable", "error"),
    "SF002": ("graph-invalid", "error"),
    "SF101": ("axes-out-of-range", "error"),
    "SF102": ("duplicate-axes", "error"),
    "SF103": ("squeeze-duplicate-axes", "warning"),
    "SF104": ("squeeze-non-unit-dim", "error"),
    "SF105": ("squeeze-symbolic-dim", "warning"),
    "SF106": ("squeeze-rank-unknowable", "warning"),
    "SF107": ("negative-axes-opset1", "warning"),
    "SF108": ("axes-form-mismatch", "error"),
    "SF109": ("axes-bad-tensor", "error"),
    "SF110": ("axes-not-constant", "info"),
    "SF111": ("unsqueeze-empty-axes", "warning"),
    "SF112": ("shape-conflict", "error"),
    "SF201": ("cancel-unsqueeze-squeeze", "info"),
    "SF202": ("merge-unsqueeze", "info"),
    "SF203": ("fold-constant", "info"),
}


def places(result: FileResult) -> set[tuple[str, str | None]]:
    return {(d.code, d.location.node or d.location.tensor) for d in result.diagnostics}


def lint_proto(model: onnx.ModelProto, tmp_path, name: str = "m.onnx", **options) -> FileResult:
    path = tmp_path / name
    path.write_bytes(model.SerializeToString())
    return lint_file(str(path), LintOptions(**options))


def passes_available() -> bool:
    try:
        from shapeflow.passes import find_candidates  # noqa: F401
    except ImportError:
        return False
    return True


needs_passes = pytest.mark.skipif(not passes_available(), reason="shapeflow.passes.find_candidates not available yet")


# -- one fixture per rule ------------------------------------------------------------------------


@pytest.mark.parametrize("fx", FIXTURES, ids=[f.id for f in FIXTURES])
def test_rule_fixture_exact_findings(fx: Fixture, tmp_path) -> None:
    select = fx.select or (fx.code,)
    result = lint_proto(fx.model(), tmp_path, select=select)
    assert not result.rejected and result.error is None
    assert places(result) == set(fx.expected)


@pytest.mark.parametrize("fx", FIXTURES, ids=[f.id for f in FIXTURES])
def test_rule_fixture_no_other_rule_fires(fx: Fixture, tmp_path) -> None:
    """With every rule on, the fixture's broken nodes are reported by their own rule only, and the
    clean nodes by none (the info rules of what optimize would rewrite aside)."""
    result = lint_proto(fx.model(), tmp_path)
    found = {p for p in places(result) if not p[0].startswith("SF2")}
    assert found == set(fx.expected)


def test_findings_in_subgraphs_and_functions_name_their_graph(tmp_path) -> None:
    fx = next(f for f in FIXTURES if f.id == "subgraphs_and_functions")
    result = lint_proto(fx.model(), tmp_path, select=("SF1",))
    graphs = {d.location.node: d.location.graph for d in result.diagnostics}
    assert graphs == {"then_sq": "main/if_node.then_branch", "body_far": "main/loop_node.body", "f_sq": "local::F"}


# A function whose Unsqueeze is valid for one caller's rank and out of range for another's: the
# generic run of its body (rank unknown) cannot tell; the run at each call site can.
CALL_SITES = """
<ir_version: 8, opset_import: ["" : 13, "local" : 1]>
g (float[4] a, float[2, 3, 4] b) => (float[4, 1] ya, float[2, 3, 4, 1] yb)
{
    [call_a] ya = local.F (a)
    [call_b] yb = local.F (b)
}
<domain: "local", opset_import: ["" : 13]>
F (x) => (y)
{
    ax = Constant <value = int64[1] {3}> ()
    [f_unsq] y = Unsqueeze (x, ax)
}
"""


def _runs_in_onnxruntime(model: onnx.ModelProto) -> bool:
    ort = pytest.importorskip("onnxruntime")
    import numpy as np

    try:
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        feeds = {i.name: np.ones([d if isinstance(d, int) else 1 for d in i.shape], np.float32)
                 for i in session.get_inputs()}
        session.run(None, feeds)
    except Exception:
        return False
    return True


def test_error_at_one_call_site_of_a_function(tmp_path) -> None:
    from onnx import parser

    model = parser.parse_model(CALL_SITES)
    assert not _runs_in_onnxruntime(model)  # the call with a rank-1 input fails
    result = lint_proto(model, tmp_path)
    errors = [d for d in result.diagnostics if d.severity is Severity.ERROR]
    assert [(d.code, d.location.graph, d.location.node) for d in errors] == [("SF101", "local::F", "f_unsq")]
    assert "the call from node 'call_a' (F)" in errors[0].message and "call_b" not in errors[0].message
    assert not errors[0].fixable  # the body is shared by every call: no fix for one of them
    assert result.exit_code == 1

    # The same body called only with the rank that fits: nothing to report, and it runs.
    fine = parser.parse_model(CALL_SITES.replace("    [call_a] ya = local.F (a)\n", "    [call_a] ya = Identity (a)\n")
                              .replace("float[4, 1] ya", "float[4] ya"))
    assert _runs_in_onnxruntime(fine)
    assert not [d for d in lint_proto(fine, tmp_path, "fine.onnx").diagnostics if d.severity is Severity.ERROR]


def test_call_site_runs_do_not_repeat_the_generic_findings(tmp_path) -> None:
    # f_sq squeezes a dim of 2 whatever the call: the generic run reports it, once.
    fx = next(f for f in FIXTURES if f.id == "subgraphs_and_functions")
    result = lint_proto(fx.model(), tmp_path, select=("SF104",))
    assert [d.location.node for d in result.diagnostics if d.location.node == "f_sq"] == ["f_sq"]
    assert "the call from" not in next(d.message for d in result.diagnostics if d.location.node == "f_sq")


def test_sf104_message_explains_onnx_vs_paddle(tmp_path) -> None:
    fx = next(f for f in FIXTURES if f.code == "SF104")
    result = lint_proto(fx.model(), tmp_path, select=("SF104",))
    by_node = {d.location.node: d for d in result.diagnostics}
    paddle = by_node["paddle_sq"]
    assert paddle.message.startswith("axis 3 has dim 5, not 1")
    assert "raises" in paddle.message and "Paddle" in paddle.message
    assert "axes=[0, 2]" in paddle.hint and paddle.fixable
    assert "1 (dim 3)" in by_node["two_bad"].message and "-1 (dim 5)" in by_node["two_bad"].message
    assert "remove the node" in by_node["two_bad"].hint  # no axis is left: [1, -1] both go


def test_sf109_scalar_is_a_warning_only_on_unsqueeze(tmp_path) -> None:
    fx = next(f for f in FIXTURES if f.code == "SF109")
    result = lint_proto(fx.model(), tmp_path, select=("SF109",))
    levels = {d.location.node: d.severity for d in result.diagnostics}
    assert levels == {"int32_axes": Severity.ERROR, "rank2_axes": Severity.ERROR, "scalar_unsq": Severity.WARNING}


def test_sf112_skips_outputs_of_a_squeeze_that_cannot_run(tmp_path) -> None:
    """Paddle's model declares Paddle's [3, 5] output: the real finding is SF104, not a conflict."""
    result = lint_file(os.path.join(EXAMPLES, "paddle_squeeze.onnx"))
    assert places(result) == {("SF104", "squeeze_0")}
    assert result.exit_code == 1


def test_axis_errors_example(tmp_path) -> None:
    result = lint_file(os.path.join(EXAMPLES, "axis_errors.onnx"))
    assert places(result) == {("SF104", "sq_non_unit_node"), ("SF102", "unsq_duplicate_node"),
                              ("SF101", "unsq_out_of_range_node"), ("SF105", "sq_symbolic_node")}


@pytest.mark.parametrize("name", ["attention.onnx", "opset11_attribute_axes.onnx"])
def test_valid_examples_have_at_most_info_findings(name: str) -> None:
    result = lint_file(os.path.join(EXAMPLES, name))
    assert result.exit_code == 0
    assert all(d.severity is Severity.INFO for d in result.diagnostics)


# -- SF001 / SF002 / SF006: rejected files and external data ------------------------------------


def test_sf001_unreadable_file_is_rejected(tmp_path) -> None:
    path = tmp_path / "junk.onnx"
    path.write_bytes(b"<html>not a model</html>")
    result = lint_file(str(path))
    assert result.rejected and result.exit_code == 2
    assert places(result) == {("SF001", None)}
    assert "not an ONNX protobuf" in result.diagnostics[0].message


def test_sf001_git_lfs_pointer(tmp_path) -> None:
    path = tmp_path / "lfs.onnx"
    path.write_bytes(b"version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 12\n")
    result = lint_file(str(path))
    assert result.exit_code == 2 and "git lfs pull" in result.diagnostics[0].message


def test_sf001_unsafe_external_data_is_a_finding_not_a_rejection(tmp_path) -> None:
    result = lint_proto(external_data_model(str(tmp_path)), tmp_path, select=("SF001",))
    assert not result.rejected
    assert places(result) == {("SF001", "unsafe_w")}  # the safe location next to the model is fine
    assert result.diagnostics[0].severity is Severity.ERROR and result.exit_code == 1
    assert "escapes the model folder" in result.diagnostics[0].message


def test_sf002_undefined_tensor(tmp_path) -> None:
    graph = helper.make_graph([helper.make_node("Relu", ["GHOST"], ["y"], name="r")], "g", [],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    result = lint_proto(model, tmp_path)
    assert result.rejected and result.exit_code == 2
    assert places(result) == {("SF002", "r")}
    assert "GHOST" in result.diagnostics[0].message


def test_sf002_cycle(tmp_path) -> None:
    nodes = [helper.make_node("Relu", ["b"], ["a"], name="A"), helper.make_node("Relu", ["a"], ["b"], name="B")]
    graph = helper.make_graph(nodes, "g", [], [helper.make_tensor_value_info("a", onnx.TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    result = lint_proto(model, tmp_path)
    assert result.exit_code == 2 and result.diagnostics[0].code == "SF002"
    assert "cycle" in result.diagnostics[0].message


def test_sf006_limit(tmp_path) -> None:
    model = onnx.load(os.path.join(EXAMPLES, "axis_errors.onnx"))
    result = lint_proto(model, tmp_path, limits=Limits(max_nodes=3))
    assert result.rejected and result.exit_code == 2
    assert places(result) == {("SF006", None)}
    assert "--max-nodes" in result.diagnostics[0].message


def test_rejections_are_reported_even_when_their_code_is_ignored(tmp_path) -> None:
    path = tmp_path / "empty.onnx"
    path.write_bytes(b"")
    result = lint_file(str(path), LintOptions(ignore=("SF0",)))
    assert result.exit_code == 2 and places(result) == {("SF001", None)}


# -- SF201-SF203 agree with optimize -------------------------------------------------------------

REWRITES = """
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] x, float[4] mask) => (float[2, 3] pair_out, float[4, 1, 1] chain_out, float[2, 3] biased, float[2, 3] clean)
<int64[1] ax1 = {1}, int64[1] ax0 = {0}, int64[1] ax2 = {2}, float[1, 3] bias = {1, 2, 3}>
{
    [unsq_pair] p = Unsqueeze (x, ax1)
    [sq_pair] pair_out = Squeeze (p, ax1)
    [unsq_c1] c = Unsqueeze (mask, ax1)
    [unsq_c2] chain_out = Unsqueeze (c, ax2)
    [sq_const] b = Squeeze (bias, ax0)
    [add] biased = Add (x, b)
    [relu] clean = Relu (x)
}
"""


@needs_passes
def test_rewrite_rules_report_what_optimize_finds(tmp_path) -> None:
    from onnx import parser

    from shapeflow.graph import build_graph
    from shapeflow.inference import infer
    from shapeflow.io import load_model
    from shapeflow.passes import find_candidates
    from shapeflow.rewrites import select

    model = parser.parse_model(REWRITES)
    result = lint_proto(model, tmp_path, select=("SF2",))
    loaded = load_model(str(tmp_path / "m.onnx"))
    graph = build_graph(loaded)
    inference = infer(graph)
    expected = {(c.code, graph.display(c.nid)) for c in find_candidates(graph, inference, select()) if c.code}
    assert places(result) == expected
    codes = {code for code, _ in expected}
    assert codes == {"SF201", "SF202", "SF203"}
    assert ("SF203", "sq_const") in expected
    assert not any(node == "relu" for _, node in expected)
    assert all(d.severity is Severity.INFO and d.fixable for d in result.diagnostics)


def test_rewrite_rules_are_silent_without_passes(tmp_path, monkeypatch) -> None:
    """Until the rewrite passes exist nothing can be rewritten, so nothing is reported."""
    from onnx import parser

    from shapeflow.rules import rewrites

    def missing(ctx):
        ctx.cache[rewrites.CANDIDATES] = []
        return []

    monkeypatch.setattr(rewrites, "candidates", missing)
    result = lint_proto(parser.parse_model(REWRITES), tmp_path, select=("SF2",))
    assert result.diagnostics == [] and result.exit_code == 0


# -- lint runs inference once --------------------------------------------------------------------


def test_lint_infers_once(tmp_path, monkeypatch) -> None:
    calls = []
    real = analysis.infer

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(analysis, "infer", counting)
    lint_file(os.path.join(EXAMPLES, "attention.onnx"))
    assert len(calls) == 1


# -- the rule registry ---------------------------------------------------------------------------


def test_every_spec_code_is_a_rule_with_its_name_and_severity() -> None:
    for code, (name, severity) in SPEC_CODES.items():
        rule = BY_CODE[code]
        assert (rule.name, rule.severity.value) == (name, severity), code
    assert BY_CODE["SF104"].fixable and all(BY_CODE[c].fixable for c in ("SF201", "SF202", "SF203"))


@pytest.mark.parametrize("rule", ALL_RULES, ids=[r.code for r in ALL_RULES])
def test_rule_anatomy(rule) -> None:
    assert re.fullmatch(r"SF[0-9]{3}", rule.code)
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)+", rule.name)
    parts = sections(rule)
    assert parts["summary"], "a one-line summary first"
    for title in ("What it does", "Why is this bad?", "Example", "Fix"):
        assert parts.get(title), f"{rule.code} lacks '## {title}'"


def test_codes_and_names_are_unique() -> None:
    assert len({r.code for r in ALL_RULES}) == len(ALL_RULES)
    assert len({r.name for r in ALL_RULES}) == len(ALL_RULES)


def test_sf104_documents_paddle() -> None:
    doc = BY_CODE["SF104"].doc()
    assert "Paddle" in doc and "run time" in doc and "removes the node" in doc


def test_selectors() -> None:
    assert resolve_selector("SF104") == ["SF104"]
    assert resolve_selector("sf10") == [c for c in BY_CODE if c.startswith("SF10")]
    assert resolve_selector("squeeze-non-unit-dim") == ["SF104"]
    assert resolve_selector("SF9") == [] and resolve_selector("nonsense") == []
    codes = [r.code for r in select_rules(["SF1"], ["SF110", "shape-conflict"])]
    assert "SF104" in codes and "SF110" not in codes and "SF112" not in codes and "SF001" not in codes
    assert rule_by_code("sf104") is BY_CODE["SF104"]


def test_severity_overrides_most_specific_wins() -> None:
    table = severity_table([("SF1", Severity.INFO), ("SF104", Severity.WARNING), ("SF1", Severity.ERROR)])
    assert table["SF104"] is Severity.WARNING
    assert table["SF105"] is Severity.ERROR  # the later of two equal selectors
    assert "SF001" not in table


def test_severity_override_applies(tmp_path) -> None:
    result = lint_file(os.path.join(EXAMPLES, "axis_errors.onnx"),
                       LintOptions(select=("SF105",), severity=(("SF105", Severity.ERROR),)))
    assert [d.severity for d in result.diagnostics] == [Severity.ERROR] and result.exit_code == 1


# -- generated docs ------------------------------------------------------------------------------


def test_docs_rules_md_is_up_to_date() -> None:
    path = os.path.join(REPO, "docs", "rules.md")
    with open(path, encoding="utf-8") as f:
        current = f.read()
    assert current == rules_markdown(), "docs/rules.md is stale: run python -m shapeflow.render.docs -o docs/rules.md"


def test_docs_cover_every_rule() -> None:
    text = rules_markdown()
    for r in ALL_RULES:
        assert f"## {r.code} {r.name}" in text


def test_sf007_unknown_fields_are_reported_where_they_are(tmp_path) -> None:
    fx = next(f for f in FIXTURES if f.code == "SF115")
    model = fx.model()
    node_bytes = model.graph.node[0].SerializeToString() + b"\xa0\x06\x05"  # field 100, varint 5
    model.graph.node[0].ParseFromString(node_bytes)
    model = onnx.ModelProto.FromString(model.SerializeToString() + b"\xa8\x06\x01")  # field 101
    result = lint_proto(model, tmp_path, select=("SF007",))
    assert places(result) == {("SF007", None), ("SF007", "clean")}
    assert all(d.severity.value == "warning" for d in result.diagnostics)
    assert any("unknown field(s) 101" in d.message for d in result.diagnostics)
