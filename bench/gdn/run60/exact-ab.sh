#!/usr/bin/env bash
# bench/gdn run 60's exact-mode A/B (device, after run60/job.sh on the same warm machine, which
# left its binary in /tmp/r60-ninfer and its kernel cache in /tmp/r60-cache; carry
# [".gpu/r60"]): the synthetic 27B at 8 lanes, `--conv-epilogue-ab`, exact activations,
# gates-in, `phase`'s templates then `before`'s. The command that made
# run60/h100/exact-{phase,before}.txt (written to $OUT).
B=/tmp/r60-ninfer
export NINFER_REV=$(cat .gpu/r60/REV) NINFER_CACHE_DIR=/tmp/r60-cache NINFER_GDN_GATES_IN=1
nvidia-smi --query-gpu=name --format=csv,noheader
for v in phase before; do
    if [ $v = before ]; then E="X=1"; else E="NINFER_TEMPLATES=$PWD/.gpu/r60/phase/templates"; fi
    env $E timeout 130 $B bench model --synthetic qwen3.6-27b --weights q4_g64 --lanes 8 \
        --prompt 16 --warmup 0 --decode-tokens 64 --activations exact --conv-epilogue-ab \
        > $OUT/exact-$v.txt 2>&1
    echo "$v rc=$?"
    grep -E "^decode|mean step|EPILOGUE" $OUT/exact-$v.txt | tail -6
done
