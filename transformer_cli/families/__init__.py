"""The model families tfm reads and writes: one record each (record.py), registered here by the model_type it
serves. A new family is one module and its name on one line of `MODULES` below; the tables the formats read
(hf/, gguf/) are derived from these records.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

from .record import Gguf, Record

# the registry: one line a family, its module's name (a module of a few closely related types lists their records
# as RECORDS, in order; the first written to a GGUF architecture is that architecture's family)
MODULES = (
    "afmoe",
    "albert",
    "apertus",
    "arcee",
    "bamba",
    "bart",
    "bert",
    "bloom",
    "codegen",
    "cohere",
    "cohere2_moe",
    "dbrx",
    "deberta_v2",
    "deepseek",
    "deepseek_v32",
    "deepseek_v4",
    "dots1",
    "electra",
    "ernie4_5",
    "ernie4_5_moe",
    "eurobert",
    "exaone4",
    "exaone_moe",
    "falcon",
    "falcon_h1",
    "gemma",
    "gemma3n",
    "gemma4",
    "glm4",
    "glm4_moe",
    "glm5_next",
    "gpt2",
    "gpt_neo",
    "gpt_neox",
    "gpt_oss",
    "gptj",
    "granite",
    "granite_swa",
    "granitemoehybrid",
    "helium",
    "hy_v3",
    "hy_v4",
    "jamba",
    "jetmoe",
    "kimi_linear",
    "laguna",
    "lfm2",
    "lfm3",
    "llama",
    "llama4",
    "longcat_flash",
    "m2m_100",
    "marian",
    "mamba",
    "mamba2",
    "mimo_v2_flash",
    "minimax_m2",
    "mistral_large4",
    "ministral3",
    "mistral4",
    "modernbert",
    "mpnet",
    "mpt",
    "nanochat",
    "nemotron",
    "nemotron_h",
    "olmo2",
    "olmo_hybrid",
    "olmoe",
    "opt",
    "pegasus",
    "persimmon",
    "phi",
    "phi3",
    "phimoe",
    "qwen",
    "qwen3_next",
    "qwen4_exp",
    "qwen_moe",
    "seed_oss",
    "sliding_llamas",
    "smollm3",
    "solar_open",
    "stablelm",
    "starcoder2",
    "t5",
    "t5gemma",
    "youtu",
    "zamba2",
)


def _records(module: ModuleType) -> tuple[Record, ...]:
    return getattr(module, "RECORDS", None) or (module.RECORD,)


RECORDS: dict[str, Record] = {
    record.model_type: record for name in MODULES for record in _records(import_module(f".{name}", __name__))
}
GGUF_ARCHS: dict[str, Record] = {}  # a GGUF architecture's family: the first record written to it
GGUF_OF: dict[str, Gguf] = {}  # each architecture's reader and writer: that record's gguf, or one of its gguf_also
for _record in RECORDS.values():
    for _gguf in (_record.gguf, *_record.gguf_also) if _record.gguf is not None else ():
        GGUF_ARCHS.setdefault(_gguf.arch, _record)
        GGUF_OF.setdefault(_gguf.arch, _gguf)

__all__ = ["GGUF_ARCHS", "GGUF_OF", "RECORDS", "Gguf", "Record"]
