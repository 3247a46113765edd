# Sourced by the bench/kernels experiment jobs (from v32 on), on the GPU machine, from the
# repository root, after `set -u` and T0=$(date +%s); LIMIT=...:
#   job_init NAME [WHAT]  unpacks .gpu/NAME/ninfer.xz to $B (/tmp/NAME-ninfer), every
#                         .gpu/NAME/kc*.t?z into NINFER_CACHE_DIR (/tmp/NAME-cache), sets
#                         NINFER_REV from .gpu/NAME/REV, empties $O (/tmp/NAME-out) and
#                         writes $O/context.txt: revision (and WHAT), date, GPU.
#   job_use NAME          after job_init NAME (an A/B job inits each build in turn): B,
#                         NINFER_CACHE_DIR and NINFER_REV back to NAME's build; O unchanged.
#   job_example NAME EX   unpacks the example .gpu/NAME/EX.xz (stage_examples) to
#                         /tmp/NAME-EX and prints that path
#   left S                seconds left of LIMIT since T0, at most S (at least 1): a timeout.
#   t MSG                 prints the seconds since T0 and MSG.
#   job_compare_gdn [MINI]  `ninfer compare` ($B) against the cpu backend on the three GDN
#                         fixtures (16 tokens after a long prompt), and with MINI=mini also
#                         the bf16 qwen3.6-mini at 1 and 8 lanes (its 300-token prompt on
#                         the fast prefill route), appended to $O/compare.txt; a FAILED line
#                         for each that fails (bench/gdn runs 25 on; earlier jobs inline it).
#   job_peer_fla [layer]  fla 0.6.0 as the GDN peer, its wheels from .gpu/whl installed into a
#                         scratch site: tools/peer_fla_gdn.py (decode and chunk, in a graph
#                         and as called) into $O/peer.jsonl and $O/peer_called.jsonl; with
#                         `layer` also tools/peer_fla_gdn_layer.py into $O/peer_layer.jsonl,
#                         and $O/peer_graph.all.jsonl / $O/peer_called.all.jsonl: the decode
#                         figures with the layer tool's chunk-alone figures as the prefill
#                         peer, for gdn_gpu's --peer / --peer-called (bench/gdn runs 49 on;
#                         runs 23-48 inline it).
#   job_gdn_table FILE... one line a record of gdn_gpu's --json files (tools/gdn_bench_table.py),
#                         the routes the engine takes and their peers (with $O/peer_layer.jsonl,
#                         also fla's decode step doing the same work): the job's summary.
#   job_gdn_qualify PART [S]  gdn_gpu ($G) qualify of PART (decode | prefill), at most S
#                         seconds (default 120): $O/qualify_PART.txt and .jsonl, its exit
#                         status last in the .txt (bench/gdn runs 51 on).
#   job_gdn_bench PART NAME TAG [S]  gdn_gpu bench of PART, revision $NINFER_REV+TAG, with
#                         $O/peer_graph.all.jsonl / peer_called.all.jsonl as the peer where
#                         job_peer_fla made them: $O/bench_NAME.txt and .jsonl (default S 60).
# The earlier jobs (v25-v31) inline the same steps; they stay as they ran.
left() { local l=$((LIMIT - ($(date +%s) - T0))); [ $l -lt 1 ] && l=1; [ $l -gt $1 ] && l=$1; echo $l; }
t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
job_init() {
    local g=.gpu/$1
    B=/tmp/$1-ninfer
    xz -dc $g/ninfer.xz > $B && chmod +x $B
    export NINFER_REV="$(cat $g/REV)"
    export NINFER_CACHE_DIR=/tmp/$1-cache
    mkdir -p $NINFER_CACHE_DIR
    local f
    for f in $g/kc*.t?z; do tar xf $f -C $NINFER_CACHE_DIR; done
    O=/tmp/$1-out
    rm -rf $O && mkdir -p $O
    { echo "revision: $NINFER_REV${2:+ $2}"; date -u +%FT%TZ;
      nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $O/context.txt
}
job_example() {
    local b=/tmp/$1-$2
    xz -dc .gpu/$1/$2.xz > $b && chmod +x $b && echo $b
}
job_use() {
    B=/tmp/$1-ninfer
    export NINFER_REV="$(cat .gpu/$1/REV)"
    export NINFER_CACHE_DIR=/tmp/$1-cache
}
job_compare_gdn() {
    local fx lanes
    local long="The history of the city begins with a small settlement on the river, where traders from the north and the south met every spring to exchange salt, furs, grain and iron tools."
    for fx in qwen35_r2 qwen3_next qwen35_moe; do
        timeout $(left 40) $B compare --model tests/fixtures/tiny/$fx --prompt "$long" --tokens 16 \
            >> $O/compare.txt 2>&1 || echo "FAILED $fx" >> $O/compare.txt
    done
    [ "${1:-}" = mini ] || return 0
    for lanes in 1 8; do
        timeout $(left 60) $B compare --synthetic qwen3.6-mini --synthetic-prompt 300 --tokens 16 \
            --activations bf16 --lanes $lanes --tolerance 5e-2 --near-ties 4 >> $O/compare.txt 2>&1 \
            || echo "FAILED qwen3.6-mini lanes $lanes" >> $O/compare.txt
    done
}
job_peer_fla() {
    local site kind f
    site="$(mktemp -d)/site"
    python3 -m pip install -q --no-index --no-deps --target "$site" .gpu/whl/*.whl > $O/pip.txt 2>&1
    PYTHONPATH="$site:tools" timeout $(left 150) python3 tools/peer_fla_gdn.py --out $O/peer.jsonl \
        --out-called $O/peer_called.jsonl > $O/peer.txt 2>&1
    echo "peer exit status $?" >> $O/peer.txt
    [ "${1:-}" = layer ] || return 0
    PYTHONPATH="$site:tools" timeout $(left 150) python3 tools/peer_fla_gdn_layer.py \
        --out $O/peer_layer.jsonl > $O/peer_layer.txt 2>&1
    echo "peer layer exit status $?" >> $O/peer_layer.txt
    for kind in graph called; do
        f=$O/peer_$kind.all.jsonl
        grep -v '"gdn prefill"' $O/peer$([ $kind = called ] && echo _called).jsonl > $f || true
        grep '"what": "gdn prefill",' $O/peer_layer.jsonl | grep "(${kind/called/as called})" > $f.tmp || true
        cat $f.tmp >> $f; sed 's/state=f32/state=f16/' $f.tmp >> $f; rm -f $f.tmp
    done
}
job_gdn_qualify() {
    timeout -k 5 $(left ${2:-120}) $G --$1-only --skip-bench --qualify-json $O/qualify_$1.jsonl \
        > $O/qualify_$1.txt 2>&1
    echo "qualify rc=$?" >> $O/qualify_$1.txt
    t "qualify $1"
}
job_gdn_bench() {
    local peer=()
    [ -s "$O/peer_graph.all.jsonl" ] && peer=(--peer "$O/peer_graph.all.jsonl" --peer-called "$O/peer_called.all.jsonl")
    timeout -k 5 $(left ${4:-60}) $G --$1-only --skip-qualify --rev "$NINFER_REV+$3" "${peer[@]}" \
        --json $O/bench_$2.jsonl > $O/bench_$2.txt 2>&1
    echo "bench rc=$?" >> $O/bench_$2.txt
    t "bench $1 $2"
}
job_gdn_table() {
    local lp=()
    [ -s "$O/peer_layer.jsonl" ] && lp=(--layer-peer "$O/peer_layer.jsonl")
    python3 tools/gdn_bench_table.py "${lp[@]}" "$@"
}
