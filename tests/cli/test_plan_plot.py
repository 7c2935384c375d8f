"""`tfm plan --plot FILE` and `--chart` (issue 27, item 5): serving memory against the context, drawn from the
plan's own figures, with the budget and each GPU's memory as lines; the file written as outputs are written."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest

from transformer_cli.analysis.hardware import PRESETS
from transformer_cli.analysis.plan import contexts, serving_curve
from transformer_cli.cli import app
from transformer_cli.hf.config import spec_from_config

LLAMA3 = Path(__file__).resolve().parent.parent.parent / "examples" / "hf" / "Meta-Llama-3-8B"
ARGS = [str(LLAMA3), "--memory", "24G", "--hardware", "rtx-4090", "--hardware", "h100-sxm"]


def _svg_text(path: Path) -> list[str]:
    root = ElementTree.parse(path).getroot()
    return [t.text.strip() for t in root.iter() if t.tag.endswith("text") and t.text]


def test_the_picture_names_every_part_and_every_limit(runner, tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib draws the plot (the plot extra)")
    out = tmp_path / "plan.svg"
    result = runner.invoke(app, ["plan", *ARGS, "--plot", str(out), "--plot-weights", "int4,q4_k_m"])
    assert result.exit_code == 0, result.output
    assert f"wrote {out}" in result.stderr
    texts = _svg_text(out)
    for label in (
        "weights (bfloat16)",
        "KV cache",
        "the prefill's transient peak",
        "total, weights int4",
        "--memory budget (24 GiB)",
        "RTX 4090 (24 GiB)",
        "H100 SXM (79.6 GiB)",
        "context (tokens)",
    ):
        assert label in texts, (label, texts)
    assert any(t.startswith("total, weights q4_k_m") for t in texts)
    again = tmp_path / "again.svg"  # the same figures, the same bytes (no date, fixed ids)
    assert runner.invoke(app, ["plan", *ARGS, "--plot", str(again), "--plot-weights", "int4,q4_k_m"]).exit_code == 0
    assert again.read_bytes() == out.read_bytes()
    png = tmp_path / "plan.png"
    assert runner.invoke(app, ["plan", *ARGS, "--plot", str(png)]).exit_code == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_curve_is_the_plans_serving_memory_at_each_context(runner):
    spec = spec_from_config(LLAMA3)
    lengths = contexts(spec, 2048)
    assert lengths[0] == 128 and lengths[-1] == 8192 and 2048 in lengths  # up to the model's own context
    curve = serving_curve(spec, 1, lengths, ["bfloat16", "int4"])
    for n, point in zip(lengths, curve["bfloat16"], strict=True):
        if n in (128, 8192):
            result = runner.invoke(app, ["plan", str(LLAMA3), "-n", str(n), "--hardware", "l4", "--json"])
            assert point.to_dict() == json.loads(result.stdout)["serving"]["fused_attention"]
    assert all(a.total > b.total for a, b in zip(curve["bfloat16"], curve["int4"], strict=True))


def test_the_chart_draws_a_bar_a_context_on_the_plans_scale(runner):
    result = runner.invoke(app, ["plan", *ARGS, "--chart"], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    rows = {
        int(m.group(1).replace(",", "")): m.group(2)
        for m in re.finditer(r"n = ([\d,]+)  (.*?) +[\d.]+ GiB", result.stdout)
    }
    assert set(rows) == set(contexts(spec_from_config(LLAMA3), 2048))
    assert rows[8192].count("▓") + rows[8192].count("░") > rows[128].count("▓") + rows[128].count("░")
    assert all(row.count("│") == 2 for row in rows.values())  # the budget and the RTX 4090 (24 GiB): one place
    assert "│ at 24 GiB: --memory budget; │ at 24 GiB: RTX 4090; │ at 79.6 GiB: H100 SXM" in " ".join(
        result.stdout.split()
    )
    quiet = runner.invoke(app, ["plan", *ARGS, "--no-chart"])
    assert "against the context" not in quiet.stdout  # (the control)


def test_a_card_and_a_budget_of_one_size_are_one_line_in_binary_units(runner, tmp_path):
    """Issue 40, item 7: the cards' memory was drawn in GB (80 * 10**9) beside a budget in GiB, so an 80 GiB budget
    and the A100 80GB (81,920 MiB, as nvidia-smi reports it) were two lines 7 % apart."""
    mib = 1 << 20  # the totals nvidia-smi prints (modal-labs/modal-client#2797; RLinf/RLinf#255 for the 4090)
    assert {k: hw.memory for k, hw in PRESETS.items()} == {
        "a100-80gb": 81_920 * mib,
        "h100-sxm": 81_559 * mib,
        "l4": 23_034 * mib,
        "rtx-4090": 24_564 * mib,
    }
    args = [str(LLAMA3), "--memory", "80G", "--hardware", "a100-80gb"]
    result = runner.invoke(app, ["plan", *args, "--chart"], env={"COLUMNS": "120"})
    rows = re.findall(r"n = [\d,]+  (.*?) +[\d.]+ GiB", result.stdout)
    assert len(rows) == 7 and all(row.count("│") == 1 for row in rows), rows  # one place on the scale
    assert "│ at 80 GiB: --memory budget; │ at 80 GiB: A100 80GB SXM" in " ".join(result.stdout.split())
    other = runner.invoke(
        app, ["plan", str(LLAMA3), "--memory", "75G", "--hardware", "a100-80gb", "--chart"], env={"COLUMNS": "120"}
    )
    rows = re.findall(r"n = [\d,]+  (.*?) +[\d.]+ GiB", other.stdout)  # (the control: sizes 7 % apart, two lines)
    assert len(rows) == 7 and all(row.count("│") == 2 for row in rows), rows
    pytest.importorskip("matplotlib", reason="matplotlib draws the plot (the plot extra)")
    out = tmp_path / "plan.svg"
    assert runner.invoke(app, ["plan", *args, "--plot", str(out)]).exit_code == 0
    texts = _svg_text(out)
    assert "--memory budget (80 GiB)" in texts and "A100 80GB SXM (80 GiB)" in texts, texts


@pytest.mark.parametrize("columns", [60, 40])
def test_the_chart_keeps_its_labels_and_totals_whole_on_a_narrow_terminal(runner, columns):
    """Issue 40, item 22: at 60 columns the bars kept their 48 characters and Rich cut 'n = 1,024' to 'n = 1…' and
    '15.2 GiB' to '15.2…'; the bars are now what the terminal leaves."""
    result = runner.invoke(app, ["plan", *ARGS, "--chart"], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    assert "…" not in result.stdout and max(map(len, result.stdout.splitlines())) <= columns
    rows = re.findall(r"^ *n = ([\d,]+)  .*  ([\d.]+ GiB)$", result.stdout, re.MULTILINE)
    wide = runner.invoke(app, ["plan", *ARGS, "--chart"], env={"COLUMNS": "200"}).stdout
    assert len(rows) == 7 and rows == re.findall(r"^ *n = ([\d,]+)  .*  ([\d.]+ GiB)$", wide, re.MULTILINE)


def test_a_plot_never_replaces_a_file_unasked_nor_an_input(runner, tmp_path, monkeypatch):
    out = tmp_path / "plan.svg"
    out.write_text("mine")
    result = runner.invoke(app, ["plan", *ARGS, "--plot", str(out)])
    assert result.exit_code != 0 and "already exists; pass --force" in result.stderr and out.read_text() == "mine"
    bad = runner.invoke(app, ["plan", *ARGS, "--plot", str(tmp_path / "plan.jpg")])
    assert bad.exit_code == 2 and "expected a .png, .svg or .pdf file" in bad.stderr
    config = tmp_path / "model"
    config.mkdir()
    (config / "config.json").write_text((LLAMA3 / "config.json").read_text())
    (config / "plot.svg").write_text("<svg/>")
    result = runner.invoke(app, ["plan", str(config), "--plot", str(config / "plot.svg"), "--force"])
    assert result.exit_code != 0 and (config / "plot.svg").read_text() == "<svg/>"  # an input of the model
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    missing = runner.invoke(app, ["plan", *ARGS, "--plot", str(tmp_path / "new.svg")])
    assert missing.exit_code == 2 and "--plot needs matplotlib: pip install 'tfm[plot]'" in missing.stderr
