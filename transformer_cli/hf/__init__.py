"""Hugging Face models: a `config.json` as transformers reads it, mapped onto tfm's spec."""
