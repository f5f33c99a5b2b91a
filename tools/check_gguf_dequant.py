#!/usr/bin/env python3
"""Checks src/io/gguf_quant.c (and the decoders it calls, src/core/dequant.c) on every tensor of a
real GGUF file.

    PYTHONPATH=... .venv/bin/python tools/check_gguf_dequant.py [FILE.gguf]

FILE defaults to $INFER_GGUF_GEMMA, else /tmp/gguf/gemma-3-270m-q4_k_m.gguf.
The file is read with the `gguf` package's own GGUFReader (independent of
src/io/gguf.c). tools/gguf_dequant_dump.c is compiled with the project's
flags against src/io/gguf_quant.c and src/core/dequant.c, and for each tensor its bf16 and f32
outputs are compared with gguf.quants.dequantize() (f32: same bits, NaN where
it has NaN) and with that rounded to bf16 by the package's BF16 quantizer.
Prints the mismatching elements per type; exit status 1 if there are any.
"""
import collections
import os
import subprocess
import sys
import tempfile

import numpy as np
from gguf import GGUFReader
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType as T
from gguf.quants import dequantize, quantize

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT = "/tmp/gguf/gemma-3-270m-q4_k_m.gguf"
CFLAGS = ["-std=c11", "-D_GNU_SOURCE", "-O2", "-march=x86-64-v2", "-Wall", "-Wextra", "-Werror"]


def build(tmp):
    exe = os.path.join(tmp, "gguf_dequant_dump")
    cmd = [os.environ.get("CC", "cc"), *CFLAGS, "-I" + os.path.join(ROOT, "src"), "-o", exe,
           os.path.join(ROOT, "tools", "gguf_dequant_dump.c"),
           os.path.join(ROOT, "src", "io", "gguf_quant.c"),
           os.path.join(ROOT, "src", "core", "dequant.c"),
           os.path.join(ROOT, "src", "core", "error.c")]
    subprocess.run(cmd, check=True)
    return exe


def ours(exe, qtype, n, raw, mode):
    r = subprocess.run([exe, str(int(qtype)), str(n), mode], input=raw, capture_output=True)
    if r.returncode != 0:
        raise SystemExit(f"gguf_dequant_dump {qtype.name} {n} {mode}: "
                         f"{r.stderr.decode(errors='replace').strip()}")
    return np.frombuffer(r.stdout, dtype="<f4" if mode == "f32" else "<u2")


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("INFER_GGUF_GEMMA", DEFAULT)
    if not os.path.exists(path):
        raise SystemExit(f"{path}: no such file (pass a GGUF path or set INFER_GGUF_GEMMA)")
    reader = GGUFReader(path)
    stats = collections.defaultdict(lambda: [0, 0, 0, 0])  # tensors, elements, f32 bad, bf16 bad
    bad_tensors = []
    with tempfile.TemporaryDirectory() as tmp:
        exe = build(tmp)
        for t in reader.tensors:
            qtype = T(t.tensor_type)
            n = int(t.n_elements)
            block_elems, block_bytes = GGML_QUANT_SIZES[qtype]
            raw = np.ascontiguousarray(t.data).view(np.uint8).reshape(-1)
            assert raw.size == n // block_elems * block_bytes, (t.name, raw.size, n)

            want = np.asarray(dequantize(raw, qtype), dtype=np.float32).reshape(-1)
            want_bf16 = np.asarray(quantize(want, T.BF16)).reshape(-1).view(np.uint16)
            got = ours(exe, qtype, n, raw.tobytes(), "f32")
            got_bf16 = ours(exe, qtype, n, raw.tobytes(), "bf16")
            assert want.size == n and got.size == n and got_bf16.size == n, t.name

            nan = np.isnan(want)
            f32_ok = np.where(nan, np.isnan(got), got.view(np.uint32) == want.view(np.uint32))
            f32_bad = int(n - np.count_nonzero(f32_ok))
            bf16_bad = int(np.count_nonzero(got_bf16 != want_bf16))
            s = stats[qtype.name]
            s[0] += 1
            s[1] += n
            s[2] += f32_bad
            s[3] += bf16_bad
            if f32_bad or bf16_bad:
                bad_tensors.append(f"{t.name} ({qtype.name}): f32 {f32_bad}, bf16 {bf16_bad}")

    print(f"{path}")
    print(f"{'type':6} {'tensors':>8} {'elements':>12} {'f32 bad':>8} {'bf16 bad':>9}")
    for name, (k, n, fb, bb) in sorted(stats.items()):
        print(f"{name:6} {k:8d} {n:12d} {fb:8d} {bb:9d}")
    for line in bad_tensors:
        print("mismatch:", line)
    total_bad = sum(s[2] + s[3] for s in stats.values())
    print("all tensors match" if not total_bad else f"{total_bad} mismatching elements")
    return 1 if total_bad else 0


if __name__ == "__main__":
    sys.exit(main())
