#!/usr/bin/env bash
# The GDN job on the GPU machine: flash-linear-attention 0.6.0 peer timings, then
# qualify + bench through the gdn_gpu example. Needs .gpu/gdn_gpu and .gpu/REV (build here
# with `cargo build --release --example gdn_gpu` and copy target/release/examples/gdn_gpu
# into .gpu/) and the wheels in .whl/ (flash-linear-attention, fla-core, einops).
# Writes everything under $OUT (default ./gpu-out); the table is printed last.
set -uo pipefail
OUT="${OUT:-gpu-out}"
mkdir -p "$OUT"
export NINFER_CACHE_DIR="$(mktemp -d)/ninfer-cache"
rev="$(cat .gpu/REV 2>/dev/null || echo unknown)"
{
    echo "revision: $rev"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
} > "$OUT/context.txt"
SITE="$(mktemp -d)/site"
python3 -m pip install -q --no-index --no-deps --target "$SITE" .whl/*.whl > "$OUT/pip.txt" 2>&1
PYTHONPATH="$SITE" timeout 200 python3 tools/peer_fla_gdn.py --out "$OUT/peer.jsonl" \
    --out-called "$OUT/peer_called.jsonl" > "$OUT/peer.txt" 2>&1
echo "peer exit status $?" >> "$OUT/peer.txt"
.gpu/gdn_gpu --rev "$rev" --peer "$OUT/peer.jsonl" --peer-called "$OUT/peer_called.jsonl" \
    --json "$OUT/bench.jsonl" --qualify-json "$OUT/qualify.jsonl" > "$OUT/gdn.txt" 2>&1
rc=$?
echo "exit status $rc" >> "$OUT/gdn.txt"
cat "$OUT/context.txt"
tail -n 4 "$OUT/peer.txt"
grep -E "FAIL" "$OUT/gdn.txt" | head -n 20
sed -n '/^qualify (seed/,$p' "$OUT/gdn.txt"
exit "$rc"
