#!/usr/bin/env bash
# bench/gdn run 25 staging (here, repository root, on main at 1857c6d or later with the same
# templates/gdn): three template sets beside main's under .gpu/r25/{scan,wu,both}/templates,
# made from HEAD's templates with scan.patch, wu.patch and both (issue-cut.patch). No
# build: the job runs them through run 23's build (.gpu/r23, main at 1857c6d, whose
# embedded templates are HEAD's) with NINFER_TEMPLATES. Stage .gpu/r23 first if it is
# missing (bench/gdn/run23/stage.sh).
# Later runs reuse it: RUN=26 VARS="wu late all" BASE=REV stages bench/gdn/run26/VAR.patch
# for each VAR into .gpu/r26/VAR/templates from REV's templates (BASE's embedded
# templates must be those of the build the job runs, or the job's main column is not main;
# else stage VAR main too, BASE's templates unpatched, and give the job BASE_TEMPLATES).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
RUN=${RUN:-25}; VARS=${VARS:-scan wu both}; BASE=${BASE:-HEAD}
R=bench/gdn/run$RUN
test -f .gpu/r23/ninfer.xz || { echo "stage .gpu/r23 first: bash bench/gdn/run23/stage.sh" >&2; exit 1; }
rm -rf .gpu/r$RUN && mkdir -p .gpu/r$RUN
for v in $VARS; do
  d=.gpu/r$RUN/$v
  mkdir -p $d
  git archive $BASE templates | tar x -C $d
  p=$R/$v.patch; [ $RUN = 25 ] && [ $v = both ] && p=$R/issue-cut.patch
  [ $v = main ] || (cd $d && patch -s -p1 < "$OLDPWD/$p")   # main: BASE's templates as they are
done
echo "staged .gpu/r$RUN/{${VARS// /,}}/templates"
