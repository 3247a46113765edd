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
