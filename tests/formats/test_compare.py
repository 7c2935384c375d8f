"""Issue 43: `tfm compare A B`, B's next-token distributions against A's over a token stream, checked against
transformers' own logits of both models in float64 (their float32 internals recomputed: hf_exact) with each figure
computed here by PyTorch; the model against itself as the control; thresholds that must fail; and A let go before B
is made."""

from __future__ import annotations

import gc
import json
import math
import shutil
import weakref
from pathlib import Path

import numpy as np
import pytest
from helpers_hf_transformers import build
from hf_exact import exact

import transformer_cli as tfm
from transformer_cli.errors import TfmError
from transformer_cli.tasks.comparison import Thresholds, compare

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

IDS = np.random.default_rng(7).integers(0, 97, size=40)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """A, and B: A with block 1's feedforward down projection moved by 5 % noise."""
    root = tmp_path_factory.mktemp("compare")
    a = build("llama")
    a.save_pretrained(root / "a")
    b = build("llama")
    b.load_state_dict(a.state_dict())
    with torch.no_grad():
        weight = b.model.layers[1].mlp.down_proj.weight
        weight += 0.05 * weight.std() * torch.from_numpy(np.random.default_rng(1).normal(size=weight.shape))
    b.save_pretrained(root / "b")
    return root, exact(a), exact(b)


def _figures(model_a, model_b, ids: np.ndarray) -> dict:
    with torch.no_grad():
        la = torch.log_softmax(model_a(torch.from_numpy(ids)[None]).logits[0, :-1].double(), dim=-1)  # (n - 1, V)
        lb = torch.log_softmax(model_b(torch.from_numpy(ids)[None]).logits[0, :-1].double(), dim=-1)
        za = model_a(torch.from_numpy(ids)[None]).logits[0, :-1].double()
        zb = model_b(torch.from_numpy(ids)[None]).logits[0, :-1].double()
    kld = torch.nn.functional.kl_div(lb, la, reduction="none", log_target=True).sum(-1)
    following = torch.from_numpy(ids[1:])
    nll_a = torch.nn.functional.nll_loss(la, following, reduction="none")
    nll_b = torch.nn.functional.nll_loss(lb, following, reduction="none")
    return {
        "kld_mean": float(kld.mean()),
        "kld_max": float(kld.max()),
        "same_top_p": float((la.argmax(-1) == lb.argmax(-1)).double().mean()),
        "ppl_ratio": math.exp(float(nll_b.mean() - nll_a.mean())),
        "nmse": float(((zb - za) ** 2).mean() / za.var(unbiased=False)),
    }


def test_b_against_a_is_what_pytorch_makes_of_transformers_logits(pair):
    root, model_a, model_b = pair
    got = tfm.load(root / "a").compare(root / "b", IDS, dtype="float64").to_dict()
    expected = _figures(model_a, model_b, IDS)
    assert got["positions"] == IDS.size - 1
    assert got["kld"]["mean"] == pytest.approx(expected["kld_mean"], rel=1e-8)
    assert got["kld"]["max"] == pytest.approx(expected["kld_max"], rel=1e-8)
    assert got["same_top_p"] == expected["same_top_p"]
    assert got["ppl"]["ratio"] == pytest.approx(expected["ppl_ratio"], rel=1e-10)
    assert got["logits"]["nmse"] == pytest.approx(expected["nmse"], rel=1e-8)
    assert got["kld"]["mean"] > 1e-6  # (block 1 moved: B is not A)


def test_a_model_against_itself_parts_nowhere(pair):
    """The control: KLD exactly 0 at every position, every top token the same, NMSE 0."""
    root, _, _ = pair
    got = tfm.load(root / "a").compare(root / "a", IDS, ctx=16, dtype="float64").to_dict()
    assert got["kld"]["max"] == 0.0 and got["same_top_p"] == 1.0 and got["logits"]["nmse"] == 0.0
    assert got["chunks"] == 2 and got["positions"] == 2 * (16 - 1 - 8)
    assert got["first_divergent_block"] is None and all(r["residual"] == 0.0 for r in got["blocks"])


