"""A transformer's parameters, counted from its shape, and the KV bytes a token costs.

The count is the one an interviewer does on a whiteboard, matrix by matrix (biases and norms are
a few millionths of the total and are left out):

    embeddings   vocab x d_model, twice unless the output head is tied to the input
    attention    GQA/MHA: q (d x heads.hd) + k, v (d x kv_heads.hd each) + o (heads.hd x d)
                 MLA: q (through a rank-q_lora bottleneck when it has one: d x q_lora + q_lora x
                 heads.(hd + rope)), kv down (d x (kv_lora + rope)), kv up (kv_lora x heads.(hd + v)),
                 o (heads.v x d)
    MLP          gated (SwiGLU): 3 x d x ffn; plain: 2 x d x ffn
    MoE layer    (routed + shared) experts x 3 x d x moe_ffn, plus the router (d x routed)

Active parameters are what one token touches: the same with only the top-k routed experts. The
catalog states the totals its sources publish; tests hold this count against them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from models.catalog import LLM


@dataclass(frozen=True)
class ParameterCount:
    embeddings: float
    attention_per_layer: float
    dense_mlp_per_layer: float
    moe_per_layer: float  # all experts and the router of one MoE layer
    moe_active_per_layer: float  # what one token touches in it
    dense_layers: int
    moe_layers: int

    @property
    def attention(self) -> float:
        return self.attention_per_layer * (self.dense_layers + self.moe_layers)

    @property
    def total(self) -> float:
        return (self.embeddings + self.attention + self.dense_layers * self.dense_mlp_per_layer
                + self.moe_layers * self.moe_per_layer)

    @property
    def active(self) -> float:
        return (self.embeddings + self.attention + self.dense_layers * self.dense_mlp_per_layer
                + self.moe_layers * self.moe_active_per_layer)


def _attention(m: LLM) -> float:
    d = m.d_model
    if m.attention == "MLA":
        rope, v = m.qk_rope_head_dim or 0, m.v_head_dim or m.head_dim
        q_width = m.heads * (m.head_dim + rope)
        q = d * m.q_lora_rank + m.q_lora_rank * q_width if m.q_lora_rank else d * q_width
        kv_down = d * (m.kv_lora_rank + rope)
        kv_up = m.kv_lora_rank * m.heads * (m.head_dim + v)
        return q + kv_down + kv_up + m.heads * v * d
    return d * m.heads * m.head_dim + 2 * d * m.kv_heads * m.head_dim + m.heads * m.head_dim * d


def _mlp(d_model: int, width: int, gated: bool) -> float:
    return (3 if gated else 2) * d_model * width


def count(m: LLM) -> ParameterCount:
    """The parameters of `m`, matrix by matrix. Needs the shape's ffn widths (ValueError if absent)."""
    if m.is_moe and m.moe_ffn_dim is None or not m.is_moe and m.ffn_dim is None:
        raise ValueError(f"{m.name}: the shape has no MLP width, so its parameters cannot be counted")
    d = m.d_model
    embeddings = m.vocab * d * (1 if m.tied_embeddings else 2)
    dense_mlp = _mlp(d, m.ffn_dim, m.gated_mlp) if m.ffn_dim else 0.0
    if m.is_moe:
        expert = _mlp(d, m.moe_ffn_dim, m.gated_mlp)
        router = d * m.moe_experts
        moe = (m.moe_experts + m.shared_experts) * expert + router
        moe_active = (m.experts_per_token + m.shared_experts) * expert + router
        dense_layers, moe_layers = m.dense_layers, m.layers - m.dense_layers
    else:
        moe = moe_active = 0.0
        dense_layers, moe_layers = m.layers, 0
    return ParameterCount(embeddings, _attention(m), dense_mlp, moe, moe_active, dense_layers, moe_layers)


def with_counted_params(m: LLM) -> LLM:
    """`m` with its totals replaced by the count from its shape (a custom shape has no other)."""
    c = count(m)
    return replace(m, total_params=c.total, active_params=c.active)
