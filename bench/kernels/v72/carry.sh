#!/usr/bin/env bash
# v72 calls before the job, made straight after each other while the machine is warm:
# each carries one part of the GGUF (.gpu/v72/p/partNN), the last of them also .gpu/v71
# and the corpus; this copies whatever came into /root/v72.
set -eu
mkdir -p /root/v72
for f in .gpu/v71 .gpu/v72/wiki.test.raw .gpu/v72/model.sha .gpu/v72/p/part*; do
  [ -e "$f" ] && cp -r "$f" /root/v72/
done
ls /root/v72 | tr '\n' ' '
