#!/usr/bin/env bash
# bench/tune h100-run1, part 3 (device; carry .gpu/r54 and .gpu/h100p from variants.py):
# SmolLM2 q4_g64 decode at 1 and 8 lanes with each variant of the H100 profile, alternating.
# VARIANTS (default part 3's "full no-t8 no-attn neither heur"); part 5:
# VARIANTS="full no-o no-gu no-qkv no-step heur". BUILD (default r54): the staged build.
B=/tmp/h100p-ninfer; xz -dc .gpu/${BUILD:-r54}/ninfer.xz > $B && chmod +x $B
export NINFER_CACHE_DIR=/tmp/h100p-cache
S="--synthetic smollm2-135m --weights q4_g64 --lanes 1,8 --prompt 512 --decode-tokens 256 --device cuda"
$B bench model $S --no-profile > /dev/null 2>&1   # compile
for r in 1 2 3; do for v in ${VARIANTS:-full no-t8 no-attn neither heur}; do
  if [ $v = heur ]; then p=--no-profile; else p="--profile .gpu/h100p/$v.toml"; fi
  $B bench model $S $p 2>&1 | grep -E '^decode +[18] ' | awk -v v=$v -v r=$r '{print "round", r, v, "lanes", $2, "step_us", $6}'
done; done | tee $OUT/smol-variants.txt
