#!/usr/bin/env python3
"""Which kernels of one .cu file compile to other machine code between two trees (development
machine, no GPU needed). A change can alter kernels it does not touch (a by-value argument struct
that grows changes every kernel taking it), and an A/B of the untouched path then measures
codegen, not the change; this says which kernels to expect that of.

Usage: python3 tools/dev/sass_diff.py BASE_TREE NEW_TREE src/backend/cuda/FILE.cu
  Compiles FILE.cu in each tree (nvcc -O3 -arch sm_90a -cubin, -Isrc), disassembles with the CUDA
  toolkit's nvdisasm (NVDISASM, else on PATH; where the install lacks it, PyPI's
  nvidia-cuda-nvdisasm wheel holds one: a development aid, no dependency) and prints, per kernel of
  the base, SAME (instruction for instruction, labels and symbol names aside) or how many
  instructions differ. Kernels are matched by name, template flags the new tree appended
  (`ELb0` before the argument list) ignored."""
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile

ANON = re.compile(r"_GLOBAL__N__[0-9a-f]{8}_\d+_\w+?_cu_[0-9a-f]{8}")


def sass(tree, src, nvdisasm, tmp):
    cubin = os.path.join(tmp, os.path.basename(tree.rstrip("/")) + ".cubin")
    subprocess.run(["nvcc", "-O3", "-std=c++17", "-gencode", "arch=compute_90a,code=sm_90a", "-Isrc", "-cubin",
                    "-o", cubin, src], cwd=tree, check=True)
    text = subprocess.run([nvdisasm, "-c", "-sf", cubin], check=True, capture_output=True, text=True).stdout
    kernels, name = {}, None
    for line in text.splitlines():
        m = re.match(r"\s*\.text\.(\S+):", line)
        if m:
            name = ANON.sub("NS", m.group(1))
            kernels[name] = []
            continue
        m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(.*?);", line)
        if name and m:
            ins = re.sub(r"\.L_x_\d+", "L", m.group(1))
            ins = re.sub(r"__internal_\d+_", "__internal_", ins)
            ins = re.sub(r"`\(_Z\w+\)", "`(F)", ins)  # a return to the kernel's own (renamed) symbol
            kernels[name].append(ANON.sub("NS", ins).strip())
    return kernels


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    base_tree, new_tree, src = sys.argv[1:]
    nvdisasm = os.environ.get("NVDISASM") or shutil.which("nvdisasm")
    if not nvdisasm:
        sys.exit("sass_diff: no nvdisasm (set NVDISASM; PyPI nvidia-cuda-nvdisasm has one)")
    with tempfile.TemporaryDirectory() as tmp:
        base, new = sass(base_tree, src, nvdisasm, tmp), sass(new_tree, src, nvdisasm, tmp)
    for name, code in sorted(base.items()):
        other = new.get(name)
        if other is None:  # a template flag appended in the new tree: ...ELb0EEEv -> ...ELb0ELb0EEEv
            stem = name.split("EEEv")[0]
            cands = [k for k in new if k.startswith(stem + "ELb0EEEv")]
            other = new[cands[0]] if cands else None
        short = re.sub(r"^_ZN2?\d*NS\d*", "", name)[:70]
        if other is None:
            print(f"MISSING  {short}")
        elif other == code:
            print(f"SAME     {short}")
        else:
            changed = sum(1 for d in difflib.ndiff(code, other) if d[:1] in "+-")
            print(f"DIFF {changed:5d} {short} ({len(code)} -> {len(other)} instructions)")


if __name__ == "__main__":
    main()
