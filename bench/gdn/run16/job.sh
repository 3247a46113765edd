#!/usr/bin/env bash
# bench/gdn run 16 (device job, carry [".gpu/$N"], staged by run16/stage.sh; ~1-2 min):
# the chunked prefill's scan on f16 tensor cores. The prefill qualify of the patched tree
# (every route of PrefillStages::ROUTES, the two f16-scan routes among them, every shape,
# T = 1 to 4096, both state types); the prefill bench twice (each route whole, then each
# stage alone, 512 and 4096 tokens; fla's figures from run 3); `ninfer compare` on the GDN
# fixtures (their prompts run the engine's prefill route, unchanged: a check that the patch
# leaves it alone). Outputs in $OUT/r16.tgz, the tables last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-570}
source scripts/gpu/job-lib.sh
N=${N:-r16}
job_init $N "($N: the chunked prefill's scan on f16 tensor cores)"
G=$(job_example $N gdn_gpu)
P=bench/gdn/run3
timeout $(left 150) $G --prefill-only --skip-bench --qualify-json $O/qualify.jsonl > $O/qualify.txt 2>&1
echo "qualify rc=$?" >> $O/qualify.txt
t "qualify: $(tail -2 $O/qualify.txt | head -1)"
for run in a b; do
  timeout $(left 120) $G --prefill-only --skip-qualify --rev "$NINFER_REV" --peer $P/peer.jsonl \
      --peer-called $P/peer_called.jsonl --json $O/bench_$run.jsonl > $O/bench_$run.txt 2>&1
  echo "bench rc=$?" >> $O/bench_$run.txt
  t "bench $run"
done
long="The history of the city begins with a small settlement on the river, where traders from the north and the south met every spring to exchange salt, furs, grain and iron tools."
for fx in qwen35_r2 qwen3_next qwen35_moe; do
  timeout $(left 60) $B compare --model tests/fixtures/tiny/$fx --prompt "$long" --tokens 16 >> $O/compare.txt 2>&1 || echo "FAILED $fx" >> $O/compare.txt
done
t "compare"
tar czf $OUT/$N.tgz -C /tmp $N-out
echo "===== summary"
cat $O/context.txt
sed -n '/^qualify (seed/,$p' $O/qualify.txt | tail -6
grep -h "f16" $O/qualify.txt | grep -iE "fail" | head -5
grep -hE "identical|differs|FAILED" $O/compare.txt | cut -c1-160
python3 bench/gdn/run16/table.py $O/qualify.jsonl $O/bench_a.jsonl $O/bench_b.jsonl
t done
