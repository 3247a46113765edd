#!/usr/bin/env bash
# bench/gdn run 25 (device job, carry [".gpu/r23", ".gpu/r25"]; ~3 min): fewer instructions
# in the f16 prefill stages, as three template sets run through run 23's build (main at
# 1857c6d) with NINFER_TEMPLATES, on whichever GPU the call gets: `scan` (scan.patch),
# `wu` (wu.patch), `both` (issue-cut.patch). The prefill qualify of each (every route,
# T = 1 to 4096, both state types), the prefill bench main / both / scan / wu / main / both
# (one process each; fla's figures from run 3, H200), compare on the GDN fixtures and the
# bf16 qwen3.6-mini at 1 and 8 lanes with `both`. Outputs: $OUT/r25.tgz, compare.txt,
# summary.txt (also printed last).
# Later runs reuse it: RUN=26 VARS="wu late all" (the last one also runs compare) with
# .gpu/r$RUN staged by run25/stage.sh; BASE_TEMPLATES=dir puts that template set in the
# main columns (when main's templates are no longer run 23's embedded ones).
set -u
T0=$(date +%s); LIMIT=${LIMIT:-420}
source scripts/gpu/job-lib.sh
job_init r23 "(r23: main; r25's template sets beside it through NINFER_TEMPLATES)"
G=$(job_example r23 gdn_gpu)
P=bench/gdn/run3
RUN=${RUN:-25}; VARS=${VARS:-both scan wu}
V=$PWD/.gpu/r$RUN
BT=${BASE_TEMPLATES:-}
set -- $VARS; FIRST=$1; LAST=${!#}
[ $RUN = 25 ] && LAST=both
for v in $VARS; do
  NINFER_TEMPLATES=$V/$v/templates timeout $(left 60) $G --prefill-only --skip-bench \
      --qualify-json $O/qualify_$v.jsonl > $O/qualify_$v.txt 2>&1
  echo "qualify rc=$?" >> $O/qualify_$v.txt
  t "qualify $v"
done
bench() {   # bench NAME [TEMPLATES]
  env ${2:+NINFER_TEMPLATES=$2} timeout $(left 60) $G --prefill-only --skip-qualify \
      --rev "$NINFER_REV${2:++$1}" --peer $P/peer.jsonl --peer-called $P/peer_called.jsonl \
      --json $O/bench_$1.jsonl > $O/bench_$1.txt 2>&1
  echo "bench rc=$?" >> $O/bench_$1.txt
  t "bench $1"
}
bench main $BT
if [ $RUN = 25 ]; then
  bench both $V/both/templates; bench scan $V/scan/templates; bench wu $V/wu/templates
  COLS="main both scan wu main2 both2"
else
  for v in $VARS; do bench $v $V/$v/templates; done
  COLS="main $VARS main2 ${LAST}2"
fi
bench main2 $BT
bench ${LAST}2 $V/$LAST/templates
export NINFER_TEMPLATES=$V/$LAST/templates
job_compare_gdn mini
unset NINFER_TEMPLATES
t "compare"
tar czf $OUT/r$RUN.tgz -C /tmp r23-out
cp $O/compare.txt $OUT/
{
echo "===== summary"
cat $O/context.txt
for v in $VARS; do echo "$v: $(grep -E '^qualify \(seed' $O/qualify_$v.txt) $(tail -1 $O/qualify_$v.txt)"; done
grep -hE "vs cpu|FAILED" $O/compare.txt | awk '{print substr($0, 1, 60) " ... " substr($0, length($0) - 60)}'
echo "columns: $COLS"
python3 bench/gdn/run16/table.py $O/qualify_$LAST.jsonl $(for c in $COLS; do echo $O/bench_$c.jsonl; done) | grep -E "^T |f16|wu_f16|scan_f16|prep" | grep -vE "tf32|prep\+wu_[t3d]|_v3 |v32 " | cut -c1-210
t done
} | tee $OUT/summary.txt
