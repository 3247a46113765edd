#!/usr/bin/env bash
# The GDN job on the GPU machine: flash-linear-attention 0.6.0 peer timings, then
# qualify + bench through the gdn_gpu example. Needs .gpu/gdn_gpu and .gpu/REV (build here
# with `cargo build --release --example gdn_gpu` and copy target/release/examples/gdn_gpu
# into .gpu/) and the wheels in .whl/ (flash-linear-attention, fla-core, einops).
# Writes everything under $OUT (default ./gpu-out); the table is printed last.
set -uo pipefail
source scripts/gpu/context.sh
export NINFER_CACHE_DIR="$(mktemp -d)/ninfer-cache"
if [ -n "${PREFILL_ONLY:-}" ]; then
    # Prefill routes only (qualify + bench); the peer figures come from an earlier run's
    # files named by PEER_DIR (default bench/gdn/run3).
    P="${PEER_DIR:-bench/gdn/run3}"
    .gpu/gdn_gpu --prefill-only --skip-bench --qualify-json "$OUT/qualify.jsonl" > "$OUT/qualify.txt" 2>&1
    qrc=$?
    .gpu/gdn_gpu --prefill-only --skip-qualify --rev "$rev" --peer "$P/peer.jsonl" \
        --peer-called "$P/peer_called.jsonl" --json "$OUT/bench.jsonl" > "$OUT/bench.txt" 2>&1
    brc=$?
    cat "$OUT/context.txt"
    grep -E "FAIL" "$OUT/qualify.txt" | head -n 20
    sed -n '/^qualify (seed/,$p' "$OUT/qualify.txt"
    sed -n '/^copy /,$p' "$OUT/bench.txt"
    [ "$qrc" = 0 ] && [ "$brc" = 0 ]
    exit $?
fi
echo "== qualify" >&2
.gpu/gdn_gpu --skip-bench --qualify-json "$OUT/qualify.jsonl" > "$OUT/qualify.txt" 2>&1
qrc=$?
echo "exit status $qrc" >> "$OUT/qualify.txt"
echo "== peer" >&2
SITE="$(mktemp -d)/site"
python3 -m pip install -q --no-index --no-deps --target "$SITE" .whl/*.whl > "$OUT/pip.txt" 2>&1
PYTHONPATH="$SITE" timeout "${PEER_TIMEOUT:-150}" python3 tools/peer_fla_gdn.py --out "$OUT/peer.jsonl" \
    --out-called "$OUT/peer_called.jsonl" > "$OUT/peer.txt" 2>&1
echo "peer exit status $?" >> "$OUT/peer.txt"
echo "== bench" >&2
.gpu/gdn_gpu --skip-qualify --rev "$rev" --peer "$OUT/peer.jsonl" --peer-called "$OUT/peer_called.jsonl" \
    --json "$OUT/bench.jsonl" > "$OUT/bench.txt" 2>&1
brc=$?
echo "exit status $brc" >> "$OUT/bench.txt"
cat "$OUT/context.txt"
tail -n 8 "$OUT/peer.txt"
grep -E "FAIL" "$OUT/qualify.txt" | head -n 20
sed -n '/^qualify (seed/,$p' "$OUT/qualify.txt"
sed -n '/^copy /,$p' "$OUT/bench.txt"
[ "$qrc" = 0 ] && [ "$brc" = 0 ]
