#!/usr/bin/env bash
# The device job around scripts/gpu/tune.sh (linear_exact, gdn_step and attn_split)
# for the `run` tool, where at most 8 files come back: tune.sh writes under /tmp/tune-out and
# this returns it as $OUT/tune-out.tgz, plus the profile and the texts to read first.
#
# Binary: .gpu/ninfer and .gpu/REV as scripts/gpu/stage.sh leaves them, or, with an argument
# DIR, DIR/ninfer.xz and DIR/REV (an xz copy carried in a folder of its own). Environment as
# for tune.sh (REPS, ROUNDS, CONTEXTS, MODELS, E2E_ROUNDS, E2E_LONG, E2E_27B,
# NINFER_CACHE_DIR).
set -u
O="${OUT:?set OUT}"
if [ -n "${1:-}" ]; then
    mkdir -p .gpu
    xz -dc "$1/ninfer.xz" > .gpu/ninfer && chmod +x .gpu/ninfer
    cp "$1/REV" .gpu/REV
fi
OUT=/tmp/tune-out timeout 570 bash scripts/gpu/tune.sh
echo "tune.sh exit $?"
tar czf "$O/tune-out.tgz" -C /tmp tune-out
for f in run1.toml table.txt phases.txt compare.txt check.txt decode-summary.txt; do
    cp "/tmp/tune-out/$f" "$O/" 2>/dev/null
done
