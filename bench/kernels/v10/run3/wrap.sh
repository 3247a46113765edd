#!/bin/bash
# v10 next step (1): the ring kernel's issue() with running pointers, against main's ring
# kernel (NINFER_TEMPLATES t_base / t_ptr, one binary): bench at the 27B's T = 1 shapes and
# qualify the ring routes; if it is faster on 17408x5120, re-tune with it (the template set
# changes) so that the profile can be installed with the patch.
set -u
G=.gpu/ringfix
export NINFER_CACHE_DIR=/tmp/rf-cache; mkdir -p $NINFER_CACHE_DIR && tar xzf $G/kc.tgz -C $NINFER_CACHE_DIR && tar xzf $G/kc-base.tgz -C $NINFER_CACHE_DIR
mkdir -p $OUT/v10
OUT=$OUT/v10 VARIANTS="base ptr" NCU_V="" QV="ptr" MV="" LIMIT=120 bash $G/job.sh
mkdir -p .gpu && xz -dc $G/ninfer.xz > .gpu/ninfer && chmod +x .gpu/ninfer && cp $G/REV .gpu/REV
mkdir -p $OUT/tune
OUT=$OUT/tune timeout 110 bash bench/tune/job.sh > $OUT/tune_job.txt 2>&1; echo "tune rc $?"
rm -f $OUT/tune/tune-out.tgz
grep -E "slower|same winner" $OUT/tune/table.txt 2>/dev/null | cut -c1-200
tar czf $OUT/tune.tgz -C $OUT tune tune_job.txt && rm -rf $OUT/tune $OUT/tune_job.txt
