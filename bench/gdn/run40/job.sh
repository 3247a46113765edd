#!/usr/bin/env bash
# bench/gdn run 40 (device job, carry [".gpu/r40", ".gpu/whl"]; ~4 min): main as it is,
# on whatever GPU comes (asked: nvidia-h200). fla 0.6.0 in the same call (decode and chunk:
# tools/peer_fla_gdn.py; chunk and whole layer: tools/peer_fla_gdn_layer.py), then
# `ninfer qualify --filter wgmma,scan_wg` (the tensor maps through tma.rs's one encoder),
# the GDN qualify (decode and prefill routes), and the GDN bench twice with this call's
# fla figures as the peer. Outputs: $OUT/r40.tgz, summary.txt.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-560}
source scripts/gpu/job-lib.sh
job_init r40 "(main)"
G=$(job_example r40 gdn_gpu)
SITE="$(mktemp -d)/site"
python3 -m pip install -q --no-index --no-deps --target "$SITE" .gpu/whl/*.whl > $O/pip.txt 2>&1
PYTHONPATH="$SITE:tools" timeout $(left 150) python3 tools/peer_fla_gdn.py --out $O/peer.jsonl \
    --out-called $O/peer_called.jsonl > $O/peer.txt 2>&1
echo "peer exit status $?" >> $O/peer.txt
PYTHONPATH="$SITE:tools" timeout $(left 150) python3 tools/peer_fla_gdn_layer.py --out $O/peer_layer.jsonl > $O/peer_layer.txt 2>&1
echo "peer layer exit status $?" >> $O/peer_layer.txt
t peer
# the chunk-alone figures of the layer tool are the prefill peer (graph and as called)
for kind in graph called; do
  f=$O/peer_$kind.all.jsonl
  grep -v '"gdn prefill"' $O/peer$([ $kind = called ] && echo _called).jsonl > $f || true
  grep '"what": "gdn prefill",' $O/peer_layer.jsonl | grep "(${kind/called/as called})" > $f.tmp || true
  cat $f.tmp >> $f; sed 's/state=f32/state=f16/' $f.tmp >> $f; rm -f $f.tmp
done
timeout $(left 120) $B qualify --seed 7 --filter wgmma,scan_wg --json $O/qualify_tma.jsonl > $O/qualify_tma.txt 2>&1
echo "qualify rc=$?" >> $O/qualify_tma.txt
t "qualify tma"
timeout $(left 150) $G --skip-bench --qualify-json $O/qualify_gdn.jsonl > $O/qualify_gdn.txt 2>&1
echo "qualify rc=$?" >> $O/qualify_gdn.txt
t "qualify gdn"
for i in 1 2; do
  timeout $(left 90) $G --skip-qualify --rev "$NINFER_REV+r40" --peer $O/peer_graph.all.jsonl \
      --peer-called $O/peer_called.all.jsonl --json $O/bench_$i.jsonl > $O/bench_$i.txt 2>&1
  echo "bench rc=$?" >> $O/bench_$i.txt
  t "bench $i"
done
tar czf $OUT/r40.tgz -C /tmp r40-out
{
echo "===== summary"
cat $O/context.txt
tail -3 $O/peer.txt; tail -4 $O/peer_layer.txt
echo "tma: $(grep -E 'pass,|rc=' $O/qualify_tma.txt | tr '\n' ' ')"
echo "gdn: $(grep -E '^qualify \(seed' $O/qualify_gdn.txt) $(tail -1 $O/qualify_gdn.txt)"; grep FAIL $O/qualify_gdn.txt | head -5
for i in 1 2; do
  echo "-- bench $i: $(grep -E '^copy' $O/bench_$i.txt)"
  python3 - $O/bench_$i.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    s, ro = r["shape"], r["route"]
    keep = ("lanes=8" in s and ("update" in ro or "split" in ro)) or ("lanes=1" in s and "r2w2" in ro) \
        or (r["what"] == "gdn prefill" and ("qkvh" in ro or "wg" in ro))
    if keep:
        print(f"{r['what'][:11]:11} {s[:14]:14} {s[-9:]:9} {ro[:44]:44} {r['median_us']:9.2f} "
              f"{r.get('fraction') or 0:5.2f} peer {r.get('peer_median_us') or 0:8.2f}")
PY
done
t done
} | tee $OUT/summary.txt
