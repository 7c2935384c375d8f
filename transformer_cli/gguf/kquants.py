"""llama.cpp's Q4_K, Q5_K and Q6_K quantisers in NumPy: the bytes `llama-quantize` writes for a tensor without an
importance matrix (ggml-quants.c's quantize_row_q4_K_ref, _q5_K_ref and _q6_K_ref), for `tfm convert --type
q4_k_m` (its mix gives some tensors Q5_K: a mixture of 8 experts' keys). The gguf package dequantises these types
but does not quantise them.

Each step is llama.cpp's float32 arithmetic in its order: sums accumulate element by element (np.add.accumulate,
not NumPy's pairwise sum), products group left to right as C's `w*l*x`, and nearest_int rounds half to even (np.rint),
so the bytes are llama-quantize's own (tests/formats/test_kquants.py holds them to a file llama-quantize wrote). The
blocks are worked on all at once: a row of 256 values is one super-block, of 8 sub-blocks of 32 (Q4_K: a 6-bit
scale and min each, 4-bit values; Q5_K: 5-bit) or 16 of 16 (Q6_K: an 8-bit scale each, 6-bit values).
"""

from __future__ import annotations

import numpy as np

QK_K = 256
GROUP_MAX_EPS = np.float32(1e-15)
BLOCKS_AT_ONCE = 1 << 12  # super-blocks quantised at once (each step's arrays: a few MiB)
f32 = np.float32


def _sum(values: np.ndarray) -> np.ndarray:
    """The sum over the last axis as C's loop adds it: one element after another, in float32."""
    return np.add.accumulate(values, axis=-1, dtype=np.float32)[..., -1]


def _half(values: np.ndarray) -> np.ndarray:
    """GGML_FP32_TO_FP16 then back: float32 through float16, rounded to nearest even."""
    return np.asarray(values, dtype=np.float32).astype(np.float16).astype(np.float32)


def _qkx2(x: np.ndarray, weights: np.ndarray, nmax: int, rmin: float, rdelta: float, nstep: int):
    """make_qkx2_quants over sub-blocks x (m, n): the levels (0 .. nmax), each sub-block's scale and its min
    (as a positive offset: the_min)."""
    low = np.minimum(x.min(axis=-1), f32(0))
    high = x.max(axis=-1)
    sum_w, sum_x = _sum(weights), _sum(weights * x)
    flat = high == low  # (levels 0, scale 0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        iscale = f32(nmax) / (high - low)
        scale = f32(1) / iscale
        L = np.clip(np.rint(iscale[:, None] * (x - low[:, None])), 0, nmax)
        diff = scale[:, None] * L + low[:, None] - x
        best = _sum(weights * (diff * diff))
        for step in range(nstep + 1):
            iscale = (f32(rmin) + f32(rdelta) * f32(step) + f32(nmax)) / (high - low)
            levels = np.clip(np.rint(iscale[:, None] * (x - low[:, None])), 0, nmax)
            wl = weights * levels
            sum_l, sum_l2, sum_xl = _sum(wl), _sum(wl * levels), _sum(wl * x)
            D = sum_w * sum_l2 - sum_l * sum_l
            this_scale = (sum_w * sum_xl - sum_x * sum_l) / D
            this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D
            positive = this_min > 0
            this_min = np.where(positive, f32(0), this_min)
            this_scale = np.where(positive, sum_xl / sum_l2, this_scale)
            diff = this_scale[:, None] * levels + this_min[:, None] - x
            error = _sum(weights * (diff * diff))
            better = (D > 0) & (error < best) & ~flat
            L = np.where(better[:, None], levels, L)
            best = np.where(better, error, best)
            scale = np.where(better, this_scale, scale)
            low = np.where(better, this_min, low)
    L = np.where(flat[:, None], 0, L)
    scale = np.where(flat, f32(0), scale)
    return L.astype(np.uint8), scale.astype(np.float32), (-low).astype(np.float32)


