#!/usr/bin/env bash
# v58 whole-file job (straight after job.sh, on the same warm machine: /root/v58 holds the
# model, the corpus and v56's binary and kernels): q4_g64 with --prefill-chunk 8 on the
# whole wikitext-2 test file, --activations exact and bf16.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-500}
R=/root/v58
[ "$(sha256sum $R/model.gguf | cut -c1-64)" = "$(cat $R/model.sha)" ] || { echo "model SHA-256 differs"; exit 1; }
mkdir -p .gpu && rm -rf .gpu/v56 && cp -r $R/v56 .gpu/v56
source scripts/gpu/job-lib.sh
job_init v56 "(bf16-rounded mma tiles)"
P=/tmp/v58-ppl
xz -dc $R/ninfer-perplexity.xz > $P && chmod +x $P
O2=/tmp/v58w-out && rm -rf $O2 && mkdir -p $O2 && cp $O/context.txt $O2/
for act in bf16 exact; do
  name=q4_g64_${act}_chunk8_whole
  echo "\$ ninfer-perplexity wiki.test.raw --model SmolLM2-135M-Instruct.Q4_1.gguf --device cuda --weights q4_g64 --activations $act --prefill-chunk 8" > $O2/$name.txt
  timeout $(left 230) $P $R/wiki.test.raw --model $R/model.gguf --device cuda --weights q4_g64 --activations $act --prefill-chunk 8 --json $O2/$name.json >> $O2/$name.txt 2>&1
  echo "rc=$?" >> $O2/$name.txt
  t $name
done
tar czf $OUT/v58w.tgz -C /tmp v58w-out
echo "===== summary"
cat $O2/context.txt
for f in $O2/q4*.txt; do echo "-- $(basename $f .txt)"; grep -E "^PPL|rc=" $f | cut -c1-160; done
t done
