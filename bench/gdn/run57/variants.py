#!/usr/bin/env python3
"""bench/gdn run 57 staging: two copies of templates/ under .gpu/r57v/<variant>/templates
(the job runs them with NINFER_TEMPLATES) that test run 56's reading, that a conv window
loaded through L1 late and stored straight back is what cost:
  ldcg      gdn/conv_window.cuh's gdn_conv_lane loads the window with __ldcg (L2 only, no
            L1 line), as main otherwise: the GEMV's own conv epilogue (one K-range, or its
            last blocks adding) and the split-K sum's outputs past a thread's first take it;
  old-ldcg  the same, with linear/splitk_sum.cu as before run 56 (every output through
            gdn_conv_lane): whether __ldcg alone cures the sum without the hoist.
The same arithmetic in the same order: both must pass qualify with main's errors.
Run from the repository root: python3 bench/gdn/run57/variants.py
"""
import shutil
import subprocess

LOAD = "    for (int j = 0; j < KC - 1; ++j) win[j] = cs[j];\n"
LDCG = "    for (int j = 0; j < KC - 1; ++j) win[j] = __ldcg(cs + j);  // L2 only (run 57)\n"


def make(name, old_sum):
    root = f".gpu/r57v/{name}/templates"
    shutil.rmtree(f".gpu/r57v/{name}", ignore_errors=True)
    shutil.copytree("templates", root)
    p = f"{root}/gdn/conv_window.cuh"
    s = open(p).read()
    assert s.count(LOAD) == 1
    open(p, "w").write(s.replace(LOAD, LDCG))
    if old_sum:
        # linear/splitk_sum.cu as it was before run 56's hoist (revision 2e8e278).
        old = subprocess.run(["git", "show", "2e8e278:templates/linear/splitk_sum.cu"],
                             check=True, capture_output=True, text=True).stdout
        open(f"{root}/linear/splitk_sum.cu", "w").write(old)
    print(name, root)


make("ldcg", False)
make("old-ldcg", True)
