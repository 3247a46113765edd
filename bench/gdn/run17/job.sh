#!/usr/bin/env bash
# bench/gdn run 17 (device job, carry [".gpu/$N", ".gpu/$BASE"] (default r16e); ~3-4 min): the f16
# stages passing f16 intermediates (N=r17, the default; N=r17b, run 17b; N=r17c BASE=r17b,
# run 17c against main at 17b). The prefill qualify of r17 (every route of
# PrefillStages::ROUTES at every shape, T = 1 to 4096, both state types); the prefill
# bench of r17, r16e (the baseline: main's kernels) and r17 again, in one process each,
# fla's figures from run 3; `ninfer compare` on the GDN fixtures (the exact route), and on
# the synthetic qwen3.6-mini (the 27B's head shapes) with bf16 activations, whose 300-token
# prompt takes the fast route (f16, f16) through the engine, at 1 and 8 lanes, with this
# build and with r16e's. Outputs in
# $OUT/$N.tgz, the tables last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-570}
source scripts/gpu/job-lib.sh
BASE=${BASE:-r16e}
job_init $BASE "($BASE: the baseline)"
G0=$(job_example $BASE gdn_gpu)
N=${N:-r17}
job_init $N "($N: the f16 stages pass f16 W, P, Q and K)"
G=$(job_example $N gdn_gpu)
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
job_use $BASE; bench $G0 base; job_use $N
bench $G b
long="The history of the city begins with a small settlement on the river, where traders from the north and the south met every spring to exchange salt, furs, grain and iron tools."
for fx in qwen35_r2 qwen3_next qwen35_moe; do
  timeout $(left 60) $B compare --model tests/fixtures/tiny/$fx --prompt "$long" --tokens 16 >> $O/compare.txt 2>&1 || echo "FAILED $fx" >> $O/compare.txt
done
# bf16 activations round the GPU's linears (the cpu backend's stay exact): ~2.5e-2 of the
# logits from those alone (run 17, decode rows too), so the tolerance is 5e-2, and main's
# build runs the same commands beside: its GDN prefill route's outputs are the same bits.
for lanes in 1 8; do
  for b in $N $BASE; do
    job_use $b
    echo "== $b" >> $O/compare.txt
    timeout $(left 120) $B compare --synthetic qwen3.6-mini --synthetic-prompt 300 --tokens 16 \
        --activations bf16 --lanes $lanes --tolerance 5e-2 >> $O/compare.txt 2>&1 || echo "FAILED qwen3.6-mini lanes $lanes" >> $O/compare.txt
  done
done
job_use $N
t "compare"
tar czf $OUT/$N.tgz -C /tmp $N-out
echo "===== summary"
cat $O/context.txt
sed -n '/^qualify (seed/,$p' $O/qualify.txt | tail -6
grep -h "f16" $O/qualify.txt | grep -iE "fail" | head -5
grep -hE "^==|identical|differs|FAILED|worst" $O/compare.txt | cut -c1-230
python3 bench/gdn/run16/table.py $O/qualify.jsonl $O/bench_a.jsonl $O/bench_base.jsonl $O/bench_b.jsonl
t done
