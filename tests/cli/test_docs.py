"""What the documentation and the help say is true of this checkout: every path a page cites exists, the site's
home page shows the README's paragraph of models (one text, so the two cannot list different GGUF families), that
paragraph names every GGUF architecture tfm reads, and every command that takes a spec says it takes a GGUF file
(issue 40, item 23)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import typer.main

from transformer_cli.cli import app
from transformer_cli.gguf.archs import ARCHITECTURES

sys.path.insert(0, str(Path(__file__).parents[2] / "scripts"))

from readme_examples import PAGES, ROOT  # noqa: E402

FENCED = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)  # code and the outputs of commands
CITED = re.compile(r"(?<![\w./-])((?:tests|scripts|benchmarks|transformer_cli|docs|examples|\.ci)/[\w./+-]*[\w/])")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _prose(page: str) -> str:
    return FENCED.sub("", (ROOT / page).read_text())


@pytest.mark.parametrize("page", PAGES)
def test_every_path_a_page_cites_exists(page):
    """docs/library.md cited tests/test_library.py after the test had moved to tests/library/."""
    text = _prose(page)
    cited = CITED.findall(text) + [link for link in LINK.findall(text) if "://" not in link]
    missing = [p for p in cited if not (ROOT / p).exists() and not (ROOT / page).parent.joinpath(p).exists()]
    assert not missing, missing


def test_the_home_page_shows_the_readmes_paragraph_of_models():
    readme, index = (ROOT / "README.md").read_text(), (ROOT / "docs" / "index.md").read_text()
    assert '--8<-- "README.md:models"' in index and "GGUF files" not in index  # included, not copied
    assert readme.count("--8<-- [start:models]") == 1 and readme.count("--8<-- [end:models]") == 1


# How the README names each `general.architecture` tfm reads (gguf/archs.py): a new one must be named there too.
GGUF_NAMES = {
    "llama": "LLaMA, Llama 4, Mistral,",
    "mistral3": "Ministral 3",
    "mistral4": "Mistral 4",
    "llama4": "Llama 4",
    "qwen2": "Qwen 2/3",
    "qwen3": "Qwen 2/3",
    "qwen2moe": "and their MoEs",
    "qwen3moe": "and their MoEs",
    "gemma": "Gemma 1/2/3",
    "gemma2": "Gemma 1/2/3",
    "gemma3": "Gemma 1/2/3",
    "gemma3n": "Gemma 1/2/3/3n/4",
    "gemma4": "Gemma 1/2/3/3n/4",
    "phi3": "Phi-2/3",
    "phi2": "Phi-2/3",
    "phimoe": "Phi-3.5-MoE",
    "starcoder2": "StarCoder 1 and 2",
    "starcoder": "StarCoder 1 and 2",
    "gpt2": "GPT-2",
    "falcon": "Falcon",
    "olmo": "OLMo 1/2/3",
    "olmo2": "OLMo 1/2/3",
    "olmoe": "OLMoE",
    "glm4": "GLM-4 and GLM-4.5",
    "glm4moe": "GLM-4 and GLM-4.5",
    "exaone4": "EXAONE 4 and its MoE",
    "exaone-moe": "EXAONE 4 and its MoE",
    "nemotron": "Nemotron",
    "jais2": "JAIS 2",
    "granite": "Granite, Granite SWA and GraniteMoE",
    "granitemoe": "Granite, Granite SWA and GraniteMoE",
    "command-r": "Command-R",
    "cohere2": "Command-R, R7B and Cohere2-MoE",
    "stablelm": "StableLM",
    "bloom": "BLOOM",
    "mpt": "MPT",
    "gptneox": "GPT-NeoX",
    "gpt-oss": "gpt-oss",
    "deepseek2": "DeepSeek-V2/V3",
    "dots1": "dots.llm1",
    "minimax-m2": "MiniMax-M2",
    "dbrx": "DBRX",
    "eurobert": "EuroBERT",
    "modern-bert": "ModernBERT",
    "afmoe": "AFMoE",
    "bert": "BERT and RoBERTa",
    "t5": "T5, mT5 and UMT5",
    "gptj": "GPT-J",
    "arcee": "Arcee",
    "seed_oss": "Seed-OSS",
    "smollm3": "SmolLM3",
    "apertus": "Apertus",
    "mimo2": "MiMo-V2-Flash",
    "granite_swa": "Granite SWA",
    "cohere2moe": "Cohere2-MoE",
    "laguna": "Laguna",
    "hy_v3": "HY-V3",
    "lfm2": "LFM2",
    "lfm2moe": "LFM2 and its MoE",
    "mamba2": "Mamba-2",
    "mamba": "Mamba, Falcon Mamba",
    "jamba": "Mamba-2 and Jamba",
    "glm-dsa": "GLM-5 (its sparse attention)",
    "qwen3next": "Qwen3-Next (its Gated DeltaNet)",
    "granitehybrid": "Granite 4 (granitehybrid)",
    "falcon-h1": "Falcon-H1 (its multipliers folded)",
    "nemotron_h": "Nemotron-H and its MoE",
    "nemotron_h_moe": "Nemotron-H and its MoE",
    "qwen35": "Qwen3.5 and its MoE",
    "qwen35moe": "Qwen3.5 and its MoE",
    "ernie4_5": "ERNIE 4.5 and its MoE",
    "ernie4_5-moe": "ERNIE 4.5 and its MoE",
}


def test_the_model_types_table_is_the_registrys():
    from families_table import families_table

    page = (ROOT / "docs" / "hugging-face.md").read_text()
    block = page.split("<!-- families: the registry's table -->\n")[1].split("<!-- /families -->")[0]
    assert block == families_table()  # (python scripts/update_readme.py makes it anew)
    assert "| `olmo3` | `Olmo3ForCausalLM` | `olmo2` |" in block and "| `opt` | `OPTForCausalLM` | — |" in block


def test_the_readme_names_every_gguf_architecture_tfm_reads():
    readme = " ".join((ROOT / "README.md").read_text().split())
    listed = readme.split("GGUF files (llama.cpp's format: ")[1].split(") are read too")[0]
    assert set(GGUF_NAMES) == set(ARCHITECTURES)
    assert [arch for arch, name in GGUF_NAMES.items() if name not in listed] == []


def _help(*command: str) -> str:
    return " ".join(typer.testing.CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200"}).stdout.split())


SPEC_COMMANDS = ["count", "init", "sample", "run", "generate", "diff", "spec", "attention", "verify", "plan", "bench"]


@pytest.mark.parametrize("command", SPEC_COMMANDS)
def test_every_command_that_takes_a_spec_says_it_takes_a_gguf_file(command):
    arguments = _help(command).split("Arguments: ")[1].split(" Options: ")[0]  # the spec's own help
    assert ".gguf file" in arguments, arguments


def test_convert_says_it_writes_gguf_and_shows_one_example_a_line():
    text = typer.testing.CliRunner().invoke(app, ["convert", "--help"], env={"COLUMNS": "200"}).stdout
    assert "or the .gguf file (--type) to write" in " ".join(text.split())
    examples = text.split("Examples:")[1].split("\n\n")[0].strip().splitlines()
    assert len(examples) == 3 and all(line.strip().startswith("tfm convert ") for line in examples), examples


def test_every_commands_examples_are_one_a_line():
    """Click rewraps a paragraph unless it starts with \\b: convert's three examples ran together on two lines."""
    click_app = typer.main.get_command(app)
    for name in click_app.commands:  # type: ignore[attr-defined]
        text = typer.testing.CliRunner().invoke(app, [name, "--help"], env={"COLUMNS": "200"}).stdout
        for block in re.findall(r"Examples?:(.*?)(?:\n\n|\Z)", text, re.DOTALL):
            lines = block.strip().splitlines()
            assert all(line.strip().startswith("tfm ") for line in lines), (name, lines)
            assert all(len(re.findall(r"(?:^|\s)tfm ", line.strip())) == 1 for line in lines), (name, lines)


def test_sample_says_what_b_does_to_token_ids():
    assert "token ids (b, n)" in _help("sample") and "without -b one: (d, n) or (n,)" in _help("sample")


def test_the_training_caption_points_to_a_section_that_is_there(runner):
    result = runner.invoke(app, ["plan", str(ROOT / "examples" / "hf" / "gpt2"), "--no-chart"], env={"COLUMNS": "200"})
    text = " ".join(result.stdout.split())
    page, section = re.search(r"PyTorch's kernels: (docs/[\w-]+\.md), (\w+)\)", text).groups()  # type: ignore[union-attr]
    assert f"- **{section}**" in (ROOT / page).read_text()
