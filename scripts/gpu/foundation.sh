#!/usr/bin/env bash
# The foundation's GPU job: device properties, every kernel built for this GPU (cold, then
# warm), `ninfer qualify`, and qualify again under compute-sanitizer's memcheck.
#
# Run on the GPU machine from the repository root, with the release binary at .gpu/ninfer
# and the revision it was built from in .gpu/REV (scripts/gpu/stage.sh prepares both).
# Writes its logs under $OUT (default ./gpu-out).
set -uo pipefail
source scripts/gpu/context.sh
B=.gpu/ninfer
export NINFER_CACHE_DIR="$(mktemp -d)/ninfer-cache"

echo '$ ninfer devices' | tee "$OUT/devices.txt"
$B devices 2>&1 | tee -a "$OUT/devices.txt"
$B devices --json > "$OUT/devices.json"

echo '$ ninfer kernels build --all   (cold cache)' | tee "$OUT/kernels-build.txt"
$B kernels build --all 2>&1 | tee -a "$OUT/kernels-build.txt"
echo '$ ninfer kernels build --all   (warm cache)' | tee -a "$OUT/kernels-build.txt"
$B kernels build --all 2>&1 | tee -a "$OUT/kernels-build.txt"

echo '$ ninfer qualify' | tee "$OUT/qualify.txt"
$B qualify --json "$OUT/qualify.jsonl" 2>&1 | tee -a "$OUT/qualify.txt"
qrc=${PIPESTATUS[0]}
echo "exit status $qrc" | tee -a "$OUT/qualify.txt"

echo '$ compute-sanitizer --tool memcheck ninfer qualify' > "$OUT/memcheck.txt"
if command -v compute-sanitizer >/dev/null; then
    compute-sanitizer --tool memcheck --error-exitcode 3 $B qualify >> "$OUT/memcheck.txt" 2>&1
    echo "exit status $?" >> "$OUT/memcheck.txt"
else
    echo "compute-sanitizer not found" >> "$OUT/memcheck.txt"
fi
tail -n 3 "$OUT/memcheck.txt"
grep -E "checks:" "$OUT/qualify.txt"
exit "$qrc"
