#!/usr/bin/env bash
# v22 job (measurement only): ncu's full set with SASS-level stall samples on the T = 1
# launches of 17408x5120 q4_g64, the ring kernel (the T = 1 route) and the mma kernel,
# and on the mma kernel's T = 8 launch, from `bench kernels 'linear_exact_mma q4_g64'`
# (ncu's clock control: slower than the bench). Why the mma kernel at T = 1 takes ~24 us
# where the ring kernel takes 17 with the same bytes.
# Needs (carried): .gpu/diag/{ninfer.xz,REV,kc.tgz}. Output: $OUT/v22.tgz; summary last.
set -u
N=/tmp/v22-ninfer
xz -dc .gpu/diag/ninfer.xz > $N && chmod +x $N
export NINFER_REV="$(cat .gpu/diag/REV)"
export NINFER_CACHE_DIR=/tmp/v22-cache
mkdir -p $NINFER_CACHE_DIR && tar xzf .gpu/diag/kc.tgz -C $NINFER_CACHE_DIR
O=/tmp/v22-out; rm -rf $O; mkdir -p $O
{ echo "revision: $NINFER_REV"; date -u +%FT%TZ;
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $O/context.txt
# One launch of each kernel per ncu run (run 1 took `-c 6` over the three names: ncu met six
# launches of the mma T = 1 kernel, the bench's warm-up, before any other).
K=${K:-ring_q4_g64_plain_t1_ mma_q4_g64_plain_t8_}
for k in $K; do
  timeout 70 ncu --set full --import-source no -k "regex:linear_exact_$k" -c 1 --export $O/$k -f \
    $N bench kernels --filter "linear_exact_mma q4_g64 x20 T=1 N=17408 K=5120|linear_exact_mma q4_g64 x20 T=8 N=17408 K=5120" >> $O/ncu.log 2>&1
  echo "ncu $k rc=$?" >> $O/ncu.log
  if [ -f $O/$k.ncu-rep ]; then
    timeout 40 ncu --import $O/$k.ncu-rep --page source --csv --print-source sass > $O/sass_$k.csv 2> $O/sass_$k.err
    timeout 20 ncu --import $O/$k.ncu-rep --page details --csv > $O/details_$k.csv 2> $O/details_$k.err
    rm -f $O/$k.ncu-rep
  fi
done
tar czf $OUT/v22.tgz -C /tmp v22-out
echo "===== summary"
cat $O/context.txt; tail -n 3 $O/ncu.log
grep -c . $O/sass_*.csv $O/details_*.csv 2>&1
python3 - $O/details_*.csv <<'PY'
import csv, sys
for f in sys.argv[1:]:
  for r in csv.reader(open(f)):
    if len(r) > 14 and r[12] in ("Duration", "Registers Per Thread", "Achieved Occupancy", "DRAM Throughput", "Issue Slots Busy", "No Eligible"):
        print(r[0], r[4][:48], r[6], r[12], r[14])
PY
