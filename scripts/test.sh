#!/usr/bin/env bash
# The test command: installs NVRTC when missing (scripts/nvrtc-env.sh), then runs the
# whole test suite. CI runs exactly this (.ci/run). Extra arguments go to `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/nvrtc-env.sh
cargo test --locked "$@"
