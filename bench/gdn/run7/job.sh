#!/usr/bin/env bash
# gdn helper's device job: unpack the gdn_gpu binary, run scripts/gpu/gdn.sh (this
# branch's copy) with it, tar the outputs.
set -u
D=.gpu/gdn
B="$(mktemp -d)/gdn_gpu"
xz -d < "$D/gdn_gpu.xz" > "$B" && chmod +x "$B"
mkdir -p "$OUT/r"
NINFER_TEMPLATES="$PWD/$D/templates" GDN_BIN="$B" WHL_DIR="$D/whl" GDN_REV="$(cat $D/REV)" OUT="$OUT/r" PEER_DIR="${PEER_DIR-bench/gdn/run3}" \
    GDN_TIMEOUT="${GDN_TIMEOUT:-200}" bash "$D/gdn.sh" > "$OUT/r/job.txt" 2>&1
rc=$?
tar czf "$OUT/run.tgz" -C "$OUT/r" .
tail -c 11000 "$OUT/r/job.txt"
echo "job exit $rc"
