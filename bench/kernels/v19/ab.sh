#!/usr/bin/env bash
# v19 A/B in one machine start: the ring binary's qualify, mma records and 27B step
# (V=v19), then the same records and step from main's binary (V=final, staged from
# bench/engine/final's build). Needs (carried): .gpu/v19/* and .gpu/final/*.
# Output: $OUT/v19.tgz and $OUT/final.tgz, each with its summary printed.
D="$(dirname "$0")/../v16"
OUT=$OUT LIMIT=${LIMIT1:-300} STEPS="qualify kernels 27b" V=v19 bash "$D/job.sh"
OUT=$OUT LIMIT=${LIMIT2:-250} STEPS="kernels 27b" V=final bash "$D/job.sh"
