#!/usr/bin/env bash
# A device call carries the whole tracked tree (64 MB in all, counted in decimal, with what
# `carry` names; see model-parts.sh). The committed run outputs under bench/ grew past 57
# MB by 2026-12-05, which left no room for one staged build (7-9 MB). This takes the run
# outputs of bench/kernels, bench/engine and bench/tune out of the working tree for the
# calls, and puts them back from git after:
#
#   scripts/gpu/slim-tree.sh on     # before the device calls (prints the tree's size)
#   scripts/gpu/slim-tree.sh off    # after them: `git checkout` of what `on` removed
#
# Only tracked files are removed, and git restores them. Scripts, patches, tables and
# READMEs stay (*.sh, *.py, *.patch, *.md, *.toml), and so do bench/gdn's outputs (jobs
# read its peer figures). While the tree is slim, commit with explicit paths, never with
# `git commit -a`, which would record the removals.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
DIRS=(bench/kernels bench/engine bench/tune)
list() {
    git ls-files -z "${DIRS[@]}" \
        | tr '\0' '\n' | grep -vE '\.(sh|py|patch|md|toml)$'
}
size() { git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1; }
case "${1:-}" in
    on)
        list | tr '\n' '\0' | xargs -0 rm -f
        echo "slim: $(git status --porcelain | grep -c '^ D') tracked files removed; tree $(size) bytes"
        ;;
    off)
        git ls-files -z --deleted "${DIRS[@]}" | xargs -0 -r git checkout --
        echo "restored; tree $(size) bytes, $(git status --porcelain | grep -c '^ D') files still removed"
        ;;
    *)
        echo "usage: $0 on|off" >&2
        exit 2
        ;;
esac
