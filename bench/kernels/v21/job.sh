#!/usr/bin/env bash
# v21 job: the mma GEMV's scales kept as stored until they multiply (set c, through
# NINFER_TEMPLATES) against the binary's own templates (fec20e0), one machine start.
# Steps (cut to LIMIT):
#   qualify  set c: ninfer qualify --filter linear_exact_mma,linear_mmv_q4
#   kernels  bench kernels 'linear_exact_mma step|linear_exact_mma q4_g64', base and c, x2
#   tune     scripts/gpu/tune.sh for set c (run1.toml: the profile to install if c lands)
#   27b      bench model synthetic 27B q4_g64: base --lanes 8 --no-profile; c --lanes 1,8
#            with set c's profile against the heuristics (--profile-ab)
# Needs (carried): .gpu/fin/{ninfer.xz,REV,kc.tgz}, .gpu/v21/{kc.tgz,templates}.
# Output: $OUT/v21.tgz; summary last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-560}
left() { local l=$((LIMIT - ($(date +%s) - T0))); [ $l -lt 1 ] && l=1; [ $l -gt $1 ] && l=$1; echo $l; }
t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
N=/tmp/v21-ninfer
xz -dc .gpu/fin/ninfer.xz > $N && chmod +x $N
cp .gpu/fin/REV .gpu/REV
export NINFER_REV="$(cat .gpu/fin/REV)"
export NINFER_CACHE_DIR=/tmp/v21-cache
mkdir -p $NINFER_CACHE_DIR && tar xzf .gpu/fin/kc.tgz -C $NINFER_CACHE_DIR && tar xzf .gpu/v21/kc.tgz -C $NINFER_CACHE_DIR
C=$PWD/.gpu/v21/templates
O=/tmp/v21-out; rm -rf $O; mkdir -p $O
{ echo "revision: $NINFER_REV (base) and $NINFER_REV + set c (bench/kernels/v21/set-c.patch)"; date -u +%FT%TZ;
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $O/context.txt
( sleep $((LIMIT - 8)); tar czf $OUT/partial.tgz -C /tmp v21-out ) > /dev/null 2>&1 &
PARTIAL=$!
NINFER_TEMPLATES=$C timeout $(left 90) $N qualify --filter linear_exact_mma,linear_mmv_q4 --json $O/qualify_c.jsonl > $O/qualify_c.txt 2>&1
echo "qualify rc=$?" >> $O/qualify_c.txt
t qualify
for i in 1 2; do
  timeout $(left 40) $N bench kernels --filter "linear_exact_mma step|linear_exact_mma q4_g64" \
    --json $O/bench_kernels_base_$i.jsonl >> $O/bench_kernels_base.txt 2>&1; echo "rc=$?" >> $O/bench_kernels_base.txt
  NINFER_TEMPLATES=$C timeout $(left 40) $N bench kernels --filter "linear_exact_mma step|linear_exact_mma q4_g64" \
    --json $O/bench_kernels_c_$i.jsonl >> $O/bench_kernels_c.txt 2>&1; echo "rc=$?" >> $O/bench_kernels_c.txt
done
t kernels
NINFER_TEMPLATES=$C OUT=$O/tune B=$N timeout $(left 120) bash scripts/gpu/tune.sh > $O/tune_job.txt 2>&1; echo "tune rc $?" >> $O/tune_job.txt
t tune
B="bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 16 --warmup 0 --decode-tokens 64"
echo "\$ ninfer $B --lanes 8 --no-profile" > $O/bench_27b_base.txt
timeout $(left 130) $N $B --lanes 8 --no-profile --json $O/bench_27b_base.jsonl >> $O/bench_27b_base.txt 2>&1; echo "rc=$?" >> $O/bench_27b_base.txt
t "27b base"
P=$O/tune/run1.toml; PA=""; [ -f $P ] && PA="--profile $P --profile-ab"
echo "\$ NINFER_TEMPLATES=<set c> ninfer $B --lanes 1,8 $PA" > $O/bench_27b_c.txt
NINFER_TEMPLATES=$C timeout $(left 200) $N $B --lanes 1,8 $PA --json $O/bench_27b_c.jsonl >> $O/bench_27b_c.txt 2>&1; echo "rc=$?" >> $O/bench_27b_c.txt
t "27b c"
pkill -P $PARTIAL sleep 2> /dev/null; kill $PARTIAL 2> /dev/null
tar czf $OUT/v21.tgz -C /tmp v21-out
echo "===== summary"
cat $O/context.txt
echo "c: $(grep -E 'checks:|rc=' $O/qualify_c.txt | tr '\n' ' ' | cut -c1-160)"
python3 - "$O" <<'PY'
import json, sys, collections
o = sys.argv[1]
d = collections.defaultdict(dict)
for s in ("base", "c"):
    for i in (1, 2):
        try:
            for l in open(f"{o}/bench_kernels_{s}_{i}.jsonl"):
                r = json.loads(l)
                if "mma" in r["route"]:
                    d[(r["what"][:22], r["shape"])].setdefault(s, []).append(round(r["median_us"], 1))
        except OSError:
            pass
for k, v in d.items():
    print(f"{k[0]:24} {k[1]:22}", " ".join(f"{s}={v.get(s)}" for s in ("base", "c")))
PY
tail -n 1 $O/tune/phases.txt 2>/dev/null; grep -h "slower than the heuristics beyond" $O/tune/compare.txt 2>/dev/null | tail -1 | cut -c1-200
for S in base c; do echo "$S:"; grep -E '^decode  |rc=' $O/bench_27b_$S.txt | cut -c1-110; done
t done
