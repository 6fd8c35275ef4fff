"""A BERT encoder's forward pass in numpy, float32, for all-MiniLM-L6-v2 (6 layers, 12 heads, 384 wide).

Mean pooling over the real tokens, then L2 normalisation, as sentence-transformers does for this
model. The matrix products go to numpy's BLAS (both cores); the weights are rearranged once at
load so each layer makes 4 products (query, key and value fused into one).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from safetensors.numpy import load as load_safetensors

HEADS = 12
LAYER_NORM_EPS = np.float32(1e-12)
MASKED = np.float32(-1e9)  # added to the attention scores of padding: exp() makes them 0


@dataclass(frozen=True)
class Layer:
    qkv: np.ndarray  # (384, 1152): query (pre-scaled by 1/sqrt(head size)), key, value
    qkv_bias: np.ndarray
    attn_out: np.ndarray  # (384, 384)
    attn_out_bias: np.ndarray
    attn_norm: tuple[np.ndarray, np.ndarray]
    ffn_in: np.ndarray  # (384, 1536)
    ffn_in_bias: np.ndarray
    ffn_out: np.ndarray  # (1536, 384)
    ffn_out_bias: np.ndarray
    ffn_norm: tuple[np.ndarray, np.ndarray]


class BertEncoder:
    def __init__(self, safetensors_bytes: bytes):
        w = {k.removeprefix("bert."): v for k, v in load_safetensors(safetensors_bytes).items()}
        f32 = lambda name: np.ascontiguousarray(w[name], dtype=np.float32)  # noqa: E731
        # (in, out) layout, contiguous: x @ W without a transposed view on every call.
        t = lambda name: np.ascontiguousarray(w[name].T, dtype=np.float32)  # noqa: E731
        self.word = f32("embeddings.word_embeddings.weight")
        # Token type is always 0 (single sentences): fold its row into the position embeddings.
        self.position = f32("embeddings.position_embeddings.weight") + f32("embeddings.token_type_embeddings.weight")[0]
        self.embed_norm = (f32("embeddings.LayerNorm.weight"), f32("embeddings.LayerNorm.bias"))
        self.width = self.word.shape[1]
        self.head_size = self.width // HEADS
        scale = np.float32(1.0 / np.sqrt(self.head_size))
        self.layers = []
        for i in range(sum(1 for k in w if k.endswith(".attention.self.query.weight"))):
            p = f"encoder.layer.{i}"
            q, k, v = (f"{p}.attention.self.{n}" for n in ("query", "key", "value"))
            self.layers.append(
                Layer(
                    qkv=np.concatenate([t(f"{q}.weight") * scale, t(f"{k}.weight"), t(f"{v}.weight")], axis=1),
                    qkv_bias=np.concatenate([f32(f"{q}.bias") * scale, f32(f"{k}.bias"), f32(f"{v}.bias")]),
                    attn_out=t(f"{p}.attention.output.dense.weight"),
                    attn_out_bias=f32(f"{p}.attention.output.dense.bias"),
                    attn_norm=(
                        f32(f"{p}.attention.output.LayerNorm.weight"),
                        f32(f"{p}.attention.output.LayerNorm.bias"),
                    ),
                    ffn_in=t(f"{p}.intermediate.dense.weight"),
                    ffn_in_bias=f32(f"{p}.intermediate.dense.bias"),
                    ffn_out=t(f"{p}.output.dense.weight"),
                    ffn_out_bias=f32(f"{p}.output.dense.bias"),
                    ffn_norm=(f32(f"{p}.output.LayerNorm.weight"), f32(f"{p}.output.LayerNorm.bias")),
                )
            )

    @property
    def max_positions(self) -> int:
        return self.position.shape[0]

    def embed(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """(n, L) token ids and 0/1 mask → (n, width) unit vectors: mean of the last layer over real tokens."""
        n, length = ids.shape
        x = (self.word[ids] + self.position[:length]).reshape(n * length, self.width)
        x = layer_norm(x, *self.embed_norm)
        bias = ((1.0 - mask) * MASKED).astype(np.float32)[:, None, None, :]  # (n, 1, 1, L)
        for layer in self.layers:
            x = self._layer(x, layer, n, length, bias)
        x = x.reshape(n, length, self.width)
        pooled = np.einsum("nld,nl->nd", x, mask) / np.maximum(mask.sum(1, keepdims=True), 1.0)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), np.float32(1e-12))

    def _layer(self, x: np.ndarray, layer: Layer, n: int, length: int, bias: np.ndarray) -> np.ndarray:
        qkv = (x @ layer.qkv + layer.qkv_bias).reshape(n, length, 3, HEADS, self.head_size)
        q, k, v = (qkv[:, :, i].transpose(0, 2, 1, 3) for i in range(3))  # (n, heads, L, head size)
        scores = q @ k.transpose(0, 1, 3, 2) + bias
        context = softmax(scores) @ v
        context = context.transpose(0, 2, 1, 3).reshape(n * length, self.width)
        x = layer_norm(context @ layer.attn_out + layer.attn_out_bias + x, *layer.attn_norm)
        hidden = gelu(x @ layer.ffn_in + layer.ffn_in_bias)
        return layer_norm(hidden @ layer.ffn_out + layer.ffn_out_bias + x, *layer.ffn_norm)


def layer_norm(x: np.ndarray, gain: np.ndarray, bias: np.ndarray) -> np.ndarray:
    x = x - x.mean(-1, keepdims=True)
    inv = 1.0 / np.sqrt((x * x).mean(-1, keepdims=True) + LAYER_NORM_EPS)
    x *= inv
    x *= gain
    x += bias
    return x


def softmax(scores: np.ndarray) -> np.ndarray:
    scores -= scores.max(-1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(-1, keepdims=True)
    return scores


# Abramowitz & Stegun 7.1.26: erf(z) = 1 - t(a1 + t(a2 + ... )) exp(-z^2), t = 1/(1 + p z), z >= 0,
# absolute error < 1.5e-7. BERT's "gelu" is the exact x * Phi(x), not the tanh approximation.
_P = np.float32(0.3275911)
_A = [np.float32(a) for a in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)]
_INV_SQRT2 = np.float32(1.0 / np.sqrt(2.0))


def gelu(x: np.ndarray) -> np.ndarray:
    """x * Phi(x), in place. Phi(x) = 1 - q for x >= 0 and q for x < 0, with q = erfc(|x|/sqrt 2) / 2:
    computing q directly keeps its precision where 1 + erf(x) would cancel."""
    z = np.abs(x) * _INV_SQRT2
    t = 1.0 / (1.0 + _P * z)
    poly = _A[0] * t
    for a in _A[1:]:
        poly += a
        poly *= t
    z *= z
    np.negative(z, out=z)
    np.exp(z, out=z)
    poly *= z
    poly *= 0.5  # poly is now q
    return np.multiply(x, np.where(x >= 0, 1.0 - poly, poly), out=x)
