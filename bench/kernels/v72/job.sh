#!/usr/bin/env bash
# v72 job (the last call, carry .gpu/v72/ninfer-perplexity.xz; the calls of carry.sh left
# the rest in /root/v72): what the bf16 mode's prefill (the A16 route: prompts of more than
# 32 rows, here the 4096-token windows, now on the warpgroup kernel) costs in perplexity.
# SmolLM2's GGUF re-encoded to q4_g64, ninfer-perplexity --activations exact and bf16,
# and bf16 with NINFER_WGMMA=0 (the pipelined kernel): --quick, then the whole file.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-500}
R=/root/v72
cat $R/part?? > $R/model.gguf
[ "$(sha256sum $R/model.gguf | cut -c1-64)" = "$(cat $R/model.sha)" ] || { echo "model SHA-256 differs"; exit 1; }
mkdir -p .gpu && rm -rf .gpu/v71 && cp -r $R/v71 .gpu/v71
source scripts/gpu/job-lib.sh
job_init v71 "(A16 warpgroup kernel; ninfer-perplexity of $(git rev-parse --short HEAD 2>/dev/null || echo this tree))"
P=/tmp/v72-ppl
xz -dc .gpu/v72/ninfer-perplexity.xz > $P && chmod +x $P
O2=/tmp/v72-out && rm -rf $O2 && mkdir -p $O2 && cp $O/context.txt $O2/
run() {  # name, NINFER_WGMMA, then the flags
  local name=$1 w=$2; shift 2
  echo "\$ NINFER_WGMMA=$w ninfer-perplexity wiki.test.raw --model SmolLM2-135M-Instruct.Q4_1.gguf --device cuda $*" > $O2/$name.txt
  NINFER_WGMMA=$w timeout $(left 120) $P $R/wiki.test.raw --model $R/model.gguf --device cuda "$@" --json $O2/$name.json >> $O2/$name.txt 2>&1
  echo "rc=$?" >> $O2/$name.txt
  t $name
}
run quick_exact 1 --weights q4_g64 --activations exact --quick
run quick_bf16 1 --weights q4_g64 --activations bf16 --quick
run quick_bf16_pipe 0 --weights q4_g64 --activations bf16 --quick
run whole_bf16 1 --weights q4_g64 --activations bf16
run whole_exact 1 --weights q4_g64 --activations exact
run whole_bf16_pipe 0 --weights q4_g64 --activations bf16
tar czf $OUT/v72.tgz -C /tmp v72-out
echo "===== summary"
cat $O2/context.txt
for f in $O2/*.txt; do [ $f = $O2/context.txt ] && continue; echo "-- $(basename $f .txt)"; grep -iE "ppl|perplexity|tokens/s|rc=|error" $f | tail -3 | cut -c1-160; done
t done
