"""Issue 43's statistics: B's next-token distributions against A's, as llama-perplexity computes them. Each figure is
computed again here independently: KL divergence and log-likelihoods by PyTorch in float64, percentiles, means and
their errors by Python's own arithmetic on llama-perplexity's formulas (tools/perplexity/perplexity.cpp)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from transformer_cli.analysis.divergence import Divergence, Perplexity, Scored, chunks, nmse_verdict

torch = pytest.importorskip("torch")
V, N = 50, 64
RNG = np.random.default_rng(43)
IDS = RNG.integers(0, V, size=N)
A = RNG.normal(scale=3.0, size=(V, N))


def _percentile(values: list[float], fraction: float) -> float:
    """llama-perplexity's: linear between the sorted values at fraction (count - 1)."""
    ordered = sorted(values)
    at = fraction * (len(ordered) - 1)
    low = int(at)
    return (1 - (at - low)) * ordered[low] + (at - low) * ordered[min(low + 1, len(ordered) - 1)]


def _error(values: list[float]) -> float:
    n = len(values)
    mean = sum(values) / n
    var = sum(v * v for v in values) / n - mean * mean
    return math.sqrt(var / (n - 1)) if var > 0 and n > 10 else 0.0


def _reference(a: np.ndarray, b: np.ndarray, ids: np.ndarray) -> dict:
    la = torch.log_softmax(torch.from_numpy(a[:, :-1]).double(), dim=0)
    lb = torch.log_softmax(torch.from_numpy(b[:, :-1]).double(), dim=0)
    kld = torch.nn.functional.kl_div(lb, la, reduction="none", log_target=True).sum(0).tolist()
    following = torch.from_numpy(ids[1:])
    nll_a = torch.nn.functional.nll_loss(la.T, following, reduction="none").tolist()
    nll_b = torch.nn.functional.nll_loss(lb.T, following, reduction="none").tolist()
    dp = [math.exp(-y) - math.exp(-x) for x, y in zip(nll_a, nll_b, strict=True)]
    return {"kld": kld, "nll_a": nll_a, "nll_b": nll_b, "delta_p": dp}


def test_each_figure_is_llama_perplexitys_computed_independently():
    B = A + RNG.normal(scale=0.2, size=A.shape)
    got = Divergence(Scored.of(A, B, IDS)).to_dict()
    ref = _reference(A, B, IDS)
    n = N - 1
    assert got["positions"] == n
    assert got["kld"]["mean"] == pytest.approx(sum(ref["kld"]) / n, rel=1e-9)  # (PyTorch sums in its own order)
    assert got["kld"]["mean_err"] == pytest.approx(_error(ref["kld"]), rel=1e-9)
    for name, f in (("p99_9", 0.999), ("p95", 0.95), ("p10", 0.10), ("p0_1", 0.001)):
        assert got["kld"][name] == pytest.approx(_percentile(ref["kld"], f), rel=1e-9)
    assert got["kld"]["max"] == pytest.approx(max(ref["kld"])) and got["kld"]["min"] == pytest.approx(min(ref["kld"]))
    assert got["delta_p"]["mean"] == pytest.approx(sum(ref["delta_p"]) / n, abs=1e-15)
    assert got["delta_p"]["p75"] == pytest.approx(_percentile(ref["delta_p"], 0.75), abs=1e-15)
    rms = math.sqrt(sum(d * d for d in ref["delta_p"]) / n)
    assert got["delta_p"]["rms"] == pytest.approx(rms, rel=1e-12)
    assert got["delta_p"]["rms_err"] == pytest.approx(0.5 / rms * _error([d * d for d in ref["delta_p"]]), rel=1e-9)
    ln_a, ln_b = sum(ref["nll_a"]) / n, sum(ref["nll_b"]) / n
    assert got["ppl"]["a"] == pytest.approx(math.exp(ln_a), rel=1e-12)
    assert got["ppl"]["b"] == pytest.approx(math.exp(ln_b), rel=1e-12)
    assert got["ppl"]["ln_ratio_mean"] == pytest.approx(ln_b - ln_a, rel=1e-9)
    cov = (sum(x * y for x, y in zip(ref["nll_a"], ref["nll_b"], strict=True)) / n - ln_a * ln_b) / (n - 1)
    ln_err = math.sqrt(_error(ref["nll_a"]) ** 2 + _error(ref["nll_b"]) ** 2 - 2 * cov)
    assert got["ppl"]["ln_ratio_mean_err"] == pytest.approx(ln_err, rel=1e-9)
    same = sum(int(A[:, j].argmax() == B[:, j].argmax()) for j in range(n)) / n
    assert got["same_top_p"] == same and got["same_top_p_err"] == pytest.approx(math.sqrt(same * (1 - same) / (n - 1)))
    a, b = A[:, :-1], B[:, :-1]
    nmse = float(((b - a) ** 2).mean() / a.var())
    assert got["logits"]["nmse"] == pytest.approx(nmse, rel=1e-12)
    assert got["logits"]["nmse_db"] == pytest.approx(10 * math.log10(nmse), rel=1e-12)
    assert got["logits"]["max_abs_diff"] == pytest.approx(float(np.abs(b - a).max()))
    assert got["logits"]["verdict"] == nmse_verdict(nmse) == "good match"  # (about 0.2^2 / 3^2)


