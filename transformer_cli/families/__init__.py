"""The model families tfm reads and writes: one record each (record.py), registered here by the model_type it
serves. A new family is one module, imported and listed below (a module of a few closely related types holds
their `RECORDS`, in order); the tables the formats read (hf/, gguf/) are derived from these records.

Not every family is a record yet: those not listed here (the BERTs, the LLaMA-likes, Mixtral, OLMo 2, Phi-3, Falcon,
the encoder-decoders) are still spread over the formats' tables (hf/families.py, hf/weights.py, hf/lora_modules.py,
gguf/archs.py, gguf/write.py, gguf/hf_config.py), which take the records' entries after their own.
"""

from __future__ import annotations

from . import (
    bloom,
    cohere,
    deepseek,
    gemma,
    gpt2,
    gpt_neo,
    gpt_neox,
    gpt_oss,
    gptj,
    granite,
    opt,
    phi,
    phimoe,
    qwen_moe,
    stablelm,
    starcoder2,
)
from .record import Gguf, Record

# the registry: one line a family
RECORDS: dict[str, Record] = {
    record.model_type: record
    for module in (
        bloom,
        cohere,
        deepseek,
        gemma,
        gpt2,
        gpt_neo,
        gpt_neox,
        gpt_oss,
        gptj,
        granite,
        opt,
        phi,
        phimoe,
        qwen_moe,
        stablelm,
        starcoder2,
    )
    for record in getattr(module, "RECORDS", None) or (module.RECORD,)
}
GGUF_ARCHS: dict[str, Record] = {}  # a GGUF architecture's family: the first record written to it
for _record in RECORDS.values():
    if _record.gguf is not None:
        GGUF_ARCHS.setdefault(_record.gguf.arch, _record)

__all__ = ["GGUF_ARCHS", "RECORDS", "Gguf", "Record"]
