#!/usr/bin/env bash
# v68 (measurement): the 27B step's four T = 8 launches (gate_up and in_proj with
# RMSNorm(1 + w), down with SwiGLU and the residual, out with the residual; exact and bf16
# tiles) at the plan's K-ranges and at 1..10 forced, x20. carry [".gpu/v68"].
set -u
T0=$(date +%s); LIMIT=${LIMIT:-200}
source scripts/gpu/job-lib.sh
job_init v68 "(the step launches' K-ranges)"
timeout $(left 150) $B bench kernels --filter "linear_exact_mma step k-ranges" --json $O/sweep.jsonl > $O/sweep.txt 2>&1
echo "rc=$?" >> $O/sweep.txt
t sweep
tar czf $OUT/v68.tgz -C /tmp v68-out
python3 - $O/sweep.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(f"{r['shape']:20} {r['route'][-52:]:52} {r['median_us']:8.2f}")
PY
t done
