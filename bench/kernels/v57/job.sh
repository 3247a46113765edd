#!/usr/bin/env bash
# v57 job (v56's staging: carry [".gpu"] after bench/kernels/v56/stage.sh): the ring kernel
# (gemv_mma_ring.cu) with bf16-rounded activations on the 27B's shapes, which the shape
# rule (MMA_RING_MAX_WEIGHTS) hands to the register kernel. NINFER_MMA_RING=all runs the
# ring tile as named everywhere:
#   kernels  the mma records (T = 8 rows: ring, exact and bf16) and the step's launches
#   27b      synthetic 27B q4_g64 --activations bf16 at 8 lanes, ring everywhere
set -u
T0=$(date +%s); LIMIT=${LIMIT:-500}
source scripts/gpu/job-lib.sh
job_init v56 "(bf16-rounded mma tiles; NINFER_MMA_RING=all)"
P=tuning/nvidia-h200.toml
K="linear_exact_mma q4_g64 x20|linear_exact_mma step q4_g64 x20"
NINFER_MMA_RING=all timeout $(left 150) $B bench kernels --filter "$K" --json $O/kernels_ring.jsonl > $O/kernels_ring.txt 2>&1
echo "rc=$?" >> $O/kernels_ring.txt
t kernels
NINFER_MMA_RING=all timeout $(left 300) $B bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 16 --warmup 0 --lanes 8 --decode-tokens 64 --profile $P --activations bf16 --json $O/model27b_bf16_ring.jsonl > $O/model27b_bf16_ring.txt 2>&1
echo "rc=$?" >> $O/model27b_bf16_ring.txt
t 27b
mv /tmp/v56-out /tmp/v57-out
tar czf $OUT/v57.tgz -C /tmp v57-out
echo "===== summary"
cat /tmp/v57-out/context.txt
python3 - /tmp/v57-out/kernels_ring.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if "k-ranges" in r["what"] or "T=8" not in r["shape"]: continue
    print(f"{r['shape']:24} {r['route'][:58]:58} {r['median_us']:8.2f}")
PY
grep -E '^(what|decode) |rc=' /tmp/v57-out/model27b_bf16_ring.txt
t done
