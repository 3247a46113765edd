#!/usr/bin/env bash
# bench/gdn run 53 (device job, carry [".gpu/r53"]; LIMIT s, default 380; any GPU): run 52's
# conv epilogue with the in-projection's K-ranges kept (linear/splitk_sum.cu applies the
# conv to the whole sums) and the gin tiles' default L2 prefetch. In order of need, each
# step capped by what is left:
#   the linear qualify of the conv routes (`_conv_t8`: outputs and windows, the plan's
#   K-ranges added by the second launch among them);
#   the GDN decode qualify (the gin tiles, now prefetching, among them);
#   the engine against the cpu backend, synthetic qwen3.6-mini q4_g64 at 8 lanes, gates-in;
#   the synthetic Qwen3.6-27B q4_g64 at 8 lanes (exact mode, no profile on an H100), one
#   process each: gates-in with the conv epilogue, the default (prep form), gates-in with
#   the conv launch; one kernel cache for all.
# Outputs: $OUT/r53.tgz, summary.txt.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-380}
source scripts/gpu/job-lib.sh
job_init r53 "(bench/gdn run 53: the conv epilogue with K-ranges, the gin prefetch)"
G=$(job_example r53 gdn_gpu)
timeout -k 5 $(left 60) $B qualify --filter _conv_t8 --json $O/qualify_conv.jsonl > $O/qualify_conv.txt 2>&1
echo "qualify rc=$?" >> $O/qualify_conv.txt
t "qualify conv"
job_gdn_qualify decode 40
NINFER_GDN_GATES_IN=1 timeout $(left 30) $B compare --synthetic qwen3.6-mini --weights q4_g64 --lanes 8 \
    > $O/compare_gin.txt 2>&1
echo "rc=$?" >> $O/compare_gin.txt
t "compare gin"
i=0
for v in "NINFER_GDN_GATES_IN=1" "NINFER_GDN_GATES_IN=0" "NINFER_GDN_GATES_IN=1 NINFER_GDN_CONV_EPILOGUE=0"; do
  i=$((i + 1))
  env $v timeout $(left 100) $B bench model --synthetic qwen3.6-27b --weights q4_g64 \
      --lanes 8 --prompt 16 --warmup 0 --decode-tokens 64 --json $O/model27b_$i.jsonl \
      > $O/model27b_$i.txt 2>&1
  echo "$v rc=$?" >> $O/model27b_$i.txt
  t "27B 8 lanes, $v"
done
tar czf $OUT/r53.tgz -C /tmp r53-out
{
echo "===== summary"
cat $O/context.txt
echo "conv: $(grep -E 'checks|passed|FAIL' $O/qualify_conv.txt | tail -3 | tr '\n' ' ') $(tail -1 $O/qualify_conv.txt)"
grep -E "FAIL|fail " $O/qualify_conv.txt | head -5
echo "decode: $(grep -E '^qualify \(seed' $O/qualify_decode.txt) $(tail -1 $O/qualify_decode.txt)"; grep FAIL $O/qualify_decode.txt | head -5
echo "-- compare gin: $(tail -3 $O/compare_gin.txt | tr '\n' ' ' | cut -c1-400)"
for f in $O/model27b_*.txt; do echo "-- $(basename $f): $(grep -iE '^decode|rc=' $f | tail -3 | tr '\n' ' ')"; done
t done
} | tee $OUT/summary.txt
