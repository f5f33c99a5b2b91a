#!/usr/bin/env bash
# Device-side (not CI): tools/dev/engine.sh (kernel tests, graphs against
# eager on the 64-request test, greedy and seeded), then decode speed none vs
# decode. Usage: bash tools/dev/graphs.sh CONFIGS_DIR model ...
set -u
C=${1:?configs}; shift
bash tools/dev/engine.sh "$C" "$@"
for n in "$@"; do timeout 400 python3 tools/decode_speed.py build-gpu/infer /tmp/m/$n; done
