"""The symbolic domain is a value, not ambient state (issue 24, point 4).

What a dim is decided to be (``min(3, seq)`` or ``3``, a Squeeze axis ``!= 1`` or not) depends on
the domain the symbols range over: ``--assume``, and the facts inference proves. That domain is a
``Domain`` held by the inference result and passed to the algebra, so an answer depends only on
its arguments: two models, or one model under two sets of premises, judged in any order, in one
process or in two threads, each get their own answers, and a caller needs no block to be in.
"""

from __future__ import annotations

import ast
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from onnx import TensorProto, helper

from shapeflow.assume import parse_assumptions
from shapeflow.dims import BASE, Domain, Sym, dim_is_one, dim_max, dim_min, simplest, substitute
from shapeflow.drivers.analysis import Analysis, analyze
from shapeflow.io import load_model_bytes
from shapeflow.render.json import infer_json_text
from shapeflow.rules.base import LintContext
from shapeflow.rules.sf104_squeeze_non_unit_dim import SqueezeNonUnitDim
from shapeflow.rules.sf105_squeeze_symbolic_dim import SqueezeSymbolicDim

ROOT = Path(__file__).resolve().parent.parent
seq = Sym.symbol("seq")


def _model() -> bytes:
    """``x[seq, 4]``: its last three rows (``min(3, seq)`` of them), and a Squeeze of axis 0 (which
    runs only where seq is 1)."""
    i64 = TensorProto.INT64
    nodes = [
        helper.make_node("Constant", [], ["s"], value=helper.make_tensor("s", i64, [1], [-3])),
        helper.make_node("Constant", [], ["e"], value=helper.make_tensor("e", i64, [1], [2**63 - 1])),
        helper.make_node("Constant", [], ["a"], value=helper.make_tensor("a", i64, [1], [0])),
        helper.make_node("Slice", ["x", "s", "e", "a"], ["tail"]),
        helper.make_node("Squeeze", ["x", "a"], ["sq"]),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["seq", 4])],
                              [helper.make_tensor_value_info("tail", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("sq", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]).SerializeToString()


def _analyze(assume: list[str]) -> Analysis:
    return analyze(load_model_bytes(_model(), "m.onnx"), assumptions=parse_assumptions(assume) if assume else None)


def _squeeze_codes(a: Analysis) -> list[str]:
    """The Squeeze findings of the rules that decide whether its dim is 1, judged outside any block."""
    ctx = LintContext("m.onnx", a.graph, a.inference)
    return [d.code for rule in (SqueezeNonUnitDim(), SqueezeSymbolicDim()) for d in rule.diagnostics(ctx)]


def test_the_algebra_answers_in_the_domain_it_is_given() -> None:
    at_least_3 = Domain(ranges={"seq": (3, None)})
    assert str(dim_min(seq, 3)) == "min(3, seq)" and dim_min(seq, 3, at_least_3) == 3
    # interleaved, and after a call that works in narrower domains of its own (simplest tries
    # seq >= c for several c): the base domain's answers are the base domain's
    pool = dim_max(dim_min(1, seq), Sym.symbol("seq"))
    for _ in range(2):
        assert dim_is_one(seq, at_least_3) is False
        assert dim_is_one(seq) is None
        assert simplest(pool, BASE) == simplest(pool)
        assert str(dim_max(1, seq)) == "max(1, seq)"
        assert dim_max(1, seq, at_least_3) == seq
    # a proof narrows a new value; the old one is unchanged
    proved = BASE.at_least("seq", 2)
    assert dim_is_one(seq, proved) is False and dim_is_one(seq, BASE) is None and BASE.ranges == {}
    assert proved.at_least("seq", 1) is proved  # nothing new: the same value


def test_two_models_judged_in_any_order_get_their_own_answers() -> None:
    """One model under no premise and under ``seq>=3``, inferred one after the other, then judged
    and read back alternately (no ``domain()`` block: there is none): each keeps its own answers."""
    plain, assumed = _analyze([]), _analyze(["seq>=3"])
    for _ in range(2):
        for a, tail, codes in ((plain, "min(3, seq)", ["SF105"]), (assumed, "3", ["SF104"])):
            assert str(a.inference.shape_of("tail")[0]) == tail  # type: ignore[index]
            assert _squeeze_codes(a) == codes
            assert dim_is_one(seq, a.inference.domain) is (None if a is plain else False)
    assert plain.inference.premises == () and assumed.inference.premises == ("seq>=3",)


def test_inferences_in_two_threads_are_those_of_one() -> None:
    """The same inferences run concurrently in two threads give what they give one at a time: no
    state is shared between runs (a domain in a global would leak from one into the other)."""
    cases = [[], ["seq>=3"], ["seq<=2"], ["seq>=1"]] * 3
    alone = {tuple(c): infer_json_text(_analyze(c)) for c in cases[:4]}
    with ThreadPoolExecutor(max_workers=2) as pool:
        together = list(pool.map(lambda c: infer_json_text(_analyze(c)), cases))
    assert together == [alone[tuple(c)] for c in cases]
    assert len(set(alone.values())) == 4  # (each premise changes the answers)


def test_a_substitution_is_the_same_in_every_domain() -> None:
    """Binding every symbol leaves nothing for a domain to decide."""
    d = dim_max(dim_min(seq, 3), 1)
    for dom in (BASE, Domain(ranges={"seq": (3, None)}), Domain(ranges={"seq": (0, 1)})):
        assert [substitute(d, {"seq": v}, dom) for v in range(6)] == [1, 1, 2, 3, 3, 3]


def _module_state(path: Path) -> list[str]:
    """Module-level names bound to a mutable container or a context variable, in one file."""
    found = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        if value is None:
            continue
        names = [t.id for t in targets if isinstance(t, ast.Name) and t.id != "__all__"]
        mutable = isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)) or (
            isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
            and value.func.id in ("list", "dict", "set", "defaultdict", "ContextVar", "bytearray"))
        if mutable and names:
            found.append(f"{path.name}: {', '.join(names)}")
    return found


