#!/usr/bin/env bash
# Development machine (not CI): builds REV's GPU binaries in a throwaway
# worktree and copies them beside this checkout's as build-gpu/infer-base and
# build-gpu/gpu_tests-base, for an A/B in one device call against the
# change being measured (tools/dev/ab_variants.sh 'base=build-gpu/infer-base'
# 'new=build-gpu/infer'). The worktree's build is kept between calls (an
# incremental build for the next REV). Usage: bash tools/dev/base_binary.sh [REV]  (default: main)
set -euo pipefail
REV=${1:-main}
ROOT=$(git rev-parse --show-toplevel)
WT=${BASE_WORKTREE:-/tmp/infer-base-worktree}
if [ ! -d "$WT" ]; then
    git -C "$ROOT" worktree add --detach "$WT" "$REV" >/dev/null
else
    git -C "$WT" checkout -q --detach "$(git -C "$ROOT" rev-parse "$REV")"
fi
make -C "$WT" -j"$(nproc)" gpu-build >/dev/null
mkdir -p "$ROOT/build-gpu"
cp "$WT/build-gpu/infer" "$ROOT/build-gpu/infer-base"
cp "$WT/build-gpu/gpu_tests" "$ROOT/build-gpu/gpu_tests-base"
echo "build-gpu/infer-base, build-gpu/gpu_tests-base: $(git -C "$WT" log --oneline -1)"
