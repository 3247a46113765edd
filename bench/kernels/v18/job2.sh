#!/usr/bin/env bash
# v18 job 2: the default model at the bench's default decode length (64 steps from a
# 16-token context), which job 1 did not run (it ran 256), with job 1's profile against the
# heuristics; and its greedy text against the cpu. Same binary and kernels as job 1.
# Needs: /root/models/part.a{a,b,c} from the calls before; carried .gpu/part.ad,
# .gpu/sha256, .gpu/v18/{ninfer.xz,REV,kc.tgz}, .gpu/run1.toml (job 1's tuning run 1).
set -u
N=/tmp/v18-ninfer
export NINFER_CACHE_DIR=/tmp/v18b-cache
xz -dc .gpu/v18/ninfer.xz > $N && chmod +x $N
mkdir -p $NINFER_CACHE_DIR/models && tar xzf .gpu/v18/kc.tgz -C $NINFER_CACHE_DIR
export NINFER_REV="$(cat .gpu/v18/REV)"
O=/tmp/v18b-out; rm -rf $O; mkdir -p $O
{ echo "revision: $NINFER_REV"; date -u +%FT%TZ;
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $O/context.txt
M=$NINFER_CACHE_DIR/models/SmolLM2-135M-Instruct.Q4_1.gguf
cat /root/models/part.aa /root/models/part.ab /root/models/part.ac .gpu/part.ad > $M
sha256sum $M | cut -d' ' -f1 | cmp -s - .gpu/sha256 && echo "model sha256 ok" >> $O/context.txt || echo "MODEL SHA256 MISMATCH" >> $O/context.txt
long="The history of the city begins with a small settlement on the river, where traders from the north and the south met every spring to exchange salt, furs, grain and iron tools."
timeout 60 $N compare --model $M --prompt "$long" --tokens 64 --json $O/compare.jsonl > $O/compare.txt 2>&1; echo "rc=$?" >> $O/compare.txt
echo "\$ ninfer bench model --model SmolLM2-135M-Instruct.Q4_1.gguf --weights q4_g64 --prompt 4096 --lanes 1,8 --profile run1.toml --profile-ab" > $O/bench.txt
timeout 90 $N bench model --model $M --weights q4_g64 --prompt 4096 --lanes 1,8 --profile .gpu/run1.toml --profile-ab --json $O/bench.jsonl >> $O/bench.txt 2>&1; echo "rc=$?" >> $O/bench.txt
tar czf $OUT/v18b.tgz -C /tmp v18b-out
echo "===== summary"
cat $O/context.txt
grep -E "identical|DIFFER|PASS|FAIL|rc=" $O/compare.txt | cut -c1-200
grep -E "^prompt  |^decode  |rc=" $O/bench.txt | cut -c1-150
