#!/usr/bin/env bash
# v44 job: the split GDN decode step (gdn/prep.cu at T = 1 with the lanes as sequences,
# then gdn/update.cu), the heuristic from 5 lanes. Stage with bench/kernels/v44/stage.sh;
# carry [".gpu"]. Steps, cut to LIMIT:
#   qualify  ninfer qualify --filter gdn (every GDN route; the split ones at 3 and 8 lanes)
#   compare  GPU against cpu on the tiny GDN fixtures, 1 and 8 lanes (8: the split step)
#   gdnbench gdn_gpu --decode-only --skip-qualify: every decode tile at 1 and 8 lanes on
#            the 27B shape against the copy rate measured in the same run
#   tune     scripts/gpu/tune.sh for the v44 template set (the profile to install)
#   27b      synthetic 27B q4_g64, 8 lanes, one load, --profile-ab with a profile holding only
#            a gdn_step key at 8 lanes that names the fused r4w4 tile (A) against the
#            heuristics (B: the split step), the linears on the heuristics in both
# Output: $OUT/v44.tgz; summary last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-585}
source scripts/gpu/job-lib.sh
job_init v44 "(working tree: split GDN step)"
xz -dc .gpu/v44/gdn_gpu.xz > gdn_gpu && chmod +x gdn_gpu
mkdir -p $O/tune
( sleep $((LIMIT - 8)); tar czf $OUT/partial.tgz -C /tmp v44-out ) > /dev/null 2>&1 &
PARTIAL=$!
timeout $(left 120) $B qualify --filter gdn --json $O/qualify.jsonl > $O/qualify.txt 2>&1
echo "qualify rc=$?" >> $O/qualify.txt
t qualify
long="The history of the city begins with a small settlement on the river, where traders from the north and the south met every spring to exchange salt, furs, grain and iron tools."
: > $O/compare.txt
for fx in qwen35_r2 qwen35_r3 qwen3_next qwen35_moe; do
  for lanes in 1 8; do
    tok=32; [ $lanes = 8 ] && tok=16
    echo "\$ ninfer compare --model tests/fixtures/tiny/$fx --tokens $tok --lanes $lanes" >> $O/compare.txt
    timeout $(left 60) $B compare --model tests/fixtures/tiny/$fx --prompt "$long" --tokens $tok --lanes $lanes >> $O/compare.txt 2>&1 || echo "FAILED $fx lanes $lanes" >> $O/compare.txt
  done
done
t compare
timeout $(left 90) gdn_gpu --decode-only --skip-qualify --rev "$NINFER_REV" --json $O/gdn_bench.jsonl > $O/gdn_bench.txt 2>&1
echo "gdn bench rc=$?" >> $O/gdn_bench.txt
t gdnbench
OUT=$O/tune B=$B E2E_LONG=0 E2E_ROUNDS=1 timeout $(left 150) bash scripts/gpu/tune.sh > $O/tune.txt 2>&1
echo "rc=$?" >> $O/tune.txt
t tune
# A profile of one route: the 8-lane gdn_step key of the 27B's f32 state naming the fused
# r4w4 tile, under this build's device header (from run 1's profile).
{ sed -n '1,/^\[\[route\]\]/p' $O/tune/run1.toml | sed '$d'
  printf '[[route]]\nkey = "gdn_step/f32/hk16/hv48/t8/n128/k128"\nentry = "gdn_step_f32_l16e8r4w4v_k4"\nmedian_us = 1.0\ndefault_entry = "gdn_update_f32_l16e8r2w2vx"\ndefault_us = 1.0\ncandidates = 2\ntimes_us = []\n'; } > $O/fused8.toml
timeout $(left 200) $B bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 16 --warmup 0 --lanes 8 --decode-tokens 256 --profile $O/fused8.toml --profile-ab --json $O/bench_27b.jsonl > $O/bench_27b.txt 2>&1
echo "rc=$?" >> $O/bench_27b.txt
t 27b
pkill -P $PARTIAL sleep 2> /dev/null; kill $PARTIAL 2> /dev/null
tar czf $OUT/v44.tgz -C /tmp v44-out
echo "===== summary"
cat $O/context.txt
grep -E 'checks:|rc=|FAIL' $O/qualify.txt | head -6
grep -E 'identical|differs|FAIL|PASS' $O/compare.txt | cut -c1-150
grep -E "^copy|gdn_update|r4w4v_k4|r2w8v_k4" $O/gdn_bench.txt | cut -c1-170 | head -20
grep noise $O/tune/compare.txt | tail -1
tail -2 $O/tune.txt
grep -E '^(decode|what) |rc=|routes' $O/bench_27b.txt | cut -c1-130
t done
