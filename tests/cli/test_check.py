"""`tfm check`: budgets, verify, and one exit code over many specs; the pre-commit hook and CI example parse."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import DATA, EXAMPLES

from transformer_cli.cli import app
from transformer_cli.tasks.check import parse_count

ROOT = Path(__file__).parents[2]
SEED, TINY = (next(p for p in EXAMPLES if p.name == n) for n in ("seed-plain.yaml", "tiny-causal.yaml"))


def run(runner, *args):
    result = runner.invoke(app, ["check", *map(str, args), "--json"])
    return result.exit_code, json.loads(result.stdout)


def test_good_specs_pass(runner):
    code, data = run(runner, SEED, TINY)
    assert code == 0 and [s["verify"] for s in data["specs"]] == ["PASS", "PASS"]


def test_over_budget_fails_with_the_reason(runner):
    code, data = run(runner, SEED, TINY, "--max-params", "10K")
    assert code == 1
    assert data["specs"][0]["over_budget"] == ["98,944 parameters > 10,000"] and data["specs"][1]["exit_code"] == 0
    code, data = run(runner, TINY, "--max-memory", "1M", "--seq-len", "4096")
    assert code == 1 and "forward at n = 4096" in data["specs"][0]["over_budget"][0]


def test_an_invalid_spec_makes_the_run_exit_2_and_the_rest_still_run(runner, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("N: 1\nH: 1\nm: 1\nd: 1\nrr: 1\n")
    code, data = run(runner, bad, TINY)
    assert code == 2
    assert "did you mean 'r'" in data["specs"][0]["error"] and data["specs"][1]["verify"] == "PASS"


def test_a_property_that_fails_is_exit_1(runner, monkeypatch):
    from transformer_cli.verify import equivariance

    monkeypatch.setattr(equivariance, "breaking_features", lambda spec: ["a feature that is not there"])
    code, data = run(runner, SEED)
    assert code == 1 and data["specs"][0]["verify"] == "FAIL"
    failed = [c for c in data["specs"][0]["checks"] if c["verdict"] == "FAIL"]
    assert [c["check"] for c in failed] == ["equivariance"] and "a feature that is not there" in failed[0]["reason"]


def test_table_output_and_no_verify(runner):
    result = runner.invoke(app, ["check", str(SEED), str(TINY), "--no-verify"])
    assert result.exit_code == 0 and "skipped" in result.stdout and "within" in result.stdout


@pytest.mark.parametrize("text, value", [("125M", 125_000_000), ("1.5B", 1_500_000_000), ("7000", 7000)])
def test_parse_count(text, value):
    assert parse_count(text) == value


def test_pre_commit_hook_and_ci_example_are_valid_yaml_running_tfm_check():
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hooks[0]["id"] == "tfm-check" and hooks[0]["entry"] == "tfm check"
    workflow = yaml.safe_load((ROOT / "examples" / "ci" / "tfm.yml").read_text())
    steps = [s.get("run", "") for s in workflow["jobs"]["specs"]["steps"]]
    assert any(s.startswith("tfm check") for s in steps)


def test_a_folder_is_searched_and_the_files_found_are_named(runner, tmp_path):
    (tmp_path / "nested").mkdir()
    for name in ("b.yaml", "nested/a.yml", "notes.txt"):
        (tmp_path / name).write_text(TINY.read_text() if name != "notes.txt" else "not a spec")
    result = runner.invoke(app, ["check", str(tmp_path), "--no-verify", "--json"])
    assert result.exit_code == 0, result.output
    expected = [str(tmp_path / "b.yaml"), str(tmp_path / "nested" / "a.yml")]
    data = json.loads(result.stdout)
    assert data["found"] == expected and [s["path"] for s in data["specs"]] == expected
    assert "found 2 specs" in result.stderr


def test_an_empty_folder_is_bad_input(runner, tmp_path):
    result = runner.invoke(app, ["check", str(tmp_path), "--json"])
    assert result.exit_code == 2 and "no tfm spec (.yaml, .yml)" in json.loads(result.stdout)["error"]


def test_the_table_gives_each_failing_checks_reason(runner, monkeypatch):
    from transformer_cli.verify import equivariance

    monkeypatch.setattr(equivariance, "breaking_features", lambda spec: ["a feature that is not there"])
    result = runner.invoke(app, ["check", str(SEED)], env={"COLUMNS": "200"})
    assert (
        result.exit_code == 1
        and "equivariance FAIL" in result.stdout
        and "a feature that is not there" in result.stdout
    )


# -- issue 22 (4): a large config without weights is counted, costed and verified at once --------------------------

TINYLLAMA = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "vocab_size": 32000,
    "hidden_size": 2048,
    "intermediate_size": 5632,
    "num_hidden_layers": 22,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "max_position_embeddings": 2048,
    "rms_norm_eps": 1e-05,
    "rope_theta": 10000.0,
    "tie_word_embeddings": False,
    "hidden_act": "silu",
}  # TinyLlama-1.1B's published values


def test_a_config_only_folder_of_a_1b_model_is_checked_on_a_scaled_down_copy(runner, tmp_path):
    """Verified at full size it ran 106 s, peaked at 13.6 GiB and ended ERROR (exit 2): now a moment, a few MB."""
    import tracemalloc

    folder = tmp_path / "tinyllama"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(TINYLLAMA))
    tracemalloc.start()
    try:
        code, data = run(runner, folder)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    spec = data["specs"][0]
    assert code == 0 and spec["error"] is None and spec["verify"] == "PASS", spec
    assert spec["params"] == 1_100_048_384
    assert {k: spec["verified_on"][k] for k in ("N", "d", "r", "m", "V", "H", "G")} == {
        "N": 2,
        "d": 64,
        "r": 128,
        "m": 16,
        "V": 256,
        "H": 32,
        "G": 4,
    }
    assert peak < 200 << 20, peak


@pytest.mark.parametrize("path", sorted((ROOT / "examples" / "models").glob("*.yaml")), ids=lambda p: p.stem)
def test_a_scaled_down_copy_keeps_every_key_but_the_sizes(path):
    from transformer_cli.spec.load import load_spec
    from transformer_cli.tasks.check import SMALL, scaled_down
    from transformer_cli.verify import verify_all

    spec = load_spec(path)
    small = scaled_down(spec)
    full, copy = spec.to_dict(), small.to_dict()
    assert {k: v for k, v in full.items() if k not in SMALL} == {k: v for k, v in copy.items() if k not in SMALL}
    assert all(copy[k] <= full[k] for k in SMALL if k in full)
    results = verify_all(small, n=4)  # each property as the theory predicts it from the (same) components
    assert results and all(c.verdict == "PASS" for c in results), [(c.title, c.verdict) for c in results]


def test_a_small_model_is_verified_as_it_is(runner):
    code, data = run(runner, TINY)
    assert code == 0 and data["specs"][0]["verified_on"] is None


# -- issue 22 (9): a folder's search takes specs, not every YAML file ----------------------------------------------


def test_a_folder_search_skips_hidden_folders_and_files_that_are_not_specs(runner, tmp_path):
    repo = tmp_path / "repo"
    for folder in (".github/workflows", "specs", "models/m", ".hidden"):
        (repo / folder).mkdir(parents=True)
    (repo / ".github" / "workflows" / "ci.yml").write_text("on: push\njobs: {}\n")  # a CI workflow
    (repo / ".hidden" / "seed.yaml").write_text(SEED.read_text())
    (repo / "specs" / "tiny.yaml").write_text(TINY.read_text())
    (repo / "specs" / "other.yml").write_text("on: push\n")
    (repo / "specs" / "broken.yaml").write_text("N: [\n")  # a spec that cannot be read is checked, to say why
    (repo / "specs" / "draft.yaml").write_text(SEED.read_text())
    (repo / "models" / "config.json").write_text('{"a": 1}')
    (repo / "models" / "m" / "config.json").write_text((ROOT / "examples/hf/tiny-llama/config.json").read_text())
    result = runner.invoke(app, ["check", str(repo), "--no-verify", "--json", "--exclude", "specs/draft*"])
    data = json.loads(result.stdout)
    assert result.exit_code == 2  # the broken spec
    assert [Path(p).relative_to(repo).as_posix() for p in data["found"]] == [
        "models/m",
        "specs/broken.yaml",
        "specs/tiny.yaml",
    ]
    skipped = {Path(s["path"]).relative_to(repo).as_posix(): s["reason"] for s in data["skipped"]}
    assert skipped == {
        "models/config.json": "a config.json without model_type",
        "specs/draft.yaml": "excluded",
        "specs/other.yml": "YAML without the spec keys N, H, m, d, r",
    }
    assert "skipped 3 files: " in result.stderr and "(excluded)" in result.stderr
    error = next(s["error"] for s in data["specs"] if s["path"].endswith("broken.yaml"))
    assert "invalid YAML" in error


def test_the_help_says_what_a_folder_search_takes(runner):
    help_text = " ".join(runner.invoke(app, ["check", "--help"]).stdout.split())
    assert "skipping hidden folders" in help_text and "--exclude" in help_text


# Phi-3-mini-128k-instruct's config.json as published, but for its factors' values (48 of each, one per rotated
# pair of its heads of 96; the published values are not needed here, only their number)
PHI3_128K = {
    "model_type": "phi3",
    "hidden_size": 3072,
    "intermediate_size": 8192,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "max_position_embeddings": 131072,
    "original_max_position_embeddings": 4096,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "sliding_window": 262144,
    "tie_word_embeddings": False,
    "vocab_size": 32064,
    "hidden_act": "silu",
    "rope_scaling": {
        "type": "longrope",
        "short_factor": [1 + i / 100 for i in range(48)],
        "long_factor": [1 + 3 * i / 2 for i in range(48)],
    },
}


def test_published_configs_with_per_layer_kinds_and_longrope_are_checked_on_a_copy_scaled_to_match(runner, tmp_path):
    """Issue 40 (16): check ERRORed on DeepSeek-V3 (61 per-layer kinds kept for 2 blocks) and Phi-3-mini-128k (48
    LongRoPE factors kept for heads of 16). The copy has one block of each kind, and for each pair its smaller
    head turns the factor of the pair of the full head that turns at the same frequency."""
    deepseek = next(m for m in json.loads((DATA / "real-models-2.json").read_text()) if m["name"] == "DeepSeek-V3")
    for name, config in (("ds3", {"model_type": "deepseek_v3"} | deepseek["config"]), ("phi3", PHI3_128K)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(config))
    code, data = run(runner, tmp_path / "ds3", tmp_path / "phi3")
    assert code == 0 and [s["verify"] for s in data["specs"]] == ["PASS", "PASS"], data
    ds3, phi3 = (s["verified_on"] for s in data["specs"])
    assert ds3["N"] == 2 and ds3["feedforward_layers"] == ["dense", "routed"]  # first_k_dense_replace = 3 of 61
    rotated = phi3["m"]  # (Phi-3 turns whole heads)
    full, small = (10000.0 ** (-np.arange(0, rot, 2) / rot) for rot in (96, rotated))  # each pair's frequency
    same = [int(np.argmin(abs(full - f))) for f in small]  # the full head's pair at each of the small head's
    assert np.allclose(full[same], small, rtol=1e-12, atol=0)
    for key, published in (("rope_short_factor", "short_factor"), ("rope_long_factor", "long_factor")):
        assert phi3[key] == [PHI3_128K["rope_scaling"][published][j] for j in same]
