#!/usr/bin/env bash
# v58 calls before the job (the tracked tree, 46 MB, leaves too little of the 64 MiB carry for a fifth): each
# carries some of .gpu/v56, .gpu/v58/{ninfer-perplexity.xz,wiki.test.raw,model.sha} and
# one tenth of the GGUF (.gpu/v58/p/partNN), made straight after each other while the
# machine is warm; this copies whatever came into /root/v58 for the job.
set -eu
mkdir -p /root/v58
for f in .gpu/v56 .gpu/v58/ninfer-perplexity.xz .gpu/v58/wiki.test.raw .gpu/v58/model.sha .gpu/v58/p/part*; do
  [ -e "$f" ] && cp -r "$f" /root/v58/
done
ls /root/v58
