"""Red-team attacks on forwarding a rewire to late readers (``rounds.Claims`` lets a rewrite rewire a
reader that an earlier rewrite of the round deleted; ``Editor.replace_uses`` renames the readers an
earlier edit of the round gave the tensor, created nodes included).

Each model chains rewrites that now compose in one round: bypasses (Identity, no-op Cast, no-op
Reshape/Expand, identity Transpose pairs) feeding cancelled or merged Squeeze/Unsqueeze runs, fan-out
merges and folds that create nodes, names kept by an Identity (graph outputs, subgraph readers),
If branches and a model-local function, opsets 11 and 13+. Every one runs the original and the
optimized model in onnxruntime at every symbolic dim bound to 0, 1, 2, 3 and 7 (bit-identical where
the original runs), checks the optimized model with ``check_model(full_check=True)`` (topological
order included), that a second optimize changes nothing, and pins the rounds (with the pre-change
count in a comment) and what is left.
"""

from __future__ import annotations

import onnx
import pytest

from shapeflow.passes import rounds
from test_passes_support import check_rewrite, optimize, parse

BINDINGS = (0, 1, 2, 3, 7)


def model(body: str, *, inputs: str, outputs: str, inits: str = "", opset: int = 18, functions: str = "") -> onnx.ModelProto:
    extra = ', "local" : 1' if functions else ""
    return parse(f'<ir_version: 8, opset_import: ["" : {opset}{extra}]>\ng ({inputs}) => ({outputs})\n'
                 + (f"<{inits}>\n" if inits else "") + "{\n" + body + "\n}\n" + functions)


FUNCTION = """
<domain: "local", opset_import: ["" : 18]>
chain (fx) => (fy) {
  i = Identity(fx)
  s = Shape(i)
  r = Reshape(i, s)
  ax = Constant <value = int64[1] {0}> ()
  u = Unsqueeze(r, ax)
  q = Squeeze(u, ax)
  fy = Relu(q)
}
"""

