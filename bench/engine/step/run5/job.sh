#!/bin/bash
# Run 5: how the decode attention's split width moves SmolLM2's 1-lane step at 256 steps
# (a cache planned for 512 keys: the profile key attn_split/f32/h9/kv3/t1/n512/k64, s32
# installed). Uses run 4's staging (.gpu/step4); carry [".gpu"]. Steps:
#   bench    --decode-tokens 256 with the installed profile and with copies of it whose
#            n512 entry names s64 and s128; two rounds, alternating
#   ncu      one replayed step, each kernel alone, at ~265 keys (--decode-context 240,
#            --decode-tokens 20: a cache of 512), s32 and s64
# Output: $OUT/run5.tgz; summary last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-300}
source scripts/gpu/job-lib.sh
job_init step4 "(main)"
for s in 64 128; do
  sed "/n512\/k64\"/{n;s/_s32\"/_s$s\"/}" tuning/nvidia-h200.toml > $O/prof_s$s.toml
done
cp tuning/nvidia-h200.toml $O/prof_s32.toml
grep -A1 'h9/kv3/t1/n512' $O/prof_s*.toml > $O/prof_entries.txt
BM="bench model --synthetic smollm2-135m --weights q4_g64 --lanes 1 --prompt 16"
for r in 1 2; do
  for s in 32 64 128; do
    f=$O/bench_r${r}_s$s.txt
    echo "\$ ninfer $BM --decode-tokens 256 --profile prof_s$s.toml" > $f
    timeout $(left 40) $B $BM --decode-tokens 256 --profile $O/prof_s$s.toml --json ${f%.txt}.jsonl >> $f 2>&1
    echo "rc=$?" >> $f
  done
done
t bench
P="ncu --clock-control none --cache-control none --graph-profiling node --metrics gpu__time_duration.sum"
for s in 32 64; do
  timeout $(left 60) $P --export $O/ncu_s$s -f $B $BM --warmup 0 --decode-context 240 --decode-tokens 20 --warmup-steps 2 --profile $O/prof_s$s.toml > $O/ncu_s$s.log 2>&1
  echo "rc=$?" >> $O/ncu_s$s.log
  [ -f $O/ncu_s$s.ncu-rep ] && timeout $(left 30) ncu --import $O/ncu_s$s.ncu-rep --csv --page raw --metrics gpu__time_duration.sum > $O/ncu_s$s.csv 2> $O/ncu_s$s.err
  rm -f $O/ncu_s$s.ncu-rep
  t "ncu s$s"
done
tar czf $OUT/run5.tgz -C /tmp step4-out
echo "===== summary"
cat $O/context.txt $O/prof_entries.txt
for r in 1 2; do for s in 32 64 128; do echo "r$r s$s: $(grep -E '^decode  ' $O/bench_r${r}_s$s.txt | cut -c1-100) $(grep rc= $O/bench_r${r}_s$s.txt)"; done; done
for s in 32 64; do tail -1 $O/ncu_s$s.log; wc -l < $O/ncu_s$s.csv; done
t done
