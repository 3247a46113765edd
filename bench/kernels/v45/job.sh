#!/usr/bin/env bash
# v45 job: the split GDN step's prep as a one-token instantiation of gdn/prep.cu (256
# threads, one channel each; no template change, so v44's kernels and profile hold). Staged
# by hand: .gpu/v45/{ninfer.xz, gdn_gpu.xz, REV} from the working tree's release build and
# v44's kc.txz (the new instantiation compiles on first use). carry [".gpu"]. Steps:
#   qualify  ninfer qualify --filter gdn
#   compare  the tiny GDN fixtures at 8 lanes (the split step)
#   gdnbench gdn_gpu --decode-only --skip-qualify
set -u
T0=$(date +%s); LIMIT=${LIMIT:-240}
source scripts/gpu/job-lib.sh
job_init v45 "(working tree: one-token prep)"
xz -dc .gpu/v45/gdn_gpu.xz > gdn_gpu && chmod +x gdn_gpu
timeout $(left 120) $B qualify --filter gdn --json $O/qualify.jsonl > $O/qualify.txt 2>&1
echo "qualify rc=$?" >> $O/qualify.txt
t qualify
long="The history of the city begins with a small settlement on the river, where traders from the north and the south met every spring to exchange salt, furs, grain and iron tools."
for fx in qwen35_r2 qwen3_next; do
  timeout $(left 60) $B compare --model tests/fixtures/tiny/$fx --prompt "$long" --tokens 16 --lanes 8 >> $O/compare.txt 2>&1 || echo "FAILED $fx" >> $O/compare.txt
done
t compare
timeout $(left 90) gdn_gpu --decode-only --skip-qualify --rev "$NINFER_REV" --json $O/gdn_bench.jsonl > $O/gdn_bench.txt 2>&1
echo "gdn bench rc=$?" >> $O/gdn_bench.txt
t gdnbench
tar czf $OUT/v45.tgz -C /tmp v45-out
echo "===== summary"
cat $O/context.txt
grep -E 'checks:|rc=|FAIL' $O/qualify.txt | head -4
grep -E 'identical|differs|FAIL' $O/compare.txt | cut -c1-120
grep -E "^copy|lanes=8.*(gdn_update|r4w4v_k4)" $O/gdn_bench.txt | cut -c1-150
t done