def test_the_algebra_has_no_ambient_state() -> None:
    """No module of shapeflow.dims holds state between calls (a context variable, or a module-level
    list, dict or set), and no module of shapeflow uses a context variable but the per-file deadline
    (limits.py: a time budget, not a premise)."""
    dims = sorted((ROOT / "shapeflow" / "dims").glob("*.py"))
    assert dims and [s for p in dims for s in _module_state(p)] == []
    users = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "shapeflow").rglob("*.py")
                   if "ContextVar" in p.read_text(encoding="utf-8") or "contextvars" in p.read_text(encoding="utf-8"))
    assert users == ["shapeflow/limits.py"]


def test_shapeflow_passes_the_domain_to_every_call_that_decides_from_it() -> None:
    """In shapeflow itself (not the tests), a call of a dims function that decides from the bounds
    names its domain: left out, it would be BASE, the answer of no premise, where the caller has
    one (a model under ``--assume``, or facts inference proved)."""
    import inspect

    import shapeflow.dims as dims

    position = {}
    for name in dims.__all__:
        fn = getattr(dims, name)
        if inspect.isfunction(fn):
            params = list(inspect.signature(fn).parameters)
            if "dom" in params:
                position[name] = params.index("dom")
    assert {"dim_min", "dim_floordiv", "dims_equal", "substitute", "dim_bounds"} <= set(position)
    missing = []
    for path in sorted((ROOT / "shapeflow").rglob("*.py")):
        if path.parent.name == "dims":
            continue  # (the algebra itself: its defaults are its public face)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name not in position or any(isinstance(a, ast.Starred) for a in node.args):
                continue
            if len(node.args) <= position[name] and not any(k.arg == "dom" for k in node.keywords):
                missing.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}")
    assert missing == []
