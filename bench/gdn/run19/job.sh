#!/usr/bin/env bash
# bench/gdn runs 18 and 19 (device job, carry [".gpu/r19", ".gpu/r18", ".gpu/r18base"];
# ~2.5 min): the prefill qualify of r19 (run 18's scan and run 19's f16 v: every route of
# PrefillStages::ROUTES at every shape, T = 1 to 4096, both state types, each on a
# workspace filled with NaN); the prefill bench of r19, r18, r18base (main) and r19 again,
# one process each, fla's figures from run 3; `ninfer compare` on the GDN fixtures (the
# exact route) with r19, and on the synthetic qwen3.6-mini with bf16 activations (its
# 300-token prompt takes the (f16, f16) route) at 1 and 8 lanes with r19 and r18base.
# Outputs in $OUT/r19.tgz, the tables last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-570}
source scripts/gpu/job-lib.sh
job_init r18base "(r18base: main)"
G0=$(job_example r18base gdn_gpu)
job_init r18 "(r18: the one-buffer v32 scan)"
G1=$(job_example r18 gdn_gpu)
job_init r19 "(r19: r18 and the f16 v)"
G=$(job_example r19 gdn_gpu)
P=bench/gdn/run3
timeout $(left 150) $G --prefill-only --skip-bench --qualify-json $O/qualify.jsonl > $O/qualify.txt 2>&1
echo "qualify rc=$?" >> $O/qualify.txt
t "qualify: $(tail -2 $O/qualify.txt | head -1)"
bench() {
  timeout $(left 120) $1 --prefill-only --skip-qualify --rev "$NINFER_REV" --peer $P/peer.jsonl \
      --peer-called $P/peer_called.jsonl --json $O/bench_$2.jsonl > $O/bench_$2.txt 2>&1
  echo "bench rc=$?" >> $O/bench_$2.txt
  t "bench $2"
}
bench $G a
job_use r18; bench $G1 r18
job_use r18base; bench $G0 base
job_use r19; bench $G b
long="The history of the city begins with a small settlement on the river, where traders from the north and the south met every spring to exchange salt, furs, grain and iron tools."
for fx in qwen35_r2 qwen3_next qwen35_moe; do
  timeout $(left 60) $B compare --model tests/fixtures/tiny/$fx --prompt "$long" --tokens 16 >> $O/compare.txt 2>&1 || echo "FAILED $fx" >> $O/compare.txt
done
# bf16 activations round the GPU's linears (the cpu backend's stay exact), so the
# tolerance is 5e-2 (run 17), and main's build runs the same commands beside. Greedy
# tokens may flip at near ties (--near-ties 4: the cpu's pick leads by at most 4 times the
# row's RMS difference); every row is then checked teacher-forced.
for lanes in 1 8; do
  for b in r19 r18base; do
    job_use $b
    echo "== $b" >> $O/compare.txt
    timeout $(left 120) $B compare --synthetic qwen3.6-mini --synthetic-prompt 300 --tokens 16 \
        --activations bf16 --lanes $lanes --tolerance 5e-2 --near-ties 4 >> $O/compare.txt 2>&1 || echo "FAILED qwen3.6-mini lanes $lanes" >> $O/compare.txt
  done
done
job_use r19
t "compare"
tar czf $OUT/r19.tgz -C /tmp r19-out
echo "===== summary"
cat $O/context.txt
sed -n '/^qualify (seed/,$p' $O/qualify.txt | tail -6
grep -h "f16" $O/qualify.txt | grep -iE "fail" | head -5
grep -hE "^==|identical|differs|FAILED|worst" $O/compare.txt | cut -c1-230
python3 bench/gdn/run16/table.py $O/qualify.jsonl $O/bench_a.jsonl $O/bench_r18.jsonl $O/bench_base.jsonl $O/bench_b.jsonl
t done
