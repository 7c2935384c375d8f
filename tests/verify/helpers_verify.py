"""The checks' setups: a plain spec and a seeded setup for any spec."""

from __future__ import annotations

from conftest import random_weights

from transformer_cli import Spec, make_setup

PLAIN = Spec(N=2, H=3, m=4, d=10, r=16)


def setup_for(spec, dtype="float64", n=None, seed=0, tol=None):
    return make_setup(spec, random_weights(spec, seed), seed, dtype, n, tol)
