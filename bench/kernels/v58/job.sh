#!/usr/bin/env bash
# v58 job (the last call, carry .gpu/v58/p/part09; the calls of carry.sh left the rest in
# /root/v58): what the bf16 mode's
# decode linears cost in perplexity. SmolLM2's GGUF re-encoded to q4_g64 and q8_g32,
# ninfer-perplexity --quick with --prefill-chunk 8, so that every linear runs at eight
# rows, the decode lanes' shape (the exact route's mma GEMV; in bf16 mode its bf16-rounded
# tiles), --activations exact and bf16; and q4_g64 exact without chunks (the prefill path).
set -u
T0=$(date +%s); LIMIT=${LIMIT:-520}
R=/root/v58
cp .gpu/v58/p/part09 $R/
cat $R/part0? > $R/model.gguf
[ "$(sha256sum $R/model.gguf | cut -c1-64)" = "$(cat $R/model.sha)" ] || { echo "model SHA-256 differs"; exit 1; }
mkdir -p .gpu && rm -rf .gpu/v56 && cp -r $R/v56 .gpu/v56
source scripts/gpu/job-lib.sh
job_init v56 "(bf16-rounded mma tiles)"
P=/tmp/v58-ppl
xz -dc $R/ninfer-perplexity.xz > $P && chmod +x $P
O2=/tmp/v58-out && rm -rf $O2 && mkdir -p $O2 && cp $O/context.txt $O2/
run() {  # name, then the flags
  local name=$1; shift
  echo "\$ ninfer-perplexity wiki.test.raw --model SmolLM2-135M-Instruct.Q4_1.gguf --quick --device cuda $*" > $O2/$name.txt
  timeout $(left 120) $P $R/wiki.test.raw --model $R/model.gguf --quick --device cuda "$@" --json $O2/$name.json >> $O2/$name.txt 2>&1
  echo "rc=$?" >> $O2/$name.txt
  t $name
}
for w in q4_g64 q8_g32; do
  for act in exact bf16; do
    run ${w}_${act}_chunk8 --weights $w --activations $act --prefill-chunk 8
  done
done
run q4_g64_exact --weights q4_g64
tar czf $OUT/v58.tgz -C /tmp v58-out
echo "===== summary"
cat $O2/context.txt
for f in $O2/*.txt; do [ $f = $O2/context.txt ] && continue; echo "-- $(basename $f .txt)"; grep -iE "ppl|perplexity|tokens/s|rc=|error" $f | tail -4 | cut -c1-160; done
t done
