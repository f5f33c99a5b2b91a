#!/usr/bin/env bash
# Builds llama.cpp's llama-bench, llama-batched-bench and llama-server from
# .carry/llama.cpp.tar.xz (bench/llamacpp/fetch.sh) into $LLAMA_DIR/build/bin.
#
# Usage: bench/llamacpp/build.sh [cuda|cpu|source|pack-cuda]  (default cuda: CUDA on sm_90, the
#   H100/H200; source: only unpack the source, for its converter; pack-cuda: build the CUDA tools
#   here, on a machine without a GPU, and pack them as .carry/llama.cpp-cuda-bin.tar.xz, which
#   `cuda` then unpacks instead of building: ~5 minutes of the GPU machine's time saved a call)
#   LLAMA_DIR=/tmp/llama.cpp by default; JOBS=$(nproc); TARGETS (default: llama-bench
#   llama-batched-bench llama-server).
set -euo pipefail
cd "$(dirname "$0")/../.."
KIND=${1:-cuda}
LLAMA_DIR=${LLAMA_DIR:-/tmp/llama.cpp}
TAR=.carry/llama.cpp.tar.xz
BIN_TAR=.carry/llama.cpp-cuda-bin.tar.xz
# pack-cuda's tools with the converter: all that `source` and `cuda` need, without a build, if
# the tools start here. If they do not, they are removed (so that callers see no tools), the
# failure is remembered in $LLAMA_DIR, and `source` / `cuda` go on as without the tarball.
FAILED=$LLAMA_DIR/prebuilt-failed.log
if { [ "$KIND" = source ] || [ "$KIND" = cuda ]; } && [ -f "$BIN_TAR" ] && [ ! -f "$FAILED" ]; then
    if [ ! -x "$LLAMA_DIR/build/bin/llama-server" ]; then
        mkdir -p "$LLAMA_DIR"
        tar xJf "$BIN_TAR" -C "$LLAMA_DIR"
    fi
    if "$LLAMA_DIR/build/bin/llama-server" --version >"$LLAMA_DIR/prebuilt-check.log" 2>&1; then
        echo "build: llama.cpp's CUDA tools and converter from $BIN_TAR: $LLAMA_DIR"
        exit 0
    fi
    mv "$LLAMA_DIR/prebuilt-check.log" "$FAILED"
    echo "build: the tools of $BIN_TAR do not start here ($(tail -n 1 "$FAILED")); using $TAR" >&2
    rm -rf "$LLAMA_DIR/build"
fi
if [ ! -f "$LLAMA_DIR/CMakeLists.txt" ]; then
    [ -f "$TAR" ] || { echo "build: no $TAR: run bench/llamacpp/fetch.sh first (and carry it)" >&2; exit 1; }
    mkdir -p "$(dirname "$LLAMA_DIR")"
    tar xJf "$TAR" -C "$(dirname "$LLAMA_DIR")"
    [ "$(basename "$LLAMA_DIR")" = llama.cpp ] || mv "$(dirname "$LLAMA_DIR")/llama.cpp" "$LLAMA_DIR"
fi
native=(-DGGML_NATIVE=ON)
case $KIND in
source) exit 0 ;;
cuda) backend=(-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90) ;;
pack-cuda)
    # No GPU here: the driver library is resolved on the GPU machine, and the CPU code must
    # run on its CPU, so AVX2-level code instead of this machine's own.
    backend=(-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 "-DCMAKE_EXE_LINKER_FLAGS=-Wl,--allow-shlib-undefined"
        -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON "-DCMAKE_INSTALL_RPATH=\$ORIGIN")
    native=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON)
    ;;
cpu)
    backend=(-DGGML_CUDA=OFF)
    # -march=native turns llama.cpp's AMX kernels on where the CPU lists AMX; on the VMs here
    # they die of SIGILL in their first tilezero (llama-bench on any Q8_0 file), so they are off
    # unless LLAMA_AMX=1.
    if [ "${LLAMA_AMX:-0}" != 1 ]; then
        backend+=("-DCMAKE_C_FLAGS=-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
            "-DCMAKE_CXX_FLAGS=-mno-amx-tile -mno-amx-int8 -mno-amx-bf16")
    fi
    ;;
*) echo "build: unknown kind '$KIND' (cuda, cpu, source or pack-cuda)" >&2; exit 2 ;;
esac
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
t0=$SECONDS
# Nothing is fetched at configure or build time: the machine has no network.
cmake -S "$LLAMA_DIR" -B "$LLAMA_DIR/build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release "${backend[@]}" \
    "${native[@]}" -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF >"$LLAMA_DIR/configure.log" 2>&1 ||
    { tail -n 30 "$LLAMA_DIR/configure.log" >&2; exit 1; }
read -r -a targets <<<"${TARGETS:-llama-bench llama-batched-bench llama-server}"
cmake --build "$LLAMA_DIR/build" -j "${JOBS:-$(nproc)}" --target "${targets[@]}" \
    >"$LLAMA_DIR/build.log" 2>&1 || { grep -m 20 -iE "error" "$LLAMA_DIR/build.log" >&2; tail -n 20 "$LLAMA_DIR/build.log" >&2; exit 1; }
echo "build: llama.cpp ($(cat "$LLAMA_DIR/VENDORED_FROM" 2>/dev/null | cut -d, -f1), $KIND) in $((SECONDS - t0)) s: $LLAMA_DIR/build/bin"
if [ "$KIND" = pack-cuda ]; then
    mkdir -p .carry
    tar cJf "$BIN_TAR" -C "$LLAMA_DIR" build/bin convert_hf_to_gguf.py conversion gguf-py VENDORED_FROM
    echo "build: $BIN_TAR ($(du -h "$BIN_TAR" | cut -f1)): carry it instead of $TAR"
fi
