#!/usr/bin/env python3
"""bench/gdn run 59 staging: copies of templates/ under .gpu/r59v/<variant>/templates (the job
runs them with NINFER_TEMPLATES) that test why the mma GEMV's own conv epilogue (one K-range:
write_pass; bench/gdn run 58: +19 us a 27B bf16 in-projection, 48.7 us against 29.3) is slow,
and two cures:
  pf       before the PDL wait, every block of an m-range that will apply the conv (one
           K-range, or K-range 0 where the last block adds) prefetches into L2 the m-range's
           conv windows (all T lanes) and conv weights (ninfer_prefetch_l2: a hint, always
           safe). The loads stay where they are.
  hoist1   the thread's first output of the first pass: its window loaded into registers
           before the PDL wait, as linear/splitk_sum.cu's first output since run 56 (safe
           for the same reason: the window's last writer is this launch's previous step).
           Other outputs take the late path.
  nowin    diagnostic: gdn_conv_lane reads zeros instead of the window (wrong results).
  nostore  diagnostic: gdn_conv_lane does not store the window back (wrong state).
pf and hoist1 keep main's arithmetic in its order: both must pass qualify with main's errors.
Run from the repository root: python3 bench/gdn/run59/variants.py
"""
import shutil

WAIT = "    NINFER_PDL_WAIT();\n    NINFER_PDL_TRIGGER();\n\n    const long long x_stride"

PF = """{%- if epilogue == "conv" %}
    // bench/gdn run 59 `pf`: the m-range's conv windows and weights into L2 before the wait.
    if (kr == 1 || (counters != nullptr && kb == 0)) {
        const int r0 = min(mb0 * 16, conv_ch), r1 = min(mb1 * 16, conv_ch);
        if (r1 > r0) {
            const long long span = (long long)(r1 - r0) * (KC - 1) * 4;  // bytes a lane
            const int lines = (int)((span + 127) / 128) + 1;
            for (int i = threadIdx.x; i < T * lines; i += BLOCK) {
                const int tk = i / lines, l = i - tk * lines;
                const char* b = (const char*)(conv_state + ((long long)tk * conv_ch + r0) * (KC - 1));
                ninfer_prefetch_l2(b + min((long long)l * 128, span - 1));
            }
            const char* wb = (const char*)(conv_w + (long long)r0 * KC);
            const long long wspan = (long long)(r1 - r0) * KC * 4;
            for (long long off = threadIdx.x * 128LL; off < wspan + 128; off += BLOCK * 128LL)
                ninfer_prefetch_l2(wb + min(off, wspan - 1));
        }
    }
{%- endif %}
"""

HOIST = """{%- if epilogue == "conv" %}
    // bench/gdn run 59 `hoist1`: the first pass's first output of this thread, its window
    // loaded before the wait (write_pass applies it).
    float h[KC > 1 ? KC - 1 : 1];
    bool first = false;
    {
        const int o = threadIdx.x;
        const int tk0 = (o / ROWS) % T, st0 = (o / ROWS) / T;
        const int row0 = (pm0 + st0) * ROWS + o % ROWS;
        if (kr == 1 && st0 < pmn && row0 < N && row0 < conv_ch) {
            const float* cs0 = conv_state + ((long long)tk0 * conv_ch + row0) * (KC - 1);
#pragma unroll
            for (int j = 0; j < KC - 1; ++j) h[j] = cs0[j];
            first = true;
        }
    }
{%- endif %}
"""

WP_SIG = 'const float* ss_blk, float eps{% if epilogue == "conv" %} CONV_PARAMS{% endif %}) {\n    const int outs = pmn * ROWS * T;'
WP_SIG_H = 'const float* ss_blk, float eps{% if epilogue == "conv" %} CONV_PARAMS, bool first, const float* h{% endif %}) {\n    const int outs = pmn * ROWS * T;'
WP_CONV = "                out = gdn_conv_lane(out, tk, row CONV_ARGS);\n"
WP_CONV_H = """                if (first && o == (int)threadIdx.x)
                    out = gdn_conv_apply(conv_w + (long long)row * KC, h, out,
                                         conv_state + ((long long)tk * conv_ch + row) * (KC - 1));
                else
                    out = gdn_conv_lane(out, tk, row CONV_ARGS);
"""
CALL = 'eps{% if epilogue == "conv" %} CONV_ARGS{% endif %});\n'
CALL_H = 'eps{% if epilogue == "conv" %} CONV_ARGS, first, h{% endif %});\n'
NEXT = "        next_pass();\n        if (pmn > 0) {"
NEXT_H = '{%- if epilogue == "conv" %}\n        first = false;\n{%- endif %}\n' + NEXT

LOAD = "    for (int j = 0; j < KC - 1; ++j) win[j] = cs[j];\n"
APPLY = "    return gdn_conv_apply(conv_w + (long long)c * KC, win, x, cs);\n"


def edit(path, old, new, count=1):
    s = open(path).read()
    assert s.count(old) == count, (path, old[:60], s.count(old))
    open(path, "w").write(s.replace(old, new))


def make(name):
    root = f".gpu/r59v/{name}/templates"
    shutil.rmtree(f".gpu/r59v/{name}", ignore_errors=True)
    shutil.copytree("templates", root)
    gemv, mma, win = (f"{root}/{p}" for p in
                      ["linear/gemv_mma.cu", "linear/mma_exact.cuh", "gdn/conv_window.cuh"])
    if name == "pf":
        edit(gemv, WAIT, PF + WAIT)
    elif name == "hoist1":
        edit(gemv, WAIT, HOIST + WAIT)
        edit(gemv, CALL, CALL_H, 2)
        edit(gemv, NEXT, NEXT_H)
        edit(mma, WP_SIG, WP_SIG_H)
        edit(mma, WP_CONV, WP_CONV_H)
    elif name == "nowin":
        edit(win, LOAD, "    for (int j = 0; j < KC - 1; ++j) win[j] = 0.0f;  // run 59 nowin\n")
    elif name == "nostore":
        edit(win, APPLY, "    float dummy[KC > 1 ? KC - 1 : 1];  // run 59 nostore\n"
             "    return gdn_conv_apply(conv_w + (long long)c * KC, win, x, dummy);\n")
    print(name, root)


for v in ["pf", "hoist1", "nowin", "nostore"]:
    make(v)
