#!/usr/bin/env bash
# v19 job (prepared 2026-11-30, not run): the mma GEMV's weights through a per-warp
# cp.async ring (ring.patch: 3 stages of 4 groups x 16 rows, rows padded to 160 bytes, the
# register buffers and their shuffle swap gone; the plan's fixed shared memory grows by
# 120 KB at 16 warps, so K takes more K-ranges). Build the binary from main with
# `git apply bench/kernels/v19/ring.patch`, its kernels with `ninfer kernels build --all
# --arch sm_90`, stage them as below; compare with bench/kernels/v18/run1 (the same
# records at 2700991). Steps (timeouts cut to LIMIT):
#   qualify  ninfer qualify --filter linear_exact_mma
#   kernels  bench kernels 'linear_exact_mma step|linear_exact_mma q4_g64' (twice)
#   27b      bench model synthetic 27B q4_g64 --lanes 1,8 --no-profile
#   tune     scripts/gpu/tune.sh for this template set (run1.toml: the profile to install)
# Needs (carried): .gpu/v19/{ninfer.xz,REV,kc.tgz}. Output: $OUT/v19.tgz; summary last.
# The steps are v16's job, run on this binary.
V=v19 exec bash "$(dirname "$0")/../v16/job.sh"
