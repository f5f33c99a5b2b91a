#!/usr/bin/env bash
# Device-side (not CI): every graph mode against eager on the 64-request and
# the 8->5->3 transition workloads (tools/engine_check.py), then the
# mixed-step benchmark (tools/mixed_steps.py). Usage:
# bash tools/dev/modes.sh CONFIGS_DIR model ...   (MODES=decode,piecewise,full to choose; SKIP_MIXED=1)
set -u
C=${1:?configs}; shift
M=${MODES:-decode,piecewise,full}
mkdir -p /tmp/m
for n in "$@"; do
    [ -f /tmp/m/$n/model.safetensors ] || build-gpu/infer mkmodel --config "$C/$n/config.json" --out /tmp/m/$n --seed 0 >/dev/null
    u=0.004; case $n in gemma*) u=0.0006;; esac
    timeout 400 python3 tools/engine_check.py build-gpu/infer /tmp/m/$n --util $u --graph $M
    timeout 200 python3 tools/engine_check.py build-gpu/infer /tmp/m/$n --transitions --graph $M | grep -E "\]:|FAIL|mismatch"
done
[ -n "${SKIP_MIXED:-}" ] || for n in "$@"; do timeout 300 python3 tools/mixed_steps.py build-gpu/infer /tmp/m/$n; done