# name -> (model, rounds now, rounds before the change, op types left in the main graph)
CASES: dict[str, tuple[onnx.ModelProto, int, int, list[str]]] = {
    # the change's own example: a no-op Reshape (target concatenated from its input's shape) whose
    # only reader starts a cancelled pair
    "reshape-before-pair": (model("""
      h = Relu(x)
      s = Shape(h)
      s0 = Slice(s, z0, o1)
      s1 = Slice(s, o1, t2)
      t = Concat <axis=0> (s0, s1)
      r = Reshape(h, t)
      u = Unsqueeze(r, a1)
      q = Squeeze(u, a1)
      y = Relu(q)
    """, inputs="float[a, b] x", outputs="float[a, b] y",
        inits="int64[1] z0 = {0}, int64[1] o1 = {1}, int64[1] t2 = {2}, int64[1] a1 = {1}"), 1, 2, ["Relu", "Relu"]),
    # Identity -> no-op Cast -> no-op Reshape -> no-op Expand -> Transpose pair -> pair: the pair's
    # reader is renamed once per bypass of the round
    "five-bypasses": (model("""
      h = Relu(x)
      i = Identity(h)
      c = Cast <to=1> (i)
      s = Shape(c)
      r = Reshape(c, s)
      e = Expand(r, one)
      t1 = Transpose <perm=[1,0]> (e)
      t2 = Transpose <perm=[1,0]> (t1)
      u = Unsqueeze(t2, a1)
      q = Squeeze(u, a1)
      y = Relu(q)
    """, inputs="float[a, b] x", outputs="float[a, b] y", inits="int64[1] a1 = {1}, int64[1] one = {1}"),
        2, 3, ["Relu", "Relu"]),
    # the pair ends at a graph output: the created Identity keeping 'y' is renamed r -> i, then
    # (next round) i -> x
    "kept-name-renamed-twice": (model("""
      i = Identity(x)
      s = Shape(i)
      r = Reshape(i, s)
      u = Unsqueeze(r, a0)
      y = Squeeze(u, a0)
    """, inputs="float[a, b] x", outputs="float[a, b] y", inits="int64[1] a0 = {0}"), 3, 4, ["Identity"]),
    "kept-name-renamed-twice-opset11": (model("""
      i = Identity(x)
      s = Shape(i)
      r = Reshape(i, s)
      u = Unsqueeze <axes=[0]> (r)
      y = Squeeze <axes=[0]> (u)
    """, inputs="float[a, b] x", outputs="float[a, b] y", opset=11), 3, 4, ["Identity"]),
    # SF206 creates Unsqueeze(r, [0]) in place of a Squeeze reader (and merges an Unsqueeze reader);
    # the Reshape and Identity bypasses forward to the created node
    "fan-out-merge-created-reader": (model("""
      h = Relu(x)
      i = Identity(h)
      s = Shape(i)
      r = Reshape(i, s)
      u = Unsqueeze(r, a01)
      p = Squeeze(u, a0)
      q = Unsqueeze(u, a3)
      w = Squeeze(u, a01)
      y1 = Relu(p)
      y2 = Relu(q)
      y3 = Neg(w)
    """, inputs="float[a, b] x", outputs="float[1, a, b] y1, float[1, 1, a, 1, b] y2, float[a, b] y3",
        inits="int64[2] a01 = {0, 1}, int64[1] a0 = {0}, int64[1] a3 = {3}"),
        4, 5, ["Neg", "Relu", "Relu", "Relu", "Unsqueeze", "Unsqueeze"]),
    # SF202's root reads the run's input (a late reader), whose producers are then bypassed
    "merge-unsqueeze-root-forwarded": (model("""
      h = Relu(x)
      i = Identity(h)
      c = Cast <to=1> (i)
      u = Unsqueeze(c, a0)
      v = Unsqueeze(u, a0)
      y = Relu(v)
    """, inputs="float[a, b] x", outputs="float[1, 1, a, b] y", inits="int64[1] a0 = {0}"),
        2, 3, ["Relu", "Relu", "Unsqueeze"]),
    "merge-squeeze-root-forwarded-opset11": (model("""
      h = Relu(x)
      s = Shape(h)
      r = Reshape(h, s)
      u = Squeeze <axes=[0]> (r)
      v = Squeeze <axes=[0]> (u)
      y = Relu(v)
    """, inputs="float[1, 1, b] x", outputs="float[b] y", opset=11), 2, 3, ["Relu", "Relu", "Squeeze"]),
    # duplicate Unsqueezes of a no-op Reshape: one starts a cancelled pair, the other is read
    # through an Identity and by an output
    "duplicates-and-pair": (model("""
      h = Relu(x)
      s = Shape(h)
      r = Reshape(h, s)
      u1 = Unsqueeze(r, a0)
      u2 = Unsqueeze(r, a0)
      q2 = Squeeze(u2, a0)
      y1 = Relu(u1)
      y2 = Neg(q2)
      i = Identity(u1)
      y3 = Sigmoid(i)
    """, inputs="float[a, b] x", outputs="float[1, a, b] y1, float[a, b] y2, float[1, a, b] y3",
        inits="int64[1] a0 = {0}"), 2, 3, ["Neg", "Relu", "Relu", "Sigmoid", "Unsqueeze"]),
    # SF203 folds two Unsqueezes of one initializer (a group: its readers are rewired to the fold);
    # their readers were bypassed earlier in the round (deleted: the fold forwards to theirs)
    "fold-group-readers-bypassed": (model("""
      u1 = Unsqueeze(k, a0)
      u2 = Unsqueeze(k, a0)
      i = Identity(u1)
      c = Cast <to=1> (u2)
      p = Add(x, i)
      q = Mul(x, c)
      y = Add(p, q)
    """, inputs="float[a, 3] x", outputs="float[a, 3] y",
        inits="float[3] k = {1.5, -2, 0.25}, int64[1] a0 = {0}"), 1, 2, ["Add", "Add", "Mul"]),
    # SF220 makes the region read the Unsqueeze's input; the Cast and Identity feeding it are
    # bypassed after it in the round (its rename_region renames are never forwarded); a second
    # round infers the renamed region again and finds nothing
    "across-region-then-bypasses": (model("""
      h = Relu(x)
      i = Identity(h)
      c = Cast <to=1> (i)
      u = Unsqueeze(c, a1)
      m = Relu(u)
      n = Add(m, m)
      y = Squeeze(n, a1)
    """, inputs="float[a, b] x", outputs="float[a, b] y", inits="int64[1] a1 = {1}"), 2, 2, ["Add", "Relu", "Relu"]),
    # the end of the chain is read by name inside both If branches: the pair keeps 'q' with an
    # Identity, which the bypasses rename
    "if-reads-chain-end-by-name": (model("""
      h = Relu(x)
      i = Identity(h)
      s = Shape(i)
      r = Reshape(i, s)
      u = Unsqueeze(r, a0)
      q = Squeeze(u, a0)
      y = If (cond) <
        then_branch = g1 () => (float[a, b] o1) { o1 = Relu(q) },
        else_branch = g2 () => (float[a, b] o2) { o2 = Neg(q) }
      >
      w = Sigmoid(q)
    """, inputs="float[a, b] x, bool cond", outputs="float[a, b] y, float[a, b] w", inits="int64[1] a0 = {0}"),
        3, 4, ["Identity", "If", "Relu", "Sigmoid"]),
    # the chain inside a branch, starting at an outer tensor read by name
    "chain-inside-if-branch": (model("""
      h = Relu(x)
      y = If (cond) <
        then_branch = g1 () => (float[a, b] o1) {
          i = Identity(h)
          s = Shape(i)
          r = Reshape(i, s)
          ax = Constant <value = int64[1] {0}> ()
          u = Unsqueeze(r, ax)
          q = Squeeze(u, ax)
          o1 = Relu(q)
        },
        else_branch = g2 () => (float[a, b] o2) { o2 = Neg(h) }
      >
    """, inputs="float[a, b] x, bool cond", outputs="float[a, b] y"), 2, 3, ["If", "Relu"]),
    # the chain in a model-local function body (Constant axes, no initializers) and after its call
    "chain-in-function": (model("""
      h = Relu(x)
      c = local.chain(h)
      i = Identity(c)
      u = Unsqueeze(i, a0)
      y = Squeeze(u, a0)
    """, inputs="float[a, b] x", outputs="float[a, b] y", inits="int64[1] a0 = {0}", functions=FUNCTION),
        2, 3, ["Identity", "Relu", "chain"]),
    # the Reshape's output fans out to two cancelled pairs (one ending at a graph output) and a reader
    "fan-out-two-pairs-and-output": (model("""
      h = Relu(x)
      s = Shape(h)
      r = Reshape(h, s)
      u = Unsqueeze(r, a1)
      q = Squeeze(u, a1)
      y = Relu(q)
      w = Sigmoid(r)
      u2 = Unsqueeze(r, a0)
      q2 = Squeeze(u2, a0)
    """, inputs="float[a, b] x", outputs="float[a, b] y, float[a, b] w, float[a, b] q2",
        inits="int64[1] a1 = {1}, int64[1] a0 = {0}"), 1, 3, ["Identity", "Relu", "Relu", "Sigmoid"]),
    # int32: a double Cast, Add 0 and Mul 1 (identity elements) around a cancelled pair
    "int-identity-elements-and-double-cast": (model("""
      xi = Cast <to=6> (x)
      c1 = Cast <to=7> (xi)
      c2 = Cast <to=6> (c1)
      z = Add(c2, zero)
      u = Unsqueeze(z, a0)
      q = Squeeze(u, a0)
      y = Mul(q, one)
      w = Neg(y)
    """, inputs="float[a, b] x", outputs="int32[a, b] w",
        inits="int32[1] zero = {0}, int32 one = {1}, int64[1] a0 = {0}"), 2, 4, ["Cast", "Neg"]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_forwarded_rewires_keep_outputs(name: str) -> None:
    m, want_rounds, _before, left = CASES[name]
    out = optimize(m)
    check_rewrite(out, values=BINDINGS)
    assert out.result.rounds == want_rounds, (out.result.rounds, out.result.log)
    assert sorted(n.op_type for n in out.after.graph.node) == left, out.result.log


@pytest.mark.parametrize("name", ["five-bypasses", "fan-out-merge-created-reader", "fold-group-readers-bypassed",
                                  "chain-in-function"])
def test_same_model_without_skip_taken_and_with_full_inference(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    m = CASES[name][0]
    plain = optimize(m).data
    assert optimize(m, full_inference=True).data == plain
    monkeypatch.setattr(rounds, "SKIP_TAKEN", False)
    assert optimize(m).data == plain


def test_a_pair_bypass_that_keeps_its_shared_inner_claims_it() -> None:
    # merge-transpose bypasses both identity pairs (t, p) and (t, q) to 's'; t stays for the other
    # pair and is claimed as read, so the cancelled pair that rewires t (s -> x) waits a round.
    # Before SF239 claimed t, the cancel ran in the same round and only t was renamed: y1 and y2
    # were left reading 's' ("rewrite left 's' without a producer"; forwarding alone repaired it).
    m = model("""
      u = Unsqueeze(x, a1)
      s = Squeeze(u, a1)
      t = Transpose <perm=[1,0]> (s)
      p = Transpose <perm=[1,0]> (t)
      q = Transpose <perm=[1,0]> (t)
      y1 = Relu(p)
      y2 = Neg(q)
    """, inputs="float[a, b] x", outputs="float[a, b] y1, float[a, b] y2", inits="int64[1] a1 = {1}", opset=13)
    out = optimize(m)
    check_rewrite(out, values=BINDINGS)
    assert out.result.rounds == 2
    assert sorted(n.op_type for n in out.after.graph.node) == ["Neg", "Relu"]


# The bug these two pinned: SF239 bypassed an identity Transpose pair to the inner Transpose's input
# without claiming the inner when the inner has other readers (here: it is a graph output), so a
# later rewrite of the round that deletes the inner's own inner (the pair (a, b), b kept as an
# Identity of x) still believed, from the index, that nothing else reads 'a'. The first model
# crashed before forwarding too; the second ran (the bypass of c waited a round for the Cast) and
# crashed with it: the Cast's reader is forwarded to 'a'. Fixed by ``reads=(inner,)`` in SF239's
# non-exclusive pair bypass (as SF208's double cast and the chain rules' identity match do).
SF239_HOLE = {
    "pre-existing": """
      a = Transpose <perm=[1,0]> (x)
      b = Transpose <perm=[0,1]> (a)
      c = Transpose <perm=[0,1]> (b)
      y = Relu(c)
    """,
    "forwarded-through-cast": """
      a = Transpose <perm=[1,0]> (x)
      b = Transpose <perm=[0,1]> (a)
      c = Transpose <perm=[0,1]> (b)
      d = Cast <to=1> (c)
      y = Relu(d)
    """,
}


@pytest.mark.parametrize("name", list(SF239_HOLE))
def test_sf239_pair_bypass_with_shared_inner(name: str) -> None:
    m = model(SF239_HOLE[name], inputs="float[p, q] x", outputs="float[q, p] b, float[q, p] y", opset=13)
    out = optimize(m)  # was: AssertionError: rewrite left 'a' without a producer in main
    check_rewrite(out, values=BINDINGS)
    # c (and the Cast) go; a is a real transpose, b an identity one that is a graph output
    assert sorted(n.op_type for n in out.after.graph.node) == ["Relu", "Transpose", "Transpose"]


def test_a_renamed_region_is_inferred_again_and_rewritten_in_a_next_round() -> None:
    # reshape-round-trip renames its region (two Casts int32 -> int64 -> int32); the carried
    # inference knows nothing of the new names, so the round that renamed it is followed by a
    # whole inference, where the Casts, now on xi directly, merge (before: left for a second run)
    m = model("""
      xi = Cast <to=6> (x)
      r1 = Reshape(xi, m1)
      c1 = Cast <to=7> (r1)
      c2 = Cast <to=6> (c1)
      s = Shape(xi)
      y = Reshape(c2, s)
    """, inputs="float[a, b] x", outputs="int32[a, b] y", inits="int64[1] m1 = {-1}", opset=13)
    out = optimize(m)
    check_rewrite(out, values=BINDINGS)  # (idempotent: a second optimize changes nothing)
    assert out.result.rewrites.get("no-op-cast") == 1
    assert [n.op_type for n in out.after.graph.node] == ["Cast", "Cast"]
