# Sourced by the GPU job scripts: sets OUT (default ./gpu-out, created), rev (NINFER_REV
# where the caller set it, as the bench/kernels jobs' job_init does, else .gpu/REV) and
# writes $OUT/context.txt (revision, date, GPU name/driver/memory/clock).
OUT="${OUT:-gpu-out}"
mkdir -p "$OUT"
rev="${NINFER_REV:-$(cat .gpu/REV 2>/dev/null || echo unknown)}"
{
    echo "revision: $rev"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
} > "$OUT/context.txt"
cat "$OUT/context.txt"
