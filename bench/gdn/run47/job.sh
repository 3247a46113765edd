#!/usr/bin/env bash
# bench/gdn run 47 (device job, carry [".gpu/r47", ".gpu/whl"]; ~4 min): the decode step in
# one launch (gdn/update.cu with `conv`: the conv, the gates and the q/k norms folded into
# the update, no gdn/prep.cu ahead of it). fla 0.6.0 in the same call
# (tools/peer_fla_gdn.py), the GDN decode qualify, the decode bench twice with this call's
# fla figures as the peer, then `ninfer compare` against the cpu backend (the GDN fixtures
# at 1 and 8 lanes, the bf16 qwen3.6-mini at 1 and 8 lanes). Outputs: $OUT/r47.tgz,
# summary.txt.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-560}
source scripts/gpu/job-lib.sh
job_init r47 "(the one-launch decode step)"
G=$(job_example r47 gdn_gpu)
SITE="$(mktemp -d)/site"
python3 -m pip install -q --no-index --no-deps --target "$SITE" .gpu/whl/*.whl > $O/pip.txt 2>&1
PYTHONPATH="$SITE:tools" timeout $(left 150) python3 tools/peer_fla_gdn.py --out $O/peer.jsonl \
    --out-called $O/peer_called.jsonl > $O/peer.txt 2>&1
echo "peer exit status $?" >> $O/peer.txt
t peer
timeout -k 5 $(left 150) $G --decode-only --skip-bench --qualify-json $O/qualify_decode.jsonl > $O/qualify_decode.txt 2>&1
echo "qualify rc=$?" >> $O/qualify_decode.txt
t "qualify decode"
for i in 1 2; do
  timeout -k 5 $(left 60) $G --decode-only --skip-qualify --rev "$NINFER_REV+r47" --peer $O/peer.jsonl \
      --peer-called $O/peer_called.jsonl --json $O/bench_$i.jsonl > $O/bench_$i.txt 2>&1
  echo "bench rc=$?" >> $O/bench_$i.txt
  t "bench decode $i"
done
long="The history of the city begins with a small settlement on the river, where traders from the north and the south met every spring to exchange salt, furs, grain and iron tools."
for fx in qwen35_r2 qwen3_next qwen35_moe; do
  timeout $(left 40) $B compare --model tests/fixtures/tiny/$fx --prompt "$long" --tokens 16 --lanes 8 \
      >> $O/compare.txt 2>&1 || echo "FAILED $fx lanes 8" >> $O/compare.txt
done
job_compare_gdn mini
t compare
tar czf $OUT/r47.tgz -C /tmp r47-out
{
echo "===== summary"
cat $O/context.txt
tail -3 $O/peer.txt
grep -hE "vs cpu|FAILED" $O/compare.txt | awk '{print substr($0, 1, 60) " ... " substr($0, length($0) - 60)}'
echo "decode: $(grep -E '^qualify \(seed' $O/qualify_decode.txt) $(tail -1 $O/qualify_decode.txt)"
grep FAIL $O/qualify_decode.txt | head -5
for i in 1 2; do
  echo "-- bench $i: $(grep -E '^copy' $O/bench_$i.txt)"
  python3 - $O/bench_$i.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    s, ro = r["shape"], r["route"]
    keep = "vx" in ro or ("lanes=1" in s and "r2w8v_" in ro)
    if keep:
        print(f"{s[:7]:7} {s[-9:]:9} {ro[:44]:44} {r['median_us']:9.2f} "
              f"{r.get('fraction') or 0:5.2f} peer {r.get('peer_median_us') or 0:8.2f}")
PY
done
t done
} | tee $OUT/summary.txt
