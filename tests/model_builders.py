"""Builders of ONNX models for shapeflow's tests, examples and benchmarks.

Everything here uses ``onnx.helper`` / ``onnx.parser`` and numpy only: no torch and no shapeflow
imports, so the models are an independent oracle for the tool. Weights come from
``numpy.random.default_rng(0)`` and every name is derived from a counter, so a builder called twice
with the same arguments returns byte-identical models.

Builders
--------
attention_block(opset)      GPT-2/BERT-style attention + MLP, as the TorchScript exporter writes it
bert_like(opset)            BERT flavour: token types, ``(1 - mask[:, None, None, :]) * -10000``
gpt2_like(opset)            GPT-2 flavour: causal mask sliced out of a constant ``bias`` buffer
squeeze_unsqueeze_chain(n)  synthetic model of exactly ``n`` nodes for benchmarks
paddle_squeeze_cases()      Paddle's ``squeeze`` doc cases 1-4 as ONNX Squeeze-13
unsqueeze_doc_cases()       the ONNX Unsqueeze-13 doc examples

The transformer builders copy what the corpus exports (``../shared/corpus``) look like: one
``Constant`` node per use for axes, Gather indices and small literals (axes as attributes below
opset 13), ``Shape -> Gather(i) -> Unsqueeze(0) -> Concat -> Reshape`` for every view, GPT-2's
``Conv1D`` flattening ``Shape -> Slice(-1:) -> Squeeze(0) -> Unsqueeze(0) -> Concat([-1], .)``
(a cancelling pair), and the extended attention mask ``Unsqueeze(1) -> Unsqueeze(2)`` (a
mergeable chain). From opset 13 on, axes are given both as Constant nodes and as shared int64
initializers, so both forms are exercised.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = [
    "OPSETS",
    "attention_block",
    "bert_like",
    "gpt2_like",
    "paddle_squeeze_cases",
    "squeeze_unsqueeze_chain",
    "unsqueeze_doc_cases",
]

#: Opsets the transformer builders support.
OPSETS = (11, 13, 17, 21)

#: IR version written for each opset (the lowest one that allows it), so the bytes do not depend on
#: the installed onnx version's default.
_IR_VERSION = {11: 6, 13: 7, 17: 8, 21: 10}

_PRODUCER = "shapeflow-model-builders"
_INT64_MAX = np.iinfo(np.int64).max
_FLOAT_MIN = float(np.finfo(np.float32).min)

#: Vocabulary and position table sizes of the transformer builders (small, to keep models < 300 KB).
VOCAB = 128
POSITIONS = 64


def _ir_version(opset: int) -> int:
    return _IR_VERSION[max(o for o in _IR_VERSION if o <= opset)]


def _make_model(graph: onnx.GraphProto, opset: int, doc: str = "") -> onnx.ModelProto:
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", opset)],
        producer_name=_PRODUCER,
        ir_version=_ir_version(opset),
    )
    if doc:
        model.doc_string = doc
    return model


class _Builder:
    """Collects nodes and initializers, naming them the way the TorchScript exporter does.

    A node is ``{scope}/{Op}`` or ``{scope}/{Op}_{k}`` and its outputs ``{name}_output_{i}``.
    """

    def __init__(self, opset: int) -> None:
        self.opset = opset
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._initializer_names: set[str] = set()
        self._counts: Counter[str] = Counter()

    # -- primitives -----------------------------------------------------------------------------
    def op(self, op_type: str, inputs: Sequence[str], scope: str, *, outputs: int = 1, **attrs):
        key = f"{scope}/{op_type}"
        k = self._counts[key]
        self._counts[key] += 1
        name = key if k == 0 else f"{key}_{k}"
        outs = [f"{name}_output_{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, name=name, **attrs))
        return outs[0] if outputs == 1 else outs

    def constant(self, value, scope: str, dtype=np.int64) -> str:
        """A ``Constant`` node, one per use, as the exporter writes them."""
        tensor = numpy_helper.from_array(np.asarray(value, dtype=dtype))
        return self.op("Constant", [], scope, value=tensor)

    def initializer(self, name: str, value: np.ndarray) -> str:
        """Add an initializer once; a second call with the same name shares the first."""
        if name not in self._initializer_names:
            self._initializer_names.add(name)
            self.initializers.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def axes_op(self, op_type: str, x: str, axes: Sequence[int], scope: str, form: str) -> str:
        """Squeeze/Unsqueeze with axes in the form of the opset.

        Below opset 13 the axes are an attribute; from 13 on they are input 2, given either by a
        ``Constant`` node (``form="constant"``) or by a shared initializer (``form="initializer"``).
        """
        if self.opset < 13:
            return self.op(op_type, [x], scope, axes=list(axes))
        if form == "constant":
            axes_name = self.constant(list(axes), scope)
        elif form == "initializer":
            label = "_".join(str(a).replace("-", "m") for a in axes)
            axes_name = self.initializer(f"axes_{label}", np.asarray(axes, dtype=np.int64))
        else:
            raise ValueError(f"unknown axes form {form!r}")
        return self.op(op_type, [x, axes_name], scope)

    def unsqueeze(self, x: str, axes: Sequence[int], scope: str, form: str = "constant") -> str:
        return self.axes_op("Unsqueeze", x, axes, scope, form)

    def squeeze(self, x: str, axes: Sequence[int], scope: str, form: str = "constant") -> str:
        return self.axes_op("Squeeze", x, axes, scope, form)

    # -- exporter idioms ------------------------------------------------------------------------
    def dim(self, x: str, i: int, scope: str) -> str:
        """``x.size(i)``: ``Shape -> Gather(scalar i)``, a 0-d int64 tensor."""
        shape = self.op("Shape", [x], scope)
        return self.op("Gather", [shape, self.constant(i, scope)], scope, axis=0)

    def dim_1d(self, x: str, i: int, scope: str) -> str:
        """``Shape -> Gather(i) -> Unsqueeze(0)``: the operand exporters feed to Concat."""
        return self.unsqueeze(self.dim(x, i, scope), [0], scope)

    def concat(self, parts: Sequence[str | list[int]], scope: str) -> str:
        """Concat of 1-D int64 parts; literal lists become Constant nodes."""
        names = [p if isinstance(p, str) else self.constant(p, scope) for p in parts]
        return self.op("Concat", names, scope, axis=0)

    def graph(self, name, inputs, outputs, doc: str = "") -> onnx.GraphProto:
        return helper.make_graph(
            self.nodes, name, inputs, outputs, initializer=self.initializers, doc_string=doc
        )


# ---------------------------------------------------------------------------------------------
# transformer blocks
# ---------------------------------------------------------------------------------------------

_FLAVOURS = ("block", "bert", "gpt2")


class _Transformer:
    """Writes one of three flavours of a small transformer encoder/decoder stack.

    * ``block``: learned positions from ``Range``, padding mask, pre-LayerNorm, Q/K/V as
      MatMul + Add, MLP as GPT-2 ``Conv1D`` (the Slice/Squeeze/Unsqueeze flattening), Erf Gelu.
    * ``bert``: token types, positions sliced from a ``position_ids`` buffer, post-LayerNorm,
      every Linear as MatMul + Add, Erf Gelu; so, like the real BERT export, no Squeeze at all.
    * ``gpt2``: ``input_ids.view(-1, seq)``, pre-LayerNorm, fused ``c_attn`` + Split, causal mask
      sliced out of a constant ``bias`` buffer, every Linear as ``Conv1D``, tanh Gelu.
    """

    def __init__(self, opset: int, flavour: str, layers: int, hidden: int, heads: int) -> None:
        if opset not in OPSETS:
            raise ValueError(f"opset must be one of {OPSETS}, got {opset}")
        if flavour not in _FLAVOURS:
            raise ValueError(f"unknown flavour {flavour!r}")
        if layers < 1 or heads < 1 or hidden < 1 or hidden % heads:
            raise ValueError("need layers >= 1 and hidden divisible by heads")
        self.b = _Builder(opset)
        self.opset = opset
        self.flavour = flavour
        self.layers = layers
        self.hidden = hidden
        self.heads = heads
        self.head_dim = hidden // heads
        self.rng = np.random.default_rng(0)
        self.eps = 1e-12 if flavour == "bert" else 1e-5

    # -- weights --------------------------------------------------------------------------------
    def weight(self, name: str, shape: Sequence[int], scale: float = 0.02) -> str:
        value = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        return self.b.initializer(name, value)

    def norm_params(self, prefix: str) -> tuple[str, str]:
        gamma = (1.0 + 0.1 * self.rng.standard_normal(self.hidden)).astype(np.float32)
        beta = (0.1 * self.rng.standard_normal(self.hidden)).astype(np.float32)
        return (
            self.b.initializer(f"{prefix}.weight", gamma),
            self.b.initializer(f"{prefix}.bias", beta),
        )

    # -- layers ---------------------------------------------------------------------------------
    def layer_norm(self, x: str, prefix: str, scope: str) -> str:
        gamma, beta = self.norm_params(prefix)
        b = self.b
        if self.opset >= 17:
            return b.op("LayerNormalization", [x, gamma, beta], scope, axis=-1, epsilon=self.eps)
        # the opset-11/13 export: ReduceMean(axes attribute) / Sub / Pow / Sqrt / Div
        mean = b.op("ReduceMean", [x], scope, axes=[-1])
        centred = b.op("Sub", [x, mean], scope)
        square = b.op("Pow", [centred, b.constant(2.0, scope, np.float32)], scope)
        var = b.op("ReduceMean", [square], scope, axes=[-1])
        var = b.op("Add", [var, b.constant(self.eps, scope, np.float32)], scope)
        std = b.op("Sqrt", [var], scope)
        normed = b.op("Div", [centred, std], scope)
        scaled = b.op("Mul", [normed, gamma], scope)
        return b.op("Add", [scaled, beta], scope)

    def linear(self, x: str, prefix: str, n_in: int, n_out: int, scope: str) -> str:
        """``nn.Linear`` on a [batch, seq, n_in] tensor: MatMul then Add of the bias initializer."""
        w = self.weight(f"{prefix}.weight", (n_in, n_out))
        bias = self.weight(f"{prefix}.bias", (n_out,))
        y = self.b.op("MatMul", [x, w], scope)
        return self.b.op("Add", [bias, y], scope)

    def conv1d(self, x: str, prefix: str, n_in: int, n_out: int, scope: str) -> str:
        """GPT-2 ``Conv1D``: ``addmm(b, x.view(-1, x.size(-1)), w).view(x.size()[:-1] + (nf,))``.

        ``x.size(-1)`` exports as ``Shape -> Slice(-1:) -> Squeeze(0)`` and goes straight back
        into a shape through ``Unsqueeze(0)``: the Squeeze/Unsqueeze pair cancels.
        """
        b = self.b
        w = self.weight(f"{prefix}.weight", (n_in, n_out))
        bias = self.weight(f"{prefix}.bias", (n_out,))
        batch = b.dim(x, 0, scope)
        seq = b.dim(x, 1, scope)
        shape = b.op("Shape", [x], scope)
        start, end, axis = (b.constant(v, scope) for v in ([-1], [_INT64_MAX], [0]))
        last = b.op("Slice", [shape, start, end, axis], scope)
        last = b.squeeze(last, [0], scope, form="constant")
        last = b.unsqueeze(last, [0], scope, form="initializer")
        flat = b.op("Reshape", [x, b.concat([[-1], last], scope)], scope)
        y = b.op("Gemm", [flat, w, bias], scope, alpha=1.0, beta=1.0)
        out_shape = b.concat(
            [b.unsqueeze(batch, [0], scope), b.unsqueeze(seq, [0], scope), [n_out]], scope
        )
        return b.op("Reshape", [y, out_shape], scope)

    def project(self, x: str, prefix: str, n_in: int, n_out: int, scope: str) -> str:
        if self.flavour == "bert":
            return self.linear(x, prefix, n_in, n_out, scope)
        return self.conv1d(x, prefix, n_in, n_out, scope)

    def split_heads(self, x: str, perm: list[int], scope: str) -> str:
        """``x.view(batch, seq, heads, head_dim).permute(perm)``."""
        b = self.b
        shape = b.concat(
            [b.dim_1d(x, 0, scope), b.dim_1d(x, 1, scope), [self.heads], [self.head_dim]], scope
        )
        return b.op("Transpose", [b.op("Reshape", [x, shape], scope)], scope, perm=perm)

    def attention(self, x: str, mask: str, prefix: str, scope: str) -> str:
        b, h = self.b, self.hidden
        if self.flavour == "gpt2":
            qkv = self.conv1d(x, f"{prefix}.c_attn", h, 3 * h, f"{scope}/c_attn")
            if self.opset < 13:
                q, k, v = b.op("Split", [qkv], scope, outputs=3, axis=2, split=[h, h, h])
            else:
                sizes = b.constant([h, h, h], scope)
                q, k, v = b.op("Split", [qkv, sizes], scope, outputs=3, axis=2)
        else:
            q = self.linear(x, f"{prefix}.query", h, h, f"{scope}/query")
            k = self.linear(x, f"{prefix}.key", h, h, f"{scope}/key")
            v = self.linear(x, f"{prefix}.value", h, h, f"{scope}/value")
        q = self.split_heads(q, [0, 2, 1, 3], scope)
        k = self.split_heads(k, [0, 2, 3, 1], scope)  # already transposed for q @ k^T
        v = self.split_heads(v, [0, 2, 1, 3], scope)
        scores = b.op("MatMul", [q, k], scope)
        if self.flavour == "bert":
            scale = b.constant(np.sqrt(self.head_dim), scope, np.float32)
            scores = b.op("Div", [scores, scale], scope)
        else:
            scale = b.constant(1.0 / np.sqrt(self.head_dim), scope, np.float32)
            scores = b.op("Mul", [scores, scale], scope)
        if self.flavour == "gpt2":
            scores = self.causal(scores, q, k, scope)
        scores = b.op("Add", [scores, mask], scope)
        probs = b.op("Softmax", [scores], scope, axis=-1)
        ctx = b.op("MatMul", [probs, v], scope)
        ctx = b.op("Transpose", [ctx], scope, perm=[0, 2, 1, 3])
        merged = b.concat([b.dim_1d(ctx, 0, scope), b.dim_1d(ctx, 1, scope), [h]], scope)
        ctx = b.op("Reshape", [ctx, merged], scope)
        return self.project(ctx, f"{prefix}.c_proj", h, h, f"{scope}/c_proj")

    def causal(self, scores: str, q: str, k: str, scope: str) -> str:
        """``bias[:, :, key_len - query_len:key_len, :key_len]`` then ``where(mask, w, min)``."""
        b = self.b
        n = POSITIONS
        bias = b.initializer("bias", np.tril(np.ones((n, n), dtype=bool)).reshape(1, 1, n, n))
        query_len = b.dim(q, 2, scope)
        key_len = b.dim(k, 3, scope)  # k is [batch, heads, head_dim, seq]
        start = b.unsqueeze(b.op("Sub", [key_len, query_len], scope), [0], scope)
        end = b.unsqueeze(key_len, [0], scope)
        rows = b.op(
            "Slice", [bias, start, end, b.constant([2], scope), b.constant([1], scope)], scope
        )
        end = b.unsqueeze(key_len, [0], scope)
        causal = b.op(
            "Slice",
            [rows, b.constant([0], scope), end, b.constant([3], scope), b.constant([1], scope)],
            scope,
        )
        fill = b.constant(_FLOAT_MIN, scope, np.float32)
        return b.op("Where", [causal, scores, fill], scope)

    def gelu(self, x: str, scope: str) -> str:
        b = self.b
        if self.flavour == "gpt2":  # gelu_new: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
            half = b.op("Mul", [x, b.constant(0.5, scope, np.float32)], scope)
            cube = b.op("Pow", [x, b.constant(3.0, scope, np.float32)], scope)
            cube = b.op("Mul", [cube, b.constant(0.044715, scope, np.float32)], scope)
            inner = b.op("Add", [x, cube], scope)
            inner = b.op("Mul", [inner, b.constant(np.sqrt(2 / np.pi), scope, np.float32)], scope)
            t = b.op("Tanh", [inner], scope)
            t = b.op("Add", [t, b.constant(1.0, scope, np.float32)], scope)
            return b.op("Mul", [half, t], scope)
        # exact gelu: x * 0.5 * (1 + erf(x / sqrt(2)))
        y = b.op("Div", [x, b.constant(np.sqrt(2.0), scope, np.float32)], scope)
        y = b.op("Erf", [y], scope)
        y = b.op("Add", [y, b.constant(1.0, scope, np.float32)], scope)
        y = b.op("Mul", [x, y], scope)
        return b.op("Mul", [y, b.constant(0.5, scope, np.float32)], scope)

    def mlp(self, x: str, prefix: str, scope: str) -> str:
        h = self.hidden
        y = self.project(x, f"{prefix}.c_fc", h, 4 * h, f"{scope}/c_fc")
        y = self.gelu(y, f"{scope}/act")
        return self.project(y, f"{prefix}.c_proj", 4 * h, h, f"{scope}/c_proj")

    # -- model ----------------------------------------------------------------------------------
    def embeddings(self) -> str:
        b, h = self.b, self.hidden
        scope = "/embeddings"
        ids = "input_ids"
        if self.flavour == "gpt2":  # input_ids.view(-1, input_shape[-1])
            ids = b.op("Reshape", [ids, b.concat([[-1], b.dim_1d(ids, 1, scope)], scope)], scope)
        wte = self.weight("wte.weight", (VOCAB, h))
        wpe = self.weight("wpe.weight", (POSITIONS, h))
        x = b.op("Gather", [wte, ids], f"{scope}/word_embeddings")
        if self.flavour == "bert":  # self.position_ids[:, :seq_length]
            buffer = b.initializer(
                "position_ids", np.arange(POSITIONS, dtype=np.int64).reshape(1, POSITIONS)
            )
            seq = b.dim_1d("input_ids", 1, scope)
            starts, axes, steps = (b.constant(v, scope) for v in ([0], [1], [1]))
            positions = b.op("Slice", [buffer, starts, seq, axes, steps], scope)
            tte = self.weight("token_type_embeddings.weight", (2, h))
            types = b.op("Gather", [tte, "token_type_ids"], f"{scope}/token_type_embeddings")
            x = b.op("Add", [x, types], scope)
        else:  # torch.arange(seq).unsqueeze(0)
            seq = b.op("Cast", [b.dim(ids, 1, scope)], scope, to=TensorProto.INT64)
            zero = b.constant(0, scope)
            one = b.constant(1, scope)
            positions = b.op("Range", [zero, seq, one], scope)
            positions = b.unsqueeze(positions, [0], scope, form="constant")
        pe = b.op("Gather", [wpe, positions], f"{scope}/position_embeddings")
        x = b.op("Add", [x, pe], scope)
        if self.flavour == "bert":
            x = self.layer_norm(x, "embeddings.LayerNorm", f"{scope}/LayerNorm")
        return x

    def extended_mask(self) -> str:
        """``(1.0 - mask[:, None, None, :].float()) * -10000.0``: [batch, 1, 1, seq]."""
        b = self.b
        scope = ""
        mask = "attention_mask"
        if self.flavour == "gpt2":  # attention_mask.view(batch_size, -1)
            shape = b.concat([b.dim_1d(mask, 0, scope), [-1]], scope)
            mask = b.op("Reshape", [mask, shape], scope)
        mask = b.unsqueeze(mask, [1], scope, form="initializer")
        mask = b.unsqueeze(mask, [2], scope, form="initializer")
        mask = b.op("Cast", [mask], scope, to=TensorProto.FLOAT)
        one = b.initializer("one", np.array(1.0, dtype=np.float32))
        mask = b.op("Sub", [one, mask], scope)
        big = b.initializer("mask_fill", np.array(-10000.0, dtype=np.float32))
        return b.op("Mul", [mask, big], scope)

    def build(self) -> onnx.ModelProto:
        b = self.b
        x = self.embeddings()
        mask = self.extended_mask()
        for i in range(self.layers):
            scope, prefix = f"/h.{i}", f"h.{i}"
            if self.flavour == "bert":  # post-LN
                a = self.attention(x, mask, f"{prefix}.attn", f"{scope}/attn")
                x = self.layer_norm(b.op("Add", [a, x], scope), f"{prefix}.ln_1", f"{scope}/ln_1")
                m = self.mlp(x, f"{prefix}.mlp", f"{scope}/mlp")
                x = self.layer_norm(b.op("Add", [m, x], scope), f"{prefix}.ln_2", f"{scope}/ln_2")
            else:  # pre-LN
                a = self.layer_norm(x, f"{prefix}.ln_1", f"{scope}/ln_1")
                a = self.attention(a, mask, f"{prefix}.attn", f"{scope}/attn")
                x = b.op("Add", [a, x], scope)
                m = self.layer_norm(x, f"{prefix}.ln_2", f"{scope}/ln_2")
                m = self.mlp(m, f"{prefix}.mlp", f"{scope}/mlp")
                x = b.op("Add", [x, m], scope)
        if self.flavour != "bert":
            x = self.layer_norm(x, "ln_f", "/ln_f")
        # the last node written produces x: give its output the graph output's name
        assert b.nodes[-1].output[0] == x
        b.nodes[-1].output[0] = "last_hidden_state"

        int_input = lambda name: helper.make_tensor_value_info(  # noqa: E731
            name, TensorProto.INT64, ["batch", "seq"]
        )
        inputs = [int_input("input_ids"), int_input("attention_mask")]
        if self.flavour == "bert":
            inputs.append(int_input("token_type_ids"))
        outputs = [
            helper.make_tensor_value_info(
                "last_hidden_state", TensorProto.FLOAT, ["batch", "seq", self.hidden]
            )
        ]
        doc = (
            f"{self.flavour} transformer, {self.layers} layer(s), hidden {self.hidden}, "
            f"{self.heads} heads, opset {self.opset}; built by tests/model_builders.py"
        )
        graph = b.graph(f"{self.flavour}_L{self.layers}_op{self.opset}", inputs, outputs)
        return _make_model(graph, self.opset, doc)


def attention_block(
    opset: int, *, layers: int = 1, hidden: int = 64, heads: int = 4
) -> onnx.ModelProto:
    """A GPT-2/BERT-style attention + MLP stack as the TorchScript exporter writes it.

    Inputs ``input_ids`` and ``attention_mask`` (int64 [batch, seq]), output
    ``last_hidden_state`` (float [batch, seq, hidden]). ``seq`` must be at most ``POSITIONS``.
    """
    return _Transformer(opset, "block", layers, hidden, heads).build()


def bert_like(opset: int, *, layers: int = 1, hidden: int = 64, heads: int = 4) -> onnx.ModelProto:
    """BERT flavour: ``token_type_ids``, mask ``(1 - mask.unsqueeze(1).unsqueeze(2)) * -10000``."""
    return _Transformer(opset, "bert", layers, hidden, heads).build()


def gpt2_like(opset: int, *, layers: int = 1, hidden: int = 64, heads: int = 4) -> onnx.ModelProto:
    """GPT-2 flavour (no past): causal mask sliced from the constant ``bias`` buffer."""
    return _Transformer(opset, "gpt2", layers, hidden, heads).build()


# ---------------------------------------------------------------------------------------------
# synthetic benchmark model
# ---------------------------------------------------------------------------------------------

#: Nodes in the two segment variants of ``squeeze_unsqueeze_chain`` (with / without a Constant).
_SEGMENT_NODES = (19, 18)


def squeeze_unsqueeze_chain(n_nodes: int, opset: int = 13) -> onnx.ModelProto:
    """A synthetic model of exactly ``n_nodes`` nodes: input ``x`` float [batch, seq, 8].

    It repeats a segment that keeps the running tensor at [batch, seq, 8] (19 nodes with a
    Constant, 18 without, alternating)::

        Shape -> Gather(0) -> Unsqueeze(0) -\\
        Shape -> Gather(1) -> Unsqueeze(0) ---> Concat -> Reshape(h)          shape chain
        Shape -> Slice(-1:) -> Squeeze(0) -> Unsqueeze(0) -/                  cancelling pair
        Unsqueeze(1) -> Squeeze(1) -> Relu                                     cancelling pair
        Unsqueeze(0) -> Unsqueeze(2) -> Squeeze(0, 2)                          chain, then cancels
        Squeeze(Constant [1, 8] | initializer [1, 8], 0) -> Add               foldable constant

    and pads with Relu nodes up to ``n_nodes``. Axes, Gather indices and Slice bounds are shared
    initializers (attributes below opset 13), names are short, so 500k nodes stay far below 2 GB.
    """
    if n_nodes < 1:
        raise ValueError("n_nodes must be >= 1")
    if opset < 11:
        raise ValueError("opset must be >= 11")
    attr_axes = opset < 13
    make_node = helper.make_node
    nodes: list[onnx.NodeProto] = []
    counter = 0

    def fresh() -> str:
        nonlocal counter
        counter += 1
        return f"t{counter}"

    def add(op_type: str, inputs: list[str], **attrs) -> str:
        out = fresh()
        nodes.append(make_node(op_type, inputs, [out], name=f"n{len(nodes)}", **attrs))
        return out

    def axes_op(op_type: str, x: str, axes: str) -> str:
        if attr_axes:
            return add(op_type, [x], axes=_CHAIN_AXES[axes])
        return add(op_type, [x, axes])

    inits = [
        numpy_helper.from_array(np.array(0, dtype=np.int64), "i0"),
        numpy_helper.from_array(np.array(1, dtype=np.int64), "i1"),
        numpy_helper.from_array(np.array([-1], dtype=np.int64), "last_start"),
        numpy_helper.from_array(np.array([_INT64_MAX], dtype=np.int64), "last_end"),
        numpy_helper.from_array(np.full((1, 8), 0.01, dtype=np.float32), "k18"),
    ]
    if not attr_axes:
        inits += [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in _CHAIN_AXES.items()]
    const_value = numpy_helper.from_array(np.full((1, 8), -0.01, dtype=np.float32))

    h = "x"
    segment = 0
    while len(nodes) + _SEGMENT_NODES[segment % 2] <= n_nodes:
        with_constant = segment % 2 == 0
        shape = add("Shape", [h])
        batch = axes_op("Unsqueeze", add("Gather", [shape, "i0"], axis=0), "ax0")
        seq = axes_op("Unsqueeze", add("Gather", [shape, "i1"], axis=0), "ax0")
        last = add("Slice", [shape, "last_start", "last_end", "ax0"] if not attr_axes
                   else [shape, "last_start", "last_end"])
        last = axes_op("Unsqueeze", axes_op("Squeeze", last, "ax0"), "ax0")
        y = add("Reshape", [h, add("Concat", [batch, seq, last], axis=0)])
        y = axes_op("Squeeze", axes_op("Unsqueeze", y, "ax1"), "ax1")
        y = add("Relu", [y])
        y = axes_op("Unsqueeze", axes_op("Unsqueeze", y, "ax0"), "ax2")
        y = axes_op("Squeeze", y, "ax02")
        k = add("Constant", [], value=const_value) if with_constant else "k18"
        h = add("Add", [y, axes_op("Squeeze", k, "ax0")])
        segment += 1
    while len(nodes) < n_nodes:
        h = add("Relu", [h])
    nodes[-1].output[0] = "y"

    graph = helper.make_graph(
        nodes,
        f"squeeze_unsqueeze_chain_{n_nodes}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", 8])],
        initializer=inits,
    )
    return _make_model(graph, opset, f"synthetic Squeeze/Unsqueeze benchmark, {n_nodes} nodes")


#: Axes used by the chain builder, by initializer name.
_CHAIN_AXES = {"ax0": [0], "ax1": [1], "ax2": [2], "ax02": [0, 2]}


# ---------------------------------------------------------------------------------------------
# documentation cases
# ---------------------------------------------------------------------------------------------


def _axes_case(
    op_type: str,
    name: str,
    in_shape: Sequence[int],
    axes: Sequence[int] | None,
    out_shape: Sequence[int],
    doc: str,
) -> onnx.ModelProto:
    """One Squeeze/Unsqueeze-13 node named ``{op}_0``, axes (if any) as an initializer."""
    inputs = ["x"]
    inits = []
    if axes is not None:
        inits.append(numpy_helper.from_array(np.asarray(axes, dtype=np.int64), "axes"))
        inputs.append("axes")
    node = helper.make_node(op_type, inputs, ["y"], name=f"{op_type.lower()}_0")
    graph = helper.make_graph(
        [node],
        name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(in_shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
        initializer=inits,
    )
    return _make_model(graph, 13, doc)


def paddle_squeeze_cases() -> list[tuple[str, onnx.ModelProto, list[int] | str]]:
    """Paddle's ``paddle.squeeze`` doc cases 1-4 on x [1, 3, 1, 5] as ONNX Squeeze-13.

    The expected value is the output shape, or ``"SF104"`` for case 3: ONNX fails there because
    dim 3 is 5, while Paddle silently keeps that dim and gives [3, 5]. The case-3 model declares
    Paddle's [3, 5] as its output shape, as a converter would; it passes ``check_model`` but not
    ``full_check`` (onnx's own shape inference rejects the Squeeze).
    """
    x = [1, 3, 1, 5]
    cases: list[tuple[str, Sequence[int] | None, list[int] | str, str]] = [
        ("paddle_case1_axes_0", [0], [3, 1, 5], "Paddle squeeze case 1: axes [0]"),
        ("paddle_case2_no_axes", None, [3, 5], "Paddle squeeze case 2: no axes"),
        (
            "paddle_case3_axes_0_2_3",
            [0, 2, 3],
            "SF104",
            "Paddle squeeze case 3: axes [0, 2, 3]; Paddle keeps dim 3 (5) and gives [3, 5], "
            "ONNX Squeeze fails because dim 3 is not 1",
        ),
        ("paddle_case4_axes_m2", [-2], [1, 3, 5], "Paddle squeeze case 4: axes [-2]"),
    ]
    out = []
    for name, axes, expected, doc in cases:
        shape = [3, 5] if isinstance(expected, str) else expected
        out.append((name, _axes_case("Squeeze", name, x, axes, shape, doc), expected))
    return out


def unsqueeze_doc_cases() -> list[tuple[str, onnx.ModelProto, list[int]]]:
    """The examples of the ONNX Unsqueeze-13 operator documentation."""
    cases = [
        ("unsqueeze_axis_0", [3, 4, 5], [0], [1, 3, 4, 5]),
        ("unsqueeze_axis_1", [3, 4, 5], [1], [3, 1, 4, 5]),
        ("unsqueeze_axis_2", [3, 4, 5], [2], [3, 4, 1, 5]),
        ("unsqueeze_two_axes", [3, 4, 5], [1, 4], [3, 1, 4, 5, 1]),
        ("unsqueeze_three_axes", [3, 4, 5], [2, 4, 5], [3, 4, 1, 5, 1, 1]),
        ("unsqueeze_unsorted_axes", [3, 4, 5], [5, 4, 2], [3, 4, 1, 5, 1, 1]),
        ("unsqueeze_negative_axes", [1, 3, 1, 5], [-2], [1, 3, 1, 1, 5]),
    ]
    return [
        (name, _axes_case("Unsqueeze", name, x, axes, y, f"ONNX Unsqueeze-13 doc: {name}"), y)
        for name, x, axes, y in cases
    ]
