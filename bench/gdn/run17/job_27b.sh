#!/usr/bin/env bash
# bench/gdn run 17 (device job, carry [".gpu/$N"]; ~2-3 min): the synthetic Qwen3.6-27B
# q4_g64 with bf16 activations on build $N (default r17b) with the profile PROFILE
# (default tuning/nvidia-h200.toml, in the carried tree; its template set must be $N's): the
# prompt at 512 and 4096 (whose GDN layers take the fast (f16, f16) prefill route) and
# decode at 1 and 8 lanes (64 steps from a 16-token context). Output: $OUT/$N-27b.tgz.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-570}
source scripts/gpu/job-lib.sh
N=${N:-r17b}
PROFILE=${PROFILE:-tuning/nvidia-h200.toml}
mkdir -p /tmp/keep && cp $PROFILE /tmp/keep/27b-profile.toml
job_init $N "($N: the 27B with $PROFILE)"
cp /tmp/keep/27b-profile.toml $O/profile.toml
C="bench model --synthetic qwen3.6-27b --weights q4_g64 --activations bf16 --prompt 512,4096 --lanes 1,8 --warmup 1 --profile $O/profile.toml"
echo "\$ ninfer $C" > $O/bench_27b.txt
timeout $(left 420) $B $C --json $O/bench_27b.jsonl >> $O/bench_27b.txt 2>&1; echo "rc=$?" >> $O/bench_27b.txt
t 27b
tar czf $OUT/$N-27b.tgz -C /tmp $N-out
cat $O/context.txt
grep -vE "^\s*$" $O/bench_27b.txt | tail -30 | cut -c1-200
t done
