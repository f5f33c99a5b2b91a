#!/usr/bin/env bash
# Development machine: eight rows of a trained model's logits for the GPU
# sampler benches (`INFER_BENCH_LOGITS=FILE gpu_tests bench_sampling`): the
# embedded default model (Gemma 3 270M, `make fetch-model`) run by `infer
# logits` on the CPU over a fixed English text, positions 15, 45, ..., 225
# written as raw float32 rows of 262144. Usage (repo root, after `make`):
#   bash tools/trained_logit_rows.sh OUT_FILE   (e.g. .carry/gemma270m_rows.f32; 8 MiB)
set -euo pipefail
OUTF=${1:?usage: trained_logit_rows.sh OUT_FILE}
PY=${PYTHON:-.venv/bin/python}
MODEL=$($PY scripts/fetch_model.py)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cat >"$TMP/text.txt" <<'TEXT'
The history of the printing press begins in the fifteenth century, when Johannes Gutenberg, a goldsmith from Mainz, combined several existing technologies into a system for producing books quickly and cheaply. Before his invention, books were copied by hand, usually by monks working in monasteries, and a single Bible could take years to complete. Gutenberg's press used movable metal type, an oil-based ink, and a screw press adapted from those used to make wine. Within fifty years, printing shops had spread to more than two hundred cities across Europe, and millions of books had been produced. The consequences were enormous: literacy rates rose, scientific ideas travelled faster, and religious reformers such as Martin Luther were able to spread their arguments to a wide audience. Historians often describe the printing press as one of the most important inventions of the second millennium, comparable in its effects to the internet today.
Question: Why did the printing press matter so much? Answer in two sentences.
Answer: It made books cheap and fast to produce, so knowledge could spread to many more people than before. This helped raise literacy and allowed new scientific and religious ideas to reach a wide audience quickly.
TEXT
build/infer tokenize --model "$MODEL" --text "$(cat "$TMP/text.txt")" >"$TMP/ids.json"
build/infer logits --model "$MODEL" --ids-file "$TMP/ids.json" --out "$TMP/logits.safetensors" --device cpu
$PY - "$TMP/logits.safetensors" "$OUTF" <<'PYEOF'
import sys
import numpy as np
from safetensors.numpy import load_file
x = load_file(sys.argv[1])["logits"]
rows = x[[15, 45, 75, 105, 135, 165, 195, 225]]
rows.astype(np.float32).tofile(sys.argv[2])
m = rows.max(1, keepdims=True)
print(f"{sys.argv[2]}: {rows.shape[0]} rows of {rows.shape[1]}; elements within 16 / 8 of the max:",
      (rows >= m - 16).sum(1).tolist(), (rows >= m - 8).sum(1).tolist())
PYEOF
