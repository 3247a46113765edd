#!/usr/bin/env bash
# bench/gdn run 45 (device job, carry [".gpu/r45", ".gpu/whl"]; ~3 min): U as f16 between
# the f16 `wu` and the two-warpgroup scan (the `_u16` kernels, a route of its own). fla
# 0.6.0's chunk and whole layer in the same call (tools/peer_fla_gdn_layer.py), the GDN
# prefill qualify (every route, the new one with them), then the prefill bench twice
# (each pass times every route and stage, old and new, in one process).
# Outputs: $OUT/r45.tgz, summary.txt.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-400}
source scripts/gpu/job-lib.sh
job_init r45 "(U as f16 for the two-warpgroup scan)"
G=$(job_example r45 gdn_gpu)
SITE="$(mktemp -d)/site"
python3 -m pip install -q --no-index --no-deps --target "$SITE" .gpu/whl/*.whl > $O/pip.txt 2>&1
PYTHONPATH="$SITE:tools" timeout $(left 150) python3 tools/peer_fla_gdn_layer.py --out $O/peer_layer.jsonl > $O/peer_layer.txt 2>&1
echo "peer layer exit status $?" >> $O/peer_layer.txt
t peer
for kind in graph called; do
  grep '"what": "gdn prefill",' $O/peer_layer.jsonl | grep "(${kind/called/as called})" > $O/peer_$kind.jsonl || true
  sed 's/state=f32/state=f16/' $O/peer_$kind.jsonl >> $O/peer_$kind.jsonl.tmp; cat $O/peer_$kind.jsonl.tmp >> $O/peer_$kind.jsonl; rm -f $O/peer_$kind.jsonl.tmp
done
timeout -k 5 $(left 120) $G --prefill-only --skip-bench --qualify-json $O/qualify_prefill.jsonl > $O/qualify_prefill.txt 2>&1
echo "qualify rc=$?" >> $O/qualify_prefill.txt
t "qualify prefill"
for i in 1 2; do
  timeout -k 5 $(left 80) $G --prefill-only --skip-qualify --rev "$NINFER_REV+r45" --peer $O/peer_graph.jsonl \
      --peer-called $O/peer_called.jsonl --json $O/bench_$i.jsonl > $O/bench_$i.txt 2>&1
  echo "bench rc=$?" >> $O/bench_$i.txt
  t "bench prefill $i"
done
tar czf $OUT/r45.tgz -C /tmp r45-out
{
echo "===== summary"
cat $O/context.txt
tail -4 $O/peer_layer.txt
echo "prefill: $(grep -E '^qualify \(seed' $O/qualify_prefill.txt) $(tail -1 $O/qualify_prefill.txt)"
grep FAIL $O/qualify_prefill.txt | head -5
echo "worst o rel L2, two-warpgroup scan: $(grep 'wgs_d128_v64_s2)' $O/qualify_prefill.txt | awk '{print $(NF-2)}' | sort -g | tail -1), with U f16: $(grep 'wgs_d128_v64_s2_u16)' $O/qualify_prefill.txt | awk '{print $(NF-2)}' | sort -g | tail -1)"
for i in 1 2; do
  echo "-- bench $i: $(grep -E '^copy' $O/bench_$i.txt)"
  python3 - $O/bench_$i.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    ro = r["route"]
    if "wgs" in ro or ro.startswith("chunk_wu_f16") or ro == "prep_qkvh":
        print(f"{r['what'][:18]:18} {r['shape'][:7]:7} {r['shape'][-9:]:9} {ro[-44:]:44} {r['median_us']:9.2f} "
              f"peer {r.get('peer_median_us') or 0:8.2f}")
PY
done
t done
} | tee $OUT/summary.txt
