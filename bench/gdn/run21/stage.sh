#!/usr/bin/env bash
# bench/gdn run 21 staging (here, repository root): the working tree's build (main with run
# 19's four patches and PrefillStages::FAST on the one-buffer 32-column scan) with the
# gdn_gpu example and every kernel into .gpu/r21, and beside it el-late.patch's template set
# in .gpu/r21/el/templates (the two-buffer f16 scan reads e^(G_last) in the state update again,
# where it was before the one-buffer layout) with its f16 scan kernels in kc-el.txz (the
# job runs it with NINFER_TEMPLATES; every other kernel hashes as main's).
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init r21
stage_examples gdn_gpu
stage_kernels kc
mkdir -p "$G/el"
cp -r templates "$G/el/templates"
(cd "$G/el" && patch -s -p1 < ../../../bench/gdn/run21/el-late.patch)
NINFER_TEMPLATES=$(realpath "$G/el/templates") NINFER_CACHE_DIR=$STAGE_TMP/kc-el \
    target/release/ninfer kernels build gdn_chunk_f16 --arch sm_90
tar cf - -C "$STAGE_TMP/kc-el" . | xz -T2 -9e > "$G/kc-el.txz"
stage_done