def test_a_model_against_itself_diverges_nowhere():
    """The control: every divergence exactly 0, every top token the same, the perplexities equal."""
    got = Divergence(Scored.of(A, A.copy(), IDS)).to_dict()
    assert got["kld"]["max"] == 0.0 and got["kld"]["min"] == 0.0 and got["kld"]["mean"] == 0.0
    assert got["delta_p"]["rms"] == 0.0 and got["same_top_p"] == 1.0
    assert got["ppl"]["a"] == got["ppl"]["b"] and got["ppl"]["ratio"] == 1.0
    assert got["logits"] == {"max_abs_diff": 0.0, "nmse": 0.0, "nmse_db": None, "verdict": "perfect match"}


def test_one_position_changed_is_the_largest_divergence_and_moves_its_top_token():
    B = A.copy()
    B[:, 20] = A[:, 20][::-1]  # position 20's distribution reversed
    scored = Scored.of(A, B, IDS)
    assert int(np.argmax(scored.kld)) == 20 and np.count_nonzero(scored.kld) == 1
    assert not scored.same_top[20] and scored.same_top.sum() == N - 2


def test_chunks_score_the_second_half_of_each_as_llama_perplexity_does():
    assert chunks(10, None) == [chunks(10, None)[0]] and chunks(10, None)[0].first == 0
    assert [(c.start, c.stop, c.first) for c in chunks(10, 4)] == [(0, 4, 2), (4, 8, 2)]  # 10 // 4 chunks
    assert chunks(3, 4) == [] and chunks(1, None) == []
    parts = [
        Scored.of(A[:, c.start : c.stop], A[:, c.start : c.stop] + 1.0, IDS[c.start : c.stop], c.first)
        for c in chunks(N, 16)
    ]
    joined = Scored.joined(parts)
    assert joined.kld.size == 4 * (16 - 1 - 8)  # llama-perplexity: n_ctx - 1 - n_ctx/2 a chunk
    assert np.allclose(joined.kld, 0.0, atol=1e-15)  # (a constant added to every logit changes no probability)


def test_perplexity_is_the_exponent_of_the_mean_negative_log_likelihood_with_llamas_error():
    nll = _reference(A, A, IDS)["nll_a"]
    got = Perplexity.of(np.array(nll))
    mean = sum(nll) / len(nll)
    assert got.value == pytest.approx(math.exp(mean), rel=1e-12)
    assert got.err == pytest.approx(math.exp(mean) * _error(nll), rel=1e-9)
    assert Perplexity.of(np.array(nll[:10])).err == 0.0  # (10 values or fewer: llama-perplexity gives none)


def test_scoring_a_few_columns_at_a_time_gives_each_position_its_own_figures(monkeypatch):
    import transformer_cli.analysis.divergence as divergence

    B = A + RNG.normal(scale=0.5, size=A.shape)
    whole = Scored.of(A, B, IDS)
    monkeypatch.setattr(divergence, "SCORE_BYTES", 8 * V * 3)  # 3 columns a slice: 21 slices
    sliced = Scored.of(A, B, IDS)
    for name in ("nll_a", "nll_b", "kld", "delta_p", "same_top"):
        assert np.array_equal(getattr(sliced, name), getattr(whole, name)), name
    assert sliced.logit_sums[3:] == whole.logit_sums[3:]
    assert np.allclose(sliced.logit_sums[:3], whole.logit_sums[:3], rtol=1e-13)
    nll = divergence.next_token_nll(A[:, :-1], IDS[1:])
    assert np.array_equal(nll, whole.nll_a)
    assert not np.array_equal(divergence.next_token_nll(A[:, :-1], IDS[:-1]), whole.nll_a)  # (the wrong tokens)
