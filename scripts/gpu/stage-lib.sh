# Sourced by the bench/kernels experiment staging scripts (from v41 on), here, after
# `set -euo pipefail`; the staging half of scripts/gpu/job-lib.sh (which unpacks what this
# packs, on the GPU machine):
#   stage_init NAME         builds the release binary of the working tree, empties .gpu/NAME
#                           ($G) and writes $G/ninfer.xz and $G/REV (the short commit, and
#                           "+changes" where src or templates differ from it)
#   stage_kernels FILE [DIR]  every kernel for sm_90, of the built-in templates or of the
#                           template directory DIR (through NINFER_TEMPLATES), into
#                           $G/FILE.txz (the cache job_init unpacks: kc*.txz)
#   stage_patched SET PATCH...  a copy of templates/ in $G/SET/templates with the patches
#                           applied (paths as `git diff` writes them: a/templates/...), and
#                           its kernels in $G/kc-SET.txz; the job runs it with
#                           NINFER_TEMPLATES=$PWD/$G/SET/templates
#   stage_examples EX...    builds the named cargo examples (e.g. gdn_gpu) and writes each
#                           as $G/EX.xz
#   stage_done              removes the scratch and prints the staged size
#   stage_patched_build NAME PATCH...  on its own (no stage_init): HEAD with the patches
#                           applied (paths relative to the repository root) in a scratch
#                           worktree, its binary and every kernel of its templates staged
#                           there as above, copied into .gpu/NAME (for experiments kept off
#                           main, e.g. a template change that would void the tuning profile);
#                           with STAGE_EXAMPLES="EX..." also those examples (stage_examples)
#   stage_perplexity NAME   on its own (no stage_init): ninfer-perplexity of the working tree,
#                           the wikitext-2 test file and the default model's GGUF (its SHA-256
#                           in model.sha) in parts sized to the carry limit beside the tracked
#                           tree (scripts/gpu/model-parts.sh's rule) into .gpu/NAME/p
# The v25-v40 staging scripts inline the same steps; they stay as they ran.
stage_init() {
    local root
    root=$(git rev-parse --show-toplevel)
    cd "$root"
    G=.gpu/$1
    rm -rf "$G"
    mkdir -p "$G"
    STAGE_TMP=$(mktemp -d)
    cargo build --release --bin ninfer
    source scripts/nvrtc-env.sh
    xz -T2 -c target/release/ninfer > "$G/ninfer.xz"
    echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src templates || echo '+changes')" > "$G/REV"
}
stage_kernels() {
    local cache=$STAGE_TMP/$1
    if [ -n "${2:-}" ]; then
        NINFER_TEMPLATES=$(realpath "$2") NINFER_CACHE_DIR=$cache target/release/ninfer kernels build --all --arch sm_90
    else
        NINFER_CACHE_DIR=$cache target/release/ninfer kernels build --all --arch sm_90
    fi
    tar cf - -C "$cache" . | xz -T2 -9e > "$G/$1.txz"
}
stage_patched() {
    local set=$1 p
    shift
    mkdir -p "$G/$set"
    cp -r templates "$G/$set/templates"
    for p in "$@"; do
        p=$(realpath "$p")
        (cd "$G/$set" && patch -s -p1 < "$p")
    done
    stage_kernels "kc-$set" "$G/$set/templates"
}
stage_examples() {
    local ex
    for ex in "$@"; do
        cargo build --release --example "$ex"
        xz -T2 -c "target/release/examples/$ex" > "$G/$ex.xz"
    done
}
stage_done() {
    rm -rf "$STAGE_TMP"
    du -sh "$G"
}
stage_perplexity() {
    local root g m tree
    root=$(git rev-parse --show-toplevel)
    cd "$root"
    g=.gpu/$1
    rm -rf "$g" && mkdir -p "$g/p"
    source scripts/nvrtc-env.sh
    cargo build --release --bin ninfer-perplexity
    xz -T2 -c target/release/ninfer-perplexity > "$g/ninfer-perplexity.xz"
    cp ../shared/data/wikitext-2-raw/wiki.test.raw "$g/"
    m="${NINFER_MODEL:-$HOME/.cache/ninfer/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
    sha256sum "$m" | cut -c1-64 > "$g/model.sha"
    tree=$(git ls-files -z | xargs -0 du -cb | tail -1 | cut -f1)
    split -b $((64000000 - tree - 1000000)) -d "$m" "$g/p/part"
    ls -l "$g" "$g/p"
}
stage_patched_build() {
    local name=$1 root wt p
    shift
    root=$(git rev-parse --show-toplevel)
    wt=$(mktemp -d)/ninfer-$name
    git -C "$root" worktree add --detach "$wt" HEAD
    # Removed on every exit, also a failed build's.
    trap "git -C '$root' worktree remove --force '$wt'" EXIT
    for p in "$@"; do git -C "$wt" apply "$root/$p"; done
    # The worktree builds into the checkout's target/ (incremental) and finds its NVRTC.
    mkdir -p "$root/target"   # a fresh checkout has none yet
    ln -s "$root/target" "$wt/target"
    [ -d "$root/.nvrtc" ] && ln -s "$root/.nvrtc" "$wt/.nvrtc"
    (cd "$wt" && bash -c "source scripts/gpu/stage-lib.sh && stage_init $name && stage_examples ${STAGE_EXAMPLES:-} && stage_kernels kc && stage_done")
    rm -rf "$root/.gpu/$name" && mkdir -p "$root/.gpu" && cp -r "$wt/.gpu/$name" "$root/.gpu/$name"
    du -sh "$root/.gpu/$name"
}
