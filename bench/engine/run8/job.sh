#!/usr/bin/env bash
# Job 1 (session 4): where prefill time goes (ncu over one 4096 window), perplexity speed,
# and the first `ninfer bench model` runs (SmolLM2 q8/q4, synthetic 27B q4_g64).
set -u
start=$(date +%s)
for b in ninfer ninfer-perplexity; do xz -dc .gpu/$b.xz > .gpu/$b && chmod +x .gpu/$b; done
export NINFER_CACHE_DIR=/tmp/ninfer-cache
mkdir -p $NINFER_CACHE_DIR/models
M=$NINFER_CACHE_DIR/models/SmolLM2-135M-Instruct.Q4_1.gguf
cat /root/models/part.* > $M
sha256sum $M > $OUT/model_sha.txt
source scripts/gpu/context.sh
export NINFER_REV="$rev"
N=.gpu/ninfer; P=.gpu/ninfer-perplexity
t() { echo "[$(( $(date +%s) - start )) s] $*"; }
t "ncu prefill"
timeout 150 ncu --clock-control none --metrics gpu__time_duration.sum --csv --log-file $OUT/ncu_prefill.csv \
  $P .gpu/wiki.test.raw --device cuda --max-tokens 4096 > $OUT/ncu_prefill_stdout.txt 2>&1
t "ncu exit $?"
t "perplexity 16 windows"
timeout 60 $P .gpu/wiki.test.raw --device cuda --max-tokens 36864 > $OUT/ppl_speed.txt 2>&1; t "exit $?"
for w in q8_g32 q4_g64; do
  t "bench smollm2 $w"
  timeout 60 $N bench model --model $M --weights $w --prompt 512,4096 --lanes 1 --json $OUT/bench_model.jsonl > $OUT/bench_smollm2_$w.txt 2>&1; t "exit $?"
done
t "bench 27b q4_g64"
timeout 240 $N bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 512,4096 --lanes 1 --json $OUT/bench_model.jsonl > $OUT/bench_27b_q4.txt 2>&1; t "exit $?"
cat $OUT/ppl_speed.txt | tail -3
cat $OUT/bench_smollm2_*.txt $OUT/bench_27b_q4.txt | grep -v "^\s*$" | tail -40
python3 - <<'PY'
import csv, os, collections
p = os.environ["OUT"] + "/ncu_prefill.csv"
rows = [l for l in open(p) if l.startswith('"')]
r = list(csv.DictReader(rows))
agg = collections.defaultdict(lambda: [0, 0.0])
for x in r:
    if x.get("Metric Name") != "gpu__time_duration.sum": continue
    name = x["Kernel Name"].split("(")[0]
    v = float(x["Metric Value"].replace(",", ""))
    u = x["Metric Unit"]
    v = v / 1000 if u == "nsecond" else v * 1000 if u == "msecond" else v
    agg[name][0] += 1; agg[name][1] += v
tot = sum(v[1] for v in agg.values())
print(f"ncu: {len(r)} kernels, {tot/1000:.1f} ms total")
for k, (n, us) in sorted(agg.items(), key=lambda kv: -kv[1][1])[:25]:
    print(f"{us/1000:9.2f} ms {100*us/tot:5.1f}% {n:6d}x {k}")
PY
