#!/usr/bin/env bash
# The profile files jobs 2 and 3 read, made here (repository root) after job 1:
#   .gpu/v41/prof_no576.toml        the installed profile (09cbe4dd) without the
#                                   linear_exact/q4_g64/t1/n576/k576 route (job 2)
#   .gpu/v41/prof_v41.toml          job 1's tune/run1.toml (v41's template set, 23c2fb29)
#   .gpu/v41/prof_v41_mainhash.toml the same routes under main's device id and template
#                                   set, so that main's binary takes them (job 3)
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
G=.gpu/v41
python3 - <<'PY'
s = open("tuning/nvidia-h200.toml").read()
blocks = s.split("[[route]]")
keep = [b for b in blocks if 'key = "linear_exact/q4_g64/t1/n576/k576"' not in b]
assert len(keep) == len(blocks) - 1
open(".gpu/v41/prof_no576.toml", "w").write("[[route]]".join(keep))
PY
cp bench/kernels/v41/run1/tune/run1.toml $G/prof_v41.toml
sed -e 's/^id = .*/id = "634ecaec61c897ae"/' \
    -e 's/^template_set_hash = .*/template_set_hash = "09cbe4ddab1cca5ee23d0fbb25605a3c322b4e20ddf6d4c78422d23fe5e938ff"/' \
    $G/prof_v41.toml > $G/prof_v41_mainhash.toml
