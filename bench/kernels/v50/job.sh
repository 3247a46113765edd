#!/usr/bin/env bash
# v50 job: after the exact mma kernels' shared pieces moved to linear/mma_exact.cuh (no
# change to gemv_mma.cu's SASS on the engine's instantiations but the signedness of one
# shift; the template set's hash changes, voiding the profile): qualify both mma kernels,
# compare at 8 lanes, the tuning job for the new set, and synthetic SmolLM2 at 8 lanes with
# its profile. carry [".gpu"] (stage.sh).
set -u
T0=$(date +%s); LIMIT=${LIMIT:-230}
source scripts/gpu/job-lib.sh
job_init v50 "(working tree: linear/mma_exact.cuh)"
timeout $(left 90) $B qualify --filter linear_exact_mma --json $O/qualify.jsonl > $O/qualify.txt 2>&1
echo "qualify rc=$?" >> $O/qualify.txt
t qualify
long="The history of the city begins with a small settlement on the river, where traders from the north and the south met every spring to exchange salt, furs, grain and iron tools."
for fx in qwen35_r2 llama; do
  timeout $(left 40) $B compare --model tests/fixtures/tiny/$fx --prompt "$long" --tokens 16 --lanes 8 >> $O/compare.txt 2>&1 || echo "FAILED $fx" >> $O/compare.txt
done
t compare
mkdir -p $O/tune
OUT=$O/tune B=$B E2E_LONG=0 E2E_ROUNDS=1 timeout $(left 100) bash scripts/gpu/tune.sh > $O/tune.txt 2>&1
t tune
BM="bench model --synthetic smollm2-135m --weights q4_g64 --prompt 16 --warmup 0 --lanes 8 --decode-tokens 256 --profile $O/tune/run1.toml --profile-ab"
timeout $(left 40) $B $BM > $O/smollm2_l8.txt 2>&1
echo "rc=$?" >> $O/smollm2_l8.txt
t smollm2
tar czf $OUT/v50.tgz -C /tmp v50-out
echo "===== summary"
cat $O/context.txt
grep -E 'checks:|rc=|FAIL' $O/qualify.txt | head -4
grep -E 'identical|differs|FAIL' $O/compare.txt | sed 's/.*single-sequence: //' | cut -c1-60
grep -E "keys; noise" $O/tune/compare.txt
grep -E '^decode  |rc=' $O/smollm2_l8.txt | cut -c1-150
t done
