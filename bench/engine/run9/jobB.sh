#!/usr/bin/env bash
# Job B (session 4, run 9): fused vs unfused greedy decode on SmolLM2 q4_g64, then the
# tuning job (scripts/gpu/tune.sh: two tune runs, compare, check, decode with/without the
# profile). Everything lands in one archive (the machine returns at most 8 files).
set -u
start=$(date +%s)
export NINFER_CACHE_DIR=/tmp/ninfer-cache
[ -x .gpu/ninfer ] || { xz -dc .gpu/ninfer.xz > .gpu/ninfer && chmod +x .gpu/ninfer; }
M=$NINFER_CACHE_DIR/models/SmolLM2-135M-Instruct.Q4_1.gguf
ls -la $M || { mkdir -p $NINFER_CACHE_DIR/models; cat /root/models/part.aa /root/models/part.ab /root/models/part.ac > $M; }
FINAL=$OUT; export OUT=$FINAL/b; mkdir -p $OUT
N=.gpu/ninfer
t() { echo "[$(( $(date +%s) - start )) s] $*"; }
: > $OUT/fusion.txt
for f in "" --unfused; do
  echo "\$ ninfer run --chat --device cuda --weights q4_g64 $f --max-tokens 300 --temperature 0 \"Write a long story about the sea.\"" >> $OUT/fusion.txt
  timeout 60 $N run --chat --device cuda --weights q4_g64 $f --max-tokens 300 --temperature 0 "Write a long story about the sea." > $OUT/gen$f.txt 2>>$OUT/fusion.txt
done
cmp -s $OUT/gen.txt $OUT/gen--unfused.txt && echo "greedy text fused == unfused ($(wc -c < $OUT/gen.txt) bytes)" >> $OUT/fusion.txt || echo "greedy text DIFFERS fused vs unfused" >> $OUT/fusion.txt
t fusion
SKIP_27B=1 timeout 420 bash scripts/gpu/tune.sh > $OUT/tune_job.txt 2>&1; t "tune.sh rc $?"
tar czf $FINAL/jobB.tgz -C $FINAL b
cp $OUT/run1.toml $FINAL/run1.toml 2>/dev/null
grep -v "^note:" $OUT/fusion.txt
tail -60 $OUT/tune_job.txt
