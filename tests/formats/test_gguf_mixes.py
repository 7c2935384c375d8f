"""llama.cpp's mixed file types (Q4_K_M, ...): the GGML type tfm says llama-quantize gives each tensor, against
tables worked out by hand from src/llama-quant.cpp for small models (and, in tests/data, what llama-quantize
itself wrote when run here), and `tfm plan --weights q4_k_m` priced at those tensors' bytes."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

from transformer_cli.cli import app
from transformer_cli.spec.validate import spec_from_mapping

gguf = pytest.importorskip("gguf", reason="the gguf package reads and writes the files (a dependency of tfm)")
from transformer_cli.gguf.mixes import mix_held, mix_types  # noqa: E402
from transformer_cli.gguf.quant_rules import use_more_bits  # noqa: E402

LLAMA = {
    "N": 8,
    "H": 4,
    "G": 2,
    "m": 64,
    "d": 256,
    "r": 512,
    "V": 1000,
    "scale": "sqrt",
    "mask": "causal",
    "positional": "rope",
    "norm": "pre",
    "norm_type": "rmsnorm",
    "activation": "silu",
    "feedforward": "gated",
    "ff_bias": False,
}
DATA = Path(__file__).parent.parent / "data" / "llama_quantize_types.json"


def spec(**keys):
    return spec_from_mapping(LLAMA | keys, "test")


def by_block(types: dict[str, str], short: str) -> list[str]:
    return [types[f"blk.{i}.{short}"] for i in range(sum(1 for n in types if n.endswith(f".{short}")))]


def test_use_more_bits_is_the_first_and_last_eighth_and_every_third_between():
    assert [i for i in range(8) if use_more_bits(i, 8)] == [0, 3, 6, 7]
    assert [i for i in range(16) if use_more_bits(i, 16)] == [0, 1, 4, 7, 10, 13, 14, 15]
    assert [i for i in range(32) if use_more_bits(i, 32)] == [0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31]


def test_q4_k_m_gives_q6_k_to_attn_v_and_ffn_down_where_llama_cpp_uses_more_bits():
    types = mix_types(spec(), "llama", "q4_k_m")
    six = ["Q6_K", "Q4_K", "Q4_K", "Q6_K", "Q4_K", "Q4_K", "Q6_K", "Q6_K"]  # blocks 0, 3, 6, 7 (N = 8)
    assert by_block(types, "attn_v.weight") == by_block(types, "ffn_down.weight") == six
    for short in ("attn_q.weight", "attn_k.weight", "attn_output.weight", "ffn_gate.weight", "ffn_up.weight"):
        assert set(by_block(types, short)) == {"Q4_K"}
    assert types["output.weight"] == "Q6_K" and types["token_embd.weight"] == "Q4_K"
    assert {types[n] for n in types if n.endswith("norm.weight")} == {"F32"}


def test_the_other_mixes_follow_their_own_rules():
    q4s = mix_types(spec(), "llama", "q4_k_s")
    assert by_block(q4s, "attn_v.weight") == ["Q5_K"] * 4 + ["Q4_K"] * 4  # blocks 0-3
    assert by_block(q4s, "ffn_down.weight") == ["Q5_K"] + ["Q4_K"] * 7  # the first eighth
    q5m = mix_types(spec(), "llama", "q5_k_m")
    assert by_block(q5m, "ffn_down.weight") == [
        t.replace("Q4", "Q5") for t in by_block(mix_types(spec(), "llama", "q4_k_m"), "ffn_down.weight")
    ]
    assert set(by_block(q5m, "attn_q.weight")) == {"Q5_K"}
    q3m = mix_types(spec(), "llama", "q3_k_m")
    assert by_block(q3m, "attn_v.weight") == ["Q5_K"] * 2 + ["Q4_K"] * 6
    assert set(by_block(q3m, "ffn_down.weight")) == {"Q4_K"}  # (the first sixteenth of 8 blocks is none)
    assert set(by_block(q3m, "attn_output.weight")) == {"Q4_K"} and set(by_block(q3m, "ffn_up.weight")) == {"Q3_K"}
    assert mix_types(spec(), "llama", "q5_k_s")["blk.0.attn_v.weight"] == "Q5_K"


def test_rows_that_are_no_whole_blocks_fall_back_and_a_tied_embedding_takes_the_heads_type():
    tied = spec(N=16, H=5, G=5, d=320, r=640, tie_embeddings=True)  # 320 and 640: not multiples of 256
    types = mix_types(tied, "llama", "q4_k_m")
    assert "output.weight" not in types and types["token_embd.weight"] == "Q8_0"  # the head's rule, rows of 320
    more = [0, 1, 4, 7, 10, 13, 14, 15]
    assert by_block(types, "attn_v.weight") == ["Q8_0" if i in more else "Q5_0" for i in range(16)]  # Q6_K, Q4_K
    assert set(by_block(types, "attn_q.weight")) == {"Q5_0"}
    odd = mix_types(spec(d=200, m=50), "llama", "q4_k_m")  # rows of 200: no whole blocks of 32 either
    assert odd["blk.1.attn_q.weight"] == "F16" and odd["output.weight"] == "F16"


def test_eight_experts_lift_attention_and_a_70b_lifts_attn_v():
    moe = mix_types(spec(E=8, k=2), "llama", "q4_k_m")
    assert set(by_block(moe, "attn_v.weight")) == set(by_block(moe, "attn_k.weight")) == {"Q8_0"}
    assert set(by_block(moe, "attn_output.weight")) == {"Q5_K"}
    assert by_block(moe, "ffn_down_exps.weight")[:4] == ["Q6_K", "Q4_K", "Q4_K", "Q6_K"]
    big = by_block(mix_types(spec(N=80), "llama", "q4_k_m"), "attn_v.weight")
    assert set(big) == {"Q5_K", "Q6_K"} and big.count("Q6_K") == sum(use_more_bits(i, 80) for i in range(80))


def test_fused_qkv_counts_as_attn_v():
    phi3 = spec_from_mapping({k: v for k, v in LLAMA.items() if k != "G"}, "phi3")
    types = mix_types(phi3, "phi3", "q4_k_m")
    assert by_block(types, "attn_qkv.weight") == ["Q6_K", "Q4_K", "Q4_K", "Q6_K", "Q4_K", "Q4_K", "Q6_K", "Q6_K"]


def test_the_held_bytes_are_the_tensors_blocks():
    s = spec()
    types = mix_types(s, "llama", "q4_k_m")
    held = mix_held(s, "llama", "q4_k_m")
    per = {"Q4_K": (256, 144), "Q6_K": (256, 210), "F32": (1, 4)}  # llama.cpp's block sizes, by hand
    shapes = {"token_embd.weight": (1000, 256), "output.weight": (1000, 256), "output_norm.weight": (256,)}
    block = {
        "attn_q": (256, 256),
        "attn_k": (128, 256),
        "attn_v": (128, 256),
        "attn_output": (256, 256),
        "ffn_gate": (512, 256),
        "ffn_up": (512, 256),
        "ffn_down": (256, 512),
        "attn_norm": (256,),
        "ffn_norm": (256,),
    }
    shapes |= {f"blk.{i}.{k}.weight": v for i in range(8) for k, v in block.items()}
    assert set(shapes) == set(types)
    expected = sum(math.prod(shape) // per[types[n]][0] * per[types[n]][1] for n, shape in shapes.items())
    assert held.total() == expected and held.dtype == "q4_k_m"
    assert held.tensors["blocks.0.attention.W_V"] == 128 * 256 // 256 * 210  # Q6_K in block 0
    assert held.tensors["blocks.1.attention.W_V"] == 128 * 256 // 256 * 144


def test_the_types_and_bytes_are_the_ones_llama_quantize_wrote():
    recorded = json.loads(DATA.read_text())  # llama.cpp's own run (its source and version in the file)
    assert len(recorded["cases"]) == 10
    for case in recorded["cases"]:
        s = spec_from_mapping(case["spec"], "recorded")
        ours = mix_types(s, "llama", case["mix"])
        theirs = {n: "Q4_0" if t == "IQ4_NL" else t for n, t in case["types"].items()}  # (the note in the file)
        assert ours == theirs, case["file"]
        assert mix_held(s, "llama", case["mix"]).total() == case["tensor_bytes"], case["file"]


def test_plan_prices_a_mix_and_refuses_what_it_cannot(tmp_path, runner):
    import yaml

    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(LLAMA))
    result = runner.invoke(app, ["plan", str(path), "--weights", "q4_k_m", "--json", "--hardware", "h100-sxm"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    total = mix_held(spec(), "llama", "q4_k_m").total()
    assert plan["weights_dtype"] == "q4_k_m" and plan["serving"]["fused_attention"]["weights"] == total
    assert plan["weights_bytes"]["q4_k"] < total < plan["weights_bytes"]["q6_k"]
    t5 = tmp_path / "t5.yaml"
    t5.write_text(yaml.safe_dump({"N": 2, "N_enc": 2, "H": 2, "m": 8, "d": 16, "r": 32, "V": 40, "mask": "causal"}))
    refused = runner.invoke(app, ["plan", str(t5), "--weights", "q4_k_m"])
    assert refused.exit_code == 2 and "encoder-decoder" in refused.output and "Traceback" not in refused.output
    gpt = tmp_path / "gpt.yaml"  # learned positions and LayerNorm's biases: no tensor of llama's layout holds them
    gpt.write_text(
        yaml.safe_dump(
            {
                "N": 2,
                "H": 2,
                "m": 8,
                "d": 16,
                "r": 32,
                "V": 40,
                "mask": "causal",
                "norm": "pre",
                "positional": "learned",
                "max_len": 64,
            }
        )
    )
    refused = runner.invoke(app, ["plan", str(gpt), "--weights", "q4_k_m"])
    assert refused.exit_code == 2 and "not a GGUF llama model" in " ".join(refused.output.split())


def test_gemma3ns_small_tensors_are_kept_and_its_per_layer_table_is_an_embedding():
    """llama-quant.cpp: nothing named altup or laurel, nor per_layer_model_proj, is quantised (kept as the source
    has them: F32 here); per_layer_token_embd is of token_embd's category, so in a tied model it takes the output's
    Q6_K, as token_embd does. Control: a block's attention and feedforward are mixed as ever."""
    keys = dict(N=2, H=2, m=128, d=256, r=512, V=512, norm="sandwich", norm_type="rmsnorm", feedforward="gated")
    keys |= dict(activation="gelu", ff_bias=False, tie_embeddings=True, mask="causal", positional="rope")
    keys |= dict(altup=4, laurel_rank=64, ple_dim=256, qk_norm=True, v_norm=True, scale="none", embed_scale="sqrt")
    types = mix_types(spec_from_mapping(keys, "gemma3n"), "gemma3n", "q4_k_m")
    for name in (
        "altup_proj.weight",
        "blk.0.altup_router.weight",
        "blk.1.laurel_l.weight",
        "per_layer_model_proj.weight",
    ):
        assert types[name] == "F32", name
    assert types["per_layer_token_embd.weight"] == types["token_embd.weight"] == "Q6_K"
    assert types["blk.0.attn_q.weight"] == "Q4_K" and types["blk.1.ffn_down.weight"] == "Q6_K"  # (its last eighth)


