#!/usr/bin/env bash
# bench/gdn run 39 (device job, carry [".gpu/r39"]; ~1 min): after the tensor-map encoding
# became one helper (src/gpu/tma.rs), `ninfer qualify --filter wgmma,scan_wg` on the GPU
# (run 39 ran `--filter wgmma`, which the GDN family's kernel names do not match, so only
# the linear half ran: 64/64): the two users of TMA maps, the A16 prefill GEMM on warpgroup tensor cores (2-D bf16 maps)
# and the GDN prefill's wgmma scan (4-D f16 and f32 maps). Output: summary.txt.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-200}
source scripts/gpu/job-lib.sh
job_init r39 "(tma.rs's one encoder)"
timeout $(left 170) $B qualify --seed 7 --filter wgmma,scan_wg --json $O/qualify.jsonl > $O/qualify.txt 2>&1
echo "qualify rc=$?" >> $O/qualify.txt
t qualify
{ cat $O/context.txt; grep -E "pass,|FAIL|rc=" $O/qualify.txt | head -20; } | tee $OUT/summary.txt
cp $O/qualify.txt $OUT/
