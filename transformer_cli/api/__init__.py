"""The library's calls, what the commands do for Python: `tfm.load(path)` and its Model (models.py), `tfm.init` and
`tfm.convert` (writing.py). transformer_cli/__init__.py exports them by name."""
