#!/usr/bin/env bash
# v11 job (prepared in session 8, not yet run): the checks owed by session 7's host refactors,
# then two template changes against main, each as a template set built from this checkout's
# templates/ plus patches (NINFER_TEMPLATES; one binary for all):
#   base  = templates/ as committed
#   rms   = + rms-deferred.patch (RMS prologues: one staging pass, 1 / rms on the outputs)
#   s32   = + setup32.patch (the ring kernel's set-up in 32 bits, no division in 1-column staging)
#   both  = + both patches
# Steps (STEPS, default all but 27b, which needs a call of its own with its ~2 x 110 s;
# in this order; each step's timeout is cut to what is left of LIMIT seconds):
#   compare  ninfer compare (base) on every tiny fixture (64 tokens; 8 lanes) and synthetic
#            SmolLM2: Gpu::grant_shared_memory and gpu::env_switch run at every launch site
#   serve    ninfer-serve --device cuda on tiny llama and qwen35_r2: a greedy completion
#            whole, streamed and against `ninfer run --device cpu`; four at once against
#            each alone (needs ninfer-serve.xz)
#   qualify  ninfer qualify --filter linear_exact_ring,_d_rms with the `both` set
#   kernels  bench kernels (prologue shapes and the 27B T = 1 shapes) per set, base twice
#   overlap  bench kernels, 27B T = 1 shapes, NINFER_RING_BLOCKS_PER_SM unset / 1, twice
#   smollm2  bench model synthetic SmolLM2 q4_g64, 1 lane, 256 steps, base/both alternating
#   27b      bench model synthetic 27B q4_g64, 1 lane, 64 steps, base then both
# All model benches run --no-profile: the installed profile names the committed template
# set, so a variant would otherwise run on heuristics against a tuned base.
# Needs (carried): .gpu/v11/{ninfer.xz,ninfer-serve.xz,REV,kc.tgz}; kc.tgz = `ninfer kernels build --all
# --arch sm_90` for the base and both sets and `kernels build linear_exact --filter
# ring,_d_rms` for rms and s32, made here with the same binary (kernels not in it compile
# there on first use). Everything lands in $OUT/v11.tgz; a summary is printed last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-570}
left() { local l=$((LIMIT - ($(date +%s) - T0))); [ $l -lt 1 ] && l=1; [ $l -gt $1 ] && l=$1; echo $l; }
t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
STEPS="${STEPS:-compare serve qualify kernels overlap smollm2}"
want() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
G=.gpu/v11
P=bench/kernels/v11
N=/tmp/v11-ninfer
xz -dc $G/ninfer.xz > $N && chmod +x $N
export NINFER_REV="$(cat $G/REV)"
export NINFER_CACHE_DIR=/tmp/v11-cache
mkdir -p $NINFER_CACHE_DIR && tar xzf $G/kc.tgz -C $NINFER_CACHE_DIR
FINAL=$OUT; O=/tmp/v11-out; rm -rf $O; mkdir -p $O
{ echo "revision: $NINFER_REV (binary); templates: checkout + $P patches"; date -u +%FT%TZ;
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $O/context.txt
# If the call's limit comes first, what was written still comes back as one file (no
# output of its own, so that it never holds the job's stdout open).
( sleep ${PARTIAL_AFTER:-540}; tar czf $FINAL/partial.tgz -C /tmp v11-out ) > /dev/null 2>&1 &
PARTIAL=$!

# Template sets.
mk() {
  local name=$1; shift
  rm -rf /tmp/t_$name; cp -r templates /tmp/t_$name
  for p in "$@"; do patch -s -d /tmp/t_$name -p1 < $P/$p || echo "PATCH FAILED $name $p" >> $O/context.txt; done
}
mk base
mk rms rms-deferred.patch
mk s32 setup32.patch
mk both rms-deferred.patch setup32.patch
tset() { echo /tmp/t_$1; }
for v in base rms s32 both; do
  NINFER_TEMPLATES=$(tset $v) timeout $(left 60) $N kernels build linear_exact --arch sm_90 --filter ring,_d_rms > $O/build_$v.txt 2>&1
done
t "staged"

if want compare; then
  long="The history of the city begins with a small settlement on the river, where traders from the north and the south met every spring to exchange salt, furs, grain and iron tools. Over the following centuries the settlement grew into a market town, then a walled city with its own laws, its own coins and a cathedral whose towers could be seen from every road that led to it."
  : > $O/compare.txt
  for fx in tests/fixtures/tiny/*/; do
    for lanes in 1 8; do
      tok=64; [ $lanes = 8 ] && tok=16
      echo "\$ ninfer compare --model $fx --prompt <long> --tokens $tok --lanes $lanes" >> $O/compare.txt
      timeout $(left 60) $N compare --model "$fx" --prompt "$long" --tokens $tok --lanes $lanes --json $O/compare.jsonl >> $O/compare.txt 2>&1 || echo "FAILED $fx lanes $lanes" >> $O/compare.txt
    done
  done
  for lanes in 1 8; do
    tok=64; [ $lanes = 8 ] && tok=12
    echo "\$ ninfer compare --synthetic smollm2-135m --tokens $tok --lanes $lanes" >> $O/compare.txt
    timeout $(left 60) $N compare --synthetic smollm2-135m --tokens $tok --lanes $lanes --json $O/compare.jsonl >> $O/compare.txt 2>&1 || echo "FAILED smollm2 lanes $lanes" >> $O/compare.txt
  done
  t compare
fi

if want serve && [ -f $G/ninfer-serve.xz ]; then
  # ninfer-serve on the GPU (the backend opened on the engine thread), on two tiny
  # fixtures (the device has no network for the default model): llama, and qwen35_r2 (GDN
  # states, whose lanes slab must follow lanes that join and leave). Per fixture: one
  # greedy completion whole and streamed, against `ninfer run` on the cpu with the same
  # prompt (GPU greedy = cpu greedy on the fixtures, per compare), then four requests at
  # once against each alone.
  xz -dc $G/ninfer-serve.xz > /tmp/v11-serve && chmod +x /tmp/v11-serve
  cat > /tmp/v11-serve-check.py <<'PY'
import json, sys, urllib.request
from concurrent.futures import ThreadPoolExecutor
port, cpu_file, name = sys.argv[1], sys.argv[2], sys.argv[3]
def post(body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions",
                                 data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    return urllib.request.urlopen(req, timeout=30).read().decode()
q = {"prompt": "The history of the city", "temperature": 0, "max_tokens": 16}
whole = json.loads(post(q))
print(json.dumps(whole))
text = whole["choices"][0]["text"]
streamed = "".join(json.loads(l[6:])["choices"][0]["text"]
                   for l in post(dict(q, stream=True)).splitlines() if l.startswith("data: {"))
cpu = open(cpu_file).read().rstrip("\n")
print(f"serve {name}: whole == streamed:", streamed == text, "| == cpu run:", text == cpu, "|", repr(text), repr(cpu))
prompts = ["The history of the city", "Once upon a time", "The river", "In the north"]
ask = lambda p: json.loads(post(dict(q, prompt=p)))["choices"][0]["text"]
alone = [ask(p) for p in prompts]
with ThreadPoolExecutor(4) as ex:
    together = list(ex.map(ask, prompts))
print(f"serve {name}: 4 at once == alone:", together == alone)
PY
  for fx in llama qwen35_r2; do
    M=tests/fixtures/tiny/$fx
    E=$O/serve_${fx}_stderr.txt
    NINFER_LOG=ninfer::serve=debug /tmp/v11-serve --device cuda --model $M --port 0 > /dev/null 2> $E &
    SP=$!
    for _ in $(seq 60); do grep -q "listening on" $E && break; sleep 1; done
    port=$(grep -o "127.0.0.1:[0-9]*" $E | head -1 | cut -d: -f2)
    timeout $(left 30) $N run --device cpu --model $M --max-tokens 16 "The history of the city" > $O/serve_${fx}_cpu.txt 2> /dev/null
    timeout $(left 60) python3 /tmp/v11-serve-check.py "$port" $O/serve_${fx}_cpu.txt $fx >> $O/serve.txt 2>&1
    echo "serve $fx rc=$? batched steps logged: $(grep -c 'a step of' $E)" >> $O/serve.txt
    kill $SP 2> /dev/null
  done
  t serve
fi

if want qualify; then
  echo "\$ NINFER_TEMPLATES=t_both ninfer qualify --filter linear_exact_ring,_d_rms" > $O/qualify_both.txt
  NINFER_TEMPLATES=$(tset both) timeout $(left 120) $N qualify --filter linear_exact_ring,_d_rms --json $O/qualify_both.jsonl >> $O/qualify_both.txt 2>&1
  echo "qualify rc=$?" >> $O/qualify_both.txt
  t qualify
fi

if want kernels; then
  # KFILTER / KSETS narrow the step (the fce3bce binary's prologue bench ignores `|`
  # alternatives: 'linear_exact prologue' must be asked for on its own).
  F="${KFILTER:-linear_exact prologue|linear_exact q4_g64 x20 T=1 N=17408 K=5120|linear_exact q4_g64 x20 T=1 N=5120 K=17408|linear_exact q4_g64 x20 T=1 N=10240 K=5120|linear_exact q4_g64 x20 T=1 N=248320 K=5120}"
  i=0
  for v in ${KSETS:-base rms s32 both base}; do
    i=$((i + 1))
    echo "\$ NINFER_TEMPLATES=t_$v ninfer bench kernels --filter '$F'" >> $O/bench_kernels.txt
    NINFER_REV="$NINFER_REV+$v" NINFER_TEMPLATES=$(tset $v) timeout $(left 60) $N bench kernels --filter "$F" --json $O/bench_kernels_${i}_$v.jsonl >> $O/bench_kernels.txt 2>&1
    t "kernels $v rc $?"
  done
fi

if want overlap; then
  # Cross-launch residency: the r4_w8_s4 split fits two blocks per SM at K <= 6144; capped
  # at one, the next launch's blocks sit beside it and issue their first stages early.
  F="linear_exact q4_g64 x20 T=1 N=17408 K=5120|linear_exact q4_g64 x20 T=1 N=10240 K=5120|linear_exact q4_g64 x20 T=1 N=5120 K=6144|linear_exact q4_g64 x20 T=1 N=248320 K=5120"
  i=0
  for cap in all 1 all 1; do
    i=$((i + 1))
    c=$cap; [ $cap = all ] && c=""
    echo "\$ NINFER_RING_BLOCKS_PER_SM=$c ninfer bench kernels --filter '$F'" >> $O/bench_overlap.txt
    NINFER_RING_BLOCKS_PER_SM=$c NINFER_REV="$NINFER_REV+cap$cap" NINFER_TEMPLATES=$(tset base) timeout $(left 60) $N bench kernels --filter "$F" --json $O/bench_overlap_${i}_cap$cap.jsonl >> $O/bench_overlap.txt 2>&1
    t "overlap cap $cap rc $?"
  done
fi

if want smollm2; then
  B="bench model --synthetic smollm2-135m --weights q4_g64 --prompt 16 --warmup 0 --lanes 1 --decode-tokens 256 --no-profile"
  i=0
  for v in base both base both; do
    i=$((i + 1))
    echo "\$ NINFER_TEMPLATES=t_$v ninfer $B" >> $O/bench_smollm2.txt
    NINFER_REV="$NINFER_REV+$v" NINFER_TEMPLATES=$(tset $v) timeout $(left 60) $N $B --json $O/bench_smollm2_${i}_$v.jsonl >> $O/bench_smollm2.txt 2>&1
  done
  t smollm2
fi

if want 27b; then
  B="bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 16 --warmup 0 --lanes 1 --decode-tokens 64 --no-profile"
  i=0
  for v in base both; do
    i=$((i + 1))
    echo "\$ NINFER_TEMPLATES=t_$v ninfer $B" >> $O/bench_27b.txt
    NINFER_REV="$NINFER_REV+$v" NINFER_TEMPLATES=$(tset $v) timeout $(left 150) $N $B --json $O/bench_27b_${i}_$v.jsonl >> $O/bench_27b.txt 2>&1
    t "27b $v rc $?"
  done
fi

pkill -P $PARTIAL sleep 2> /dev/null; kill $PARTIAL 2> /dev/null
tar czf $FINAL/v11.tgz -C /tmp v11-out
echo "===== summary"
cat $O/context.txt
[ -f $O/compare.txt ] && grep -vE '^\$' $O/compare.txt | grep -iE "fail|identical|differ|worst" | cut -c1-160 | head -24
[ -f $O/serve.txt ] && grep -E "^serve" $O/serve.txt
[ -f $O/qualify_both.txt ] && tail -4 $O/qualify_both.txt
python3 $P/summarize.py $O 2>&1 | tail -40
t done
