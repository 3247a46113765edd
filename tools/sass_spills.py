#!/usr/bin/env python3
"""Where a kernel's register spills sit in its SASS: inside its main loop or outside it.

ptxas's `-v` line (bench/kernels/v74/ptxas.py) gives a kernel's spill bytes, not where the
spill instructions are; a spill in the epilogue runs once a block, one in the main loop once
an iteration. This builds the named kernels for one architecture with `ninfer kernels build`
(the built-in templates, or those of NINFER_TEMPLATES) into a scratch cache, disassembles
each cubin with nvdisasm and prints, per kernel: its instructions, the highest register
index, the span of its main loop (first to last tensor-core instruction, HMMA/HGMMA, or
with none, first to last FFMA), and its local-memory stores (STL) and loads (LDL) inside and
outside that span, with the block barriers.

    source scripts/nvrtc-env.sh
    python3 tools/sass_spills.py linear_exact_mma_q4_g64_conv_t8_w16_u8_rmsnorm1p
    NINFER_TEMPLATES=$PWD/my-templates python3 tools/sass_spills.py ENTRY...

Options through the environment: NINFER_BIN (default target/release/ninfer), ARCH (default
sm_90), NVDISASM (default: the nvidia-cuda-nvdisasm wheel, installed into .nvdisasm at the
repository root on first use; NVDISASM_WHEEL_VERSION, default 13.2.*: the oldest on PyPI,
and it reads NVRTC 13.0's cubins).
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def nvdisasm():
    if os.environ.get("NVDISASM"):
        return os.environ["NVDISASM"]
    target = os.path.join(ROOT, ".nvdisasm")
    found = glob.glob(os.path.join(target, "nvidia", "*", "bin", "nvdisasm"))
    if not found:
        version = os.environ.get("NVDISASM_WHEEL_VERSION", "13.2.*")
        print(f"installing nvidia-cuda-nvdisasm {version} into {target}", file=sys.stderr)
        done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                               "--disable-pip-version-check", "--target", target,
                               f"nvidia-cuda-nvdisasm=={version}"])
        if done.returncode != 0:
            sys.exit(f"could not install nvidia-cuda-nvdisasm=={version}: set NVDISASM")
        found = glob.glob(os.path.join(target, "nvidia", "*", "bin", "nvdisasm"))
    if not found:
        sys.exit("no nvdisasm: set NVDISASM or install nvidia-cuda-nvdisasm")
    os.chmod(found[0], 0o755)
    return found[0]


def build(entries, arch, cache):
    binary = os.environ.get("NINFER_BIN", os.path.join(ROOT, "target", "release", "ninfer"))
    env = dict(os.environ, NINFER_CACHE_DIR=cache)
    cubins = {}
    # One build for all of them: --filter takes comma-separated substrings.
    subprocess.run([binary, "kernels", "build", "--all", "--arch", arch, "--filter",
                    ",".join(entries)], env=env, check=True, stdout=subprocess.DEVNULL)
    for receipt in glob.glob(os.path.join(cache, "**", "*.json"), recursive=True):
        entry = json.load(open(receipt)).get("entry")
        cubin = receipt[: -len(".json")] + ".cubin"
        if entry in entries and os.path.exists(cubin):
            cubins[entry] = cubin
    return cubins


def summary(sass_text):
    lines = [l for l in sass_text.splitlines() if re.search(r"/\*[0-9a-f]{4,}\*/", l)]

    def at(pattern):
        return [i for i, l in enumerate(lines) if re.search(pattern, l)]

    loop = at(r"\b(HMMA|HGMMA)\b") or at(r"\bFFMA\b")
    lo, hi = (loop[0], loop[-1]) if loop else (0, -1)
    stl, ldl = at(r"\bSTL\b"), at(r"\bLDL\b")
    inside = lambda xs: sum(1 for x in xs if lo <= x <= hi)
    regs = [int(r) for r in re.findall(r"\bR(\d+)\b", sass_text)]
    return {
        "instructions": len(lines),
        "max_register": max(regs) if regs else None,
        "loop_span": [lo, hi],
        "stl_in_loop": inside(stl),
        "stl_outside": len(stl) - inside(stl),
        "ldl_in_loop": inside(ldl),
        "ldl_outside": len(ldl) - inside(ldl),
        "barriers": len(at(r"\bBAR\.(SYNC|RED)")),
    }


def main():
    entries = sys.argv[1:]
    if not entries or entries[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if entries else 2
    arch = os.environ.get("ARCH", "sm_90")
    tool = nvdisasm()
    with tempfile.TemporaryDirectory() as cache:
        cubins = build(entries, arch, cache)
        missing = [e for e in entries if e not in cubins]
        if missing:
            sys.exit(f"not built (no such entry?): {', '.join(missing)}")
        for entry in entries:
            sass = subprocess.run([tool, "-c", cubins[entry]], check=True, capture_output=True,
                                  text=True).stdout
            s = summary(sass)
            print(f"{entry} ({arch}): {s['instructions']} instructions, up to R{s['max_register']}, "
                  f"main loop at lines {s['loop_span'][0]}-{s['loop_span'][1]}; "
                  f"STL {s['stl_in_loop']} in it / {s['stl_outside']} outside, "
                  f"LDL {s['ldl_in_loop']} / {s['ldl_outside']}; {s['barriers']} barriers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
