#!/usr/bin/env bash
# bench/gdn run 25 staging (here, repository root, on main at 1857c6d or later with the same
# templates/gdn): three template sets beside main's under .gpu/r25/{scan,wu,both}/templates,
# made from HEAD's templates with scan.patch, wu.patch and both (issue-cut.patch). No
# build: the job runs them through run 23's build (.gpu/r23, main at 1857c6d, whose
# embedded templates are HEAD's) with NINFER_TEMPLATES. Stage .gpu/r23 first if it is
# missing (bench/gdn/run23/stage.sh).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
R=bench/gdn/run25
test -f .gpu/r23/ninfer.xz || { echo "stage .gpu/r23 first: bash bench/gdn/run23/stage.sh" >&2; exit 1; }
rm -rf .gpu/r25 && mkdir -p .gpu/r25
for v in scan wu both; do
  d=.gpu/r25/$v
  mkdir -p $d
  git archive HEAD templates | tar x -C $d
  p=$R/$v.patch; [ $v = both ] && p=$R/issue-cut.patch
  (cd $d && patch -s -p1 < "$OLDPWD/$p")
done
echo "staged .gpu/r25/{scan,wu,both}/templates"
