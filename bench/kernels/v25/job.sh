#!/usr/bin/env bash
# v25 job (prepared 2026-11-30, not run): v23 (the mma GEMV's cp.async ring with the
# scale bits; its own binary) and v24 (the ring GEMV's flip folded into its masks; a
# template set run by main's binary) against main, one machine start. Stage with
# bench/kernels/v25/stage.sh. Steps (cut to LIMIT):
#   qualify  v24: qualify --filter linear_exact_ring; v23: qualify --filter linear_exact_mma
#   kernels  bench kernels 'linear_exact_mma step|linear_exact_mma q4_g64|linear_exact prologue'
#            for main, v24 and v23, two rounds
#   27b      bench model synthetic 27B q4_g64 --lanes 1,8 --no-profile for main, v24, v23
# Neither set has a tuning profile: the 27B runs use the heuristics for all three. A set
# that lands needs scripts/gpu/tune.sh for it afterwards.
# Needs (carried): .gpu/v25/*. Output: $OUT/v25.tgz; summary last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-580}
left() { local l=$((LIMIT - ($(date +%s) - T0))); [ $l -lt 1 ] && l=1; [ $l -gt $1 ] && l=$1; echo $l; }
t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
G=.gpu/v25
for b in main ring2; do xz -dc $G/$b.xz > /tmp/v25-$b && chmod +x /tmp/v25-$b; done
export NINFER_REV="$(cat $G/REV)"
export NINFER_CACHE_DIR=/tmp/v25-cache
mkdir -p $NINFER_CACHE_DIR && for f in $G/kc-*.t?z; do tar xf $f -C $NINFER_CACHE_DIR; done
V24=$PWD/$G/v24/templates
O=/tmp/v25-out; rm -rf $O; mkdir -p $O
{ echo "revision: $NINFER_REV (main), + v24/xor-fold.patch (v24), + v23/ring2.patch (v23)"; date -u +%FT%TZ;
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $O/context.txt
( sleep $((LIMIT - 8)); tar czf $OUT/partial.tgz -C /tmp v25-out ) > /dev/null 2>&1 &
PARTIAL=$!
# run SET SECONDS CMD...: SET is main, v24 or v23; at most SECONDS (cut to LIMIT).
run() {
  local s=$1 lim=$(left $2); shift 2
  case $s in
    main) timeout $lim /tmp/v25-main "$@" ;;
    v24) NINFER_TEMPLATES=$V24 timeout $lim /tmp/v25-main "$@" ;;
    v23) timeout $lim /tmp/v25-ring2 "$@" ;;
  esac
}
run v24 90 qualify --filter linear_exact_ring --json $O/qualify_v24.jsonl > $O/qualify_v24.txt 2>&1
echo "qualify rc=$?" >> $O/qualify_v24.txt
run v23 90 qualify --filter linear_exact_mma --json $O/qualify_v23.jsonl > $O/qualify_v23.txt 2>&1
echo "qualify rc=$?" >> $O/qualify_v23.txt
t qualify
F="linear_exact_mma step|linear_exact_mma q4_g64|linear_exact prologue"
for i in 1 2; do for s in main v24 v23; do
  run $s 40 bench kernels --filter "$F" --json $O/bench_kernels_${s}_$i.jsonl >> $O/bench_kernels_$s.txt 2>&1
  echo "rc=$?" >> $O/bench_kernels_$s.txt
done; done
t kernels
B="bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 16 --warmup 0 --decode-tokens 64 --no-profile --lanes 1,8"
for s in main v24 v23; do
  echo "\$ ninfer $B ($s)" > $O/bench_27b_$s.txt
  run $s 130 $B --json $O/bench_27b_$s.jsonl >> $O/bench_27b_$s.txt 2>&1
  echo "rc=$?" >> $O/bench_27b_$s.txt
  t "27b $s"
done
pkill -P $PARTIAL sleep 2> /dev/null; kill $PARTIAL 2> /dev/null
tar czf $OUT/v25.tgz -C /tmp v25-out
echo "===== summary"
cat $O/context.txt
for s in v24 v23; do echo "$s: $(grep -E 'checks:|rc=' $O/qualify_$s.txt | tr '\n' ' ' | cut -c1-160)"; done
python3 - "$O" <<'PY'
import json, sys, collections
o = sys.argv[1]
d = collections.defaultdict(dict)
for s in ("main", "v24", "v23"):
    for i in (1, 2):
        try:
            for l in open(f"{o}/bench_kernels_{s}_{i}.jsonl"):
                r = json.loads(l)
                if "T=1 " in r["shape"] or "T=8 " in r["shape"]:
                    d[(r["route"][:34], r["shape"])].setdefault(s, []).append(round(r["median_us"], 1))
        except OSError:
            pass
for k, v in sorted(d.items()):
    print(f"{k[0]:35} {k[1]:22}", " ".join(f"{s}={v.get(s)}" for s in ("main", "v24", "v23")))
PY
for s in main v24 v23; do echo "$s:"; grep -E '^decode  |rc=' $O/bench_27b_$s.txt | cut -c1-100; done
t done
