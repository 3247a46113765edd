#!/usr/bin/env bash
# bench/gdn run 37 (device job, carry [".gpu/r34", ".gpu/r37", ".gpu/whl"]; ~4 min): the
# wgmma scan as main has it (9058f7a's templates, .gpu/r37/main) and v4 (v4.patch: P's
# product of chunk c left in flight into chunk c + 1, its o staged behind that chunk's W S
# and stored after the next barrier), through run 34's build (whose Rust is main's). First
# fla 0.6.0 in the same call (tools/peer_fla_gdn_layer.py: its chunk alone and the whole
# layer's work, graph and as called), then the prefill qualify of v4, the prefill bench
# main / v4 / main / v4 with this call's fla figures as the peer, and compare (GDN
# fixtures, bf16 qwen3.6-mini) with v4. Outputs: $OUT/r37.tgz, summary.txt.
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
NINFER_TEMPLATES=$PWD/.gpu/r37/v4/templates timeout $(left 120) $G --prefill-only --skip-bench \
    --qualify-json $O/qualify_v4.jsonl > $O/qualify_v4.txt 2>&1
echo "qualify rc=$?" >> $O/qualify_v4.txt
t "qualify v4"
i=0
for v in main v4 main v4; do
  i=$((i + 1))
  NINFER_TEMPLATES=$PWD/.gpu/r37/$v/templates timeout $(left 60) $G --prefill-only --skip-qualify \
      --rev "$NINFER_REV+r37-$v" --peer $O/peer_graph.jsonl --peer-called $O/peer_called.jsonl \
      --json $O/bench_${i}_$v.jsonl > $O/bench_${i}_$v.txt 2>&1
  echo "bench rc=$?" >> $O/bench_${i}_$v.txt
  t "bench $v"
done
export NINFER_TEMPLATES=$PWD/.gpu/r37/v4/templates
job_compare_gdn mini
unset NINFER_TEMPLATES
t compare
tar czf $OUT/r37.tgz -C /tmp r34-out
{
echo "===== summary"
cat $O/context.txt
tail -6 $O/peer_layer.txt
echo "v4: $(grep -E '^qualify \(seed' $O/qualify_v4.txt) $(tail -1 $O/qualify_v4.txt)"; grep FAIL $O/qualify_v4.txt | head -5
grep -hE "vs cpu|FAILED" $O/compare.txt | awk '{print substr($0, 1, 60) " ... " substr($0, length($0) - 60)}'
i=0
for v in main v4 main v4; do
  i=$((i + 1))
  echo "-- $v: $(grep -E 'T=(512|4096).*(chunk_scan_wg|chunk_wu_f16|prep_qkvh)' $O/bench_${i}_$v.txt | awk '{print $(NF-6), $(NF-5)}' | tr '\n' ' ')"
  grep -E "state=f32 .*qkvh" $O/bench_${i}_$v.txt | cut -c1-40,100-200
done
t done
} | tee $OUT/summary.txt