def test_thresholds_make_the_exit_code_1_when_broken_and_0_when_kept(pair, tmp_path):
    from typer.testing import CliRunner

    from transformer_cli.cli import app

    root, _, _ = pair
    np.save(tmp_path / "ids.npy", IDS)
    args = ["compare", str(root / "a"), str(root / "b"), "-i", str(tmp_path / "ids.npy"), "--json"]
    free = CliRunner().invoke(app, [*args, "--dtype", "float64"])
    assert free.exit_code == 0, free.output
    kld = json.loads(free.stdout)["kld"]["mean"]
    kept = CliRunner().invoke(app, [*args, "--max-kld", str(2 * kld), "--min-same-top-p", "0.5"])
    assert kept.exit_code == 0 and json.loads(kept.stdout)["broken"] == {}
    broken = CliRunner().invoke(app, [*args, "--max-kld", str(kld / 2), "--max-nmse", "1e-12"])
    assert broken.exit_code == 1 and set(json.loads(broken.stdout)["broken"]) == {"max_kld", "max_nmse"}
    table = CliRunner().invoke(app, args[:-1] + ["--max-kld", str(kld / 2)])
    assert table.exit_code == 1 and "BROKEN (limit" in table.stdout and "broken: mean KLD" in table.stderr


def test_two_vocabularies_are_refused_in_one_line(pair, tmp_path):
    root, _, _ = pair
    tfm.init(Path(__file__).parents[2] / "examples" / "hf" / "tiny-llama", tmp_path / "tiny")  # V = 256
    with pytest.raises(TfmError, match=r"^A has V = 97, B has V = 256: compare needs one vocabulary$"):
        tfm.load(root / "a").compare(tmp_path / "tiny", IDS)


def test_a_is_let_go_before_b_is_made(pair):
    root, _, _ = pair
    a, b = tfm.load(root / "a"), tfm.load(root / "b")
    made: list = []

    class A:
        spec, mode = a.spec, a.mode

        def held(self, *args, **kwargs):
            net, mode = a.held(*args, **kwargs)
            made.append(weakref.ref(net))
            return net, mode

    class B:
        spec, mode = b.spec, b.mode

        def held(self, *args, **kwargs):
            gc.collect()
            assert made and made[0]() is None, "A is still in memory while B is made"
            return b.held(*args, **kwargs)

    result = compare(A(), B(), IDS, dtype="float64", thresholds=Thresholds(max_kld=1.0))
    assert result.exit_code == 0 and len(made) == 1


def test_each_blocks_outputs_are_compared_and_the_first_block_parting_is_named(pair):
    """B moved block 1's feedforward only: block 0 is A's to the bit, block 1's attention too (its input is the
    same), its feedforward and residual stream part; the residual streams' errors are transformers' own hidden
    states' (but the last block's, which transformers gives normed)."""
    root, model_a, model_b = pair
    got = tfm.load(root / "a").compare(root / "b", IDS, dtype="float64", block_tol=1e-9)
    rows = got.to_dict()["blocks"]
    assert rows[0] == {"block": 0, "residual": 0.0, "attention": 0.0, "feedforward": 0.0}
    assert rows[1]["attention"] == 0.0 and rows[1]["feedforward"] > 1e-6 and rows[1]["residual"] > 1e-6
    assert got.first_divergent_block == 1 and got.to_dict()["first_divergent_block"] == 1
    with torch.no_grad():
        ha = model_a(torch.from_numpy(IDS)[None], output_hidden_states=True).hidden_states
        hb = model_b(torch.from_numpy(IDS)[None], output_hidden_states=True).hidden_states
    for i in range(len(rows) - 1):  # hidden_states[i + 1]: the residual stream after block i
        a, b = ha[i + 1].double(), hb[i + 1].double()
        assert rows[i]["residual"] == pytest.approx(float((b - a).norm() / a.norm()), rel=1e-8, abs=1e-15)
    assert tfm.load(root / "a").compare(root / "b", IDS, dtype="float64", block_tol=1.0).first_divergent_block is None


def test_text_goes_through_as_tokenizer_and_gives_what_its_ids_give(pair, tmp_path):
    tokenizers = pytest.importorskip("tokenizers", reason="the tokenizers library reads tokenizer.json")
    from typer.testing import CliRunner

    from transformer_cli.cli import app

    root, _, _ = pair
    worded = tmp_path / "a"
    shutil.copytree(root / "a", worded)
    tokenizer = tokenizers.Tokenizer(tokenizers.models.WordLevel({f"w{i}": i for i in range(97)}, unk_token="w0"))
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tokenizer.save(str(worded / "tokenizer.json"))
    (tmp_path / "text.txt").write_text(" ".join(f"w{i}" for i in IDS))
    args = ["compare", str(worded), str(root / "b"), "--json", "--dtype", "float64"]
    done = CliRunner().invoke(app, [*args, "--text", str(tmp_path / "text.txt")])
    assert done.exit_code == 0, done.output
    expected = tfm.load(root / "a").compare(root / "b", IDS, dtype="float64").to_dict()
    assert json.loads(done.stdout)["kld"] == expected["kld"]
    neither = CliRunner().invoke(app, args)
    assert neither.exit_code == 2 and "give the tokens as ids (--input ids.npy), a text file" in neither.stderr
    said = CliRunner().invoke(app, [*args, "--prompt", " ".join(f"w{i}" for i in IDS)])
    assert said.exit_code == 0 and json.loads(said.stdout)["kld"] == expected["kld"]


