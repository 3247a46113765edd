#!/usr/bin/env bash
# bench/gdn run 17 (device job, carry [".gpu/$N"]; ~1-2 min): the tuning job for the
# template set of build $N (default r17b), whose run1.toml main installs with the change (a template change voids
# the installed profile). One round, no long-context decode.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-570}
source scripts/gpu/job-lib.sh
N=${N:-r17b}
job_init $N "($N: the tuning job)"
mkdir -p $O/tune
OUT=$O/tune B=$B E2E_LONG=0 E2E_ROUNDS=1 timeout $(left 480) bash scripts/gpu/tune.sh > $O/tune.txt 2>&1
echo "tune rc=$?" >> $O/tune.txt
tar czf $OUT/$N-tune.tgz -C /tmp $N-out
cat $O/context.txt
tail -12 $O/tune.txt
t done
