#!/usr/bin/env python3
"""The layering of src/ (docs/architecture.md): which folders each folder's files may include.

Every `#include "folder/..."` of a file under src/ must name its own folder or one the table below
allows; a CUDA subfolder (backend/cuda, parallel/cuda) is a layer of its own above its parent. The
table is the design: a new dependency is a design change, made here and in docs/architecture.md
together. Run by `make test` (no build needed).

Usage: python3 tools/check_layers.py [SRC_DIR]   exits 1 naming each include that breaks the table."""
import os
import re
import sys

LIB = ["core", "io", "tokenizer", "grammar", "template", "chat", "sampling", "kvcache", "spec", "backend",
       "backend/cuda", "parallel", "parallel/cuda", "model", "sched", "runner", "engine"]

ALLOWED = {
    "core": [],
    "io": ["core"],
    "tokenizer": ["core", "io"],
    "grammar": ["core", "tokenizer"],  # token masks for constrained decoding: bytes in, bits out
    "template": ["core"],
    "chat": ["core", "io", "template"],
    "sampling": ["core"],
    "kvcache": ["core"],
    "spec": ["core"],  # speculative proposals: token ids in, proposed token ids out
    "backend": ["core", "sampling"],
    "backend/cuda": ["core", "sampling", "backend"],
    "parallel": ["core", "io", "backend"],
    "parallel/cuda": ["core", "io", "backend", "backend/cuda", "parallel"],
    "model": ["core", "io", "backend", "parallel"],
    "sched": ["core", "kvcache", "sampling"],
    "runner": ["core", "sampling", "kvcache", "sched", "backend", "parallel", "model"],
    "engine": [f for f in LIB if f != "engine" and f != "backend/cuda"],
    # apps on libinfer
    "server": [f for f in LIB if "/cuda" not in f],
    "loadgen": ["core"],  # a load generator for any OpenAI-compatible server: no engine
    "cli": LIB + ["server", "loadgen"],
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(rel):
    """The layer of a path relative to src/ (a file's, or an include's)."""
    parts = rel.split("/")
    if len(parts) > 2 and parts[1] == "cuda":
        return parts[0] + "/cuda"
    return parts[0]


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "src"
    bad, files = [], 0
    for root, _, names in os.walk(src):
        for name in sorted(names):
            if not name.endswith((".c", ".h", ".cu", ".cuh")):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, src)
            layer = layer_of(rel)
            if layer not in ALLOWED:
                bad.append(f"{path}: folder '{layer}' is not in the layer table (tools/check_layers.py)")
                continue
            files += 1
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for m in INCLUDE.finditer(text):
                inc = m.group(1)
                if "/" not in inc:
                    continue  # a header next to the file
                target = layer_of(inc)
                if target != layer and target not in ALLOWED[layer]:
                    line = text.count("\n", 0, m.start()) + 1
                    bad.append(f"{path}:{line}: {layer} may not include {inc} ({target})")
    for b in bad:
        print(b)
    print(f"check_layers: {files} files, {len(bad)} includes against the layering")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
