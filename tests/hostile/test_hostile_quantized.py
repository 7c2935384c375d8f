"""Broken and hostile quantised folders (hf/quant/): each is one `error:` line naming the file, the key or tensor
and the bad value, exit 2, never a traceback; count, run and generate give the same verdict where the config
alone decides it; a group size of 10^7 is refused before anything is allocated."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import one_line_error
from packed_folders import awq, compressed, edit, float_folder, gptq, mxfp4_compressed, reconfigure

from transformer_cli.cli import app

ROOT = Path(__file__).parents[2]
DOWN = "model.layers.0.mlp.down_proj"  # (64, 172): 6 groups of 32 inputs, the last one short


def _ids(tmp_path: Path) -> Path:
    np.save(tmp_path / "ids.npy", np.arange(5))
    return tmp_path / "ids.npy"


def _verdicts(runner, folder: Path, ids: Path) -> list[str]:
    """The one-line error of count, run and generate on the folder (each must be one)."""
    commands = [
        ["count", str(folder)],
        ["run", str(folder), "-i", str(ids)],
        ["generate", str(folder), "-i", str(ids), "-k", "2"],
    ]
    return [one_line_error(runner.invoke(app, args)) for args in commands]


def _runs(runner, folder: Path, ids: Path) -> None:
    for args in (["count", str(folder)], ["run", str(folder), "-i", str(ids)]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, (args, result.stderr, result.exception)


# -- compressed-tensors g_idx (item 5) -------------------------------------------------------------------------


@pytest.mark.parametrize("value", [-1, 6, 10**6])  # -1 was taken as the last group; 10^6 an IndexError
def test_a_g_idx_outside_the_weights_groups_is_one_line_naming_file_tensor_and_value(runner, tmp_path, value):
    folder = compressed(float_folder(runner, app, tmp_path / "q"), actorder="group")
    ids = _ids(tmp_path)
    _runs(runner, folder, ids)  # the control: the folder as written runs

    def damage(tensors):
        tensors[f"{DOWN}.weight_g_idx"][3] = value

    edit(folder, damage)
    error = one_line_error(runner.invoke(app, ["run", str(folder), "-i", str(ids)]))
    assert error == (
        f"error: {folder}/model.safetensors: tensor {DOWN}.weight_g_idx: value {value} at index 3 is "
        "not a group of the weight: expected 0 to 5 (its scales hold 6 groups)"
    )


@pytest.mark.parametrize(
    "change,expected",
    [
        (
            lambda t: t[f"{DOWN}.weight_g_idx"].astype(np.float32),
            f"wrong dtype {DOWN}.weight_g_idx F32 (expected I32 or I64)",
        ),
        (
            lambda t: t[f"{DOWN}.weight_g_idx"][:-1],
            f"wrong shape {DOWN}.weight_g_idx (171,) in model.safetensors (expected (172,))",
        ),
    ],
)
def test_a_g_idx_of_the_wrong_dtype_or_shape_is_refused_by_count(runner, tmp_path, change, expected):
    folder = compressed(float_folder(runner, app, tmp_path / "q"), actorder="group")

    def damage(tensors):
        tensors[f"{DOWN}.weight_g_idx"] = change(tensors)

    edit(folder, damage)
    assert expected in one_line_error(runner.invoke(app, ["count", str(folder)]))


def test_act_order_weight_stores_no_g_idx_and_is_read_without_one(runner, tmp_path):
    """compressed-tensors' actorder "weight" (alias "static") reorders during calibration only and stores no
    g_idx: tfm asked for one ("missing ...weight_g_idx")."""
    folder = compressed(float_folder(runner, app, tmp_path / "q"))
    reconfigure(folder, lambda q: q["config_groups"]["group_0"]["weights"].update(actorder="static"))
    _runs(runner, folder, _ids(tmp_path))


# -- group sizes (item 14) -------------------------------------------------------------------------------------

KEY = "key 'quantization_config.config_groups.group_0.weights.group_size'"


@pytest.mark.parametrize("group", [10**7, 65])
def test_a_compressed_group_larger_than_its_inputs_is_refused_by_count_and_run(runner, tmp_path, group):
    folder = compressed(float_folder(runner, app, tmp_path / "q"), group=group)
    expected = (
        f"error: {folder}/config.json: {KEY}: got {group}, expected at most the 64 inputs of "
        "model.layers.0.self_attn.q_proj.weight (a group larger than its inputs)"
    )
    assert _verdicts(runner, folder, _ids(tmp_path)) == [expected] * 3


@pytest.mark.parametrize("group", [0, -1, 2.5])
def test_a_compressed_group_size_that_is_not_positive_is_refused(runner, tmp_path, group):
    folder = compressed(float_folder(runner, app, tmp_path / "q"))
    reconfigure(folder, lambda q: q["config_groups"]["group_0"]["weights"].update(group_size=group))
    error = one_line_error(runner.invoke(app, ["count", str(folder)]))
    assert f"{KEY}: got {json.dumps(group)}, expected a positive integer" in error


@pytest.mark.slow
def test_a_group_of_ten_million_is_refused_holding_a_few_megabytes(runner, tmp_path):
    """It allocated 4.9 GB (the scales repeated 10^7 times) and then said "lower the batch". The subprocess runs
    under a 2 GB address-space limit, so that the old way ends in a MemoryError, not in the machine's swap."""
    from rss import tfm

    folder = compressed(float_folder(runner, app, tmp_path / "q"), group=10**7)
    run = tfm("run", folder, "-i", _ids(tmp_path), limit=2 << 30)
    assert run.code == 2 and f"{KEY}: got 10000000" in run.stderr, run.stderr
    assert run.peak < 300 << 20, run.peak


