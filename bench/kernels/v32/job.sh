#!/usr/bin/env bash
# v32 job (prepared 2026-11-30, not run): the ring and mma GEMVs keep their weights hinted
# into L2 ahead of what they load (v32/l2-prefetch.patch: gemv_ring.cu ~4 KB a warp past
# its ring, gemv_mma.cu 16 groups past its buffers, the first of it before the PDL wait),
# against main, one start; pf2 is the same twice as deep (8 KB, 32 groups). Stage with
# bench/kernels/v32/stage.sh; run with carry [".gpu"]. Steps, cut to LIMIT:
#   qualify  both patched sets: linear_exact_ring, linear_exact_mma
#   kernels  main, pf, pf2, twice: the T = 1 q4_g64 sweep (x20), the fused launches
#            ('linear_exact prologue q4_g64 x20') and the mma GEMV's q4 records (T = 1..32)
#   pick     of pf and pf2, the set with the smaller sum of its fused-launch and T = 8 mma
#            medians (the launches the 27B's 1- and 8-lane steps run)
#   tune     scripts/gpu/tune.sh for the picked set (its own profile: a template edit voids
#            the installed one)
#   27b      the 27B, 1 and 8 lanes: the picked set with its profile, main with the installed
# Output: $OUT/v32.tgz (tune/run1.toml is the profile to install if the picked set lands,
# pick.txt names it); summary last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-585}
source scripts/gpu/job-lib.sh
job_init v32 "(main), + v32/l2-prefetch.patch (pf), the same twice as deep (pf2)"
G=.gpu/v32
mkdir -p $O/tune
( sleep $((LIMIT - 8)); tar czf $OUT/partial.tgz -C /tmp v32-out ) > /dev/null 2>&1 &
PARTIAL=$!
run() { # run SET SECONDS CMD... (SET: main, pf or pf2)
  local s=$1 lim=$(left $2); shift 2
  if [ $s = main ]; then timeout $lim $B "$@"; else NINFER_TEMPLATES=$PWD/$G/$s/templates timeout $lim $B "$@"; fi
}
for s in pf pf2; do
  run $s 70 qualify --filter linear_exact_ring,linear_exact_mma --json $O/qualify_$s.jsonl > $O/qualify_$s.txt 2>&1
  echo "qualify rc=$?" >> $O/qualify_$s.txt
done
t qualify
F="linear_exact q4_g64 x20 T=1 N=|linear_exact prologue q4_g64 x20|linear_exact_mma q4_g64 x20"
for i in 1 2; do for s in main pf pf2; do
  run $s 45 bench kernels --filter "$F" --json $O/bench_kernels_${s}_$i.jsonl >> $O/bench_kernels_$s.txt 2>&1
  echo "rc=$?" >> $O/bench_kernels_$s.txt
done; done
t kernels
python3 scripts/gpu/ab_table.py --pick $O pf pf2 > $O/pick.txt
P=$(cut -d' ' -f1 $O/pick.txt); [ -n "$P" ] || P=pf
t "pick $P"
NINFER_TEMPLATES=$PWD/$G/$P/templates OUT=$O/tune B=$B E2E_LONG=0 E2E_ROUNDS=1 timeout $(left 120) bash scripts/gpu/tune.sh > $O/tune.txt 2>&1
echo "rc=$?" >> $O/tune.txt
t tune
BM="bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 16 --warmup 0 --decode-tokens 64 --lanes 1,8"
for s in $P main; do
  prof=tuning/nvidia-h200.toml; [ $s != main ] && prof=$O/tune/run1.toml
  echo "\$ ninfer $BM --profile ($s)" > $O/bench_27b_$s.txt
  run $s 120 $BM --profile $prof --json $O/bench_27b_$s.jsonl >> $O/bench_27b_$s.txt 2>&1
  echo "rc=$?" >> $O/bench_27b_$s.txt
  t "27b $s"
done
pkill -P $PARTIAL sleep 2> /dev/null; kill $PARTIAL 2> /dev/null
tar czf $OUT/v32.tgz -C /tmp v32-out
echo "===== summary"
cat $O/context.txt
for s in pf pf2; do echo "$s: $(grep -E 'checks:|rc=' $O/qualify_$s.txt | tr '\n' ' ')"; done
cat $O/pick.txt
python3 scripts/gpu/ab_table.py $O main pf pf2
tail -4 $O/tune.txt
for s in $P main; do echo "$s:"; grep -E '^decode  |rc=' $O/bench_27b_$s.txt | cut -c1-100; done
t done
