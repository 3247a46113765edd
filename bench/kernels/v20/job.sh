#!/usr/bin/env bash
# v20 job: the mma GEMV's accumulator chains interleaved (set a) and, on top, the q4
# conversion's mask-and-or in one LOP3 (set b), against main's templates (base), all three
# run by one binary through NINFER_TEMPLATES in one machine start. Steps (cut to LIMIT):
#   qualify  ninfer qualify --filter linear_exact_mma, sets a and b
#   kernels  bench kernels 'linear_exact_mma step|linear_exact_mma q4_g64', base a b, x2
#   27b      bench model synthetic 27B q4_g64 --lanes 8 --no-profile, base a b
# Needs (carried): .gpu/v20/{ninfer.xz,REV,kc-*.tgz,sets/{base,a,b}/templates}.
# Output: $OUT/v20.tgz; summary last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-560}
left() { local l=$((LIMIT - ($(date +%s) - T0))); [ $l -lt 1 ] && l=1; [ $l -gt $1 ] && l=$1; echo $l; }
t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
G=.gpu/v20
N=/tmp/v20-ninfer
xz -dc $G/ninfer.xz > $N && chmod +x $N
export NINFER_REV="$(cat $G/REV)+v20"
export NINFER_CACHE_DIR=/tmp/v20-cache
mkdir -p $NINFER_CACHE_DIR && for f in $G/kc-*.tgz; do tar xzf $f -C $NINFER_CACHE_DIR; done
O=/tmp/v20-out; rm -rf $O; mkdir -p $O
{ echo "revision: $NINFER_REV"; date -u +%FT%TZ;
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $O/context.txt
( sleep $((LIMIT - 8)); tar czf $OUT/partial.tgz -C /tmp v20-out ) > /dev/null 2>&1 &
PARTIAL=$!
set_run() { local S=$1; shift; NINFER_TEMPLATES=$G/sets/$S/templates "$@"; }
for S in a b; do
  set_run $S timeout $(left 90) $N qualify --filter linear_exact_mma --json $O/qualify_$S.jsonl > $O/qualify_$S.txt 2>&1
  echo "qualify rc=$?" >> $O/qualify_$S.txt
done
t qualify
for i in 1 2; do for S in base a b; do
  set_run $S timeout $(left 60) $N bench kernels --filter "linear_exact_mma step|linear_exact_mma q4_g64" \
    --json $O/bench_kernels_${S}_$i.jsonl >> $O/bench_kernels_$S.txt 2>&1
  echo "rc=$?" >> $O/bench_kernels_$S.txt
done; done
t kernels
B="bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 16 --warmup 0 --decode-tokens 64 --no-profile --lanes 8"
for S in base a b; do
  echo "\$ ninfer $B" > $O/bench_27b_$S.txt
  set_run $S timeout $(left 120) $N $B --json $O/bench_27b_$S.jsonl >> $O/bench_27b_$S.txt 2>&1
  echo "rc=$?" >> $O/bench_27b_$S.txt
  t "27b $S"
done
pkill -P $PARTIAL sleep 2> /dev/null; kill $PARTIAL 2> /dev/null
tar czf $OUT/v20.tgz -C /tmp v20-out
echo "===== summary"
cat $O/context.txt
for S in a b; do echo "$S: $(grep -E 'checks:|rc=' $O/qualify_$S.txt | tr '\n' ' ' | cut -c1-160)"; done
python3 - "$O" <<'PY'
import json, sys, collections
o = sys.argv[1]
d = collections.defaultdict(dict)
for s in ("base", "a", "b"):
    for i in (1, 2):
        try:
            for l in open(f"{o}/bench_kernels_{s}_{i}.jsonl"):
                r = json.loads(l)
                if "mma" in r["route"]:
                    d[(r["what"][:22], r["shape"])].setdefault(s, []).append(round(r["median_us"], 1))
        except OSError:
            pass
for k, v in d.items():
    print(f"{k[0]:24} {k[1]:22}", " ".join(f"{s}={v.get(s)}" for s in ("base", "a", "b")))
PY
for S in base a b; do echo "$S: $(grep -E '^decode  ' $O/bench_27b_$S.txt | cut -c1-100)"; done
t done
