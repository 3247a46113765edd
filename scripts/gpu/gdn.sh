#!/usr/bin/env bash
# The GDN job on the GPU machine: flash-linear-attention 0.6.0 peer timings, then
# qualify + bench through the gdn_gpu example. Needs the gdn_gpu binary (GDN_BIN, default
# .gpu/gdn_gpu: `cargo build --release --example gdn_gpu`, target/release/examples/gdn_gpu)
# and the wheels (WHL_DIR, default .whl: flash-linear-attention, fla-core, einops).
# PEER_DIR=<dir>: take the peer's figures from an earlier run's peer.jsonl and
# peer_called.jsonl instead of running the peer (same GPU model, fla 0.6.0).
# PREFILL_ONLY=1: prefill routes only (qualify + bench), peer figures from PEER_DIR
# (default bench/gdn/run3).
# GDN_REV: the revision to stamp (default .gpu/REV).
# Writes everything under $OUT (default ./gpu-out); the table is printed last.
set -uo pipefail
source scripts/gpu/context.sh
if [ -n "${GDN_REV:-}" ]; then
    # The revision of the binary when it was built elsewhere than .gpu/REV says.
    rev="$GDN_REV"
    sed -i "1s/.*/revision: $rev/" "$OUT/context.txt"
fi
export NINFER_CACHE_DIR="$(mktemp -d)/ninfer-cache"
BIN="${GDN_BIN:-.gpu/gdn_gpu}"
WHL="${WHL_DIR:-.whl}"
T="timeout ${GDN_TIMEOUT:-300}"
if [ -n "${PREFILL_ONLY:-}" ]; then
    P="${PEER_DIR:-bench/gdn/run3}"
    $T "$BIN" --prefill-only --skip-bench --qualify-json "$OUT/qualify.jsonl" > "$OUT/qualify.txt" 2>&1
    qrc=$?
    $T "$BIN" --prefill-only --skip-qualify --rev "$rev" --peer "$P/peer.jsonl" \
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
$T "$BIN" --skip-bench --qualify-json "$OUT/qualify.jsonl" > "$OUT/qualify.txt" 2>&1
qrc=$?
echo "exit status $qrc" >> "$OUT/qualify.txt"
if [ -n "${PEER_DIR:-}" ]; then
    PEER="$PEER_DIR/peer.jsonl"
    PEER_CALLED="$PEER_DIR/peer_called.jsonl"
    echo "peer figures from $PEER_DIR (not re-run)" > "$OUT/peer.txt"
else
    echo "== peer" >&2
    SITE="$(mktemp -d)/site"
    python3 -m pip install -q --no-index --no-deps --target "$SITE" "$WHL"/*.whl > "$OUT/pip.txt" 2>&1
    PYTHONPATH="$SITE" timeout "${PEER_TIMEOUT:-150}" python3 tools/peer_fla_gdn.py --out "$OUT/peer.jsonl" \
        --out-called "$OUT/peer_called.jsonl" > "$OUT/peer.txt" 2>&1
    echo "peer exit status $?" >> "$OUT/peer.txt"
    PEER="$OUT/peer.jsonl"
    PEER_CALLED="$OUT/peer_called.jsonl"
fi
echo "== bench" >&2
$T "$BIN" --skip-qualify --rev "$rev" --peer "$PEER" --peer-called "$PEER_CALLED" \
    --json "$OUT/bench.jsonl" > "$OUT/bench.txt" 2>&1
brc=$?
echo "exit status $brc" >> "$OUT/bench.txt"
cat "$OUT/context.txt"
tail -n 8 "$OUT/peer.txt"
grep -E "FAIL" "$OUT/qualify.txt" | head -n 20
sed -n '/^qualify (seed/,$p' "$OUT/qualify.txt"
sed -n '/^copy /,$p' "$OUT/bench.txt"
[ "$qrc" = 0 ] && [ "$brc" = 0 ]
