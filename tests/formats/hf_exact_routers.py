"""The routers transformers runs in float32 even in a float64 model, as hf_exact.py's `exact` replaces their forward:
the same routing in the model's dtype."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")


def _float64_granite_router(self, hidden):
    """GraniteMoE's router without its cast to float32: the softmax of each token's top k logits."""
    logits = torch.nn.functional.linear(hidden, self.weight)
    top, index = logits.topk(self.top_k, dim=-1)
    return logits, torch.softmax(top, dim=-1), index


def _float64_minimax_router(self, hidden, e_score_correction_bias):
    """MiniMaxM2TopKRouter.forward (and HYV3TopKRouter's) in the model's dtype: sigmoid scores, the bias to choose,
    renormalised (HY-V3's plus 1e-20, then scaled)."""
    logits = torch.nn.functional.linear(hidden.reshape(-1, self.hidden_dim), self.weight)
    scores = logits.sigmoid()
    index = torch.topk(scores + e_score_correction_bias.to(scores.dtype), self.top_k, dim=-1, sorted=False)[1]
    weights = scores.gather(1, index)
    if hasattr(self, "router_scaling_factor"):
        return logits, weights / (weights.sum(dim=-1, keepdim=True) + 1e-20) * self.router_scaling_factor, index
    return logits, weights / weights.sum(dim=-1, keepdim=True), index


def _float64_cohere_router(self, hidden):
    """Cohere2MoeTopKRouter.forward in the model's dtype: the top k logits softmaxed (or sigmoid, renormalised)."""
    logits = torch.nn.functional.linear(hidden, self.weight)
    scores, index = torch.topk(logits, self.top_k, dim=-1)
    if self.expert_selection_fn == "softmax":
        return logits, scores.softmax(dim=1), index
    scores = scores.sigmoid()
    return logits, scores / scores.sum(dim=-1, keepdim=True) if self.norm_topk_prob else scores, index


def _float64_ernie_router(self, hidden):
    """Ernie4_5_MoeTopKRouter.forward in the model's dtype: a softmax, its top k plus the correction bias chosen,
    the chosen weights renormalised."""
    logits = torch.nn.functional.linear(hidden, self.weight)
    scores = logits.softmax(dim=1)
    index = torch.topk(self.moe_statics(scores), self.top_k, dim=-1)[1]
    weights = scores.gather(-1, index)
    return logits, weights / weights.sum(dim=-1, keepdim=True).clamp(min=self.norm_min), index


def _float64_afmoe_router(self, hidden, expert_bias):
    """AfmoeTokenChoiceRouter.forward in the model's dtype: sigmoid scores, the bias to choose, renormalised, scaled."""
    logits = self.gate(hidden.view(-1, hidden.shape[-1]))
    scores = logits.sigmoid()
    index = torch.topk(scores + expert_bias.to(scores.dtype), k=self.top_k, dim=1)[1]
    weights = scores.gather(dim=1, index=index)
    return logits, weights / (weights.sum(dim=-1, keepdim=True) + 1e-20) * self.route_scale, index


def _float64_deepseek_router(self, hidden):
    """DeepseekV2/V3TopkRouter.forward in the model's dtype: softmax (V2) or sigmoid with the correction bias (V3)
    scores, the group-limited choice, renormalised (V3 with norm_topk_prob) and scaled."""
    logits = torch.nn.functional.linear(hidden.view(-1, self.hidden_dim), self.weight)
    v3 = hasattr(self, "e_score_correction_bias")
    scores = logits.sigmoid() if v3 else logits.softmax(dim=-1)
    choice = scores + self.e_score_correction_bias.to(scores.dtype) if v3 else scores
    if v3 or self.topk_method == "group_limited_greedy":
        grouped = choice.view(-1, self.num_group, self.num_experts // self.num_group)
        group_scores = grouped.topk(2, dim=-1)[0].sum(dim=-1) if v3 else grouped.max(dim=-1).values
        group_idx = torch.topk(group_scores, k=self.topk_group, dim=-1, sorted=False)[1]
        mask = torch.zeros_like(group_scores).scatter_(1, group_idx, 1).bool()
        mask = (
            mask.unsqueeze(-1)
            .expand(-1, self.num_group, self.num_experts // self.num_group)
            .reshape(-1, self.num_experts)
        )
        choice = choice.masked_fill(~mask, float("-inf") if v3 else 0.0)
    index = torch.topk(choice, k=self.top_k, dim=-1, sorted=False)[1]
    weights = scores.gather(1, index)
    if v3 and self.norm_topk_prob:
        weights = weights / (weights.sum(dim=-1, keepdim=True) + 1e-20)
    return logits, weights * self.routed_scaling_factor, index


def _float64_longcat_router(self, hidden):
    """LongcatFlashTopkRouter.forward in the model's dtype: a softmax over the experts and the zero experts, the
    correction bias to choose, the chosen weights unnormalised times routed_scaling_factor (its classifier's bias,
    held, is never added: as transformers)."""
    logits = torch.nn.functional.linear(hidden.view(-1, self.hidden_dim), self.classifier.weight)
    scores = logits.softmax(dim=-1)
    index = self.get_topk_indices(scores)
    return logits, scores.gather(1, index) * self.routed_scaling_factor, index
