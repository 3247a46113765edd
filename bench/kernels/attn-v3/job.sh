#!/usr/bin/env bash
# attn-v3 job (prepared 2026-11-30, not run): why the 27B's attention decode at context
# 4096 with an f32 cache takes ~54 us (tuning's attn_split key h24/kv4/n4096/k256) for
# 33.5 MB of K and V (~8 us at the copy rate). First the timings of every decode split at
# that shape, then ncu's full section set on two launches of the default split (graph
# nodes, as the bench replays them), exported as the details page (speed of light, memory
# workload, warp stall reasons, shared-memory traffic). Counted beforehand (not measured):
# 256 blocks of 128 threads, two 32-key tiles each without double buffering, ~0.8 MB of
# shared-memory reads per tile and block (each lane re-reads q for every key it scores),
# and the last block of each KV head merging 64 splits' partials alone.
# Needs (carried): .gpu/attn3/{ninfer.xz,REV} (kernels compile on first use). Output:
# $OUT/attn3.tgz; summary last.
set -u
G=.gpu/attn3
N=/tmp/attn3-ninfer
xz -dc $G/ninfer.xz > $N && chmod +x $N
export NINFER_REV="$(cat $G/REV)"
O=/tmp/attn3-out; rm -rf $O; mkdir -p $O
{ echo "revision: $NINFER_REV"; date -u +%FT%TZ;
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $O/context.txt
F="attention decode nH=24 nKV=4 hd=256 f32 t=1 ctx=4096"
timeout 120 $N bench kernels --filter "$F" --json $O/bench.jsonl > $O/bench.txt 2>&1
echo "bench rc=$?" >> $O/bench.txt
timeout 240 ncu --set full --graph-profiling node -k regex:attn_decode_f32_d256_s64 -c 2 \
  --export $O/attn -f $N bench kernels --filter "$F" > $O/ncu.log 2>&1
echo "ncu rc=$?" >> $O/ncu.log
[ -f $O/attn.ncu-rep ] && timeout 60 ncu --import $O/attn.ncu-rep --page details --csv > $O/details.csv 2> $O/import.err
rm -f $O/attn.ncu-rep
tar czf $OUT/attn3.tgz -C /tmp attn3-out
echo "===== summary"
cat $O/context.txt
grep -E "^attention|rc=" $O/bench.txt | cut -c1-150
tail -2 $O/ncu.log | cut -c1-150
grep -E '"(Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Registers Per Thread|Shared Memory Configuration Size)"' $O/details.csv 2>/dev/null | cut -d, -f12- | head -14
