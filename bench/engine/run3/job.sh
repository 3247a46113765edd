#!/usr/bin/env bash
set -u
xz -dc .gpu/ninfer.xz > .gpu/ninfer && xz -dc .gpu/ninfer-perplexity.xz > .gpu/ninfer-perplexity && chmod +x .gpu/ninfer .gpu/ninfer-perplexity
export NINFER_CACHE_DIR=/tmp/ninfer-cache
mkdir -p $NINFER_CACHE_DIR/models
cat /root/models/part.aa /root/models/part.ab > $NINFER_CACHE_DIR/models/SmolLM2-135M-Instruct.Q4_1.gguf
sha256sum $NINFER_CACHE_DIR/models/SmolLM2-135M-Instruct.Q4_1.gguf > $OUT/model_sha.txt
EACH_TIMEOUT=75 bash scripts/gpu/quality.sh 2>&1 | grep -v '^\$' | cut -c1-200
QUALIFY_FILTER=skip timeout 200 bash scripts/gpu/engine.sh
