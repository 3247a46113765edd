#!/usr/bin/env bash
# The default model (SmolLM2-135M-Instruct, Q4_1 GGUF) on the GPU (issue 8's SmolLM2
# lines: decode >= 2,000 tokens/s at 1 lane, prompt at 4096 >= 52,000 tokens/s, greedy
# output equal to the cpu backend's). The model reaches the machine in four parts carried
# by four calls made back to back (scripts/gpu/model-parts.sh explains why); this job runs
# in the call that carries the last part, once /root/models holds the first three.
#   model    joins the parts, checks the SHA-256 against .gpu-sha (the file's, made here)
#   compare  ninfer compare on the model (cpu against cuda, greedy, 64 tokens)
#   bench    ninfer bench model: prompt 512 and 4096, decode at 1 and 8 lanes, 256 steps,
#            q4_g64 weights (as every earlier run), the profile against the heuristics
# Needs: /root/models/part.a{a,b,c}, carried .gpu/part.ad and .gpu/sha256, the binary at
# /tmp/v14-ninfer with its kernels in /tmp/v14-cache (left by bench/kernels/v14/job1.sh in
# the same warm machine) or carried as .gpu/v14/{ninfer.xz,REV,kc.tgz}.
# Output: $OUT/smollm2.tgz; summary last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-300}
left() { local l=$((LIMIT - ($(date +%s) - T0))); [ $l -lt 1 ] && l=1; [ $l -gt $1 ] && l=$1; echo $l; }
N=/tmp/v14-ninfer
export NINFER_CACHE_DIR=/tmp/v14-cache
if [ ! -x $N ]; then
  xz -dc .gpu/v14/ninfer.xz > $N && chmod +x $N
  mkdir -p $NINFER_CACHE_DIR && tar xzf .gpu/v14/kc.tgz -C $NINFER_CACHE_DIR
fi
export NINFER_REV="$(cat .gpu/v14/REV 2>/dev/null || cat /tmp/v14-REV)"
O=/tmp/smollm2-out; rm -rf $O; mkdir -p $O
{ echo "revision: $NINFER_REV"; date -u +%FT%TZ;
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $O/context.txt
mkdir -p $NINFER_CACHE_DIR/models
M=$NINFER_CACHE_DIR/models/SmolLM2-135M-Instruct.Q4_1.gguf
cat /root/models/part.aa /root/models/part.ab /root/models/part.ac .gpu/part.ad > $M
sha256sum $M | tee $O/model_sha.txt | cut -d' ' -f1 | cmp -s - .gpu/sha256 && echo "sha256 ok" >> $O/context.txt || echo "SHA256 MISMATCH" >> $O/context.txt
long="The history of the city begins with a small settlement on the river, where traders from the north and the south met every spring to exchange salt, furs, grain and iron tools."
timeout $(left 60) $N compare --model $M --prompt "$long" --tokens 64 --json $O/compare.jsonl > $O/compare.txt 2>&1
echo "compare rc=$?" >> $O/compare.txt
timeout $(left 150) $N bench model --model $M --weights q4_g64 --prompt 512,4096 --lanes 1,8 --decode-tokens 256 --profile-ab --json $O/bench.jsonl > $O/bench.txt 2>&1
echo "bench rc=$?" >> $O/bench.txt
tar czf $OUT/smollm2.tgz -C /tmp smollm2-out
echo "===== summary"
cat $O/context.txt
tail -n 4 $O/compare.txt | cut -c1-160
grep -vE "^\s*$" $O/bench.txt | tail -n 14 | cut -c1-160