# -- AWQ and GPTQ shapes (item 15) ------------------------------------------------------------------------------


def test_awq_outputs_not_a_multiple_of_8_get_one_verdict_from_count_run_and_generate(runner, tmp_path):
    """172 outputs in 21 words fit the shapes count checks (o // 8) and held 168: run broadcast (64, 168) against
    (64, 172) and raised. AutoAWQ's gemm layer asserts out_features % 8 == 0."""
    folder = awq(float_folder(runner, app, tmp_path / "q"))
    expected = (
        f"error: {folder}/config.json: model.layers.0.mlp.gate_proj.weight has 172 outputs, which awq "
        "cannot pack: its gemm layout packs 8 outputs to an int32 word"
    )
    assert _verdicts(runner, folder, _ids(tmp_path)) == [expected] * 3


def test_awq_of_whole_words_and_dividing_groups_runs(runner, tmp_path):
    _runs(runner, awq(float_folder(runner, app, tmp_path / "q", intermediate_size=192)), _ids(tmp_path))


@pytest.mark.parametrize(
    "size,group,expected",
    [
        (176, 32, "got 32, expected a divisor of the 176 inputs of model.layers.0.mlp.down_proj.weight"),
        (192, 128, "got 128, expected at most the 64 inputs of model.layers.0.self_attn.q_proj.weight"),
    ],
)
def test_awq_groups_must_divide_the_inputs(runner, tmp_path, size, group, expected):
    folder = awq(float_folder(runner, app, tmp_path / "q", intermediate_size=size), group=group)
    error = one_line_error(runner.invoke(app, ["count", str(folder)]))
    assert f"key 'quantization_config.group_size': {expected}" in error