def _scaled(x: np.ndarray, nmax: int, rmin: float, nstep: int) -> tuple[np.ndarray, np.ndarray]:
    """Q4_K's and Q5_K's common part over super-blocks x (b, 256): each sub-block of 32's levels (0 .. nmax) from
    make_qkx2_quants, its 6-bit scale and min packed in 12 bytes, and d, dmin (float16): (levels (b, 8, 32), the
    block's first 16 bytes: d, dmin, scales)."""
    b = x.shape[0]
    sub = x.reshape(b * 8, 32)
    av_x = np.sqrt(_sum(sub * sub) / f32(32))
    L, scales, mins = _qkx2(sub, av_x[:, None] + np.abs(sub), nmax, rmin, 0.1, nstep)
    L, scales, mins = L.reshape(b, 8, 32), scales.reshape(b, 8), mins.reshape(b, 8)
    max_scale = np.maximum(scales.max(axis=1), f32(0))
    max_min = np.maximum(mins.max(axis=1), f32(0))
    with np.errstate(divide="ignore"):
        inv_scale = np.where(max_scale > 0, f32(63) / max_scale, f32(0))
        inv_min = np.where(max_min > 0, f32(63) / max_min, f32(0))
    # uint8_t ls = nearest_int(...) then MIN(63, ls): C's conversion to uint8 wraps before the MIN
    ls = np.minimum(np.rint(inv_scale[:, None] * scales).astype(np.int64) & 0xFF, 63).astype(np.uint8)
    lm = np.minimum(np.rint(inv_min[:, None] * mins).astype(np.int64) & 0xFF, 63).astype(np.uint8)
    packed = np.zeros((b, 12), dtype=np.uint8)
    packed[:, 0:4], packed[:, 4:8] = ls[:, :4], lm[:, :4]
    packed[:, 8:12] = (ls[:, 4:] & 0xF) | ((lm[:, 4:] & 0xF) << 4)
    packed[:, 0:4] |= (ls[:, 4:] >> 4) << 6
    packed[:, 4:8] |= (lm[:, 4:] >> 4) << 6
    d, dmin = _half(max_scale / f32(63)), _half(max_min / f32(63))
    # the scales and mins as get_scale_min_k4 reads them back: ls and lm themselves (6 bits each)
    sub_d = d[:, None] * ls.astype(np.float32)
    sub_m = dmin[:, None] * lm.astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        again = np.clip(np.rint((x.reshape(b, 8, 32) + sub_m[..., None]) / sub_d[..., None]), 0, nmax)
    L = np.where(sub_d[..., None] != 0, again, L).astype(np.uint8)
    halves = np.stack([d, dmin], axis=1).astype(np.float16).view(np.uint8)
    return L, np.concatenate([halves, packed], axis=1)


def _q4_k(x: np.ndarray) -> np.ndarray:
    """Super-blocks x (b, 256) as Q4_K blocks (b, 144): d, dmin (float16), 12 bytes of 6-bit scales and mins,
    128 bytes of 4-bit values."""
    L, head = _scaled(x, 15, -1.0, 20)
    values = L.reshape(x.shape[0], 4, 2, 32)  # qs: byte l of each 64 holds value l (low nibble), l + 32 (high)
    qs = (values[:, :, 0] | (values[:, :, 1] << 4)).reshape(x.shape[0], 128)
    return np.concatenate([head, qs], axis=1)


def _q5_k(x: np.ndarray) -> np.ndarray:
    """Super-blocks x (b, 256) as Q5_K blocks (b, 176): Q4_K's head, then 32 bytes of high bits (value l and l +
    32 of the g-th 64 in bits 2g and 2g + 1 of byte l), then 128 bytes of the low 4 bits as Q4_K packs them."""
    b = x.shape[0]
    L, head = _scaled(x, 31, -0.5, 15)
    values = L.reshape(b, 4, 2, 32)
    high = (values >> 4).astype(np.uint8)  # (b, 4, 2, 32): bit 4 of each value
    qh = np.zeros((b, 32), dtype=np.uint8)
    for g in range(4):
        qh |= (high[:, g, 0] << (2 * g)) | (high[:, g, 1] << (2 * g + 1))
    low = values & 0xF
    qs = (low[:, :, 0] | (low[:, :, 1] << 4)).reshape(b, 128)
    return np.concatenate([head, qh, qs], axis=1)


