#!/usr/bin/env bash
# The device job of tuning run 11 (`run` tool, at most 8 files back): unpacks the branch's
# binary and scripts/gpu/tune.sh carried in DIR (default .gpu/tune: ninfer.xz, REV,
# tune.sh), runs tune.sh with its outputs in /tmp/tune-out, and returns them as one tarball
# plus the texts to read first. Environment as for tune.sh, and TUNE_TIMEOUT (seconds for
# tune.sh, default 560).
set -u
O="${OUT:?set OUT}"
D="${1:-.gpu/tune}"
mkdir -p .gpu
xz -dc "$D/ninfer.xz" > .gpu/ninfer && chmod +x .gpu/ninfer
cp "$D/REV" .gpu/REV
[ -f "$D/tune.sh" ] && cp "$D/tune.sh" scripts/gpu/tune.sh
OUT=/tmp/tune-out timeout "${TUNE_TIMEOUT:-560}" bash scripts/gpu/tune.sh
echo "tune.sh exit $?"
tar czf "$O/tune-out.tgz" -C /tmp tune-out
for f in run1.toml table.txt phases.txt decode-summary.txt; do
    cp "/tmp/tune-out/$f" "$O/" 2>/dev/null
done
