#!/usr/bin/env bash
# bench/gdn run 38 (device job, carry [".gpu/r34", ".gpu/r37", ".gpu/whl"]; ~2.5 min): run
# 37's job for main alone (9058f7a's templates, .gpu/r37/main, through run 34's build),
# for an H200: fla 0.6.0 in the same call, the prefill qualify, the prefill bench twice
# with this call's fla figures as the peer. Outputs: $OUT/r38.tgz, summary.txt.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-560}
source scripts/gpu/job-lib.sh
job_init r34 "(run 34's build; run 37's template sets)"
G=$(job_example r34 gdn_gpu)
SITE="$(mktemp -d)/site"
python3 -m pip install -q --no-index --no-deps --target "$SITE" .gpu/whl/*.whl > $O/pip.txt 2>&1
PYTHONPATH="$SITE:tools" timeout $(left 200) python3 tools/peer_fla_gdn_layer.py --out $O/peer_layer.jsonl > $O/peer_layer.txt 2>&1
echo "peer exit status $?" >> $O/peer_layer.txt
t peer
for kind in graph called; do
  f=$O/peer_$kind.jsonl; : > $f
  grep '"what": "gdn prefill",' $O/peer_layer.jsonl | grep "(${kind/called/as called})" > $f.tmp || true
  cat $f.tmp >> $f; sed 's/state=f32/state=f16/' $f.tmp >> $f; rm -f $f.tmp
done
NINFER_TEMPLATES=$PWD/.gpu/r37/main/templates timeout $(left 120) $G --prefill-only --skip-bench \
    --qualify-json $O/qualify_main.jsonl > $O/qualify_main.txt 2>&1
echo "qualify rc=$?" >> $O/qualify_main.txt
t "qualify main"
i=0
for v in main main; do
  i=$((i + 1))
  NINFER_TEMPLATES=$PWD/.gpu/r37/$v/templates timeout $(left 60) $G --prefill-only --skip-qualify \
      --rev "$NINFER_REV+r38-$v" --peer $O/peer_graph.jsonl --peer-called $O/peer_called.jsonl \
      --json $O/bench_${i}_$v.jsonl > $O/bench_${i}_$v.txt 2>&1
  echo "bench rc=$?" >> $O/bench_${i}_$v.txt
  t "bench $v"
done
tar czf $OUT/r38.tgz -C /tmp r34-out
{
echo "===== summary"
cat $O/context.txt
tail -6 $O/peer_layer.txt
echo "main: $(grep -E '^qualify \(seed' $O/qualify_main.txt) $(tail -1 $O/qualify_main.txt)"; grep FAIL $O/qualify_main.txt | head -5
i=0
for v in main main; do
  i=$((i + 1))
  echo "-- $v: $(grep -E 'T=(512|4096).*(chunk_scan_wg|chunk_wu_f16|prep_qkvh)' $O/bench_${i}_$v.txt | awk '{print $(NF-6), $(NF-5)}' | tr '\n' ' ')"
  grep -E "state=f32 .*qkvh" $O/bench_${i}_$v.txt | cut -c1-40,100-200
done
t done
} | tee $OUT/summary.txt
