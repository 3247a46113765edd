#!/usr/bin/env bash
# bench/gdn run 45, second call (carry [".gpu/r45"]; ~1.5 min): the same build with the
# U-as-f16 route kept off dims where dv is not a multiple of 8 (its f16 rows' TMA needs
# 16-byte rows; the first call's qualify stopped there) and as the engine's fast route:
# the GDN prefill qualify, then `ninfer compare` against the cpu backend (the GDN
# fixtures, the bf16 qwen3.6-mini at 1 and 8 lanes, whose prompt takes that route).
set -u
T0=$(date +%s); LIMIT=${LIMIT:-300}
source scripts/gpu/job-lib.sh
job_init r45 "(U as f16, the engine's route; second call)"
G=$(job_example r45 gdn_gpu)
timeout -k 5 $(left 120) $G --prefill-only --skip-bench --qualify-json $O/qualify_prefill.jsonl > $O/qualify_prefill.txt 2>&1
echo "qualify rc=$?" >> $O/qualify_prefill.txt
t "qualify prefill"
job_compare_gdn mini
t compare
tar czf $OUT/r45b.tgz -C /tmp r45-out
{
echo "===== summary"
cat $O/context.txt
echo "prefill: $(grep -E '^qualify \(seed' $O/qualify_prefill.txt) $(tail -1 $O/qualify_prefill.txt)"
grep FAIL $O/qualify_prefill.txt | head -5
echo "worst o rel L2, two-warpgroup scan: $(grep 'wgs_d128_v64_s2)' $O/qualify_prefill.txt | awk '{print $(NF-2)}' | sort -g | tail -1), with U f16: $(grep 'wgs_d128_v64_s2_u16)' $O/qualify_prefill.txt | awk '{print $(NF-2)}' | sort -g | tail -1)"
grep -hE "vs cpu|FAILED" $O/compare.txt | awk '{print substr($0, 1, 60) " ... " substr($0, length($0) - 60)}'
t done
} | tee $OUT/summary.txt
