#!/usr/bin/env bash
# One report from several folders of `infer bench-serve --report` (a model's parts that
# serve_gpu_all.sh ran on separate GPUs: serve-MODEL-infer, serve-MODEL-peer): their runs'
# results.jsonl lines in the order of the folders, their samples/ and logs side by side, then the
# report and plots redrawn from them (a log both folders have is kept as FOLDER-NAME). Fails before
# writing anything if a folder has no results or two folders hold the same run's samples.
#
# Usage: bash bench/merge_reports.sh OUT_DIR PART_DIR [PART_DIR ...]    INFER (default build/infer)
set -euo pipefail
OUT=${1:?usage: merge_reports.sh OUT_DIR PART_DIR [PART_DIR ...]}
shift
[ $# -ge 1 ] || { echo "usage: merge_reports.sh OUT_DIR PART_DIR [PART_DIR ...]" >&2; exit 2; }
INFER=${INFER:-build/infer}
[ ! -e "$OUT/results.jsonl" ] || { echo "merge_reports: $OUT already holds a report" >&2; exit 1; }
seen=$(mktemp)
trap 'rm -f "$seen"' EXIT
for d in "$@"; do
    [ -s "$d/results.jsonl" ] || { echo "merge_reports: no results in $d" >&2; exit 1; }
    [ ! -d "$d/samples" ] || ls "$d/samples" >>"$seen"
done
dup=$(sort "$seen" | uniq -d)
[ -z "$dup" ] || { echo "merge_reports: more than one folder has samples/$(head -n 1 <<<"$dup")" >&2; exit 1; }
mkdir -p "$OUT/samples"
for d in "$@"; do
    cat "$d/results.jsonl" >>"$OUT/results.jsonl"
    [ -d "$d/samples" ] && cp "$d"/samples/* "$OUT/samples/"
    for f in "$d"/*.log "$d"/*.txt; do
        [ -f "$f" ] || continue
        case $(basename "$f") in
        machine.txt) { echo "# $(basename "$d")"; cat "$f"; } >>"$OUT/machine.txt" ;;
        *) if [ -e "$OUT/$(basename "$f")" ]; then cp "$f" "$OUT/$(basename "$d")-$(basename "$f")"; else cp "$f" "$OUT/"; fi ;;
        esac
    done
done
"$INFER" bench-serve --redraw --report "$OUT"
