"""Hugging Face models: config.json to a tfm spec, safetensors checkpoints (single or sharded) to tfm's weights
by each family's tensor names and layouts, and tfm's weights back to a Hugging Face folder."""
