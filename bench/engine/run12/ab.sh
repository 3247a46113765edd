#!/bin/bash
# The profile against the heuristics after the prologue rule (tune/exact::apply), SmolLM2.
set -u
F=${F:-.gpu/final}
xz -dc $F/ninfer.xz > /tmp/ninfer && chmod +x /tmp/ninfer
export NINFER_CACHE_DIR=/tmp/ninfer-cache && mkdir -p $NINFER_CACHE_DIR && tar xzf $F/kc.tgz -C $NINFER_CACHE_DIR
export NINFER_REV=$(cat $F/REV)
R=$OUT/ab; mkdir -p $R
{ echo "revision: $NINFER_REV"; date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > $R/context.txt
for ctx in 16 3500; do
  B="bench model --synthetic smollm2-135m --weights q4_g64 --prompt 16 --warmup 0 --lanes 1,8 --decode-tokens 256 --decode-context $ctx --profile tuning/nvidia-h200.toml --profile-ab"
  echo "\$ ninfer $B" >> $R/ab.txt
  timeout 60 /tmp/ninfer $B --json $R/ab.jsonl >> $R/ab.txt 2>&1; echo "rc=$?" >> $R/ab.txt
done
grep -E "^\\$|^decode  |rc=" $R/ab.txt | cut -c1-160
