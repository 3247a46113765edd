#!/usr/bin/env bash
# v12 job: the SwiGLU prologue of the ring kernel (every 27B down projection, 64 launches a
# step, 24.3 us each under ncu against 17.0 for the same shape without the prologue: step
# run 3). Three template sets from this checkout's templates/ (NINFER_TEMPLATES; one binary):
#   base = templates/ as committed (its tuned profile is installed)
#   fast = + fast.patch: silu with __expf and __fdividef (about 6 instructions an element
#          instead of about 30: no IEEE division subroutine, no full-range expf)
#   fb4  = + fb4.patch: fast, and 4 staging units per thread per pass instead of 2 (K =
#          17408: 2 passes over L2 instead of 3)
# Steps (each timeout cut to what is left of LIMIT seconds):
#   qualify  ninfer qualify --filter _swiglu with fast and fb4
#   kernels  bench kernels 'linear_exact prologue' per set: base fast fb4 base
#   27b      bench model synthetic 27B q4_g64 with fb4, 1 lane, --no-profile
#   tune     scripts/gpu/tune.sh with fb4 (its run1.toml is the profile to install if fb4
#            is taken)
# Needs (carried): .gpu/v12/{ninfer.xz,REV,kc.tgz}; kc.tgz holds every kernel of base and
# fb4 and the swiglu kernels of fast (sm_90). Everything lands in $OUT/v12.tgz.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-570}
left() { local l=$((LIMIT - ($(date +%s) - T0))); [ $l -lt 1 ] && l=1; [ $l -gt $1 ] && l=$1; echo $l; }
t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
STEPS="${STEPS:-qualify kernels 27b tune}"
want() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
G=.gpu/v12
P=bench/kernels/v12
N=/tmp/v12-ninfer
xz -dc $G/ninfer.xz > $N && chmod +x $N
mkdir -p .gpu && cp $N .gpu/ninfer && cp $G/REV .gpu/REV
export NINFER_REV="$(cat $G/REV)"
export NINFER_CACHE_DIR=/tmp/v12-cache
mkdir -p $NINFER_CACHE_DIR && tar xzf $G/kc.tgz -C $NINFER_CACHE_DIR
FINAL=$OUT; O=/tmp/v12-out; rm -rf $O; mkdir -p $O
{ echo "revision: $NINFER_REV (binary); templates: checkout + $P patches"; date -u +%FT%TZ;
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $O/context.txt
( sleep ${PARTIAL_AFTER:-555}; tar czf $FINAL/partial.tgz -C /tmp v12-out ) > /dev/null 2>&1 &
PARTIAL=$!
mk() {
  local name=$1; shift
  rm -rf /tmp/t_$name; cp -r templates /tmp/t_$name
  for p in "$@"; do patch -s -d /tmp/t_$name -p1 < $P/$p || echo "PATCH FAILED $name $p" >> $O/context.txt; done
}
mk base
mk fast fast.patch
mk fb4 fb4.patch
t staged

if want qualify; then
  for v in fast fb4; do
    NINFER_TEMPLATES=/tmp/t_$v timeout $(left 60) $N qualify --filter _swiglu --json $O/qualify_$v.jsonl > $O/qualify_$v.txt 2>&1
    echo "qualify rc=$?" >> $O/qualify_$v.txt
  done
  t qualify
fi

if want kernels; then
  i=0
  for v in base fast fb4 base; do
    i=$((i + 1))
    echo "\$ NINFER_TEMPLATES=t_$v ninfer bench kernels --filter 'linear_exact prologue'" >> $O/bench_kernels.txt
    NINFER_REV="$NINFER_REV+$v" NINFER_TEMPLATES=/tmp/t_$v timeout $(left 60) $N bench kernels --filter "linear_exact prologue" --json $O/bench_kernels_${i}_$v.jsonl >> $O/bench_kernels.txt 2>&1
    t "kernels $v rc $?"
  done
fi

if want 27b; then
  # One load (~90 s of synthetic weights): fb4 only, against v11's base figures (5,931.8
  # and 5,974-5,990 us, --no-profile); the final job measures the committed set.
  B="bench model --synthetic qwen3.6-27b --weights q4_g64 --warmup 0 --decode-tokens 64 --prompt 16 --lanes 1 --no-profile"
  echo "\$ NINFER_TEMPLATES=t_fb4 ninfer $B" >> $O/bench_27b.txt
  NINFER_REV="$NINFER_REV+fb4" NINFER_TEMPLATES=/tmp/t_fb4 timeout $(left 150) $N $B --json $O/bench_27b_fb4.jsonl >> $O/bench_27b.txt 2>&1
  t "27b fb4 rc $?"
fi

if want tune; then
  NINFER_TEMPLATES=/tmp/t_fb4 OUT=$O/tune_fb4 timeout $(left 110) bash scripts/gpu/tune.sh > $O/tune_job.txt 2>&1
  echo "tune rc $?" >> $O/tune_job.txt
  t tune
fi

pkill -P $PARTIAL sleep 2> /dev/null; kill $PARTIAL 2> /dev/null
tar czf $FINAL/v12.tgz -C /tmp v12-out
echo "===== summary"
cat $O/context.txt
for v in fast fb4; do [ -f $O/qualify_$v.txt ] && echo "qualify $v: $(tail -2 $O/qualify_$v.txt | tr '\n' ' ')"; done
[ -f $O/bench_kernels.txt ] && grep -E "N=5120 K=17408|N=576 K=1536|^\\$" $O/bench_kernels.txt | cut -c1-150
[ -f $O/bench_27b.txt ] && grep -E "^(what|prefill|decode)|ignored|uses tuning" $O/bench_27b.txt | cut -c1-150
[ -f $O/tune_fb4/phases.txt ] && cat $O/tune_fb4/phases.txt && grep -E "same winner" $O/tune_fb4/table.txt | cut -c1-150
t done
