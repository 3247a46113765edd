#!/usr/bin/env bash
# bench/gdn run 21 (device job, carry [".gpu/$BUILD", ".gpu/r18base"], BUILD default r21; ~4 min, ~9 with the 27B
# parts): main with run 19's patches (r21) on whichever GPU the call gets. PARTS (default
# "job tune 27b 27bbase" on an H200, "job 27b 27bbase" on another GPU):
#   job      the prefill qualify of r21 and of the template variant VAR (default el:
#            el-late.patch; orig: run 22's), through NINFER_TEMPLATES, the prefill bench
#            A/B/A (r21, VAR, r21; fla's figures from run 3, H200), compare
#            on the GDN fixtures and the bf16 qwen3.6-mini at 1 and 8 lanes (its 300-token
#            prompt takes PrefillStages::FAST, now the one-buffer v32 scan)
#   tune     (H200) `ninfer tune --family gdn_step` into a copy of tuning/nvidia-h200.toml:
#            the installed profile's other 39 routes are carried over (their sources are
#            unchanged), the 2 gdn_step routes re-timed; `tune check` of the result
#   27b      the synthetic 27B q4_g64 bf16 (run17/job_27b.sh) on r21 with that profile
#            (or, without the tune part, the installed one, carried)
#   27bbase  the same on r18base (main before the patches) with the installed profile
#            less its `sources` lines (that build predates them; its template set is the
#            profile's)
# Outputs in $OUT: r21.tgz (/tmp/run21), compare.txt, tune.txt, the tuned profile, the 27B
# parts' tgz, summary.txt (also printed last).
set -u
T0=$(date +%s); LIMIT=${LIMIT:-585}
source scripts/gpu/job-lib.sh
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  PARTS=${PARTS:-job tune 27b 27bbase}
else
  PARTS=${PARTS:-job 27b 27bbase}
fi
BUILD=${BUILD:-r21}   # the staged build (.gpu/$BUILD)
VAR=${VAR:-el}   # the template variant beside it: .gpu/$BUILD/$VAR/templates; none: no variant
EL=$PWD/.gpu/$BUILD/$VAR/templates
P=bench/gdn/run3
case $BUILD in
  r21) job_init r21 "(r21: main with run 19's patches, FAST on the one-buffer v32 scan)" ;;
  *) job_init $BUILD "($BUILD)" ;;
esac
G=$(job_example $BUILD gdn_gpu)
R=/tmp/run21   # run17/job_27b.sh's job_init empties /tmp/$BUILD-out
rm -rf $R && mkdir -p $R && cp $O/context.txt $R/
PROFILE=tuning/nvidia-h200.toml
for part in $PARTS; do
  case $part in
  job)
    timeout $(left 60) $G --prefill-only --skip-bench --qualify-json $R/qualify.jsonl > $R/qualify.txt 2>&1
    echo "qualify rc=$?" >> $R/qualify.txt
    if [ $VAR != none ]; then
    NINFER_TEMPLATES=$EL timeout $(left 60) $G --prefill-only --skip-bench --qualify-json $R/qualify_$VAR.jsonl > $R/qualify_$VAR.txt 2>&1
    echo "qualify rc=$?" >> $R/qualify_$VAR.txt
    fi
    t "qualify"
    bench() {
      timeout $(left 90) $G --prefill-only --skip-qualify --rev "$NINFER_REV${2:-}" --peer $P/peer.jsonl \
          --peer-called $P/peer_called.jsonl --json $R/bench_$1.jsonl > $R/bench_$1.txt 2>&1
      echo "bench rc=$?" >> $R/bench_$1.txt
      t "bench $1"
    }
    bench a
    if [ $VAR != none ]; then NINFER_TEMPLATES=$EL bench $VAR "+$VAR"; bench b; fi
    long="The history of the city begins with a small settlement on the river, where traders from the north and the south met every spring to exchange salt, furs, grain and iron tools."
    for fx in qwen35_r2 qwen3_next qwen35_moe; do
      timeout $(left 60) $B compare --model tests/fixtures/tiny/$fx --prompt "$long" --tokens 16 >> $R/compare.txt 2>&1 || echo "FAILED $fx" >> $R/compare.txt
    done
    for lanes in 1 8; do
      timeout $(left 120) $B compare --synthetic qwen3.6-mini --synthetic-prompt 300 --tokens 16 \
          --activations bf16 --lanes $lanes --tolerance 5e-2 --near-ties 4 >> $R/compare.txt 2>&1 || echo "FAILED qwen3.6-mini lanes $lanes" >> $R/compare.txt
    done
    t "compare" ;;
  tune)
    cp $PROFILE $R/nvidia-h200.toml
    C="tune --synthetic qwen3.6-27b,qwen3.6-35b-a3b --weights q4_g64 --tokens 1 --lanes 1 --gdn-state f32 --family gdn_step --reps 10 --rounds 3 --out $R/nvidia-h200.toml --json $R/tune_gdn.jsonl"
    echo "\$ ninfer $C" > $R/tune.txt
    timeout $(left 150) $B $C >> $R/tune.txt 2>&1; echo "tune rc=$?" >> $R/tune.txt
    $B tune check $R/nvidia-h200.toml >> $R/tune.txt 2>&1; echo "check rc=$?" >> $R/tune.txt
    mkdir -p /tmp/keep && cp $R/nvidia-h200.toml /tmp/keep/r21-h200.toml
    PROFILE=/tmp/keep/r21-h200.toml
    t "tune" ;;
  27b)
    LIMIT=$(left 200) N=$BUILD PROFILE=$PROFILE bash bench/gdn/run17/job_27b.sh > $R/27b.txt 2>&1
    job_use $BUILD
    t "27b" ;;
  27bbase)
    mkdir -p /tmp/keep && grep -v '^sources = ' tuning/nvidia-h200.toml > /tmp/keep/base-h200.toml
    LIMIT=$(left 200) N=r18base PROFILE=/tmp/keep/base-h200.toml bash bench/gdn/run17/job_27b.sh > $R/27bbase.txt 2>&1
    job_use $BUILD
    t "27bbase" ;;
  esac
done
tar czf $OUT/$BUILD.tgz -C /tmp run21
cp $R/compare.txt $R/tune.txt $R/nvidia-h200.toml $OUT/ 2>/dev/null   # a call brings back 8 files
{
echo "===== summary"
cat $R/context.txt
for f in qualify qualify_$VAR; do [ $f = qualify_none ] && continue; [ -f $R/$f.txt ] && echo "$f: $(grep -E '^qualify \(seed' $R/$f.txt) $(tail -1 $R/$f.txt)"; done
[ -f $R/compare.txt ] && grep -hE "vs cpu|FAILED" $R/compare.txt | awk '{print substr($0, 1, 60) " ... " substr($0, length($0) - 60)}'
[ -f $R/tune.txt ] && grep -E "kept|keys tuned|uses tuning|routes by family|rc=|note" $R/tune.txt | cut -c1-220
for f in 27b 27bbase; do [ -f $R/$f.txt ] && { echo "== $f"; grep -E "^prompt|^decode|tokens/s|rc=" $R/$f.txt | cut -c1-200 | head -10; }; done
[ -f $R/bench_a.jsonl ] && python3 bench/gdn/run16/table.py $R/qualify.jsonl $(ls $R/bench_a.jsonl $R/bench_$VAR.jsonl $R/bench_b.jsonl 2>/dev/null) | grep -E "^T |f16|wu_f16|scan_f16|prep" | grep -vE "tf32|prep\+wu_[t3d]" | cut -c1-130
t done
} | tee $OUT/summary.txt
