#!/usr/bin/env bash
# Run 3: the default model (SmolLM2-135M-Instruct, Q4_1 GGUF) on the GPU after v42 and v43
# (issue 8's SmolLM2 lines). The model reaches the machine in parts, one call each, made
# back to back (scripts/gpu/model-parts.sh: seven parts of 15 MB at a 48 MB tracked tree); the first
# six calls copy .gpu/part.a? into /root/models, this job runs in the call that carries
# the last part (.gpu/part.ag) with .gpu/v43 (bench/kernels/v43/stage.sh) and
# .gpu/sha256 (.gpu-parts/SHA256).
#   model    joins the parts, checks the SHA-256
#   compare  ninfer compare on the model (cpu against cuda, f32 weights, greedy, 64 tokens)
#   bench    ninfer bench model, q4_g64 weights (as every earlier run): prompt 4096, decode
#            at 1 and 8 lanes over 256 steps, the installed profile against the heuristics
#            (--profile-ab); then 1 lane over 64 steps
# Output: $OUT/smollm2.tgz; summary last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-300}
source scripts/gpu/job-lib.sh
job_init v43 "(v43)"
mkdir -p $NINFER_CACHE_DIR/models
M=$NINFER_CACHE_DIR/models/SmolLM2-135M-Instruct.Q4_1.gguf
cat /root/models/part.a[a-f] .gpu/part.ag > $M
sha256sum $M | tee $O/model_sha.txt | cut -d' ' -f1 | cmp -s - .gpu/sha256 && echo "sha256 ok" >> $O/context.txt || echo "SHA256 MISMATCH" >> $O/context.txt
long="The history of the city begins with a small settlement on the river, where traders from the north and the south met every spring to exchange salt, furs, grain and iron tools."
timeout $(left 60) $B compare --model $M --prompt "$long" --tokens 64 --json $O/compare.jsonl > $O/compare.txt 2>&1
echo "compare rc=$?" >> $O/compare.txt
t compare
timeout $(left 150) $B bench model --model $M --weights q4_g64 --prompt 4096 --lanes 1,8 --decode-tokens 256 --profile-ab --json $O/bench.jsonl > $O/bench.txt 2>&1
echo "bench rc=$?" >> $O/bench.txt
t bench
timeout $(left 60) $B bench model --model $M --weights q4_g64 --prompt 512 --lanes 1 --decode-tokens 64 --json $O/bench64.jsonl > $O/bench64.txt 2>&1
echo "bench rc=$?" >> $O/bench64.txt
t bench64
tar czf $OUT/smollm2.tgz -C /tmp v43-out
echo "===== summary"
cat $O/context.txt
tail -n 3 $O/compare.txt | cut -c1-180
grep -E '^(what|prompt|decode) |rc=' $O/bench.txt $O/bench64.txt | cut -c1-130
t done
