"""Shared setup for the parity tests: where the infer binary and the real
tokenizer files are, and a helper to run infer on JSON-lines files."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from default_model import default_model_path  # noqa: E402
SHARED = os.environ.get("INFER_SHARED", os.path.join(os.path.dirname(ROOT), "shared"))
INFER = os.environ.get("INFER", os.path.join(ROOT, "build", "infer"))
FAMILIES = ["llama3", "qwen3", "gemma3"]


def tokenizer_dir(family):
    d = os.path.join(SHARED, "tokenizers", family)
    if not os.path.exists(os.path.join(d, "tokenizer.json")):
        pytest.skip(f"{d}/tokenizer.json not found: the parity tests need ../shared/tokenizers "
                    "(set INFER_SHARED to the folder that holds tokenizers/)")
    return d


@pytest.fixture(scope="module")
def gguf_path():
    """The embedded default model (tests/default_model.py)."""
    return default_model_path()


def run_lines(args, lines, tmp_path, name):
    """Writes lines (JSON values) to a file, runs infer ARGS --file FILE,
    returns the parsed output lines."""
    path = tmp_path / name
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    proc = subprocess.run([INFER, *args, "--file", str(path)], capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    # split on "\n" only: JSON output may hold U+2028 and friends unescaped
    out = proc.stdout.decode("utf-8").split("\n")
    if out and out[-1] == "":
        out.pop()
    assert len(out) == len(lines), f"{len(out)} output lines for {len(lines)} inputs"
    return [json.loads(x) for x in out]
