#!/usr/bin/env bash
# bench/gdn run 20 (device job, carry [".gpu/whl", ".gpu/r19"]; ~2.5 min): PARTS (default
# "peer ncu"):
#   peer  flash-linear-attention 0.6.0 doing the whole prefill route's work (causal conv +
#         SiLU over the mixed q/k/v, gates and beta from the raw projections, L2 norm, the
#         chunked rule) beside its chunk alone, in one process (tools/peer_fla_gdn_layer.py;
#         wheels in .gpu/whl: flash-linear-attention, fla-core, einops)
#   ncu   ncu on the first launch (T = 512, 27B layer, f32 state) of r19's three f16-route
#         stages: the `_qkvh` prologue, the f16 `wu`, the one-buffer v32 scan
# Logs and records in $OUT; a summary last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-280}
source scripts/gpu/job-lib.sh
PARTS=${PARTS:-peer ncu}
for p in $PARTS; do
  case $p in
    peer)
      SITE="$(mktemp -d)/site"
      python3 -m pip install -q --no-index --no-deps --target "$SITE" .gpu/whl/*.whl > $OUT/pip.txt 2>&1
      { echo "revision: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"; date -u +%FT%TZ;
        nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $OUT/peer_context.txt
      PYTHONPATH="$SITE:tools" timeout $(left 150) python3 tools/peer_fla_gdn_layer.py --out $OUT/peer_layer.jsonl > $OUT/peer_layer.txt 2>&1
      echo "peer exit status $?" >> $OUT/peer_layer.txt
      t "peer"; cat $OUT/peer_context.txt; tail -6 $OUT/peer_layer.txt ;;
    ncu)
      N=r19 LIMIT=$(left 130) KERNELS="gdn_prep_warp.*_qkvh gdn_chunk_wu_f16_d128 gdn_chunk_scan_f16_d128_v32_w8_b1" \
        bash bench/gdn/run16/job_ncu.sh > $OUT/ncu.txt 2>&1
      cp /tmp/r19-out/ncu_*.txt $OUT/ 2>/dev/null
      t "ncu"; grep -E "^==|Duration|Executed Ipc A|Achieved Occupancy|Registers Per|Executed Instructions  |DRAM Throughput" $OUT/ncu.txt | sed 's/  */ /g' | head -30 ;;
  esac
done
