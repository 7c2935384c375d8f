"""The model families tfm reads and writes: one record each (record.py), registered here by the model_type it
serves. A new family is one module, imported and listed below (a module of a few closely related types holds
their `RECORDS`, in order); the tables the formats read (hf/, gguf/) are derived from these records.
"""

from __future__ import annotations

from . import (
    bart,
    bert,
    bloom,
    cohere,
    deepseek,
    falcon,
    gemma,
    gpt2,
    gpt_neo,
    gpt_neox,
    gpt_oss,
    gptj,
    granite,
    llama,
    olmo2,
    opt,
    phi,
    phi3,
    phimoe,
    qwen,
    qwen_moe,
    stablelm,
    starcoder2,
    t5,
)
from .record import Gguf, Record

# the registry: one line a family (a module of several records lists them as RECORDS, in their order)
RECORDS: dict[str, Record] = {
    record.model_type: record
    for module in (
        bart,
        bert,
        bloom,
        cohere,
        deepseek,
        falcon,
        gemma,
        gpt2,
        gpt_neo,
        gpt_neox,
        gpt_oss,
        gptj,
        granite,
        llama,
        olmo2,
        opt,
        phi,
        phi3,
        phimoe,
        qwen,
        qwen_moe,
        stablelm,
        starcoder2,
        t5,
    )
    for record in getattr(module, "RECORDS", None) or (module.RECORD,)
}
GGUF_ARCHS: dict[str, Record] = {}  # a GGUF architecture's family: the first record written to it
for _record in RECORDS.values():
    if _record.gguf is not None:
        GGUF_ARCHS.setdefault(_record.gguf.arch, _record)

__all__ = ["GGUF_ARCHS", "RECORDS", "Gguf", "Record"]
