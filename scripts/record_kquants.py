"""Record llama.cpp's own Q4_K, Q5_K and Q6_K bytes for tests/formats/test_kquants.py (tests/data/kquants.npz).

The rows (seeded, with the cases a quantiser gets wrong: zeros, a constant, one outlier, all negative, values near
float32's smallest, a spread of scales within a super-block) go through ggml_quantize_chunk, the function
llama-quantize calls for each tensor, without an importance matrix. It is loaded from the libggml-base.so that
llama-cpp-python ships (a reference for the test data, never a dependency of tfm):

    python -m venv /tmp/lcpp && /tmp/lcpp/bin/pip install llama-cpp-python==0.3.36 numpy
    /tmp/lcpp/bin/python scripts/record_kquants.py /tmp/lcpp/lib/python3.*/site-packages/llama_cpp/lib/libggml-base.so
"""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).parents[1] / "tests" / "data" / "kquants.npz"
TYPES = {"Q4_K": (12, 144), "Q5_K": (13, 176), "Q6_K": (14, 210)}  # ggml_type and bytes per 256 values
VERSION = "llama-cpp-python 0.3.36 (llama.cpp's ggml 0.25.3)"


def rows() -> np.ndarray:
    """48 rows of 512 values (two super-blocks each)."""
    rng = np.random.default_rng(20261204)
    x = rng.standard_normal((48, 512)).astype(np.float32)
    x[1] = 0.0  # all zero
    x[2] = 0.75  # a constant
    x[3, 17] = 40.0  # one outlier
    x[4] = -np.abs(x[4])  # all negative
    x[5] = np.abs(x[5])  # all positive
    x[6] *= np.float32(1e-30)  # near float32's smallest normal numbers
    x[7, :256] *= np.float32(1e-8)  # one super-block tiny, the other not
    x[8] *= np.repeat(np.geomspace(1e-3, 10, 32), 16).astype(np.float32)  # every 16 values a new scale
    x[9] = np.round(x[9] * 4) / 4  # ties: values on the grid
    x[10, ::2] = 0.0
    x[11] = rng.uniform(-1, 1, 512).astype(np.float32) * 0.02  # a trained model's scale
    x[12:24] *= np.float32(0.02)
    x[24:36] = rng.laplace(size=(12, 512)).astype(np.float32)
    return x


def main(library: str) -> None:
    ggml = ctypes.CDLL(library)
    ggml.ggml_quantize_chunk.restype = ctypes.c_size_t
    ggml.ggml_quantize_chunk.argtypes = [
        ctypes.c_int,
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_int64,
        ctypes.c_int64,
        ctypes.c_int64,
        ctypes.c_void_p,
    ]
    x = np.ascontiguousarray(rows())
    saved = {"rows": x, "source": np.array(f"ggml_quantize_chunk of {VERSION}, no importance matrix")}
    for name, (kind, size) in TYPES.items():
        out = np.zeros((x.shape[0], x.shape[1] // 256 * size), dtype=np.uint8)
        written = ggml.ggml_quantize_chunk(kind, x.ctypes.data, out.ctypes.data, 0, x.shape[0], x.shape[1], None)
        assert written == out.nbytes, (written, out.nbytes)
        saved[name] = out
    np.savez_compressed(OUT, **saved)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main(sys.argv[1])
