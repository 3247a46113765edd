#!/usr/bin/env bash
# bench/tune h100-run1, part 4 (device job; carry .gpu/w56 (`bash bench/tune/h100-run1/
# stage-warm.sh`) and .gpu/h100p (`python3 bench/tune/h100-run1/variants.py`)): is the
# SmolLM2 t8 loss the weights' warmth? SmolLM2's linear_exact t8 keys tuned twice each way,
# alternating: the default rotation over copies exceeding twice the L2, and one warm copy
# (NINFER_TUNE_WEIGHT_COPIES=1); then the warm tune's t8 picks merged into the full profile
# and SmolLM2's decode with it, with the no-t8 profile and with the heuristics, alternating.
# Outputs under $OUT: warm-*.jsonl/.txt, warm.toml, smol-warm.txt, summary.txt.
# BUILD (default w56): the staged folder .gpu/BUILD whose binary runs (any build from
# ef8331b on has NINFER_TUNE_WEIGHT_COPIES, e.g. bench/gdn run 55's r55).
set -u
T0=$(date +%s); LIMIT=${LIMIT:-200}
source scripts/gpu/job-lib.sh
BUILD=${BUILD:-w56}
job_init $BUILD "(bench/tune h100-run1 part 4: the t8 keys warm and cold)"
T="--synthetic smollm2-135m --weights q4_g64 --tokens 8 --family linear_exact"
for r in 1 2; do for c in rot warm; do
    t "tune $c $r"
    NINFER_TUNE_WEIGHT_COPIES=$([ $c = warm ] && echo 1) timeout $(left 60) $B tune $T \
        --out $O/$c-$r.toml --json $OUT/warm-$c-$r.jsonl > $OUT/warm-$c-$r.txt 2>&1
done; done
cp .gpu/h100p/full.toml $OUT/warm.toml
NINFER_TUNE_WEIGHT_COPIES=1 timeout $(left 60) $B tune $T --out $OUT/warm.toml > $OUT/warm-merge.txt 2>&1
S="--synthetic smollm2-135m --weights q4_g64 --lanes 1,8 --prompt 512 --decode-tokens 256 --device cuda"
for r in 1 2 3; do for v in warm no-t8 full heur; do
    case $v in heur) p=--no-profile;; warm) p="--profile $OUT/warm.toml";; *) p="--profile .gpu/h100p/$v.toml";; esac
    timeout $(left 30) $B bench model $S $p 2>&1 | grep -E '^decode +[18] ' \
        | awk -v v=$v -v r=$r '{print "round", r, v, "lanes", $2, "step_us", $6}'
done; done > $OUT/smol-warm.txt
{
echo "===== summary"; cat $O/context.txt
grep -h -E '^[0-9]+ keys tuned' $OUT/warm-*.txt
python3 - "$OUT" <<'PY'
import json, sys, glob
out = sys.argv[1]
for f in sorted(glob.glob(f"{out}/warm-*-*.jsonl")):
    for l in open(f):
        r = json.loads(l)
        c = r.get("candidates") or []
        d, w = r.get("default"), r.get("winner")
        def us(i):
            try: return f"{c[i]['median_us']:.2f} {c[i]['split']}"
            except Exception: return "?"
        print(f.split('/')[-1][5:-6], r.get("key"), "default", us(d), "| winner", us(w))
PY
sort -k3,3 -k5,5n $OUT/smol-warm.txt | awk '{k=$3" lanes "$5; s[k]+=$7; n[k]++} END {for (k in s) printf "%-18s %8.1f us (mean of %d)\n", k, s[k]/n[k], n[k]}' | sort
t done
} | tee $OUT/summary.txt
