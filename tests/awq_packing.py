"""AutoAWQ's gemm packing of 4-bit codes, for the test folders written with PyTorch (formats/quantized_files.py)
and with NumPy alone (hostile/packed_folders.py): one copy of the order both must match."""

from __future__ import annotations

import numpy as np

AWQ_ORDER = (0, 2, 4, 6, 1, 3, 5, 7)  # AutoAWQ's pack order: word position p holds output AWQ_ORDER[p]


def awq_pack(values: np.ndarray) -> np.ndarray:
    """4-bit codes (rows, cols) -> (rows, cols // 8) int32 words, eight outputs a word in AWQ_ORDER."""
    rows, cols = values.shape
    words = np.zeros((rows, cols // 8), dtype=np.uint64)
    for col in range(cols // 8):
        for p in range(8):
            words[:, col] |= values[:, col * 8 + AWQ_ORDER[p]].astype(np.uint64) << np.uint64(4 * p)
    return words.astype(np.uint32).view(np.int32)