def test_gptq_of_inputs_or_outputs_not_filling_whole_words_is_refused_by_count(runner, tmp_path):
    """172 4-bit outputs are 21.5 words: a qzeros of 21 columns fitted count's shape (o b // 32) and held 168
    (so do 172 inputs in a qweight of 21 rows)."""
    folder = gptq(float_folder(runner, app, tmp_path / "q"))
    error = one_line_error(runner.invoke(app, ["count", str(folder)]))
    assert error == (
        f"error: {folder}/config.json: model.layers.0.mlp.gate_proj.weight has 172 outputs, which gptq "
        "cannot pack: 4-bit values fill its int32 words in multiples of 8"
    )
    whole = gptq(float_folder(runner, app, tmp_path / "w", intermediate_size=192))
    assert runner.invoke(app, ["count", str(whole)]).exit_code == 0
    large = gptq(float_folder(runner, app, tmp_path / "g", intermediate_size=192), group=128)
    error = one_line_error(runner.invoke(app, ["count", str(large)]))
    assert "key 'quantization_config.group_size': got 128, expected at most the 64 inputs" in error


# -- compressed-tensors regular expressions, shapes, bits (item 15 and siblings) -------------------------------


@pytest.mark.parametrize(
    "key,pattern,why",
    [
        ("config_groups.group_0.targets", "re:(unclosed", "missing ), unterminated subpattern at position 0"),
        ("ignore", "re:*bad", "nothing to repeat at position 0"),
    ],
)
def test_a_regular_expression_that_does_not_compile_names_the_key_and_pattern(runner, tmp_path, key, pattern, why):
    folder = compressed(float_folder(runner, app, tmp_path / "q"))

    def change(q):
        *path, last = key.split(".")
        for part in path:
            q = q[part]
        q[last] = [pattern]

    reconfigure(folder, change)
    expected = (
        f"error: {folder}/config.json: key 'quantization_config.{key}': got {json.dumps(pattern)}, expected "
        f"a regular expression after 're:' ({why})"
    )
    assert _verdicts(runner, folder, _ids(tmp_path)) == [expected] * 3


def test_regular_expressions_that_compile_still_select_the_modules(runner, tmp_path):
    folder = compressed(float_folder(runner, app, tmp_path / "q"))
    reconfigure(
        folder,
        lambda q: q["config_groups"]["group_0"].update(targets=["re:.*_proj$"]) or q.update(ignore=["re:^lm_head$"]),
    )
    result = runner.invoke(app, ["count", str(folder), "--json"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["specs"][0]["checkpoint"]["quantization"]["packed"]["weights"] == 14


def test_a_weight_shape_that_is_not_the_weights_is_one_line(runner, tmp_path):
    """The library unpacks by weight_shape; tfm by the config's shape, and ran a file that disagreed."""
    folder = compressed(float_folder(runner, app, tmp_path / "q"))

    def damage(tensors):
        tensors[f"{DOWN}.weight_shape"] = np.array([64, 170], dtype=np.int64)

    edit(folder, damage)
    error = one_line_error(runner.invoke(app, ["run", str(folder), "-i", str(_ids(tmp_path))]))
    assert error == (
        f"error: {folder}/model.safetensors: tensor {DOWN}.weight_shape: [64, 170], expected [64, 172], "
        f"the shape of {DOWN}.weight"
    )


def test_mxfp4_scales_per_16_inputs_are_refused_not_read_as_32(runner, tmp_path):
    folder = mxfp4_compressed(float_folder(runner, app, tmp_path / "q"), group=32)
    _runs(runner, folder, _ids(tmp_path))
    other = mxfp4_compressed(float_folder(runner, app, tmp_path / "o"), group=16)
    error = one_line_error(runner.invoke(app, ["count", str(other)]))
    assert f"{KEY}: got 16, expected 32 (an mxfp4 scale covers 32 inputs)" in error


def test_integers_wider_than_8_bits_are_refused(runner, tmp_path):
    """compressed-tensors packs 1 to 8 bits; a 40-bit value crosses two word boundaries, which unpack misread."""
    folder = compressed(float_folder(runner, app, tmp_path / "q"), bits=40)
    error = one_line_error(runner.invoke(app, ["count", str(folder)]))
    assert "key 'quantization_config.config_groups.group_0.weights.num_bits': 40 is not supported" in error
