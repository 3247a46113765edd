#!/usr/bin/env bash
# bench/gdn run 22 staging (here, repository root, after run21/stage.sh staged .gpu/r21 from
# the same tree): the template variant `orig` in .gpu/r21/orig/templates, main's templates
# with the two-buffer f16 scan (bufs = 2) rendered from the scan as it was before run 18's
# patch (gdn/chunk_f16.cu at ORIG_REV, default 74cc136, as gdn/chunk_f16_orig.cu), the
# one-buffer scan from main's; its f16 scan kernels in .gpu/r21/kc-orig.txz. The job:
# `VAR=orig bash bench/gdn/run21/job.sh`.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
source scripts/nvrtc-env.sh
G=.gpu/r21
T=$G/orig/templates
rm -rf "$G/orig" && mkdir -p "$G/orig"
cp -r templates "$T"
git show "${ORIG_REV:-74cc136}:templates/gdn/chunk_f16.cu" > "$T/gdn/chunk_f16_orig.cu"
{ echo '{% if bufs == 2 %}{% include "gdn/chunk_f16_orig.cu" %}{% else %}'
  cat templates/gdn/chunk_f16.cu
  echo '{% endif %}'; } > "$T/gdn/chunk_f16.cu"
cache=$(mktemp -d)
NINFER_TEMPLATES=$(realpath "$T") NINFER_CACHE_DIR=$cache \
    target/release/ninfer kernels build gdn_chunk_f16 --arch sm_90
tar cf - -C "$cache" . | xz -T2 -9e > "$G/kc-orig.txz"
rm -rf "$cache"
du -sh "$G"