def _qx(x: np.ndarray, nmax: int) -> tuple[np.ndarray, np.ndarray]:
    """make_qx_quants(n, nmax, x, L, rmse_type=1, NULL) over sub-blocks x (m, n): the levels (0 .. 2 nmax - 1)
    and each sub-block's scale."""
    m = x.shape[0]
    top = x[np.arange(m), np.argmax(np.abs(x), axis=-1)]  # (the first of the largest |x|, as C's strict >)
    zero = np.abs(top) < GROUP_MAX_EPS
    weights = x * x

    def tried(iscale: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        levels = np.clip(np.rint(iscale[:, None] * x), -nmax, nmax - 1)
        return levels, _sum(weights * x * levels), _sum(weights * levels * levels)

    with np.errstate(divide="ignore", invalid="ignore"):
        levels, sumlx, suml2 = tried(f32(-nmax) / top)
        L = levels + nmax
        scale = np.where(suml2 != 0, sumlx / suml2, f32(0))
        best = scale * sumlx
        for step in (*range(-9, 0), *range(1, 10)):
            levels, sumlx, suml2 = tried(-(f32(nmax) + f32(0.1) * f32(step)) / top)
            better = (suml2 > 0) & (sumlx * sumlx > best * suml2)
            L = np.where(better[:, None], levels + nmax, L)
            scale = np.where(better, sumlx / suml2, scale)
            best = np.where(better, scale * sumlx, best)
    L = np.where(zero[:, None], 0, L)
    return L.astype(np.int8), np.where(zero, f32(0), scale).astype(np.float32)


def _q6_k(x: np.ndarray) -> np.ndarray:
    """Super-blocks x (b, 256) as Q6_K blocks (b, 210): 128 bytes of low 4 bits, 64 of high 2 bits, 16 int8 scales
    and d (float16)."""
    b = x.shape[0]
    L, scales = _qx(x.reshape(b * 16, 16), 32)
    L, scales = L.reshape(b, 16, 16), scales.reshape(b, 16)
    first = np.argmax(np.abs(scales), axis=1)  # (the first of the largest |scale|)
    max_scale = scales[np.arange(b), first]
    empty = np.abs(max_scale) < GROUP_MAX_EPS
    with np.errstate(divide="ignore", invalid="ignore"):
        iscale = f32(-128) / max_scale
        d = _half(np.where(empty, f32(0), f32(1) / iscale))
        q_scales = np.where(empty[:, None], 0, np.minimum(127, np.rint(iscale[:, None] * scales)))
        q_scales = q_scales.astype(np.int8)
        sub_d = d[:, None] * q_scales.astype(np.float32)
        again = np.clip(np.rint(x.reshape(b, 16, 16) / sub_d[..., None]), -32, 31) + 32
    L = np.where(sub_d[..., None] != 0, again, L)
    L = np.where(empty[:, None, None], 0, L).astype(np.uint8).reshape(b, 2, 4, 32)  # (halves of 128: 4 of 32)
    ql = np.concatenate([L[:, :, 0] & 0xF | (L[:, :, 2] & 0xF) << 4, L[:, :, 1] & 0xF | (L[:, :, 3] & 0xF) << 4], 2)
    qh = L[:, :, 0] >> 4 | (L[:, :, 1] >> 4) << 2 | (L[:, :, 2] >> 4) << 4 | (L[:, :, 3] >> 4) << 6
    scales_bytes = np.where(empty[:, None], 0, q_scales).astype(np.int8).view(np.uint8)
    d_bytes = d.astype(np.float16).reshape(b, 1).view(np.uint8)
    return np.concatenate([ql.reshape(b, 128), qh.reshape(b, 64), scales_bytes, d_bytes], axis=1)


QUANTISERS = {"Q4_K": (_q4_k, 144), "Q5_K": (_q5_k, 176), "Q6_K": (_q6_k, 210)}


def quantize(data: np.ndarray, kind: str) -> np.ndarray:
    """`data` (..., k), k a multiple of 256, as GGML type `kind` (Q4_K, Q5_K or Q6_K): uint8 (..., k // 256 * size), the
    bytes llama-quantize writes (the gguf package's quantize's shape convention)."""
    quantise, size = QUANTISERS[kind]
    rows = np.ascontiguousarray(data, dtype=np.float32)
    if rows.shape[-1] % QK_K:
        raise ValueError(f"{kind}: rows of {rows.shape[-1]} are no whole blocks of {QK_K}")
    blocks = rows.reshape(-1, QK_K)
    out = np.empty((blocks.shape[0], size), dtype=np.uint8)
    for start in range(0, blocks.shape[0], BLOCKS_AT_ONCE):
        out[start : start + BLOCKS_AT_ONCE] = quantise(blocks[start : start + BLOCKS_AT_ONCE])
    return out.reshape(*rows.shape[:-1], rows.shape[-1] // QK_K * size)


__all__ = ["QUANTISERS", "quantize"]
