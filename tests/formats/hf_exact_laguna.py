"""Laguna's and JetMoE's float32 steps recomputed in float64 (hf_exact.py applies them): Laguna's router's logits,
scores and weights, and its attention's softplus gate (the rest of its forward as transformers 5.24 writes it);
JetMoE's routers' logits, top k and softmax (their forward's own source without its casts to float32)."""

from __future__ import annotations

import inspect
import sys
import textwrap

import torch


def without_float32(method):
    """`method` compiled again from its own source with every `.float()` cast removed, in its module's names."""
    source = textwrap.dedent(inspect.getsource(method)).replace(".float()", "").replace(".type(torch.float32)", "")
    names = dict(vars(sys.modules[method.__module__]))
    exec(source, names)  # noqa: S102 (transformers' own code, its casts removed)
    return names[method.__name__]


def _float64_laguna_router(self, hidden_states):
    """LagunaTopKRouter.forward in the model's dtype: soft-capped logits, sigmoid scores, the bias to choose."""
    logits = torch.nn.functional.linear(hidden_states.reshape(-1, self.hidden_dim), self.weight)
    if self.router_logit_softcapping > 0.0:
        logits = torch.tanh(logits / self.router_logit_softcapping) * self.router_logit_softcapping
    scores = torch.sigmoid(logits)
    chosen = torch.topk(scores + self.e_score_correction_bias.to(scores.dtype), self.top_k, dim=-1)[1]
    weights = scores.gather(-1, chosen)
    return logits, weights / weights.sum(dim=-1, keepdim=True), chosen


def _float64_laguna_attention(self, hidden_states, position_embeddings, attention_mask, cache=None, **kwargs):
    """LagunaAttention.forward with its softplus gate in the model's dtype (float32 in transformers')."""
    laguna = sys.modules[type(self).__module__]
    shape = hidden_states.shape[:-1]
    heads = (*shape, -1, self.head_dim)
    q = self.q_norm(self.q_proj(hidden_states).view(heads)).transpose(1, 2)
    k = self.k_norm(self.k_proj(hidden_states).view(heads)).transpose(1, 2)
    v = self.v_proj(hidden_states).view(heads).transpose(1, 2)
    q, k = laguna.apply_rotary_pos_emb(q, k, *position_embeddings)
    if cache is not None:
        k, v = cache.update(k, v, self.layer_idx, kwargs=kwargs)
    attend = laguna.ALL_ATTENTION_FUNCTIONS.get_interface(
        self.config._attn_implementation, laguna.eager_attention_forward
    )
    out, weights = attend(
        self, q, k, v, attention_mask, dropout=0.0, scaling=self.scaling, sliding_window=self.sliding_window, **kwargs
    )
    out = out.reshape(*shape, -1).contiguous()
    gate = torch.nn.functional.softplus(self.g_proj(hidden_states))
    if self.gate_per_head:
        out = (out.view(*shape, -1, self.head_dim) * gate.unsqueeze(-1)).view(*shape, -1)
    else:
        out = out * gate
    return self.o_proj(out), weights


def _float64_jetmoe_gating(self, hidden_states):
    """JetMoeTopKGating.forward without its casts to float32."""
    return without_float32(type(self).forward)(self, hidden_states)


def _float64_mimo_router(self, hidden_states):
    """MiMoV2FlashTopkRouter.forward without its casts to float32."""
    return without_float32(type(self).forward)(self, hidden_states)


LAGUNA = {
    "MiMoV2FlashTopkRouter": _float64_mimo_router,
    "LagunaTopKRouter": _float64_laguna_router,
    "LagunaAttention": _float64_laguna_attention,
    "JetMoeTopKGating": _float64_jetmoe_gating,
}
