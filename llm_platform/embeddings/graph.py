"""all-MiniLM-L6-v2's encoder (BERT: 6 layers, 12 heads, 384 wide) as an ONNX graph, run by onnxruntime.

The graph is built here, in memory, from the weights we checked (weights.py): no .onnx file is
shipped or fetched, and nothing but these arrays and standard ONNX operators goes into it.
onnxruntime runs it on the CPU with its own GEMM kernels and fuses the layer norms, the GELU and
the attention; on two cores it is ~10 times as fast as a numpy forward pass (docs/decisions.md).

Inputs: input_ids (n, L) int64, position_ids (L,) int64, attention_bias (n, 1, 1, L) float32
(0 for a token, -1e9 for padding). Output: hidden (n, L, 384), the last layer, for pooling.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper
from safetensors.numpy import load as load_safetensors

HEADS = 12
LAYER_NORM_EPS = 1e-12
OPSET = 20  # the first with Gelu; its default is the exact erf form, BERT's "gelu"


class GraphBuilder:
    """Nodes and initializers of one graph; each op's output gets a fresh name."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []

    def const(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def op(self, op_type: str, *inputs: str, **attributes) -> str:
        output = f"{op_type.lower()}_{len(self.nodes)}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [output], **attributes))
        return output

    def dense(self, x: str, weights: dict[str, np.ndarray], name: str) -> str:
        """x @ W.T + b for a torch Linear's weight (out, in), stored transposed (in, out) once here."""
        kernel = self.const(f"{name}.kernel", np.ascontiguousarray(weights[f"{name}.weight"].T))
        return self.op("Add", self.op("MatMul", x, kernel), self.const(f"{name}.bias", weights[f"{name}.bias"]))

    def layer_norm(self, x: str, weights: dict[str, np.ndarray], name: str) -> str:
        gain = self.const(f"{name}.weight", weights[f"{name}.weight"])
        return self.op("LayerNormalization", x, gain, self.const(f"{name}.bias", weights[f"{name}.bias"]),
                       axis=-1, epsilon=LAYER_NORM_EPS)  # fmt: skip


def load_weights(safetensors_bytes: bytes) -> dict[str, np.ndarray]:
    weights = {k.removeprefix("bert."): v for k, v in load_safetensors(safetensors_bytes).items()}
    return {k: np.asarray(v, dtype=np.float32) for k, v in weights.items() if v.dtype.kind == "f"}


def bert_graph(weights: dict[str, np.ndarray]) -> onnx.ModelProto:
    g = GraphBuilder()
    width = weights["embeddings.word_embeddings.weight"].shape[1]
    # Token type is always 0 (one text per input): its row is folded into the position embeddings.
    positions = weights["embeddings.position_embeddings.weight"] + weights["embeddings.token_type_embeddings.weight"][0]
    x = g.op(
        "Add",
        g.op("Gather", g.const("word_embeddings", weights["embeddings.word_embeddings.weight"]), "input_ids"),
        g.op("Gather", g.const("position_embeddings", positions), "position_ids"),
    )
    x = g.layer_norm(x, weights, "embeddings.LayerNorm")
    layers = sum(1 for k in weights if k.endswith(".attention.self.query.weight"))
    for i in range(layers):
        x = encoder_layer(g, x, weights, f"encoder.layer.{i}", width)
    g.nodes[-1].output[0] = "hidden"
    graph = helper.make_graph(
        g.nodes,
        "all-MiniLM-L6-v2",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["n", "L"]),
            helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["L"]),
            helper.make_tensor_value_info("attention_bias", TensorProto.FLOAT, ["n", 1, 1, "L"]),
        ],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["n", "L", width])],
        g.initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])


def encoder_layer(g: GraphBuilder, x: str, weights: dict[str, np.ndarray], p: str, width: int) -> str:
    head_size = width // HEADS
    heads = g.const(f"{p}.heads", np.array([0, 0, HEADS, head_size], dtype=np.int64))  # 0: keep that dim
    merged = g.const(f"{p}.merged", np.array([0, 0, width], dtype=np.int64))

    def split_heads(projection: str, perm: list[int]) -> str:  # (n, L, 384) → (n, heads, L or d, d or L)
        return g.op("Transpose", g.op("Reshape", g.dense(x, weights, projection), heads), perm=perm)

    query = split_heads(f"{p}.attention.self.query", [0, 2, 1, 3])
    key_t = split_heads(f"{p}.attention.self.key", [0, 2, 3, 1])  # transposed for query @ key
    value = split_heads(f"{p}.attention.self.value", [0, 2, 1, 3])
    scale = g.const(f"{p}.scale", np.array(1.0 / np.sqrt(head_size), dtype=np.float32))
    scores = g.op("Add", g.op("Mul", g.op("MatMul", query, key_t), scale), "attention_bias")
    context = g.op("MatMul", g.op("Softmax", scores, axis=-1), value)
    context = g.op("Reshape", g.op("Transpose", context, perm=[0, 2, 1, 3]), merged)
    attended = g.op("Add", g.dense(context, weights, f"{p}.attention.output.dense"), x)
    x = g.layer_norm(attended, weights, f"{p}.attention.output.LayerNorm")
    hidden = g.op("Gelu", g.dense(x, weights, f"{p}.intermediate.dense"))
    return g.layer_norm(g.op("Add", g.dense(hidden, weights, f"{p}.output.dense"), x), weights, f"{p}.output.LayerNorm")


def build_session(safetensors_bytes: bytes, threads: int = 0, spinning: bool = False) -> onnxruntime.InferenceSession:
    """An onnxruntime session for the weights; `threads` 0 lets onnxruntime use one per core.

    `spinning` off: between two operators onnxruntime's threads sleep instead of busy-waiting. The
    worker shares two cores with the web process and other tasks, where spinning threads only take
    CPU from them (docs/decisions.md has the figures)."""
    model = bert_graph(load_weights(safetensors_bytes)).SerializeToString()
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
    options.log_severity_level = 3  # errors only
    return onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
