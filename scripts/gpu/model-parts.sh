#!/usr/bin/env bash
# The GPU machine has no network and a call carries at most 64 MiB (tracked tree included),
# so the default model (98 MB) travels in parts, one call each, made back to back while the
# machine stays warm (30 s idle):
#
#   scripts/gpu/model-parts.sh            # splits into .gpu-parts/part.* (git-ignored)
#   for each part:  rm -rf .gpu/*; cp .gpu-parts/part.XX .gpu/
#                   run: mkdir -p /root/models && cp .gpu/part.* /root/models/
#   then the job:   cat /root/models/part.* > $NINFER_CACHE_DIR/models/<file>, check SHA-256
#
# Binaries go in a last call, xz-compressed (about 2.9 MB each instead of 9.7 MB).
set -euo pipefail
cd "$(dirname "$0")/../.."
cache="${NINFER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ninfer}"
model="$cache/models/SmolLM2-135M-Instruct.Q4_1.gguf"
[ -f "$model" ] || { echo "no default model at $model: run \`ninfer run --device cpu hi\` once to fetch it" >&2; exit 2; }
tree=$(git ls-files -z | xargs -0 du -cb | tail -1 | cut -f1)
# 64 MB counted in decimal with 1 MB to spare: parts sized against 64 MiB (18.0 MB at a
# 48.0 MB tree) were refused as over the limit on 2026-12-01; 15.0 MB parts went through.
limit=$((64000000 - tree - 1000000))
rm -rf .gpu-parts && mkdir -p .gpu-parts
split -b "$limit" "$model" .gpu-parts/part.
sha256sum "$model" | cut -d' ' -f1 > .gpu-parts/SHA256
ls -l .gpu-parts
echo "tree $tree bytes; parts of at most $limit bytes; SHA-256 $(cat .gpu-parts/SHA256)"
