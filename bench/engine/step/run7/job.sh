#!/usr/bin/env bash
# Step run 7 (device job, carry [".gpu/step7"], staged by run7/stage.sh): run 6's job on the
# synthetic Qwen3.6-27B q4_g64 decode step at 8 lanes, kernel by kernel, with each kernel's
# DRAM bytes (the default, exact, mode and the installed profile).
LANES=8 NAME=step7 exec bash bench/engine/step/run6/job.sh
