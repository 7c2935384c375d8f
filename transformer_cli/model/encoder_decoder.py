"""Seed 001's encoder-decoder: the encoder's blocks read the source; the decoder's blocks read the target, each
attending to the decoder's own earlier columns and then, by cross-attention, to the encoder's output.

Both stacks are Transformers (model/transformer.py). The encoder is a stack of its own spec (unmasked, its
N_enc blocks, no head) over the weights renamed to the names a one-stack model uses (`encoder.{j}.x` is its
`blocks.{j}.x`, `encoder_positional.P` its `positional.P`, ...; `embedding.E` is shared). The decoder is the
spec's own N blocks, given the encoder's output as `memory`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np

from ..components.encoder import encoder_run_spec
from ..errors import ArrayError
from ..spec.definition import Spec
from .transformer import Transformer

Array = np.ndarray


class EncoderWeights(Mapping[str, Array]):
    """The encoder's weights under the names a one-stack model reads: blocks.{j}.x is encoder.{j}.x, and the
    encoder's positions, embedding norm and final norm are the ones prefixed encoder_; E is shared."""

    def __init__(self, weights: Mapping[str, Array], own_embedding: bool = False):
        self.weights, self.own_embedding = weights, own_embedding  # own: encoder_embedding.E (V_src)

    def _source(self, name: str) -> str:
        if name.startswith("blocks."):
            return "encoder." + name.removeprefix("blocks.")
        return name if name == "embedding.E" and not self.own_embedding else "encoder_" + name

    def __getitem__(self, name: str) -> Array:
        return self.weights[self._source(name)]

    def __iter__(self) -> Iterator[str]:
        for name in self.weights:
            if name.startswith("encoder."):
                yield "blocks." + name.removeprefix("encoder.")
            elif name.startswith("encoder_"):
                yield name.removeprefix("encoder_")
            elif name == "embedding.E" and not self.own_embedding:
                yield name

    def __len__(self) -> int:
        return sum(1 for _ in self)


class EncoderDecoder:
    """Decoder(target, Encoder(source)): the output for every target column (logits with a head).

    source and target: token ids (n,) or (b, n) with a vocabulary, or columns (d, n) or (b, d, n), the same
    batch b. The decoder's input is the target as given (a model trained with teacher forcing expects it shifted
    right behind a start token: tfm does not shift it).
    """

    def __init__(self, spec: Spec, weights: Mapping[str, Array], dtype=np.float64, **options):
        self.spec = spec
        self.dtype = np.dtype(dtype)
        self.encoder = Transformer(encoder_run_spec(spec), EncoderWeights(weights, bool(spec.V_src)), dtype, **options)
        self.decoder = Transformer(spec, weights, dtype, **options)

    def encode(self, source: Array) -> Array:
        """The encoder's output for the source: (d, n_src) or (b, d, n_src)."""
        return self.encoder.forward(source)

    def forward(self, source: Array, target: Array, **options) -> Array:
        source, target = np.asarray(source), np.asarray(target)
        if _batch(source) != _batch(target):
            raise ArrayError(f"source {source.shape} and target {target.shape}: expected the same batch of sequences")
        return self.decoder.forward(target, memory=self.encode(source), **options)

    def __call__(self, source: Array, target: Array) -> Array:
        return self.forward(source, target)


def _batch(x: Array) -> int | None:
    """b for a batch of sequences ((b, n) ids or (b, d, n) columns), None for one sequence."""
    one = 1 if np.issubdtype(x.dtype, np.integer) else 2
    return None if x.ndim == one else x.shape[0]
