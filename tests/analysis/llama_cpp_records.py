"""llama.cpp's own figures for the tests of tfm's llama.cpp plan: tests/data/llama_cpp_buffers.json (recorded by
scripts/record_llamacpp_buffers.py), each model's spec from its recorded config, and its GGUF tensors' bytes."""

import json
import tempfile
from functools import cache
from pathlib import Path

DATA = json.loads((Path(__file__).parents[1] / "data" / "llama_cpp_buffers.json").read_text())


@cache
def spec_of(name):
    """The recorded model's spec, read from its config as tfm reads a folder."""
    from transformer_cli.hf.config import spec_from_config

    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "config.json").write_text(json.dumps(DATA["models"][name]["config"]))
        return spec_from_config(Path(tmp))


def tensors_of(name):
    """Each GGUF tensor's bytes in the file type the record ran (tfm's writer, llama-quantize's types)."""
    from transformer_cli.gguf.write import ARCH_OF
    from transformer_cli.tasks.llama_cpp import gguf_tensor_bytes

    model = DATA["models"][name]
    kinds = {"f16": "float16", "f32": "float32"}
    weights = kinds.get(model["type"]) or _mix(name, model["type"])
    return gguf_tensor_bytes(None, spec_of(name), ARCH_OF[model["config"]["model_type"]], weights)


def _mix(name, kind):
    from transformer_cli.components.held import Held

    return Held(kind, {}, kind)  # (a llama.cpp file type: only its name is read)
