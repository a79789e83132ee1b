"""The README's Python API example runs as written and passes ``mypy --strict`` (issue 12)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import cli_process
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(REPO, "examples")


def api_example() -> str:
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("## Python API", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert blocks, "no python block in the README's Python API section"
    return "\n".join(blocks)


@pytest.fixture
def example(tmp_path):
    for name in ("axis_errors.onnx", "attention.onnx"):
        shutil.copy(os.path.join(EXAMPLES, name), tmp_path / name)
    (tmp_path / ".git").mkdir()  # a repository of its own: no config from above applies
    path = tmp_path / "readme_example.py"
    path.write_text(api_example())
    return path


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}


def test_readme_api_example_runs(example) -> None:
    proc = subprocess.run([sys.executable, str(example)], cwd=example.parent, capture_output=True, text=True,
                          env=env(), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "<Analysis 'axis_errors.onnx': 7 nodes, 6 Squeeze/Unsqueeze, 3 errors, 0 warnings, 0 info>" in proc.stdout  # batch=1: no SF105
    assert "axis_errors.onnx: node 'sq_non_unit_node' (Squeeze-13): error SF104 squeeze-non-unit-dim" in proc.stdout
    assert (example.parent / "attention.opt.onnx").exists()


def test_readme_api_example_passes_mypy_strict(example) -> None:
    pytest.importorskip("mypy")
    # --follow-imports=silent: the example (user code) is checked strictly against shapeflow's
    # annotations; shapeflow's own internals are not what this test judges.
    proc = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
                           "--no-incremental", "--cache-dir", os.devnull, str(example)],
                          cwd=example.parent, capture_output=True, text=True, env=env(), timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def readme_block(command: str) -> str:
    """The output the README shows under ``$ COMMAND`` (up to the end of its code block)."""
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        text = f.read()
    start = text.index(f"$ {command}\n") + len(command) + 3
    return text[start:text.index("```", start)]


def test_readme_infer_sample_is_current() -> None:
    proc = cli_process.shapeflow("infer", "examples/axis_errors.onnx", cwd=REPO, env=env())
    assert proc.stdout == readme_block("shapeflow infer examples/axis_errors.onnx")


def test_readme_optimize_sample_is_current(tmp_path) -> None:
    pytest.importorskip("onnxruntime")
    os.mkdir(tmp_path / "examples")
    shutil.copy(os.path.join(EXAMPLES, "attention.onnx"), tmp_path / "examples" / "attention.onnx")
    command = "shapeflow optimize examples/attention.onnx -o attention.opt.onnx --verify"
    proc = cli_process.shapeflow(*command.split()[1:], cwd=tmp_path, env=env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == readme_block(command)


def test_rule_codes_complete_in_the_shell() -> None:
    proc = subprocess.run([sys.executable, "-m", "shapeflow"], capture_output=True, text=True,
                          env={**env(), "_SHAPEFLOW_COMPLETE": "bash_complete", "COMP_WORDS": "shapeflow lint --select SF10",
                               "COMP_CWORD": "3"})
    assert "plain,SF104" in proc.stdout.splitlines() and "plain,SF201" not in proc.stdout.splitlines()


def test_no_reference_to_files_users_do_not_have() -> None:
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        text = f.read()
    proc = cli_process.shapeflow("lint", "--help", env=env())
    for where in (text, proc.stdout):
        assert "../shared" not in where and "SPEC section" not in where


def test_readme_quiet_gate_sample_is_current() -> None:
    """The summary line the README quotes for `lint examples/attention.onnx` is what lint prints."""
    proc = cli_process.shapeflow("lint", "examples/attention.onnx", cwd=REPO, env=env())
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        text = f.read()
    quoted = re.search(r"`(1 file: 0 errors, 0 warnings, \d+ info not shown; --show-info)`", text)
    assert quoted is not None and proc.stderr.startswith(quoted.group(1))


def _examples_readme() -> str:
    with open(os.path.join(EXAMPLES, "README.md"), encoding="utf-8") as f:
        return " ".join(f.read().split())  # one line: the sentences wrap anywhere


def _number(pattern: str, text: str) -> tuple[int, ...]:
    found = re.search(pattern, text)
    assert found is not None, f"examples/README.md no longer says {pattern!r}"
    return tuple(int(g) for g in found.groups())


def test_examples_readme_numbers_are_the_models() -> None:
    """Every count examples/README.md states is what the models and shapeflow give today."""
    import collections

    import onnx

    import shapeflow

    text = _examples_readme()
    # the table's opsets
    for name, opset in re.findall(r"\| `(\w+\.onnx)` \| (\d+) \|", text):
        model = onnx.load(os.path.join(EXAMPLES, name))
        assert [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")] == [int(opset)], name

    path = os.path.join(EXAMPLES, "attention.onnx")
    model = onnx.load(path)
    ops = collections.Counter(n.op_type for n in model.graph.node)
    assert _number(r"(\d+) nodes, (\d+) Unsqueeze and (\d+) Squeeze", text) == (
        len(model.graph.node), ops["Unsqueeze"], ops["Squeeze"])
    layers, hidden, heads = _number(r"(\w+) layer, hidden (\d+), (\d+) heads", text.replace("one layer", "1 layer"))
    assert f"{layers} layer(s), hidden {hidden}, {heads} heads" in model.doc_string
    positions = next(t for t in model.graph.initializer if t.name == "wpe.weight")
    assert _number(r"any `batch` and `seq` up to (\d+)", text) == (positions.dims[0],)
    producer = {o: n for n in model.graph.node for o in n.output}

    def from_shape(n: onnx.NodeProto) -> bool:
        gather = producer.get(n.input[0])
        return gather is not None and gather.op_type == "Gather" and producer[gather.input[0]].op_type == "Shape"

    unsq = [n for n in model.graph.node if n.op_type == "Unsqueeze"]
    assert _number(r"\((\d+) of the (\d+) Unsqueezes", text) == (sum(map(from_shape, unsq)), len(unsq))
    result = shapeflow.optimize(path)
    assert _number(r"turns the (\d+) Unsqueeze and (\d+) Squeeze into (\d+) Unsqueeze \((\d+) nodes into (\d+)\)",
                   text) == (result.before["Unsqueeze"], result.before["Squeeze"], result.after["Unsqueeze"],
                             result.before["nodes"], result.after["nodes"])
    assert result.after["Squeeze"] == 0
    analysis = shapeflow.infer(path)
    shapes = {str(t["shape"]).replace("'", "") for t in analysis.to_json()["tensors"]}
    for quoted in ("[batch, seq, 4, 16]", "[batch, 4, seq, seq]", "[batch, 1, 1, seq]", "[batch, seq, 64]"):
        assert quoted in shapes, quoted
    tensors = analysis.to_json()["tensors"]
    unknown = [t for t in tensors if t["shape"] is None or None in t["shape"]]
    assert not unknown and _number(r"Every dim of the (\d+) tensors is known", text) == (len(tensors),)
    by_name = {t["name"]: t["shape"] for t in tensors}
    assert by_name["/h.0/attn/c_proj/Reshape_1_output_0"] == ["batch", "seq - 64*min(1, seq) + 64", 64]
    assert "`[batch, seq - 64*min(1, seq) + 64, 64]`" in text
    assert by_name["last_hidden_state"] == ["batch", "seq", 64] and "output is `[batch, seq, 64]`" in text
    assert not analysis.diagnostics

    path = os.path.join(EXAMPLES, "opset11_attribute_axes.onnx")
    result = shapeflow.optimize(path)
    before = result.before["Squeeze"] + result.before["Unsqueeze"]
    after = result.after["Squeeze"] + result.after["Unsqueeze"]
    assert _number(r"removes (\d+) of the (\d+) Squeeze/Unsqueeze \((\d+) nodes into (\d+)\)", text) == (
        before - after, before, result.before["nodes"], result.after["nodes"])

    # axis_errors: one row per node, with the finding lint gives it
    found = {(d.location.node, d.code) for d in shapeflow.infer(os.path.join(EXAMPLES, "axis_errors.onnx")).diagnostics}
    rows = re.findall(r"\| `(\w+)` \| [^|]+ \| (SF\d+) ", text)
    assert len(rows) == 4 and set(rows) == found
    paddle = shapeflow.infer(os.path.join(EXAMPLES, "paddle_squeeze.onnx")).diagnostics
    assert [(d.location.node, d.code) for d in paddle] == [("squeeze_0", "SF104")]
    assert "axis 3 has dim 5" in paddle[0].message and "reports SF104 on `squeeze_0` for axis 3 (dim 5)" in text


def test_every_file_the_docs_name_is_in_the_repository() -> None:
    """Markdown links and ``*.md`` names in the READMEs and docs point at files of the repository
    (README once named a SPEC.md it did not ship)."""
    docs = ["README.md", "examples/README.md", "fuzz/README.md", "tests/contract/README.md", "docs/SPEC.md", "docs/RELIABILITY.md",
            "CHANGELOG.md"]
    files = set()
    for here, _, names in os.walk(REPO):
        if ".git" in here.split(os.sep):
            continue
        files.update(names)
    for doc in docs:
        with open(os.path.join(REPO, doc), encoding="utf-8") as f:
            text = f.read()
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if re.match(r"[a-z]+://", target):
                continue
            assert os.path.exists(os.path.normpath(os.path.join(REPO, os.path.dirname(doc), target))), (doc, target)
        prose = re.sub(r"```.*?```", "", text, flags=re.S)  # (a command's output file is no reference)
        for name in re.findall(r"\b([\w-]+\.md)\b", prose):
            assert name in files, (doc, name)


def test_install_instructions_work_from_a_checkout() -> None:
    """The package is not on PyPI: the docs and messages say `pip install -e ".[extra]"`, never
    `pip install shapeflow[...]`."""
    for doc in ("README.md", "examples/README.md", "fuzz/README.md", "docs/SPEC.md", "docs/RELIABILITY.md"):
        with open(os.path.join(REPO, doc), encoding="utf-8") as f:
            text = f.read()
        assert not re.search(r"pip install ['\"]?shapeflow", text), doc
    from shapeflow.drivers.verify import MISSING_ORT

    assert 'pip install -e ".[verify]"' in MISSING_ORT
