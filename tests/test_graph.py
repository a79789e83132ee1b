"""The graph index: structure validation (SF002), scopes, outer-scope reads, topological order."""

from __future__ import annotations

import onnx
import pytest
from onnx import TensorProto, helper

from shapeflow.errors import GraphInvalidError
from shapeflow.graph import build_graph
from shapeflow.io import load_model_bytes


def _graph(model: onnx.ModelProto):  # type: ignore[no-untyped-def]
    return build_graph(load_model_bytes(model.SerializeToString(), "m.onnx"))


def _model(nodes, inputs=("x",), outputs=("y",), inits=(), functions=()) -> onnx.ModelProto:  # type: ignore[no-untyped-def]
    g = helper.make_graph(
        list(nodes), "g",
        [helper.make_tensor_value_info(i, TensorProto.FLOAT, [2]) for i in inputs],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, [2]) for o in outputs],
        list(inits),
    )
    opsets = [helper.make_opsetid("", 13)] + ([helper.make_opsetid("local", 1)] if functions else [])
    return helper.make_model(g, opset_imports=opsets, functions=list(functions))


def test_cycle_is_reported_with_its_nodes() -> None:
    m = _model([
        helper.make_node("Add", ["x", "b"], ["a"], name="A"),
        helper.make_node("Relu", ["a"], ["b"], name="B"),
        helper.make_node("Identity", ["a"], ["y"], name="C"),
    ])
    with pytest.raises(GraphInvalidError, match=r"cycle: (A → B → A|B → A → B)"):
        _graph(m)


def test_self_loop() -> None:
    m = _model([helper.make_node("Add", ["x", "y"], ["y"], name="A")])
    with pytest.raises(GraphInvalidError, match="cycle"):
        _graph(m)


def test_undefined_input_names_node_and_tensor() -> None:
    m = _model([helper.make_node("Add", ["x", "GHOST"], ["y"], name="n")])
    with pytest.raises(GraphInvalidError, match="node 'n' \\(Add\\) in main reads undefined tensor 'GHOST'") as e:
        _graph(m)
    assert e.value.code == "SF002" and e.value.exit_code == 2


def test_two_producers() -> None:
    m = _model([
        helper.make_node("Relu", ["x"], ["y"], name="n1"),
        helper.make_node("Identity", ["x"], ["y"], name="n2"),
    ])
    with pytest.raises(GraphInvalidError, match="'y' defined twice \\(Relu 'n1', Identity 'n2'\\)"):
        _graph(m)


def test_concatenated_models_hint() -> None:
    m = _model([
        helper.make_node("Relu", ["x"], ["y"], name="n1"),
        helper.make_node("Relu", ["x"], ["y"], name="n1"),
    ])
    with pytest.raises(GraphInvalidError, match="concatenated"):
        _graph(m)


def test_initializer_shadowing_node_output() -> None:
    m = _model([helper.make_node("Relu", ["x"], ["y"], name="n")],
               inits=[helper.make_tensor("y", TensorProto.FLOAT, [2], [0, 0])])
    with pytest.raises(GraphInvalidError, match="defined twice \\(initializer, Relu 'n'\\)"):
        _graph(m)


def test_graph_output_never_produced() -> None:
    m = _model([helper.make_node("Relu", ["x"], ["z"], name="n")], outputs=("y",))
    with pytest.raises(GraphInvalidError, match="graph output 'y' of main is never produced"):
        _graph(m)


def test_unsorted_but_acyclic_gets_an_order() -> None:
    m = _model([
        helper.make_node("Relu", ["a"], ["y"], name="second"),
        helper.make_node("Relu", ["x"], ["a"], name="first"),
    ])
    g = _graph(m)
    main = g.scopes[0]
    assert not main.sorted_in_file
    assert [g.display(n) for n in main.order] == ["first", "second"]


def test_subgraph_outer_read_makes_owner_a_reader() -> None:
    m = onnx.parser.parse_model("""
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x, bool c) => (float[2] y) {
        t = Relu (x)
        y = If (c) <
            then_branch = a () => (float[2] o1) { o1 = Identity (t) },
            else_branch = b () => (float[2] o2) { o2 = Identity (x) }
        >
    }
    """)
    g = _graph(m)
    assert len(g.scopes) == 3
    owner = g.scopes[1].owner
    assert owner is not None and owner in g.readers(0, "t")
    assert g.dag.has_edge(g.scopes[0].producer["t"], owner)
    assert g.scopes[1].free == {"t"}


def test_subgraph_reading_undefined_outer_tensor() -> None:
    m = onnx.parser.parse_model("""
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x, bool c) => (float[2] y) {
        y = If (c) <
            then_branch = a () => (float[2] o1) { o1 = Identity (GHOST) },
            else_branch = b () => (float[2] o2) { o2 = Identity (x) }
        >
    }
    """)
    with pytest.raises(GraphInvalidError, match="reads undefined tensor 'GHOST'"):
        _graph(m)


def test_subgraph_shadowing_outer_name() -> None:
    m = onnx.parser.parse_model("""
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x, bool c) => (float[2] y) {
        y = If (c) <
            then_branch = a () => (float[2] x) { x = Identity (c) },
            else_branch = b () => (float[2] o2) { o2 = Identity (c) }
        >
    }
    """)
    with pytest.raises(GraphInvalidError, match="shadows"):
        _graph(m)


def test_recursive_function() -> None:
    f = helper.make_function("local", "F", ["a"], ["b"], [helper.make_node("F", ["a"], ["b"], domain="local")],
                             [helper.make_opsetid("", 13), helper.make_opsetid("local", 1)])
    m = _model([helper.make_node("F", ["x"], ["y"], domain="local", name="call")], functions=[f])
    with pytest.raises(GraphInvalidError, match="function cycle: local::F → local::F"):
        _graph(m)


def test_custom_domain_squeeze_is_not_the_standard_one() -> None:
    m = _model([helper.make_node("Squeeze", ["x"], ["y"], domain="com.evil", name="s")])
    m.opset_import.append(helper.make_opsetid("com.evil", 1))
    g = _graph(m)
    assert g.nodes[0].since_version is None
    from shapeflow.inference import infer

    assert infer(g).axis_nodes == []


def test_long_chain_does_not_recurse() -> None:
    n = 20_000  # twenty times the interpreter's recursion limit
    nodes = [helper.make_node("Relu", ["x" if i == 0 else f"t{i - 1}"], [f"t{i}" if i < n - 1 else "y"])
             for i in range(n)]
    g = _graph(_model(nodes))
    assert len(g.scopes[0].order) == n
