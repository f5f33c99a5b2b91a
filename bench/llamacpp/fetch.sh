#!/usr/bin/env bash
# Fetches llama.cpp as PyPI's llama-cpp-python sdist vendors it (the peer of
# bench/peer_decode.sh), trims what neither its CPU/CUDA tools nor its
# converter need, and packs it as .carry/llama.cpp.tar.xz (git-ignored:
# none of it is committed) for the trip to the GPU machine; with it the real
# tokenizer files of ../shared/tokenizers as .carry/tokenizers.tar.xz (the
# converter reads a checkpoint's tokenizer).
#
# Usage (development machine, needs PyPI): bench/llamacpp/fetch.sh
#   LLAMA_CPP_PYTHON_VERSION=0.3.36 by default.
set -euo pipefail
cd "$(dirname "$0")/../.."
VERSION=${LLAMA_CPP_PYTHON_VERSION:-0.3.36}
OUT=.carry/llama.cpp.tar.xz
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download -q --disable-pip-version-check --no-binary :all: --no-deps \
    "llama-cpp-python==$VERSION" -d "$tmp"
tar xzf "$tmp/llama_cpp_python-$VERSION.tar.gz" -C "$tmp"
src="$tmp/llama_cpp_python-$VERSION/vendor/llama.cpp"
[ -f "$src/CMakeLists.txt" ] || { echo "fetch: no vendor/llama.cpp in llama-cpp-python $VERSION" >&2; exit 1; }
# Docs, test vocabularies, examples, CI, and the GPU backends other than CUDA.
rm -rf "$src"/{docs,models,media,tests,benches,examples,pocs,ci,app,skills,.github,.devops}
for b in cann et hexagon hip metal musa opencl openvino sycl virtgpu vulkan webgpu zdnn zendnn; do
    rm -rf "$src/ggml/src/ggml-$b"
done
echo "llama-cpp-python $VERSION (PyPI sdist), vendor/llama.cpp, trimmed by bench/llamacpp/fetch.sh" >"$src/VENDORED_FROM"
mkdir -p .carry
tar cJf "$OUT" -C "$(dirname "$src")" llama.cpp
echo "fetch: $OUT ($(du -h "$OUT" | cut -f1)) from llama-cpp-python $VERSION"
TOK=../shared/tokenizers
if [ -d "$TOK" ]; then
    tar cJf .carry/tokenizers.tar.xz -C "$(dirname "$TOK")" tokenizers/gemma3 tokenizers/llama3 tokenizers/qwen3
    echo "fetch: .carry/tokenizers.tar.xz ($(du -h .carry/tokenizers.tar.xz | cut -f1)) from $TOK"
else
    echo "fetch: no $TOK: bench/peer_decode.sh needs the three families' tokenizer files there" >&2
fi