RECORDED = json.loads(
    gzip.decompress((Path(__file__).parent.parent / "data" / "llama_quantize_types_2.json.gz").read_bytes())
)


@pytest.mark.parametrize(
    "case",
    [c for c in RECORDED["cases"] if "types" in c],
    ids=lambda c: f"{c['model']}-{c['ftype']}" + ("-imatrix" if c.get("imatrix") else ""),
)
def test_every_file_type_types_each_tensor_as_llama_quantize_did(case):
    """Every file type llama-quantize made here, without an importance matrix (llama_model_quantize) and with one
    (the llama-quantize tool; tests/data/llama_quantize_types_2.json.gz, scripts/record_quant_types.py): 8 and 16
    blocks, 4 query heads a key head and a tied head, rows of 96 (every fallback), 8 experts; each tensor's type as
    it wrote it."""
    spec = spec_from_mapping(RECORDED["models"][case["model"]], case["model"])
    ours = mix_types(spec, "llama", case["ftype"].lower(), imatrix=bool(case.get("imatrix")))
    assert ours == case["types"]


def test_the_file_types_llama_quantize_refuses_without_an_importance_matrix_are_priced_with_one():
    """Q2_K_S and the i-quants of 3 bits and fewer: llama-quantize refused them here without an importance matrix
    (the recorded cases); the plan prices them as made with one, and tells the rules apart (IQ3_XXS's attn_v and
    ffn_down take other types without one)."""
    from transformer_cli.gguf.quant_rules import NEEDS_IMATRIX

    cases = [c for c in RECORDED["cases"] if c["model"] == "llama8"]
    assert {c["ftype"].lower() for c in cases if "refused" in c and not c.get("imatrix")} == set(NEEDS_IMATRIX)
    types, without = mix_types(spec(), "llama", "iq3_xxs"), mix_types(spec(), "llama", "iq3_xxs", imatrix=False)
    assert types["blk.0.attn_v.weight"] == "IQ3_XXS" and without["blk.0.attn_v.weight"] == "IQ3_S"
    assert types["blk.4.ffn_down.weight"] == "IQ3_XXS" and without["blk.4.ffn_down.weight"] == "Q3_K"


