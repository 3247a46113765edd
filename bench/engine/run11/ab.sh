#!/usr/bin/env bash
# Run 11b: is the 8-lane SmolLM2 --profile-ab gap of run 11 real? Longer timings, twice.
set -u
F=.gpu/final
xz -dc $F/ninfer.xz > /tmp/ninfer && chmod +x /tmp/ninfer
export NINFER_CACHE_DIR=/tmp/ninfer-cache
mkdir -p $NINFER_CACHE_DIR && tar xzf $F/kc.tgz -C $NINFER_CACHE_DIR
export NINFER_REV=$(cat $F/REV)
for i in 1 2; do
  echo "\$ ninfer bench model --synthetic smollm2-135m --weights q4_g64 --prompt 16 --warmup 0 --lanes 1,8 --decode-tokens 256 --profile run1.toml --profile-ab   (pass $i)"
  timeout 60 /tmp/ninfer bench model --synthetic smollm2-135m --weights q4_g64 --prompt 16 --warmup 0 --lanes 1,8 --decode-tokens 256 --profile $F/run1.toml --profile-ab --json $OUT/ab$i.jsonl 2>&1 | grep -E "^(what|prompt|decode)|error|routes"
done
