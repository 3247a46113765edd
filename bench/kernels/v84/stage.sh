#!/usr/bin/env bash
# v84 staging (here, repository root): v83's patch plus conv-subnormal.patch (the switch
# NINFER_TC_CONV=sub: nibbles taken in place as bf16 bit patterns below 0x100, one shift a
# word instead of three), into .gpu/v84. Then on the device, carry [".gpu/v84"]:
# bash bench/kernels/v84/job.sh
set -euo pipefail
root=$(git rev-parse --show-toplevel)
NAME=v84 BASE=../v83/gemv-tc-v83.patch PATCHES=../v84/conv-subnormal.patch bash "$root/bench/kernels/v73/stage.sh"