@pytest.mark.parametrize("ftype", ["IQ3_M", "IQ3_S", "Q3_K_L", "TQ2_0", "MXFP4_MOE"])
def test_plan_prices_the_other_file_types_at_the_bytes_of_llama_quantizes_types(runner, tmp_path, ftype):
    """`tfm plan --weights` of a file type beyond the K mixes: the weights' bytes are those of the types llama-quantize
    gave each tensor (the recorded run), block by block as the gguf package sizes them."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    from transformer_cli.gguf.mixes import file_tensors

    case = next(c for c in RECORDED["cases"] if c["model"] == "mixtral4-8experts" and c["ftype"] == ftype)
    s = spec_from_mapping(RECORDED["models"][case["model"]], case["model"])
    shapes = file_tensors(s, "llama")[2]  # (each GGUF tensor's numpy shape, as the quantiser sees it)
    sizes = {n: GGML_QUANT_SIZES[GGMLQuantizationType[t]] for n, t in case["types"].items()}
    expected = sum(math.prod(shapes[n]) // sizes[n][0] * sizes[n][1] for n in case["types"])
    path = tmp_path / "spec.yaml"
    path.write_text(json.dumps(RECORDED["models"][case["model"]]))
    done = runner.invoke(app, ["plan", str(path), "--weights", ftype.lower(), "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["weights_bytes"][ftype.lower()] == expected


PUBLISHED = {  # llama.cpp's tools/quantize/README.md (llama-cpp-python 0.3.36's copy): Llama-3.1-8B's files, GiB
    "iq1_s": 1.87, "iq1_m": 2.01, "iq2_xxs": 2.23, "iq2_xs": 2.42, "iq2_s": 2.56, "iq2_m": 2.74, "iq3_xxs": 3.04,
    "iq3_xs": 3.27, "iq3_s": 3.42, "iq3_m": 3.52, "iq4_xs": 4.17, "iq4_nl": 4.38, "q2_k_s": 2.78, "q2_k": 2.95,
    "q3_k_s": 3.41, "q3_k_m": 3.74, "q3_k_l": 4.02, "q4_k_s": 4.36, "q4_k_m": 4.58, "q5_k_s": 5.21, "q5_k_m": 5.33,
    "q6_k": 6.14, "q8_0": 7.95,
}  # fmt: skip


def test_every_file_type_of_llama3_8b_is_the_size_llama_cpp_publishes():
    """Meta-Llama-3-8B's config (Llama-3.1-8B's shapes): each file type's tensor bytes, in GiB to the table's two
    decimals, are llama.cpp's published sizes; Q4_0's 4.33 GiB is its mix (the head Q6_K), where every tensor in Q4_0
    would be 4.21."""
    from transformer_cli.analysis.quantized import weight_bytes
    from transformer_cli.gguf.mixes import mix_held
    from transformer_cli.hf.config import spec_from_config

    llama3 = spec_from_config(Path(__file__).parents[2] / "examples" / "hf" / "Meta-Llama-3-8B")
    sizes = {name: mix_held(llama3, "llama", name).total() / 2**30 for name in PUBLISHED}
    assert {name: round(size, 2) for name, size in sizes.items()} == PUBLISHED
    assert round(mix_held(llama3, "llama", "q4_0").total() / 2**30, 3) == 4.334
    assert round(weight_bytes(llama3)["q4_0"] / 2**30, 2) == 4.21  # (the control: every tensor in Q4_0)