def test_a_spec_compares_with_the_weights_named_for_each_side(tmp_path):
    """--a-weights and --b-weights: tfm's .npz weights keep no spec, so the spec is named and each side's weights."""
    from typer.testing import CliRunner

    from transformer_cli.cli import app

    (tmp_path / "lm.yaml").write_text("N: 2\nH: 2\nm: 8\nd: 16\nr: 32\nV: 50\nmask: causal\npositional: rope\n")
    for seed in (1, 2):
        tfm.init(tmp_path / "lm.yaml", tmp_path / f"w{seed}.npz", seed=seed)
    np.save(tmp_path / "ids.npy", IDS % 50)
    args = ["compare", str(tmp_path / "lm.yaml"), str(tmp_path / "lm.yaml"), "-i", str(tmp_path / "ids.npy")]
    same = CliRunner().invoke(
        app, [*args, "--a-weights", str(tmp_path / "w1.npz"), "--b-weights", str(tmp_path / "w1.npz"), "--json"]
    )
    assert same.exit_code == 0, same.output
    assert json.loads(same.stdout)["kld"]["max"] == 0.0
    other = CliRunner().invoke(
        app, [*args, "--a-weights", str(tmp_path / "w1.npz"), "--b-weights", str(tmp_path / "w2.npz"), "--json"]
    )
    assert other.exit_code == 0 and json.loads(other.stdout)["kld"]["mean"] > 1e-3  # (other weights: the control)


def _unpermuted(rows: np.ndarray, heads: int) -> np.ndarray:
    """convert_hf_to_gguf's LLaMA Q/K row permutation undone."""
    return rows.reshape(heads, rows.shape[0] // heads // 2, 2, *rows.shape[1:]).swapaxes(1, 2).reshape(rows.shape)


def test_a_gguf_b_is_what_pytorch_makes_of_the_gguf_packages_dequantised_weights(pair, tmp_path):
    """B a q8_0 GGUF file (ffn_down's rows of 40 in F16): the reference is transformers' model holding the weights
    the gguf package dequantises from that file, in float64."""
    gguf = pytest.importorskip("gguf")
    root, model_a, _ = pair
    tfm.convert(root / "a", tmp_path / "b.gguf", gguf_type="q8_0")
    config = model_a.config
    names = {"token_embd": "model.embed_tokens", "output": "lm_head", "output_norm": "model.norm"}
    block = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj"}
    block |= {"attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj"}
    block |= {"ffn_down": "mlp.down_proj", "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm"}
    state, types = {}, set()
    for tensor in gguf.GGUFReader(tmp_path / "b.gguf").tensors:
        values = gguf.quants.dequantize(tensor.data, tensor.tensor_type).astype(np.float64)
        types.add(tensor.tensor_type.name)
        parts = tensor.name.split(".")
        if parts[0] == "blk":
            short = parts[2]
            values = _unpermuted(values, config.num_attention_heads) if short == "attn_q" else values
            values = _unpermuted(values, config.num_key_value_heads) if short == "attn_k" else values
            state[f"model.layers.{parts[1]}.{block[short]}.weight"] = torch.from_numpy(values)
        else:
            state[f"{names[parts[0]]}.weight"] = torch.from_numpy(values)
    assert {"Q8_0", "F16", "F32"} <= types
    model_b = build("llama")
    model_b.load_state_dict(state)
    expected = _figures(model_a, exact(model_b), IDS)
    got = tfm.load(root / "a").compare(tmp_path / "b.gguf", IDS, dtype="float64").to_dict()
    assert got["kld"]["mean"] == pytest.approx(expected["kld_mean"], rel=1e-8)
    assert got["kld"]["max"] == pytest.approx(expected["kld_max"], rel=1e-8)
    assert got["same_top_p"] == expected["same_top_p"]
    assert got["logits"]["nmse"] == pytest.approx(expected["nmse"], rel=1e-8)
    assert got["kld"]["mean"] > 1e-9  # (q8_0 is not A)
