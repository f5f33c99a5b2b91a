#!/usr/bin/env python3
"""Test vectors for src/io/gguf_quant.c from the Python `gguf` package.

    PYTHONPATH=... .venv/bin/python tools/make_gguf_quant_fixture.py [OUT_DIR]

For each supported ggml type it writes OUT_DIR/<TYPE>.bin (default
tests/fixtures/gguf_quant/), all little-endian:
    u32 n_elems, u32 n_bytes,
    n_bytes raw tensor bytes (whole blocks of the type),
    n_elems f32: gguf.quants.dequantize(raw, type),
    n_elems u16: those floats rounded to bf16 by the package's own BF16
                 quantizer (round to nearest even, NaN made quiet).
The quantised payloads are random bytes, except that every fp16 scale field
(d, and dmin/m where the type has one) is a chosen finite value: zero, -0,
subnormals, the normal extremes, negatives and random finite halves, so the
products round and the operation order shows. F32/F16/BF16 hold NaNs (quiet
and signalling, with payloads), infinities, subnormals, zeros, bf16 rounding
ties and random bit patterns. Deterministic: fixed seed.
"""
import importlib.metadata
import os
import struct
import sys

import numpy as np
from gguf.quants import dequantize, quantize
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType as T

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEED = 20240601

# fp16 bit patterns a scale field takes besides random finite ones.
SPECIAL_F16 = [0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x83FF, 0x0400, 0x8400,
               0x3C00, 0xBC00, 0x7BFF, 0xFBFF, 0x3555, 0x2E66, 0x1800]

# (type, number of blocks, byte offsets of the fp16 scale fields in a block)
QUANT_LAYOUTS = [
    (T.Q4_0, 24, [0]),
    (T.Q4_1, 24, [0, 2]),
    (T.Q5_0, 24, [0]),
    (T.Q5_1, 24, [0, 2]),
    (T.Q8_0, 24, [0]),
    (T.Q4_K, 6, [0, 2]),
    (T.Q5_K, 6, [0, 2]),
    (T.Q6_K, 6, [208]),
]


def random_finite_f16(rng, n):
    """n random fp16 bit patterns with an exponent field below 31."""
    h = rng.integers(0, 1 << 16, size=n, dtype=np.uint32)
    exp = rng.integers(0, 31, size=n, dtype=np.uint32)
    return ((h & 0x83FF) | (exp << 10)).astype(np.uint16)


def quant_blocks(rng, qtype, n_blocks, scale_offsets):
    block_elems, block_bytes = GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, size=(n_blocks, block_bytes), dtype=np.uint8)
    n_fields = n_blocks * len(scale_offsets)
    scales = random_finite_f16(rng, n_fields)
    # The specials first, so every one of them appears in every type.
    k = min(len(SPECIAL_F16), n_fields)
    scales[:k] = SPECIAL_F16[:k]
    scales = scales[rng.permutation(n_fields)].reshape(n_blocks, len(scale_offsets))
    for i, off in enumerate(scale_offsets):
        raw[:, off:off + 2] = scales[:, i].astype("<u2").view(np.uint8).reshape(n_blocks, 2)
    return raw.reshape(-1), n_blocks * block_elems


def f32_values(rng):
    special = np.array([
        0x00000000, 0x80000000, 0x7F800000, 0xFF800000,  # zeros, infinities
        0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FA00000, 0xFF812345, 0x7FFFFFFF,  # NaNs
        0x00000001, 0x80000001, 0x007FFFFF, 0x00008000, 0x00018000, 0x00800000,  # subnormals
        0x7F7FFFFF, 0xFF7FFFFF, 0x7F7F8000, 0x7F7F7FFF,  # largest (round to inf or not)
        0x3F808000, 0x3F818000, 0x3F808001, 0x3F807FFF, 0xBF808000,  # bf16 ties and near
        0x3F800000, 0x40490FDB,
    ], dtype=np.uint32)
    rand = rng.integers(0, 1 << 32, size=512 - len(special), dtype=np.uint32)
    return np.concatenate([special, rand]).astype("<u4").view(np.uint8), 512


def f16_values(rng):
    special = np.array([
        0x0000, 0x8000, 0x7C00, 0xFC00,  # zeros, infinities
        0x7E00, 0xFE00, 0x7C01, 0x7D00, 0xFE55, 0x7FFF,  # NaNs
        0x0001, 0x8001, 0x03FF, 0x0200, 0x0155, 0x0400,  # subnormals, smallest normal
        0x7BFF, 0xFBFF, 0x3C00, 0x3555,
    ], dtype=np.uint16)
    rand = rng.integers(0, 1 << 16, size=512 - len(special), dtype=np.uint16)
    return np.concatenate([special, rand]).astype("<u2").view(np.uint8), 512


def bf16_values(rng):
    special = np.array([
        0x0000, 0x8000, 0x7F80, 0xFF80,  # zeros, infinities
        0x7FC0, 0xFFC0, 0x7F81, 0x7FA0, 0xFF85, 0x7FFF,  # NaNs
        0x0001, 0x8001, 0x007F, 0x0040, 0x0080,  # subnormals, smallest normal
        0x7F7F, 0xFF7F, 0x3F80, 0x4049,
    ], dtype=np.uint16)
    rand = rng.integers(0, 1 << 16, size=512 - len(special), dtype=np.uint16)
    return np.concatenate([special, rand]).astype("<u2").view(np.uint8), 512


def write_vector(out_dir, qtype, raw, n_elems):
    y = np.asarray(dequantize(raw, qtype), dtype=np.float32).reshape(-1)
    assert y.dtype == np.float32 and y.size == n_elems, (qtype.name, y.dtype, y.size)
    bf = np.asarray(quantize(y, T.BF16)).reshape(-1).view(np.uint16)
    assert bf.size == n_elems
    path = os.path.join(out_dir, f"{qtype.name}.bin")
    with open(path, "wb") as f:
        f.write(struct.pack("<II", n_elems, raw.size))
        f.write(raw.tobytes())
        f.write(y.astype("<f4").tobytes())
        f.write(bf.astype("<u2").tobytes())
    n_nan = int(np.isnan(y).sum())
    print(f"{path}: {n_elems} elements, {raw.size} bytes, {n_nan} NaN")


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "fixtures",
                                                                 "gguf_quant")
    os.makedirs(out_dir, exist_ok=True)
    print(f"gguf {importlib.metadata.version('gguf')}, numpy {np.__version__}")
    rng = np.random.default_rng(SEED)
    for qtype, make in [(T.F32, f32_values), (T.F16, f16_values), (T.BF16, bf16_values)]:
        raw, n = make(rng)
        write_vector(out_dir, qtype, raw, n)
    for qtype, n_blocks, offsets in QUANT_LAYOUTS:
        raw, n = quant_blocks(rng, qtype, n_blocks, offsets)
        write_vector(out_dir, qtype, raw, n)


if __name__ == "__main__":
    main()
