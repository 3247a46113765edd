#!/usr/bin/env bash
# v72 staging (here, repository root; after bench/kernels/v71/stage.sh, whose binary and
# kernel cache it reuses): ninfer-perplexity of this tree, the wikitext-2 test file and the
# default model's GGUF in parts sized to the carry limit (scripts/gpu/model-parts.sh's rule)
# into .gpu/v72.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
G=.gpu/v72
rm -rf "$G" && mkdir -p "$G/p"
source scripts/nvrtc-env.sh
cargo build --release --bin ninfer-perplexity
xz -T2 -c target/release/ninfer-perplexity > "$G/ninfer-perplexity.xz"
cp ../shared/data/wikitext-2-raw/wiki.test.raw "$G/"
M="${NINFER_MODEL:-$HOME/.cache/ninfer/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
sha256sum "$M" | cut -c1-64 > "$G/model.sha"
tree=$(git ls-files -z | xargs -0 du -cb | tail -1 | cut -f1)
split -b $((64000000 - tree - 1000000)) -d "$M" "$G/p/part"
ls -l "$G" "$G/p"
