"""The NumPy forward pass: kernels (layers), the Transformer built from a spec's components and weights,
threads over the batch (parallel), one-token decoding, attention maps, and `tfm run` (runner)."""
