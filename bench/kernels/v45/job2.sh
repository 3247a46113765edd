#!/usr/bin/env bash
# v45 job 2: after the prep launch was made one helper (launch_prep) for the prefill and
# the split step (host code only): qualify every GDN route again and compare the tiny GDN
# fixtures at 1 lane (their 89-token prompts take the chunked prefill) and 8 lanes (the
# split step). Staged as job.sh. carry [".gpu"].
set -u
T0=$(date +%s); LIMIT=${LIMIT:-150}
source scripts/gpu/job-lib.sh
job_init v45 "(working tree: launch_prep)"
timeout $(left 100) $B qualify --filter gdn --json $O/qualify.jsonl > $O/qualify.txt 2>&1
echo "qualify rc=$?" >> $O/qualify.txt
long="The history of the city begins with a small settlement on the river, where traders from the north and the south met every spring to exchange salt, furs, grain and iron tools."
for fx in qwen35_r2 qwen3_next; do
  for lanes in 1 8; do
    timeout $(left 30) $B compare --model tests/fixtures/tiny/$fx --prompt "$long" --tokens 16 --lanes $lanes >> $O/compare.txt 2>&1 || echo "FAILED $fx $lanes" >> $O/compare.txt
  done
done
tar czf $OUT/v45job2.tgz -C /tmp v45-out
echo "===== summary"
cat $O/context.txt
grep -E 'checks:|rc=|FAIL' $O/qualify.txt | head -4
grep -oE '(identical|differs)[^;]*; logits rel L2 worst [0-9.e-]*|FAILED.*' $O/compare.txt
t done
