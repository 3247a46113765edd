#!/usr/bin/env bash
# bench/gdn run 17 (device job, carry [".gpu/r17b"]; ~3-4 min): the synthetic Qwen3.6-27B
# q4_g64 with bf16 activations on main's code at run 17b (r17b's build) and the profile
# main installed from its tuning job (tuning/nvidia-h200.toml, in the carried tree): the
# prompt at 512 and 4096 (whose GDN layers take the fast (f16, f16) prefill route) and
# decode at 1 and 8 lanes (64 steps from a 16-token context). Output: $OUT/r17b-27b.tgz.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-570}
source scripts/gpu/job-lib.sh
job_init r17b "(r17b: the 27B with the installed profile)"
C="bench model --synthetic qwen3.6-27b --weights q4_g64 --activations bf16 --prompt 512,4096 --lanes 1,8 --warmup 1"
echo "\$ ninfer $C" > $O/bench_27b.txt
timeout $(left 420) $B $C --json $O/bench_27b.jsonl >> $O/bench_27b.txt 2>&1; echo "rc=$?" >> $O/bench_27b.txt
t 27b
tar czf $OUT/r17b-27b.tgz -C /tmp r17b-out
cat $O/context.txt
grep -vE "^\s*$" $O/bench_27b.txt | tail -30 | cut -c1-200
t done
