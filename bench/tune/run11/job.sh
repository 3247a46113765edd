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
# FORCE_SPLIT_CHECK=1: decode with run 1's profile edited to name a non-default split
# (s256) for SmolLM2's attention at capacity 512, the cache growing from 256 to 512 during
# the timed decode: the engine must take the split and recapture the step at the new
# capacity (the kernel loaded beforehand by tune::attn::preload).
if [ "${FORCE_SPLIT_CHECK:-0}" = 1 ] && [ -f run1.toml ]; then
    T=/tmp/tune-out
    sed '/key = "attn_split\/f32\/h9\/kv3\/t1\/n512\/k64"/{n;s/_s64"/_s256"/}' \
        "$T/run1.toml" > "$T/forced.toml"
    grep -A1 'attn_split/f32/h9/kv3/t1/n512' "$T/forced.toml" | tee "$T/forced.txt"
    for routes in "--profile $T/forced.toml" "--no-profile"; do
        echo "\$ bench model ... --decode-context 200 --decode-tokens 128 $routes" >> "$T/forced.txt"
        # shellcheck disable=SC2086
        timeout 15 .gpu/ninfer bench model --synthetic smollm2-135m --weights q4_g64 \
            --device cuda --lanes 1 --prompt 16 --decode-context 200 --decode-tokens 128 \
            $routes >> "$T/forced.txt" 2>&1
        echo "exit $?" >> "$T/forced.txt"
    done
    grep -E "^(\\$|routes|decode +1|exit)|panic|error" "$T/forced.txt"
fi
tar czf "$O/tune-out.tgz" -C /tmp tune-out
for f in run1.toml table.txt phases.txt decode-summary.txt; do
    cp "$f" "$O/" 2>/dev/null
done
