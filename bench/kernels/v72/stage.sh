#!/usr/bin/env bash
# v72 staging (here, repository root; after bench/kernels/v71/stage.sh, whose binary and
# kernel cache it reuses): ninfer-perplexity of this tree, the wikitext-2 test file and the
# default model's GGUF in parts sized to the carry limit into .gpu/v72 (stage-lib.sh's
# stage_perplexity; the script ran with the same steps inline).
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_perplexity v72
