"""GGUF files of the families of 2026 (issue 44): what their converters drop is refused when tfm writes a file, in
one line naming the keys that would differ, and nothing is written; the files themselves are tested with every
other family's (tests/formats/test_gguf.py, test_gguf_write.py: helpers_gguf.FAMILIES)."""

from __future__ import annotations

import pytest
from gguf_files import write_gguf
from helpers_hf_transformers import build

from transformer_cli.cli import app
from transformer_cli.errors import SpecError
from transformer_cli.gguf.model import spec_from_gguf

pytest.importorskip("gguf", reason="the gguf package reads and writes the files (a dependency of tfm)")


@pytest.mark.parametrize(
    ("name", "lost"),
    [
        ("olmoe-renorm", "router_renorm"),  # OlmoeModel writes no expert_weights_norm; llama.cpp's olmoe: norm_w false
        ("olmoe-clipped", "qkv_clip"),  # nor clamp_kqv, which llama.cpp's olmoe does not read
        ("ministral3-plain-window", "window"),  # Ministral3Model writes no window; llama.cpp's mistral3 has none
        ("mpt-scaled-untied", "scale"),  # MPTModel writes no softmax_scale (nor the eps: 1e-5 always)
        ("llama4_text", "chunk"),  # llama.cpp's llama4: chunks of 8,192 and its temperature constants, always
    ],
)
def test_what_the_architecture_cannot_hold_is_refused(tmp_path, runner, name, lost):
    build(name).save_pretrained(tmp_path / "hf")
    result = runner.invoke(app, ["convert", str(tmp_path / "hf"), "-o", str(tmp_path / "m.gguf")])
    assert result.exit_code == 2, result.output
    assert "cannot hold this model" in result.stderr and lost in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hf"]


def test_an_mpt_file_of_another_alibi_bias_is_refused(tmp_path):
    """transformers' MPT (and tfm's ALiBi) has maximum bias 8; MosaicML's alibi_bias_max may say otherwise."""
    model = build("mpt")
    spec_from_gguf(write_gguf(model, tmp_path / "eight.gguf"))  # (read)
    model.config.attn_config.alibi_bias_max = 4
    with pytest.raises(SpecError, match="max_alibi_bias.*8"):
        spec_from_gguf(write_gguf(model, tmp_path / "four.gguf"))
