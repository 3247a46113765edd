#!/usr/bin/env bash
set -u
for b in ninfer ninfer-perplexity; do xz -dc .gpu/$b.xz > .gpu/$b && chmod +x .gpu/$b; done
export NINFER_CACHE_DIR=/tmp/ninfer-cache
mkdir -p $NINFER_CACHE_DIR/models
cat /root/models/part.aa /root/models/part.ab > $NINFER_CACHE_DIR/models/SmolLM2-135M-Instruct.Q4_1.gguf
sha256sum $NINFER_CACHE_DIR/models/SmolLM2-135M-Instruct.Q4_1.gguf > $OUT/model_sha.txt
B=.gpu/ninfer
source scripts/gpu/context.sh
timeout 150 $B qualify --filter attention,rope,linear_exact --json $OUT/qualify.jsonl > $OUT/qualify.txt 2>&1; echo "qualify rc $?"
grep -E "FAIL" $OUT/qualify.txt | head; grep -E "checks:|^error" $OUT/qualify.txt
long="The history of the city begins with a small settlement on the river, where traders from the north and the south met every spring to exchange salt, furs, grain and iron tools. Over the following centuries the settlement grew into a market town, then a walled city with its own laws, its own coins and a cathedral whose towers could be seen from every road that led to it."
: > $OUT/compare.txt
for fx in tests/fixtures/tiny/*/; do
  echo "\$ compare $fx" >> $OUT/compare.txt
  timeout 60 $B compare --model "$fx" --prompt "$long" --tokens 300 >> $OUT/compare.txt 2>&1 || echo "FAILED $fx" >> $OUT/compare.txt
done
for g in "" "--weights q8_g32"; do
  echo "\$ compare SmolLM2 $g" >> $OUT/compare.txt
  timeout 60 $B compare $g --tokens 300 >> $OUT/compare.txt 2>&1 || echo FAILED >> $OUT/compare.txt
done
: > $OUT/run.txt
for mode in "--weights f32" "--weights f32 --no-graphs" "--weights q8_g32" "--weights q4_g64" "--weights bf16"; do
  echo "\$ ninfer run --device cuda $mode --max-tokens 512" >> $OUT/run.txt
  timeout 60 $B run --device cuda $mode --max-tokens 512 --chat "Write a long story about the sea." 2>&1 >/dev/null | tail -1 >> $OUT/run.txt
done
timeout 60 .gpu/ninfer-perplexity .gpu/wiki.test.raw --quick --device cuda > $OUT/ppl.txt 2>&1
timeout 200 ncu --clock-control none --metrics gpu__time_duration.sum --launch-skip 2000 --launch-count 800 --csv --print-units base $B run --device cuda --weights q8_g32 --max-tokens 200 "Write a story." > $OUT/ncu.csv 2> $OUT/ncu.err
python3 - <<'PY'
import csv,os,collections
rows=list(csv.reader(open(os.environ['OUT']+'/ncu.csv')))
h=None; agg=collections.defaultdict(lambda:[0,0.0])
for r in rows:
    if 'Kernel Name' in r: h=r; continue
    if h is None or len(r)!=len(h): continue
    d=dict(zip(h,r))
    if d.get('Metric Name')!='gpu__time_duration.sum': continue
    k=d['Kernel Name'][:50]; agg[k][0]+=1; agg[k][1]+=float(d['Metric Value'].replace(',',''))
print('ncu total us',sum(v[1] for v in agg.values())/1000,'kernels',sum(v[0] for v in agg.values()))
for k,v in sorted(agg.items(),key=lambda x:-x[1][1]): print(f"{k:50} n={v[0]:4} mean_us={v[1]/v[0]/1000:6.2f}")
PY
grep -vE '^\$' $OUT/compare.txt | sed -e 's/^.*fixtures\/tiny\///' | cut -c1-200
cat $OUT/run.txt; tail -2 $OUT/ppl.txt
