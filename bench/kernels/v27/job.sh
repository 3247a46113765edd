#!/usr/bin/env bash
# v27 job: the overlap step again, with a 16-warp split of half the shared memory
# (r4_w16_s2: ~93 KB at K = 5120, so two fit an SM). NINFER_RING_BLOCKS_PER_SM=1 caps a
# ring launch at one block per SM, leaving room for the next launch's blocks to issue
# their weight stages under PDL. bench kernels' x20 records chain 20 launches.
#   qualify  linear_exact_ring (r4_w16_s2 / r2_w16_s2 among them)
#   kernels  every T = 1 candidate of the q4_g64 sweep shapes, uncapped and capped, A B A B
# Stage: .gpu/v27/{ninfer.xz,kc.txz,kc-ring.txz,REV} (the v26 cache plus the new ring
# kernels). Run with carry [".gpu"]. Output: $OUT/v27.tgz.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-300}
left() { local l=$((LIMIT - ($(date +%s) - T0))); [ $l -lt 1 ] && l=1; [ $l -gt $1 ] && l=$1; echo $l; }
t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
G=.gpu/v27
xz -dc $G/ninfer.xz > /tmp/v27-ninfer && chmod +x /tmp/v27-ninfer
B=/tmp/v27-ninfer
export NINFER_REV="$(cat $G/REV)"
export NINFER_CACHE_DIR=/tmp/v27-cache
mkdir -p $NINFER_CACHE_DIR && for f in $G/kc*.txz; do tar xf $f -C $NINFER_CACHE_DIR; done
O=/tmp/v27-out; rm -rf $O; mkdir -p $O
{ echo "revision: $NINFER_REV"; date -u +%FT%TZ;
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $O/context.txt
timeout $(left 60) $B qualify --filter linear_exact_ring --json $O/qualify.jsonl > $O/qualify.txt 2>&1
echo "qualify rc=$?" >> $O/qualify.txt
t qualify
F="linear_exact q4_g64 x20 T=1 N="
for i in 1 2; do for cap in 0 1; do
  NINFER_RING_BLOCKS_PER_SM=$cap timeout $(left 60) $B bench kernels --filter "$F" \
    --json $O/bench_cap${cap}_$i.jsonl >> $O/bench_cap$cap.txt 2>&1
  echo "rc=$?" >> $O/bench_cap$cap.txt
  t "kernels cap $cap round $i"
done; done
tar czf $OUT/v27.tgz -C /tmp v27-out
echo "===== summary"
cat $O/context.txt
grep -E 'checks:|rc=' $O/qualify.txt | tr '\n' ' '; echo
python3 - "$O" <<'PY'
import json, sys, collections
o = sys.argv[1]
d = collections.defaultdict(lambda: collections.defaultdict(list))
for cap in (0, 1):
    for i in (1, 2):
        try:
            for l in open(f"{o}/bench_cap{cap}_{i}.jsonl"):
                r = json.loads(l)
                if "ring" in r["route"]:
                    d[r["shape"]][r["route"].split("_t1_")[1]].append((cap, round(r["median_us"], 1)))
        except OSError:
            pass
for shape, m in d.items():
    print(shape)
    for route, v in m.items():
        print(f"   {route:10}", " ".join(f"cap{c}={u}" for c, u in v))
PY
t done
